//! A skiplist of memtable entries whose nodes and entries live in two [`Arena`]s, with lock-free
//! readers.
//!
//! A node's tower and its entry live in two arenas: the nodes (header and next pointers, about
//! 30 bytes) in one, the entries (key and value) in the other, so that a search, which reads
//! only headers and towers until the last step, walks a region a few times smaller than the
//! memtable (docs/memtable.md, "Towers apart from entries"):
//!
//! ```text
//! node  := height: u8 | flags: u8 | entry address: 48 bits | window: u64
//!          | next: AtomicPtr<Node>[height] | (entry, if flags has ENTRY_INLINE)
//! entry := internal key len varint | internal key | value len varint | value
//! ```
//!
//! Entries are ordered by [`InternalKeyComparator`] on the internal key and are never removed or
//! changed once linked. Inserts are serialized by a mutex (which also guards the height RNG);
//! readers take no lock. A new node is fully written (header, entry and its own next pointers)
//! before it is linked, level 0 first, by Release stores into its predecessors' next pointers;
//! readers load next pointers with Acquire, so any node a reader reaches is fully initialised.
//! Readers therefore see, at each level, either the list before or after an insert. The list's
//! current height is only a hint (Relaxed): a reader that sees a new height before the head's
//! new pointers finds null there and simply moves down a level.
//!
//! With a point index ([`SkipList::set_point_index`], `point_index.rs`), the writer also records
//! each linked node's entry as its user key's newest, and [`SkipList::newest`] answers a point
//! read of the latest version with one probe instead of a search.

use std::cmp::Ordering as CmpOrdering;
use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::arena::Arena;
use super::filter::KeyFilter;
use super::point_index::{self, PointIndex, Probe};
use crate::comparator::{InternalKeyComparator, bytewise_prefix};
use crate::key::{self, SequenceNumber, TRAILER_LEN, ValueKind, pack_trailer};

/// Tallest tower a node can have; with branching 4 this suits lists of up to ~16M entries.
pub(crate) const MAX_HEIGHT: usize = 12;

/// Each level holds about 1 in `BRANCHING` of the nodes of the level below.
const BRANCHING: u64 = 4;

/// Entries [`SkipList::insert_sorted`] inserts per hold of the writer mutex: a full search
/// from the head per chunk is a few hundred nanoseconds, under 1% of a chunk's inserts.
const INSERT_SORTED_CHUNK: usize = 256;

/// Fewest entries a chunk needs for [`Search::Together`]; smaller ones (a write group of two
/// or three; a group of one takes [`SkipList::insert`]) use the finger search, a plain search
/// from the head for their first key, which costs less than the bookkeeping of searching
/// together (single-threaded fills lost 4-12%).
const TOGETHER_FROM: usize = 4;

/// Entries ahead of the one being inserted whose point-index slots a multi-insert prefetches.
const PREFETCH_AHEAD: usize = 4;

/// How long a multi-insert waits between chunks for a blocked inserter to take the writer
/// mutex ([`SkipList::let_waiters_in`]): long enough for a futex wake-up on a busy machine,
/// short against a chunk's own time (about 100 us).
const HANDOFF_WAIT: std::time::Duration = std::time::Duration::from_micros(100);

/// [`Node::flags`]: `window` holds the node's key window ([`SkipList::window_of`]).
const WINDOWED: u8 = 1;

/// [`Node::flags`]: the entry follows the node's tower in the node's own region, because its
/// address in the entries arena did not fit the header's [`ENTRY_ADDRESS_BITS`] (or the list
/// keeps entries inline, [`SkipList::keep_entries_inline`]).
const ENTRY_INLINE: u8 = 2;

/// Bits of an entry's address a header holds: user-space addresses on x86-64 and AArch64
/// Linux fit in 48 unless a program maps memory above on purpose (the point index relies on
/// the same, `point_index.rs`).
const ENTRY_ADDRESS_BITS: u32 = 48;

/// The fixed part of a node; its tower of `height` next pointers follows it.
#[repr(C)]
struct Node {
    height: u8,
    /// [`WINDOWED`] and [`ENTRY_INLINE`].
    flags: u8,
    /// The low 16 bits of the entry's address (unless [`ENTRY_INLINE`]): with `entry_high`,
    /// 48 bits that keep the header at 16 bytes. A larger node would fit fewer entries in a
    /// memtable and move flush boundaries (docs/memtable.md, "Key windows"). The entry's length
    /// is read from its own varints.
    entry_low: u16,
    /// Bits 16 to 47 of the entry's address.
    entry_high: u32,
    /// The eight bytes of the entry's user key after the list's shared prefix, as
    /// [`bytewise_prefix`] orders them: a search compares windows first and reads the key only
    /// when they are equal, so most steps touch only the node's first cache line and call no
    /// `memcmp` (docs/memtable.md, "Key windows": 0.82x the writer's CPU per insert at 64 MiB).
    window: u64,
}

// The header stays at 16 bytes (see `Node::entry_low`).
const _: () = assert!(size_of::<Node>() == 16);

/// A node reachable in a live list, valid for `'a`.
///
/// Invariant: `ptr` is the head or a node linked into (or being linked by the writer into) a
/// list whose arena outlives `'a`; its header, tower and entry are initialised.
#[derive(Clone, Copy)]
struct NodeRef<'a> {
    ptr: NonNull<Node>,
    _list: PhantomData<&'a SkipList>,
}

impl<'a> NodeRef<'a> {
    /// # Safety
    /// `ptr` must satisfy the [`NodeRef`] invariant for `'a`.
    unsafe fn new(ptr: NonNull<Node>) -> Self {
        NodeRef {
            ptr,
            _list: PhantomData,
        }
    }

    fn header(self) -> &'a Node {
        // SAFETY: the invariant says the header is initialised and lives for 'a; it is never
        // written after initialisation.
        unsafe { self.ptr.as_ref() }
    }

    /// Levels of the node's tower.
    fn height(self) -> usize {
        self.header().height as usize
    }

    /// The next-pointer slot of `level`. REQUIRES: `level < height`.
    fn slot(self, level: usize) -> &'a AtomicPtr<Node> {
        assert!(level < self.height(), "skiplist level out of range");
        // SAFETY: the tower of `height` initialised AtomicPtrs directly follows the header (the
        // header size is a multiple of the pointer alignment), inside the same allocation; the
        // pointer is derived from `ptr`, whose provenance covers the whole node.
        unsafe {
            &*self
                .ptr
                .cast::<u8>()
                .add(size_of::<Node>())
                .cast::<AtomicPtr<Node>>()
                .add(level)
                .as_ptr()
        }
    }

    /// The successor at `level`, as published (Acquire).
    fn next(self, level: usize) -> Option<NodeRef<'a>> {
        let next = NonNull::new(self.slot(level).load(Ordering::Acquire))?;
        // SAFETY: a non-null next pointer was published with Release after its node was fully
        // initialised (Acquire pairs with it), and the node lives in the same arena.
        Some(unsafe { NodeRef::new(next) })
    }

    /// Where the node's entry starts (the head's is an empty key and value).
    fn entry_start(self) -> NonNull<u8> {
        let h = self.header();
        if h.flags & ENTRY_INLINE != 0 {
            // SAFETY: an inline entry follows the tower, inside the node's allocation.
            return unsafe { self.ptr.cast::<u8>().add(tower_end(h.height as usize)) };
        }
        let address = usize::from(h.entry_low) | (h.entry_high as usize) << 16;
        // `alloc_node` exposed the provenance of this address in the entries arena, which
        // lives as long as the node's.
        NonNull::new(std::ptr::with_exposed_provenance_mut::<u8>(address))
            .expect("a node names its entry")
    }

    /// The entry's (internal key, value).
    fn parts(self) -> (&'a [u8], &'a [u8]) {
        // SAFETY: the invariant says the entry is initialised and lives for 'a.
        unsafe { entry_parts(self.entry_start()) }
    }

    fn key(self) -> &'a [u8] {
        self.parts().0
    }

    fn value(self) -> &'a [u8] {
        self.parts().1
    }
}

/// Bytes from a node's start to the end of a tower of `height` next pointers.
fn tower_end(height: usize) -> usize {
    size_of::<Node>() + height * size_of::<AtomicPtr<Node>>()
}

/// The (internal key, value) of the entry at `start`.
///
/// # Safety
/// `start` must begin an entry written by [`SkipList::alloc_entry`] (or the head's), whose
/// bytes stay initialised and unchanged for `'a`.
unsafe fn entry_parts<'a>(start: NonNull<u8>) -> (&'a [u8], &'a [u8]) {
    // SAFETY: the entry is two well-formed varints, each followed by as many bytes as it
    // says, so every byte read lies inside it.
    unsafe {
        let (key_len, n) = raw_varint(start);
        let key = start.add(n);
        let (value_len, m) = raw_varint(key.add(key_len));
        let value = key.add(key_len + m);
        (
            std::slice::from_raw_parts(key.as_ptr(), key_len),
            std::slice::from_raw_parts(value.as_ptr(), value_len),
        )
    }
}

/// Decodes the varint at `p` (written by [`varint`]): (value, bytes).
///
/// # Safety
/// `p` must begin a complete, initialised varint.
unsafe fn raw_varint(p: NonNull<u8>) -> (usize, usize) {
    let (mut value, mut n) = (0usize, 0usize);
    loop {
        // SAFETY: the caller's varint continues while its bytes have the high bit set.
        let byte = unsafe { *p.add(n).as_ptr() };
        value |= usize::from(byte & 0x7f) << (7 * n);
        n += 1;
        if byte < 0x80 {
            return (value, n);
        }
    }
}

/// Encodes `v` as a varint on the stack; returns the buffer and the bytes used.
fn varint(mut v: u64) -> ([u8; 10], usize) {
    let mut buf = [0u8; 10];
    let mut n = 0;
    while v >= 0x80 {
        buf[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    buf[n] = v as u8;
    (buf, n + 1)
}

/// Sets `buf` to the internal key of `e`.
fn internal_key(buf: &mut Vec<u8>, e: &BatchEntry<'_>) {
    buf.clear();
    buf.extend_from_slice(e.user_key);
    buf.extend_from_slice(&pack_trailer(e.seq, e.kind).to_le_bytes());
}

/// A cheap xorshift64* generator for tower heights (guarded by the writer mutex).
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// 1 with probability 3/4, 2 with 3/16, ... capped at [`MAX_HEIGHT`].
    fn height(&mut self) -> usize {
        let mut h = 1;
        while h < MAX_HEIGHT && self.next().is_multiple_of(BRANCHING) {
            h += 1;
        }
        h
    }
}

/// One entry of a multi-insert batch, borrowed from the caller.
#[derive(Debug, Clone, Copy)]
pub struct BatchEntry<'a> {
    /// The user key.
    pub user_key: &'a [u8],
    /// Its sequence number.
    pub seq: SequenceNumber,
    /// Value or deletion.
    pub kind: ValueKind,
    /// The value (empty for a deletion).
    pub value: &'a [u8],
}

/// How a multi-insert ([`SkipList::insert_sorted`]) finds each entry's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Search {
    /// From the previous entry's predecessors (FloDB's finger search): for batches of
    /// neighbouring keys, such as a membuffer drain's.
    Finger,
    /// From the head for all of a chunk's entries together, each step loading every entry's
    /// next node before comparing any, so their cache misses overlap: for batches of keys
    /// spread over the list, such as a write group of random keys, where a finger search is a
    /// full search per key, one miss after another.
    Together,
}

/// What [`SkipList::newest`] found for a user key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Newest<'a> {
    /// The key's newest entry, as (internal key, value).
    Entry(&'a [u8], &'a [u8]),
    /// The list holds no entry of the key.
    Absent,
    /// The list has no point index, or the key may be in the list without being indexed.
    Unknown,
}

/// An ordered set of entries; one writer at a time, any number of lock-free readers.
pub(crate) struct SkipList {
    /// Nodes: headers and towers.
    arena: Arena,
    /// Entries: keys and values.
    entries: Arena,
    /// Every entry follows its node's tower ([`ENTRY_INLINE`]) instead of living in `entries`:
    /// for tests of that layout, which no address on a supported platform needs otherwise.
    entries_inline: bool,
    /// A sentinel of height [`MAX_HEIGHT`] with an empty entry; never compared.
    head: NonNull<Node>,
    /// Levels in use (1..=MAX_HEIGHT); a hint for readers, exact for the writer.
    height: AtomicUsize,
    len: AtomicUsize,
    cmp: InternalKeyComparator,
    /// `cmp.is_bytewise()`: nodes of keys that start with `shared` carry a key window.
    bytewise: bool,
    /// The bytes most keys are expected to start with (the common prefix of the previous
    /// memtable's keys, [`SkipList::set_shared_prefix`]); a key window starts after them.
    shared: Box<[u8]>,
    /// Serializes inserts; holds the height RNG.
    writer: Mutex<Rng>,
    /// Inserters blocked on `writer` ([`SkipList::lock_writer`]); a multi-insert lets them in
    /// between its chunks.
    waiting: AtomicUsize,
    /// Each user key's newest node, when set ([`SkipList::set_point_index`]).
    index: Option<PointIndex>,
}

// SAFETY: the list owns its arenas; `head`, every node pointer and every entry address point
// into them. Nodes and entries are immutable after publication except for the nodes' atomic next
// pointers, and mutation is serialized by `writer`, so the list may be shared and sent between
// threads.
unsafe impl Send for SkipList {}
// SAFETY: see `Send` above.
unsafe impl Sync for SkipList {}

impl fmt::Debug for SkipList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SkipList")
            .field("len", &self.len())
            .field("height", &self.height.load(Ordering::Relaxed))
            .field("memory_usage", &self.memory_usage())
            .finish_non_exhaustive()
    }
}

impl SkipList {
    /// An empty list ordered by `cmp`.
    pub(crate) fn new(cmp: InternalKeyComparator) -> Self {
        let arena = Arena::new();
        let head = alloc_head(&arena);
        SkipList {
            arena,
            entries: Arena::new(),
            entries_inline: false,
            head,
            height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            bytewise: cmp.is_bytewise(),
            shared: Box::default(),
            cmp,
            writer: Mutex::new(Rng(0x9e37_79b9_7f4a_7c15)),
            waiting: AtomicUsize::new(0),
            index: None,
        }
    }

    /// Adds a point index of about `bytes` (none for 0), so that [`SkipList::newest`] finds a
    /// key's newest entry with one probe, and that records the keys it cannot take in
    /// `overflow`. Call before the first insert.
    pub(crate) fn set_point_index(&mut self, bytes: usize, overflow: Option<KeyFilter>) {
        debug_assert_eq!(self.len(), 0, "a point index added to a non-empty list");
        self.index = PointIndex::with_bytes(bytes, overflow);
    }

    /// Sets the prefix that key windows skip ([`Node::window`]): keys that start with it are
    /// compared by their next eight bytes first. Call before the first insert.
    pub(crate) fn set_shared_prefix(&mut self, prefix: &[u8]) {
        debug_assert_eq!(self.len(), 0, "a shared prefix set on a non-empty list");
        self.shared = prefix.into();
    }

    /// The window of `user_key` (its eight bytes after the shared prefix, zero-padded), if the
    /// list is bytewise-ordered and the key starts with the shared prefix. Two keys with
    /// windows are ordered by them when they differ: both share the bytes before.
    #[inline]
    fn window_of(&self, user_key: &[u8]) -> Option<u64> {
        match user_key.strip_prefix(&*self.shared) {
            Some(rest) if self.bytewise => Some(bytewise_prefix(rest)),
            _ => None,
        }
    }

    /// Bytes of the point index and its overflow filter (0 without an index).
    pub(crate) fn point_index_bytes(&self) -> usize {
        self.index.as_ref().map_or(0, PointIndex::bytes)
    }

    /// The newest entry of `user_key` by the point index: [`Newest::Unknown`] without an index
    /// or when the key may be in the list unindexed (the caller searches then). The entry may be
    /// newer than a reader's snapshot.
    pub(crate) fn newest(&self, user_key: &[u8]) -> Newest<'_> {
        let Some(index) = &self.index else {
            return Newest::Unknown;
        };
        let probe = index.find(point_index::hash(user_key), |entry| {
            // SAFETY: the index names only entries of nodes linked into this list.
            let (key, _) = unsafe { entry_parts(entry) };
            key::user_key(key) == user_key
        });
        match probe {
            Probe::Hit(entry) => {
                // SAFETY: as above.
                let (key, value) = unsafe { entry_parts(entry) };
                Newest::Entry(key, value)
            }
            Probe::Absent => Newest::Absent,
            Probe::Unknown => Newest::Unknown,
        }
    }

    /// Starts loading the point-index slot of `user_key` (`stage` 0), or the node it names
    /// (`stage` 1, once the slot is loaded), without waiting: a read of many keys runs each
    /// stage over all of them before reading any, so their cache misses overlap.
    pub(crate) fn prefetch_newest(&self, user_key: &[u8], stage: u8) {
        if let Some(index) = &self.index {
            let hash = point_index::hash(user_key);
            match stage {
                0 => index.prefetch(hash),
                _ => index.prefetch_node(hash),
            }
        }
    }

    /// The point-index hash of `user_key` (`None` without an index).
    fn index_hash(&self, user_key: &[u8]) -> Option<u64> {
        self.index.as_ref().map(|_| point_index::hash(user_key))
    }

    /// Starts loading the point-index slot of `hash`, so that recording a node later does not
    /// wait for it under the writer mutex.
    fn prefetch_slot(&self, hash: Option<u64>) {
        if let (Some(index), Some(hash)) = (&self.index, hash) {
            index.prefetch(hash);
        }
    }

    /// Records the just-linked `new`, whose user key has index hash `hash`, in the point index
    /// as its key's newest node unless a newer one is there. REQUIRES: writer mutex held.
    fn index_node(&self, new: NodeRef<'_>, hash: Option<u64>) {
        let (Some(index), Some(hash)) = (&self.index, hash) else {
            return;
        };
        let key = new.key();
        let user = key::user_key(key);
        index.record(hash, new.entry_start(), |other| {
            // SAFETY: the index names only entries of nodes linked into this list.
            let (other, _) = unsafe { entry_parts(other) };
            (key::user_key(other) == user).then(|| key::trailer(key) > key::trailer(other))
        });
    }

    /// Takes the writer mutex, counted in `waiting` while it has to wait for it.
    fn lock_writer(&self) -> MutexGuard<'_, Rng> {
        if let Ok(guard) = self.writer.try_lock() {
            return guard;
        }
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let guard = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        guard
    }

    /// Called between a multi-insert's chunks, with the mutex released: while another inserter
    /// waits for the mutex, yields until one has taken it (the count drops) or [`HANDOFF_WAIT`]
    /// has passed. The mutex is not fair, so without this the multi-insert would take it again
    /// before a woken waiter ran.
    fn let_waiters_in(&self) {
        let waiting = self.waiting.load(Ordering::Relaxed);
        if waiting == 0 {
            return;
        }
        let start = std::time::Instant::now();
        while self.waiting.load(Ordering::Relaxed) >= waiting && start.elapsed() < HANDOFF_WAIT {
            std::thread::yield_now();
        }
    }

    fn head(&self) -> NodeRef<'_> {
        // SAFETY: the head lives in `self.arena`, initialised in `new`.
        unsafe { NodeRef::new(self.head) }
    }

    fn is_head(&self, node: NodeRef<'_>) -> bool {
        node.ptr == self.head
    }

    /// Entries inserted so far.
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Bytes the arenas have reserved.
    pub(crate) fn memory_usage(&self) -> usize {
        self.arena.memory_usage() + self.entries.memory_usage()
    }

    /// Bytes the nodes and entries occupy in the arenas.
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.arena.allocated_bytes() + self.entries.allocated_bytes()
    }

    /// Makes every later node keep its entry after its tower, as when an entry's address does
    /// not fit a header: tests run that layout through this.
    #[cfg(test)]
    pub(crate) fn keep_entries_inline(&mut self) {
        self.entries_inline = true;
    }

    /// The comparator ordering the list.
    pub(crate) fn comparator(&self) -> &InternalKeyComparator {
        &self.cmp
    }

    /// Inserts the entry for `(user_key, seq, kind) -> value`, unless an entry with the same
    /// internal key is already present (as [`SkipList::insert_sorted`] skips it: a log record
    /// replayed twice is stored once). Safe to call from several threads (serialized).
    pub(crate) fn insert(
        &self,
        user_key: &[u8],
        seq: SequenceNumber,
        kind: ValueKind,
        value: &[u8],
    ) {
        let hash = self.index_hash(user_key);
        self.prefetch_slot(hash);
        let mut rng = self.lock_writer();
        let new = self.alloc_entry(rng.height(), user_key, seq, kind, value);
        let key = new.key();
        let mut prev = [self.head(); MAX_HEIGHT];
        let at = self.find_ge(key, Some(&mut prev));
        if at.is_some_and(|n| self.holds(n, key, self.search_window(key))) {
            // The node stays unlinked: its arena bytes are lost, as rare as the duplicate.
            return;
        }
        self.link(new, &mut prev);
        self.index_node(new, hash);
    }

    /// Inserts a batch of entries sorted by internal key, skipping any whose internal key is
    /// already present (so an entry moved from the membuffer twice is stored once). Returns the
    /// number inserted. This is FloDB's multi-insert (Algorithm 1): the search for each key
    /// starts, at each level, from the larger of the upper level's result and the predecessor
    /// found for the previous key, so a batch of neighbouring keys costs little more than walking
    /// between them. REQUIRES: `entries` sorted ascending by internal key, no duplicates.
    ///
    /// The writer mutex is taken for [`INSERT_SORTED_CHUNK`] entries at a time, and between
    /// chunks a blocked single insert (a write that found no room in the membuffer) gets up to
    /// [`HANDOFF_WAIT`] to take it ([`SkipList::let_waiters_in`]), so it need not wait for a
    /// whole drain (a quarter of a 1 GiB membuffer took seconds). Each chunk starts its finger
    /// search from the head again: another writer may have linked nodes in between, which
    /// would make the kept predecessors wrong at levels the search does not visit.
    ///
    /// With [`Search::Together`] each chunk's places are found first (chunks of at least
    /// [`TOGETHER_FROM`] entries), by descending for all its entries at once
    /// ([`SkipList::find_predecessors_together`]), then the entries are linked in order, each
    /// walking forward from its predecessors past the chunk's own earlier nodes.
    pub(crate) fn insert_sorted(&self, entries: &[BatchEntry<'_>], search: Search) -> usize {
        // The chunk's internal keys when it searches together; one reused key otherwise.
        let mut ikeys: Vec<Vec<u8>> = Vec::new();
        let mut one = Vec::new();
        let mut hashes = Vec::new();
        let mut inserted = 0;
        for (i, chunk) in entries.chunks(INSERT_SORTED_CHUNK).enumerate() {
            if i > 0 {
                self.let_waiters_in();
            }
            hashes.clear();
            hashes.extend(chunk.iter().map(|e| self.index_hash(e.user_key)));
            hashes[..PREFETCH_AHEAD.min(hashes.len())]
                .iter()
                .for_each(|&h| self.prefetch_slot(h));
            let together = search == Search::Together && chunk.len() >= TOGETHER_FROM;
            if together {
                ikeys.resize_with(chunk.len(), Vec::new);
                for (ikey, e) in ikeys.iter_mut().zip(chunk) {
                    internal_key(ikey, e);
                }
            }
            let mut rng = self.lock_writer();
            let together = if together {
                self.find_predecessors_together(&ikeys[..chunk.len()])
            } else {
                Vec::new()
            };
            let mut prev = [self.head(); MAX_HEIGHT];
            for (j, e) in chunk.iter().enumerate() {
                self.prefetch_slot(hashes.get(j + PREFETCH_AHEAD).copied().flatten());
                let ikey = match ikeys.get(j).filter(|_| !together.is_empty()) {
                    Some(ikey) => ikey,
                    None => {
                        internal_key(&mut one, e);
                        &one
                    }
                };
                let at = match together.get(j) {
                    Some(found) => {
                        prev = *found;
                        self.walk_forward(ikey, &mut prev);
                        prev[0].next(0)
                    }
                    None => self.find_ge_from(ikey, &mut prev),
                };
                if at.is_some_and(|n| self.holds(n, ikey, self.search_window(ikey))) {
                    continue;
                }
                let new = self.alloc_entry(rng.height(), e.user_key, e.seq, e.kind, e.value);
                self.link(new, &mut prev);
                self.index_node(new, hashes[j]);
                inserted += 1;
            }
        }
        inserted
    }

    /// For each of `keys` (ascending internal keys), the last node below it at every level, as
    /// [`SkipList::find_ge`] fills them, found for all keys together: level by level from the
    /// top, each step first loads every still-advancing key's next node (a prefetch hint), then
    /// compares them all, so one key's cache miss waits alongside the others' instead of after
    /// them. Levels at or above the list's height keep the head. REQUIRES: writer mutex held.
    fn find_predecessors_together<'a>(
        &'a self,
        keys: &[Vec<u8>],
    ) -> Vec<[NodeRef<'a>; MAX_HEIGHT]> {
        let mut preds = vec![[self.head(); MAX_HEIGHT]; keys.len()];
        let mut cursor = vec![self.head(); keys.len()];
        let mut advancing: Vec<usize> = Vec::with_capacity(keys.len());
        let windows: Vec<Option<u64>> = keys.iter().map(|k| self.search_window(k)).collect();
        for level in (0..self.height.load(Ordering::Relaxed)).rev() {
            advancing.clear();
            advancing.extend(0..keys.len());
            while !advancing.is_empty() {
                for &i in &advancing {
                    if let Some(next) = cursor[i].next(level) {
                        crate::iter::prefetch::prefetch_address(next.ptr.as_ptr());
                    }
                }
                advancing.retain(|&i| match cursor[i].next(level) {
                    Some(next) if self.before(next, &keys[i], windows[i]) => {
                        cursor[i] = next;
                        true
                    }
                    _ => {
                        preds[i][level] = cursor[i];
                        false
                    }
                });
            }
        }
        preds
    }

    /// Moves each `prev[level]` forward past the nodes below `key` linked after it was found
    /// (a multi-insert's own earlier entries), at every level the list has or a new node may
    /// get. REQUIRES: writer mutex held; each `prev[level]` is the head or a node below `key`.
    fn walk_forward<'a>(&'a self, key: &[u8], prev: &mut [NodeRef<'a>; MAX_HEIGHT]) {
        let window = self.search_window(key);
        for (level, p) in prev.iter_mut().enumerate() {
            while let Some(next) = p.next(level) {
                if !self.before(next, key, window) {
                    break;
                }
                *p = next;
            }
        }
    }

    /// Like [`Self::find_ge`] filling `prev`, but a finger search from the predecessors of the
    /// previous (smaller) key of a batch: it climbs from level 0 to the lowest level `top` whose
    /// `prev[top]`'s successor is not below `key`, then descends from there, each level starting
    /// from the larger of the node reached on the level above and `prev[level]`. Levels above
    /// `top` need no visit: no node of theirs lies between their `prev` and `key`, since every
    /// such node would also be on level `top` (upper levels are subsets of lower ones) between
    /// `prev[top]` and `key`. A batch of neighbouring keys thus visits about log(gap) levels per
    /// key instead of all of them (the climb's nodes were compared by the previous key's search,
    /// so they are in cache).
    ///
    /// REQUIRES: each `prev[level]` is the head or the last node < the previous key at `level`
    /// (or that key's own node, once linked), and `key` is larger than the previous key; for
    /// the first key of a batch, every `prev[level]` is the head.
    fn find_ge_from<'a>(
        &'a self,
        key: &[u8],
        prev: &mut [NodeRef<'a>; MAX_HEIGHT],
    ) -> Option<NodeRef<'a>> {
        let height = self.height.load(Ordering::Relaxed);
        let window = self.search_window(key);
        let below = |n: NodeRef<'_>| self.before(n, key, window);
        let mut level = 0;
        while level + 1 < height && prev[level].next(level).is_some_and(below) {
            level += 1;
        }
        let mut x = prev[level];
        loop {
            let hint = prev[level];
            if !self.is_head(hint) && (self.is_head(x) || self.node_after(hint, x)) {
                x = hint;
            }
            loop {
                match x.next(level) {
                    Some(n) if below(n) => x = n,
                    next => {
                        prev[level] = x;
                        if level == 0 {
                            return next;
                        }
                        break;
                    }
                }
            }
            level -= 1;
        }
    }

    /// Allocates and fills an unpublished node of `height` for the entry.
    fn alloc_entry(
        &self,
        height: usize,
        user_key: &[u8],
        seq: SequenceNumber,
        kind: ValueKind,
        value: &[u8],
    ) -> NodeRef<'_> {
        let ikey_len = user_key.len() + TRAILER_LEN;
        let (klen_buf, klen_n) = varint(ikey_len as u64);
        let (vlen_buf, vlen_n) = varint(value.len() as u64);
        let (klen, vlen) = (&klen_buf[..klen_n], &vlen_buf[..vlen_n]);
        let entry_len = klen.len() + ikey_len + vlen.len() + value.len();
        let node = alloc_node(
            &self.arena,
            (!self.entries_inline).then_some(&self.entries),
            height,
            entry_len,
            self.window_of(user_key),
        );
        let trailer = pack_trailer(seq, kind).to_le_bytes();
        let mut pos = 0;
        for part in [klen, user_key, &trailer, vlen, value] {
            node.entry[pos..pos + part.len()].write_copy_of_slice(part);
            pos += part.len();
        }
        debug_assert_eq!(pos, entry_len);
        // SAFETY: header, tower and entry are now initialised; the node is in our arena.
        unsafe { NodeRef::new(node.cast()) }
    }

    /// Links the unpublished node `new` after `prev` at each of its levels, and makes `new` the
    /// predecessor of later (larger) keys. REQUIRES: writer mutex held; `prev[level]` is the last
    /// node < `new` at each level.
    fn link<'a>(&'a self, new: NodeRef<'a>, prev: &mut [NodeRef<'a>; MAX_HEIGHT]) {
        let height = new.height();
        if height > self.height.load(Ordering::Relaxed) {
            // `prev` holds the head for levels above the old height.
            self.height.store(height, Ordering::Relaxed);
        }
        for (level, p) in prev.iter_mut().enumerate().take(height) {
            // Only the writer (us, under the mutex) changes next pointers, so Relaxed reads see
            // the latest value. The new node is unpublished, so its own stores may be Relaxed.
            new.slot(level)
                .store(p.slot(level).load(Ordering::Relaxed), Ordering::Relaxed);
            // Publish: everything written to the node above happens-before this store.
            p.slot(level).store(new.ptr.as_ptr(), Ordering::Release);
            *p = new;
        }
        self.len.fetch_add(1, Ordering::Relaxed);
    }

    /// The window a search for the internal key `key` compares nodes by first (`None`: its
    /// key has none, and nodes are compared by whole keys).
    #[inline]
    fn search_window(&self, key: &[u8]) -> Option<u64> {
        self.window_of(key::user_key(key))
    }

    /// Whether node `n` orders before the internal key `key`, whose [`SkipList::search_window`]
    /// is `window`: by the windows when both have one and they differ, else by whole keys.
    #[inline]
    fn before(&self, n: NodeRef<'_>, key: &[u8], window: Option<u64>) -> bool {
        let h = n.header();
        if let Some(w) = window
            && h.flags & WINDOWED != 0
            && h.window != w
        {
            return h.window < w;
        }
        self.cmp.compare(n.key(), key) == CmpOrdering::Less
    }

    /// Whether node `n` holds the internal key `key`, whose [`SkipList::search_window`] is
    /// `window`: windows that differ say no without reading the node's entry (which lives
    /// apart from the node, a cache miss of its own).
    #[inline]
    fn holds(&self, n: NodeRef<'_>, key: &[u8], window: Option<u64>) -> bool {
        let h = n.header();
        if let Some(w) = window
            && h.flags & WINDOWED != 0
            && h.window != w
        {
            return false;
        }
        self.cmp.compare(n.key(), key) == CmpOrdering::Equal
    }

    /// Whether node `a` orders after node `b`: by their windows when both have one and they
    /// differ, else by their keys.
    #[inline]
    fn node_after(&self, a: NodeRef<'_>, b: NodeRef<'_>) -> bool {
        let (ha, hb) = (a.header(), b.header());
        if ha.flags & hb.flags & WINDOWED != 0 && ha.window != hb.window {
            return ha.window > hb.window;
        }
        self.cmp.compare(a.key(), b.key()) == CmpOrdering::Greater
    }

    /// The first node with key >= `key`; fills `prev[level]` with the last node < `key`.
    fn find_ge<'a>(
        &'a self,
        key: &[u8],
        mut prev: Option<&mut [NodeRef<'a>; MAX_HEIGHT]>,
    ) -> Option<NodeRef<'a>> {
        let window = self.search_window(key);
        let mut x = self.head();
        let mut level = self.height.load(Ordering::Relaxed) - 1;
        loop {
            let next = x.next(level);
            match next {
                Some(n) if self.before(n, key, window) => x = n,
                _ => {
                    if let Some(p) = prev.as_deref_mut() {
                        p[level] = x;
                    }
                    if level == 0 {
                        return next;
                    }
                    level -= 1;
                }
            }
        }
    }

    /// The last node with key < `key`, or the head if there is none.
    fn find_lt(&self, key: &[u8]) -> NodeRef<'_> {
        let window = self.search_window(key);
        let mut x = self.head();
        let mut level = self.height.load(Ordering::Relaxed) - 1;
        loop {
            match x.next(level) {
                Some(n) if self.before(n, key, window) => x = n,
                _ if level == 0 => return x,
                _ => level -= 1,
            }
        }
    }

    /// The last node, or the head if the list is empty.
    fn find_last(&self) -> NodeRef<'_> {
        let mut x = self.head();
        let mut level = self.height.load(Ordering::Relaxed) - 1;
        loop {
            match x.next(level) {
                Some(n) => x = n,
                None if level == 0 => return x,
                None => level -= 1,
            }
        }
    }

    /// The bytes every user key in the list starts with (the common prefix of its first and
    /// last keys); empty for an empty list.
    pub(crate) fn common_prefix(&self) -> &[u8] {
        let (Some(first), last) = (self.head().next(0), self.find_last()) else {
            return &[];
        };
        let (a, b) = (key::user_key(first.key()), key::user_key(last.key()));
        let n = a.iter().zip(b).take_while(|(x, y)| x == y).count();
        &a[..n]
    }

    /// The first entry with internal key >= `target`, as (internal key, value).
    pub(crate) fn seek(&self, target: &[u8]) -> Option<(&[u8], &[u8])> {
        self.find_ge(target, None).map(|n| (n.key(), n.value()))
    }

    /// The distinct user keys of about `n` to `BRANCHING * n` nodes evenly spread over the
    /// list, ascending (of every node in a list of fewer than `n`; fewer keys where keys have
    /// many versions): the nodes of the highest level expected to hold at least `n`, so it
    /// walks only them. Safe to call while a writer inserts. The keys are borrowed from the
    /// list: a caller keeps a few of tens of thousands, and copying each cost more than the
    /// walk (a successor's sample was 4% of a key-order load's samples, nearly all in `malloc`
    /// and the page faults of fresh heap).
    pub(crate) fn sample_user_keys(&self, n: usize) -> Vec<&[u8]> {
        let (mut level, mut expected) = (0, self.len());
        while level + 1 < MAX_HEIGHT && expected / BRANCHING as usize >= n.max(1) {
            level += 1;
            expected /= BRANCHING as usize;
        }
        let mut keys: Vec<&[u8]> = Vec::with_capacity(expected + expected / 2);
        let mut x = self.head().next(level);
        while let Some(node) = x {
            let user = &node.key()[..node.key().len().saturating_sub(TRAILER_LEN)];
            if keys.last().is_none_or(|&last| last != user) {
                keys.push(user);
            }
            x = node.next(level);
        }
        keys
    }
}

/// A freshly allocated, unpublished node: header and null tower written, entry uninitialised.
struct NewNode<'a> {
    ptr: NonNull<u8>,
    entry: &'a mut [MaybeUninit<u8>],
}

impl NewNode<'_> {
    fn cast(&self) -> NonNull<Node> {
        self.ptr.cast()
    }
}

/// Allocates a node of `height` levels in `nodes` whose `entry_len` entry bytes go in
/// `entries`, or after the tower when there is no `entries` or the entry's address there does
/// not fit the header (the bytes taken from `entries` are then lost, as no supported platform
/// hands out such addresses).
fn alloc_node<'a>(
    nodes: &'a Arena,
    entries: Option<&'a Arena>,
    height: usize,
    entry_len: usize,
    window: Option<u64>,
) -> NewNode<'a> {
    debug_assert!(height <= MAX_HEIGHT);
    // Exposed, so that `NodeRef::entry_start` may turn the address back into a pointer.
    let apart = entries
        .map(|arena| arena.allocate(entry_len, 1))
        .filter(|entry| entry.as_ptr().expose_provenance() >> ENTRY_ADDRESS_BITS == 0);
    let inline_len = if apart.is_some() { 0 } else { entry_len };
    let ptr = nodes.allocate(tower_end(height) + inline_len, align_of::<Node>());
    let mut flags = if window.is_some() { WINDOWED } else { 0 };
    let address = match apart {
        Some(entry) => entry.as_ptr().addr(),
        None => {
            flags |= ENTRY_INLINE;
            0
        }
    };
    // SAFETY: the node's region is ours, large enough and aligned for `Node` (whose size is a
    // multiple of the AtomicPtr alignment, so the tower is aligned too); we initialise the
    // header and tower, and hand out the entry bytes (after the tower, or the region of
    // `entries`, also ours) as `MaybeUninit`.
    unsafe {
        ptr.cast::<Node>().write(Node {
            height: height as u8,
            flags,
            entry_low: address as u16,
            entry_high: (address >> 16) as u32,
            window: window.unwrap_or(0),
        });
        let slots = ptr.add(size_of::<Node>()).cast::<AtomicPtr<Node>>();
        for i in 0..height {
            slots.add(i).write(AtomicPtr::new(ptr::null_mut()));
        }
        let entry = apart.unwrap_or_else(|| ptr.add(tower_end(height)));
        let entry =
            std::slice::from_raw_parts_mut(entry.cast::<MaybeUninit<u8>>().as_ptr(), entry_len);
        NewNode { ptr, entry }
    }
}

/// Allocates the head: a node of [`MAX_HEIGHT`] whose inline entry has an empty key and value.
fn alloc_head(nodes: &Arena) -> NonNull<Node> {
    let head = alloc_node(nodes, None, MAX_HEIGHT, 2, None);
    head.entry.write_copy_of_slice(&[0, 0]);
    head.cast()
}

/// A cursor over a shared list; keeps the list (and so its arena) alive.
pub(crate) struct Iter {
    list: Arc<SkipList>,
    /// The current node; never the head.
    node: Option<NonNull<Node>>,
}

// SAFETY: `node` points into the arena of `list`, which the iterator keeps alive and which is
// itself Send + Sync; the node is only read.
unsafe impl Send for Iter {}
// SAFETY: see `Send` above.
unsafe impl Sync for Iter {}

impl fmt::Debug for Iter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter")
            .field("valid", &self.valid())
            .finish_non_exhaustive()
    }
}

impl Iter {
    /// An unpositioned cursor over `list`.
    pub(crate) fn new(list: Arc<SkipList>) -> Self {
        Iter { list, node: None }
    }

    fn current(&self) -> Option<NodeRef<'_>> {
        // SAFETY: `node` came from `self.list`, which `self` keeps alive.
        self.node.map(|p| unsafe { NodeRef::new(p) })
    }

    /// The position for `node`: `None` for no node or the head.
    fn position(list: &SkipList, node: Option<NodeRef<'_>>) -> Option<NonNull<Node>> {
        node.filter(|n| !list.is_head(*n)).map(|n| n.ptr)
    }

    pub(crate) fn valid(&self) -> bool {
        self.node.is_some()
    }

    pub(crate) fn seek_to_first(&mut self) {
        self.node = Self::position(&self.list, self.list.head().next(0));
    }

    pub(crate) fn seek_to_last(&mut self) {
        self.node = Self::position(&self.list, Some(self.list.find_last()));
    }

    pub(crate) fn seek(&mut self, target: &[u8]) {
        self.node = Self::position(&self.list, self.list.find_ge(target, None));
    }

    pub(crate) fn next(&mut self) {
        let next = self.current().and_then(|n| n.next(0)).map(|n| n.ptr);
        self.node = next;
    }

    /// Moves to the last entry before the current one: an O(log n) search, as in LevelDB.
    pub(crate) fn prev(&mut self) {
        let Some(cur) = self.current() else { return };
        self.node = Self::position(&self.list, Some(self.list.find_lt(cur.key())));
    }

    pub(crate) fn key(&self) -> &[u8] {
        self.current().map_or(&[], NodeRef::key)
    }

    pub(crate) fn value(&self) -> &[u8] {
        self.current().map_or(&[], NodeRef::value)
    }
}

#[cfg(test)]
#[path = "skiplist_tests.rs"]
mod tests;
