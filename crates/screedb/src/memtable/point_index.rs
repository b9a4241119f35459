//! A hash index over a skiplist's nodes: for each user key, its newest node. A point read of a
//! key the memtable holds then takes one probe of this table and one node instead of a skiplist
//! search, a walk of about twenty nodes, each a likely cache miss once the list outgrows the
//! cache (two misses per node: perf of `screedb serve` under pipelined GETs put a fifth of its
//! CPU in that walk). RocksDB's closest is a hash-linked-list memtable; LevelDB has none. The
//! skiplist records each node's entry (key and value, which live apart from the node), so a hit
//! reads them without the node; "node" below means that address.
//!
//! Open addressing with linear probing over 64-bit slots. A slot is empty (0) or a node's
//! address (its low 48 bits) with the top 16 bits of the key's hash as a tag above it, so a
//! probe touches a node only when the tags match. The table never grows: it takes new keys until
//! [`LOAD_LIMIT`] of its slots are used; a key that finds it full (or a node whose address needs
//! more than 48 bits) is not indexed and the index marks itself incomplete. While complete, a
//! probe that finds no node proves the key absent, so the index is the memtable's key filter
//! too; the memtable's Bloom filter (`filter.rs`), when it has one, then records only the keys
//! the index could not take, and a reader of an incomplete index asks it before searching the
//! skiplist. Writes thus touch one slot, not a slot and a filter word. Keys are compared by
//! their bytes, as the memtable's key filter and the tables' Bloom filters hash them.
//!
//! Concurrency: one writer (under the skiplist's writer mutex), any number of lock-free readers.
//! A slot goes from empty to a key's node and afterwards only to newer nodes of that key, by
//! Release stores; it never empties. The writer records a node after linking it and before the
//! insert returns, and marks the index incomplete before that too, so a reader that can see an
//! entry (it synchronised with the sequence published after the insert, or with the membuffer
//! bucket the entry left after its drain, as for the key filter) also sees its slot or the
//! mark. A slot may name a node newer than the reader's snapshot: the reader then searches the
//! skiplist.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use super::filter::KeyFilter;

/// Share of the slots the index fills at most: linear probing stays within a cache line or
/// two per probe up to about this load.
const LOAD_LIMIT: (usize, usize) = (4, 5);

/// Bits of a slot that hold the node's address.
const ADDRESS_BITS: u32 = 48;

const ADDRESS_MASK: u64 = (1 << ADDRESS_BITS) - 1;

/// What a probe found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Probe {
    /// The newest node of the key recorded so far.
    Hit(NonNull<u8>),
    /// The key has no node (the index is complete).
    Absent,
    /// The key is not indexed; it may have a node.
    Unknown,
}

/// The index: slots and how many are used.
pub(super) struct PointIndex {
    slots: Box<[AtomicU64]>,
    /// Slots used (changed by the writer only).
    used: AtomicUsize,
    /// Set once a node could not be recorded.
    incomplete: AtomicBool,
    /// The keys not recorded, when given a filter; without one a probe of an incomplete index
    /// that finds no node is [`Probe::Unknown`].
    overflow: Option<KeyFilter>,
}

impl std::fmt::Debug for PointIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PointIndex")
            .field("slots", &self.slots.len())
            .field("used", &self.used.load(Ordering::Relaxed))
            .field("incomplete", &self.incomplete.load(Ordering::Relaxed))
            .finish()
    }
}

/// The hash of `user_key` the index (and its overflow filter) probes with.
pub(super) fn hash(user_key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(user_key)
}

/// The node address `node` as a slot of `hash`'s tag; `None` past [`ADDRESS_BITS`].
fn slot_of(hash: u64, node: NonNull<u8>) -> Option<u64> {
    // Exposed, so that `node_of` may turn the address back into a pointer into the arena.
    let address = node.as_ptr().expose_provenance() as u64;
    (address & !ADDRESS_MASK == 0).then_some(address | (hash & !ADDRESS_MASK))
}

/// The node a non-empty slot names.
fn node_of(slot: u64) -> NonNull<u8> {
    // Recorded from a `NonNull` whose provenance `slot_of` exposed, so the address is not 0
    // and the pointer may read the node.
    let ptr = std::ptr::with_exposed_provenance_mut::<u8>((slot & ADDRESS_MASK) as usize);
    NonNull::new(ptr).expect("an index slot names a node")
}

impl PointIndex {
    /// An index of about `bytes` (at least 8 slots) that records the keys it cannot take in
    /// `overflow`; `None` for 0.
    pub(super) fn with_bytes(bytes: usize, overflow: Option<KeyFilter>) -> Option<Self> {
        if bytes == 0 {
            return None;
        }
        let slots = (bytes / 8).max(8);
        Some(PointIndex {
            slots: super::huge_pages::boxed_slice(slots, |_| AtomicU64::new(0)),
            used: AtomicUsize::new(0),
            incomplete: AtomicBool::new(false),
            overflow,
        })
    }

    /// Bytes the index and its overflow filter hold.
    pub(super) fn bytes(&self) -> usize {
        self.slots.len() * 8 + self.overflow.as_ref().map_or(0, KeyFilter::bytes)
    }

    /// Marks the index incomplete: the key of `hash` was not recorded.
    fn overflowed(&self, hash: u64) {
        if let Some(filter) = &self.overflow {
            filter.insert_hash(hash);
        }
        self.incomplete.store(true, Ordering::Release);
    }

    /// The slot a probe for `hash` starts at (multiply-shift, no division).
    fn home(&self, hash: u64) -> usize {
        ((u128::from(hash as u32) * self.slots.len() as u128) >> 32) as usize
    }

    /// Starts loading the slot a probe for `hash` begins at, so that a writer's record overlaps
    /// its cache miss with other work.
    pub(super) fn prefetch(&self, hash: u64) {
        crate::iter::prefetch::prefetch_address(&raw const self.slots[self.home(hash)]);
    }

    /// Starts loading the first node whose tag matches `hash` (the key's, most likely), reading
    /// only slots: for a read of many keys, after [`PointIndex::prefetch`] of each has loaded
    /// their slots, so that the nodes' cache misses overlap too.
    pub(super) fn prefetch_node(&self, hash: u64) {
        let tag = hash & !ADDRESS_MASK;
        for slot in self.probe_order(hash) {
            let value = slot.load(Ordering::Relaxed);
            if value == 0 {
                return;
            }
            if value & !ADDRESS_MASK == tag {
                crate::iter::prefetch::prefetch_address(node_of(value).as_ptr());
                return;
            }
        }
    }

    /// The slots from `hash`'s home on, wrapping around once.
    fn probe_order(&self, hash: u64) -> impl Iterator<Item = &AtomicU64> {
        let home = self.home(hash);
        self.slots[home..].iter().chain(&self.slots[..home])
    }

    /// The newest recorded node of the key of `hash` that `is_key` accepts (the caller compares
    /// the node's key with its own).
    pub(super) fn find(&self, hash: u64, mut is_key: impl FnMut(NonNull<u8>) -> bool) -> Probe {
        let tag = hash & !ADDRESS_MASK;
        for slot in self.probe_order(hash) {
            let value = slot.load(Ordering::Acquire);
            if value == 0 {
                break;
            }
            if value & !ADDRESS_MASK == tag && is_key(node_of(value)) {
                return Probe::Hit(node_of(value));
            }
        }
        let unrecorded = self.incomplete.load(Ordering::Acquire)
            && self
                .overflow
                .as_ref()
                .is_none_or(|filter| filter.may_contain_hash(hash));
        if unrecorded {
            Probe::Unknown
        } else {
            Probe::Absent
        }
    }

    /// Records `node`, a node of the key of `hash`, unless the index holds a newer node of that
    /// key. `newer_than(other)` is `None` when `other` is a node of another key, else whether
    /// `node` is newer. Writer only (serialized by the caller).
    pub(super) fn record(
        &self,
        hash: u64,
        node: NonNull<u8>,
        mut newer_than: impl FnMut(NonNull<u8>) -> Option<bool>,
    ) {
        let tag = hash & !ADDRESS_MASK;
        let Some(new) = slot_of(hash, node) else {
            self.overflowed(hash);
            return;
        };
        for slot in self.probe_order(hash) {
            // Only this writer stores slots, so a Relaxed load sees the latest.
            let value = slot.load(Ordering::Relaxed);
            if value == 0 {
                let used = self.used.load(Ordering::Relaxed);
                if used >= self.slots.len() / LOAD_LIMIT.1 * LOAD_LIMIT.0 {
                    break;
                }
                self.used.store(used + 1, Ordering::Relaxed);
                slot.store(new, Ordering::Release);
                return;
            }
            if value & !ADDRESS_MASK == tag
                && let Some(newer) = newer_than(node_of(value))
            {
                if newer {
                    slot.store(new, Ordering::Release);
                }
                return;
            }
        }
        self.overflowed(hash);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nodes for the tests: each a boxed (key, version), addressed by its box.
    #[allow(
        clippy::vec_box,
        reason = "the index holds each node's address: it must not move"
    )]
    struct Nodes(Vec<Box<(Vec<u8>, u64)>>);

    impl Nodes {
        fn add(&mut self, key: &[u8], version: u64) -> NonNull<u8> {
            self.0.push(Box::new((key.to_vec(), version)));
            let node: &(Vec<u8>, u64) = self.0.last().unwrap();
            NonNull::from(node).cast::<u8>()
        }

        fn get(node: NonNull<u8>) -> &'static (Vec<u8>, u64) {
            // SAFETY: test nodes are boxes kept alive by `Nodes` for the whole test.
            unsafe { node.cast::<(Vec<u8>, u64)>().as_ref() }
        }
    }

    fn record(index: &PointIndex, nodes: &mut Nodes, key: &[u8], version: u64) {
        let node = nodes.add(key, version);
        index.record(hash(key), node, |other| {
            let other = Nodes::get(other);
            (other.0 == key).then_some(version > other.1)
        });
    }

    fn find(index: &PointIndex, key: &[u8]) -> Option<Option<u64>> {
        match index.find(hash(key), |n| Nodes::get(n).0 == key) {
            Probe::Hit(n) => Some(Some(Nodes::get(n).1)),
            Probe::Absent => Some(None),
            Probe::Unknown => None,
        }
    }

    #[test]
    fn finds_the_newest_node_of_each_key_and_proves_absence_while_complete() {
        let index = PointIndex::with_bytes(64 << 10, None).unwrap();
        let mut nodes = Nodes(Vec::new());
        for round in [2u64, 1, 3] {
            for i in 0..5000u32 {
                record(&index, &mut nodes, format!("key{i}").as_bytes(), round);
            }
        }
        for i in 0..5000u32 {
            assert_eq!(find(&index, format!("key{i}").as_bytes()), Some(Some(3)));
        }
        for i in 5000..6000u32 {
            assert_eq!(find(&index, format!("key{i}").as_bytes()), Some(None));
        }
    }

    #[test]
    fn a_full_index_stops_proving_absence_but_keeps_what_it_holds() {
        let index = PointIndex::with_bytes(8 * 100, None).unwrap();
        let mut nodes = Nodes(Vec::new());
        for i in 0..200u32 {
            record(&index, &mut nodes, format!("key{i}").as_bytes(), 1);
        }
        assert_eq!(index.used.load(Ordering::Relaxed), 80);
        let held = (0..200u32)
            .filter(|i| find(&index, format!("key{i}").as_bytes()) == Some(Some(1)))
            .count();
        assert_eq!(held, 80);
        assert_eq!(find(&index, b"never written"), None);
        assert_eq!(find(&index, b"key150"), None);
        // Keys already held still take newer nodes.
        for i in 0..200u32 {
            record(&index, &mut nodes, format!("key{i}").as_bytes(), 2);
        }
        let newer = (0..200u32)
            .filter(|i| find(&index, format!("key{i}").as_bytes()) == Some(Some(2)))
            .count();
        assert_eq!(newer, 80);
    }

    #[test]
    fn a_full_index_with_an_overflow_filter_still_rules_out_most_absent_keys() {
        let filter = KeyFilter::with_bytes(4096);
        let index = PointIndex::with_bytes(8 * 100, filter).unwrap();
        let mut nodes = Nodes(Vec::new());
        for i in 0..200u32 {
            record(&index, &mut nodes, format!("key{i}").as_bytes(), 1);
        }
        // Every key is found or left to the skiplist search, never called absent.
        for i in 0..200u32 {
            let found = find(&index, format!("key{i}").as_bytes());
            assert!(matches!(found, Some(Some(1)) | None), "key{i}: {found:?}");
        }
        let ruled_out = (200..1200u32)
            .filter(|i| find(&index, format!("key{i}").as_bytes()) == Some(None))
            .count();
        assert!(ruled_out > 950, "{ruled_out} of 1000 absent keys ruled out");
    }

    #[test]
    fn zero_bytes_is_no_index() {
        assert!(PointIndex::with_bytes(0, None).is_none());
        assert_eq!(PointIndex::with_bytes(1, None).unwrap().bytes(), 64);
    }
}
