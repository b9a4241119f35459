//! The memtable: recent writes, sorted in memory until they are flushed to a table.
//!
//! A [`MemTable`] is a skiplist of entries whose nodes live in an arena. Writes are
//! serialized inside the memtable; reads ([`MemTable::get`] and [`MemTableIterator`]) never take
//! a lock and may run concurrently with a write, seeing the memtable either before or after it.
//! Entries are never removed: memory is released when the last `Arc<MemTable>` (the memtable or
//! one of its iterators) drops. See `docs/memtable.md`.

mod arena;
mod ascending;
mod bucket;
mod filter;
mod hoods;
mod huge_pages;
mod membuffer;
#[cfg(all(test, feature = "model-check"))]
mod model_check;
mod point_index;
mod runs;
mod skiplist;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use crate::comparator::InternalKeyComparator;
use crate::key::{MAX_SEQUENCE, SequenceNumber, ValueKind};
use crate::write_batch::{BatchOp, WriteBatch};

use ascending::Ascending;
use bucket::BufferedEntry;
use membuffer::{Membuffer, PutOutcome};
pub use runs::MAX_RUNS;
use runs::{RunShape, Runs, RunsCursor};
pub use skiplist::BatchEntry;
use skiplist::Search;

/// What [`MemTable::get`] found for a user key at a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LookupResult {
    /// The newest visible entry is a value.
    Found(Vec<u8>),
    /// The newest visible entry is a deletion: the key is absent, and older sources must not be
    /// consulted.
    Deleted,
    /// The memtable has no visible entry for the key; look in older sources.
    NotFound,
}

/// Keys sampled from the previous memtable per membuffer neighbourhood to cut key ranges
/// ([`MemTable::with_neighbourhoods_from`]): a range's share of the writes then varies by
/// about an eighth (with 2, ranges took from a third to twice their share, and the fuller
/// ones' buckets refused 2.3% of the puts; 16 refused 0.7-0.8% and inserted 10-20% slower
/// at 4 GiB, `docs/memory.md`).
const SAMPLE_PER_HOOD: usize = 64;

/// A sorted in-memory table of internal-key entries. `Send + Sync`; share it as `Arc<MemTable>`.
///
/// With a membuffer ([`MemTable::with_membuffer`], FloDB's design), [`MemTable::put`] first
/// tries a small hash table (keys in order skip it); buffered entries move to the skiplist by
/// [`MemTable::drain`].
/// Reads consult both. Iteration sees the skiplist only: drain first.
///
/// The skiplist is one run, or several of bounded size ([`MemTable::with_runs_of`],
/// `runs.rs`). With a key filter ([`MemTable::with_key_filter`]), point reads skip a run for
/// keys it rules out (`filter.rs`); with a point index ([`MemTable::with_point_index`]) they
/// find the newest entry of a key a run holds without searching it (`point_index.rs`).
pub struct MemTable {
    runs: Runs,
    buffer: Option<Membuffer>,
    /// Puts that found no room in the membuffer and went to the skiplist (a statistic).
    fallbacks: AtomicU64,
    /// Puts of keys not buffered sent to the skiplist while scans paused the membuffer (a
    /// statistic).
    paused: AtomicU64,
    /// The running maximum of the keys put, for puts in key order ([`MemTable::put`]).
    ascending: Ascending,
    /// Puts that skipped the membuffer as part of a run of ascending keys (a statistic).
    appended: AtomicU64,
    /// The keys cutting a sample of this memtable's keys into 1024 equal parts, for the next
    /// memtable's key-range neighbourhoods ([`MemTable::sample_for_successor`]), taken once.
    successor_sample: OnceLock<Vec<Vec<u8>>>,
}

impl fmt::Debug for MemTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemTable")
            .field("len", &self.len())
            .field("memory_usage", &self.approximate_memory_usage())
            .finish()
    }
}

impl MemTable {
    /// An empty memtable ordered by `icmp`.
    pub fn new(icmp: InternalKeyComparator) -> Self {
        MemTable {
            runs: Runs::new(RunShape {
                cmp: icmp,
                run_bytes: 0,
                filter_bytes: 0,
                index_bytes: 0,
                shared: Box::default(),
            }),
            buffer: None,
            fallbacks: AtomicU64::new(0),
            paused: AtomicU64::new(0),
            ascending: Ascending::default(),
            appended: AtomicU64::new(0),
            successor_sample: OnceLock::new(),
        }
    }

    /// Keeps the skiplist in runs of about `run_bytes` each (0: one run, the default): once
    /// the run writes go to has allocated that much, the writer starts another, so inserts
    /// search lists of at most that size however large the memtable grows (`runs.rs`). After
    /// [`MAX_RUNS`] runs the last one takes every later write. Call before the first write.
    #[must_use]
    pub fn with_runs_of(mut self, run_bytes: usize) -> Self {
        self.runs.reshape(|shape| shape.run_bytes = run_bytes);
        self
    }

    /// Adds a Bloom filter of about `bytes` over the keys of each run of the skiplist (none for
    /// 0), so point reads of keys it does not hold skip its search. Call before the first
    /// write.
    #[must_use]
    pub fn with_key_filter(mut self, bytes: usize) -> Self {
        self.runs.reshape(|shape| shape.filter_bytes = bytes);
        self
    }

    /// Adds a hash index of about `bytes` to each run of the skiplist, from each user key to
    /// its newest entry there (none for 0), so point reads of keys it holds take one probe
    /// instead of a skiplist search, and those of keys it rules out none. The key filter then
    /// records only the keys the index cannot take (`point_index.rs`). Call before the first
    /// write.
    #[must_use]
    pub fn with_point_index(mut self, bytes: usize) -> Self {
        self.runs.reshape(|shape| shape.index_bytes = bytes);
        self
    }

    /// An empty memtable with a membuffer of about `buffer_bytes` of keys and values, in
    /// buckets of `bucket_entries` entries.
    pub fn with_membuffer(
        icmp: InternalKeyComparator,
        buffer_bytes: usize,
        bucket_entries: usize,
    ) -> Self {
        MemTable {
            buffer: Some(Membuffer::new(buffer_bytes, bucket_entries)),
            ..MemTable::new(icmp)
        }
    }

    /// Runs the skiplist has (1 unless [`MemTable::with_runs_of`] bounds their size).
    pub fn runs(&self) -> usize {
        self.runs.count()
    }

    /// Cuts this memtable's membuffer into key-range neighbourhoods at the keys `previous` (the
    /// memtable it replaces, whose writes predict its own) sampled for it
    /// ([`MemTable::sample_for_successor`]), so that drains hand the skiplist neighbouring keys
    /// (`hoods.rs`). Kept by hash when `previous` took no sample or too small a one, or when it
    /// cut its own by range and more than an eighth of its entries then found no room in the
    /// membuffer (the keys moved on: keys past the last splitter fill the last range alone);
    /// the memtable after that tries ranges again. Call before the first write.
    #[must_use]
    pub fn with_neighbourhoods_from(mut self, previous: &MemTable) -> Self {
        if !self.is_empty() {
            return self; // buffered keys would no longer be found
        }
        let Some(buffer) = self.buffer.take() else {
            return self;
        };
        let missed = previous.membuffer_by_range()
            && previous.membuffer_fallbacks() as usize * 8 > previous.len();
        self.buffer = Some(match previous.successor_sample.get() {
            Some(sample) if !missed => {
                let user = Arc::clone(self.comparator().user());
                buffer.with_ranges_from(sample, user)
            }
            _ => buffer,
        });
        self
    }

    /// Lets the skiplist's searches compare the bytes after the prefix every key of `previous`
    /// shared (`SkipList::set_shared_prefix`): a store of keys such as `user0000001234`
    /// then orders most nodes by one integer comparison. Keys without that prefix are compared
    /// whole, as in a list without one. Call before the first write.
    #[must_use]
    pub fn with_shared_prefix_from(mut self, previous: &MemTable) -> Self {
        let prefix = previous.runs.common_prefix().into();
        self.runs.reshape(|shape| shape.shared = prefix);
        self
    }

    /// Samples this memtable's keys for its successor's neighbourhoods
    /// ([`MemTable::with_neighbourhoods_from`]), once; later calls do nothing. A walk of one of
    /// the skiplist's upper levels, `SAMPLE_PER_HOOD` keys for each of the most
    /// neighbourhoods a membuffer has, or up to four times as many (20-60 ms for memtables of
    /// 64 MiB to 1 GiB when every sampled key was copied; now only the kept ones are), so the
    /// drain thread calls it (once the memtable is half full), never the writer at the switch.
    pub fn sample_for_successor(&self) {
        self.successor_sample.get_or_init(|| {
            let parts = membuffer::MAX_NEIGHBOURHOODS;
            let sample = self.runs.sample_user_keys(SAMPLE_PER_HOOD * parts);
            // Only the keys cutting it into equal parts are kept (hoods.rs picks its splitters
            // among them); none if there are too few keys to cut.
            if sample.len() < parts {
                return Vec::new();
            }
            (1..parts)
                .map(|i| sample[i * sample.len() / parts].to_vec())
                .collect()
        });
    }

    /// True if this memtable's membuffer has key-range neighbourhoods
    /// ([`MemTable::with_neighbourhoods_from`]).
    pub fn membuffer_by_range(&self) -> bool {
        self.buffer.as_ref().is_some_and(Membuffer::is_by_range)
    }

    /// Inserts a batch with FloDB's multi-insert: sorts `entries` by internal key, then inserts
    /// them in one pass reusing each key's predecessors for the next. Entries whose internal key
    /// is already present are skipped. Same requirements as [`MemTable::add`].
    pub fn add_batch(&self, entries: &mut [BatchEntry<'_>]) {
        self.sort_batch(entries);
        self.insert_sorted(entries, Search::Finger);
    }

    /// Sorts `entries` by internal key.
    fn sort_batch(&self, entries: &mut [BatchEntry<'_>]) {
        let user = Arc::clone(self.comparator().user());
        entries.sort_unstable_by(|a, b| {
            user.compare(a.user_key, b.user_key)
                .then(b.seq.cmp(&a.seq))
                .then(b.kind.cmp(&a.kind))
        });
    }

    /// Inserts sorted `entries` into the skiplist's current run.
    fn insert_sorted(&self, entries: &[BatchEntry<'_>], search: Search) {
        self.runs.insert_sorted(entries, search);
    }

    /// Inserts every operation of `batch` into the skiplist at the batch's sequence numbers: a
    /// lone operation with one insert, several with one multi-insert that finds the places of
    /// its keys together (a write group's keys are spread over the list: `Search::Together` in
    /// `skiplist.rs`). An operation whose internal key is already there is skipped.
    /// REQUIRES: the batch was validated ([`WriteBatch::validate`]): an operation that does
    /// not decode ends it.
    pub fn add_write_batch(&self, batch: &WriteBatch) {
        self.add_write_batch_to_run(batch);
        self.runs.seal_if_full();
    }

    fn add_write_batch_to_run(&self, batch: &WriteBatch) {
        if batch.count() == 1 {
            // A lone put or delete (most writes without contention): one insert, without the
            // multi-insert's vectors and its finger search (fillrandom +16%, fillseq +26%,
            // docs/memtable.md).
            match batch.iter().next() {
                Some(Ok(BatchOp::Put { key, value })) => {
                    self.add_to_run(batch.sequence(), ValueKind::Value, key, value);
                }
                Some(Ok(BatchOp::Delete { key })) => {
                    self.add_to_run(batch.sequence(), ValueKind::Deletion, key, b"");
                }
                Some(Err(_)) | None => {}
            }
            return;
        }
        let mut entries: Vec<BatchEntry<'_>> = Vec::with_capacity(batch.count() as usize);
        for (seq, op) in (batch.sequence()..).zip(batch.iter()) {
            let (user_key, kind, value) = match op {
                Ok(BatchOp::Put { key, value }) => (key, ValueKind::Value, value),
                Ok(BatchOp::Delete { key }) => (key, ValueKind::Deletion, &b""[..]),
                Err(_) => break,
            };
            entries.push(BatchEntry {
                user_key,
                seq,
                kind,
                value,
            });
        }
        if let Some(last) = entries.last() {
            self.runs.note_write(last.seq);
        }
        self.sort_batch(&mut entries);
        self.insert_sorted(&entries, Search::Together);
    }

    /// Writes one entry as the key's newest version: into the membuffer if there is one, it has
    /// room and admits the key (a key already buffered always; another unless a scan paused
    /// admission, [`MemTable::drain_for_scan`]), else into the skiplist. A key above every key
    /// put before, after a streak of such puts, goes straight to the skiplist (`ascending.rs`).
    /// A buffered older version of the key is overwritten in place only if no snapshot can
    /// read it: `newest_snapshot` gives the largest live snapshot sequence (or `None`), and the
    /// old version is kept (moved to the skiplist first) when it is at or below it. It is
    /// called only when the put meets a buffered version of its key, so a caller may take the
    /// snapshot list's lock there, lazily (`db/write.rs`).
    ///
    /// REQUIRES: calls serialized, each `seq` larger than every earlier one; as for `add`.
    pub fn put(
        &self,
        seq: SequenceNumber,
        kind: ValueKind,
        user_key: &[u8],
        value: &[u8],
        newest_snapshot: impl Fn() -> Option<SequenceNumber>,
    ) {
        let Some(buffer) = &self.buffer else {
            self.add(seq, kind, user_key, value);
            return;
        };
        self.runs.note_write(seq);
        if self
            .ascending
            .note(user_key, self.runs.comparator().user().as_ref())
        {
            // Above every key put before: not buffered, so the skiplist may take it directly.
            self.appended.fetch_add(1, Ordering::Relaxed);
            self.runs.insert(seq, kind, user_key, value); // its write was noted above
            self.runs.seal_if_full();
            return;
        }
        let may_drop = |old: SequenceNumber| newest_snapshot().is_none_or(|s| old > s);
        let keep = |old: BufferedEntry<'_>| {
            self.insert_sorted(&[entry_ref(&old)], Search::Finger);
        };
        let counter = match buffer.put(user_key, seq, kind, value, may_drop, keep) {
            PutOutcome::Stored => return,
            PutOutcome::Displaced => None,
            PutOutcome::Full => Some(&self.fallbacks),
            PutOutcome::Paused => Some(&self.paused),
        };
        if let Some(counter) = counter {
            counter.fetch_add(1, Ordering::Relaxed);
            self.runs.insert(seq, kind, user_key, value); // its write was noted above
        }
        self.runs.seal_if_full();
    }

    /// Puts that found their membuffer bucket (or the whole membuffer) full and went straight
    /// to the skiplist; 0 without a membuffer.
    pub fn membuffer_fallbacks(&self) -> u64 {
        self.fallbacks.load(Ordering::Relaxed)
    }

    /// Puts that went straight to the skiplist because their key was above every key put
    /// before, in a run of such puts (`ascending.rs`); 0 without a membuffer.
    pub fn membuffer_appended_puts(&self) -> u64 {
        self.appended.load(Ordering::Relaxed)
    }

    /// Puts of keys not buffered that went straight to the skiplist because scans paused the
    /// membuffer ([`MemTable::drain_for_scan`]); 0 without a membuffer.
    pub fn membuffer_paused_puts(&self) -> u64 {
        self.paused.load(Ordering::Relaxed)
    }

    /// The newest entry for `user_key`, whatever its sequence, as `(seq, result)`; `None` if the
    /// memtable has none. Reads of the latest state use it with a membuffer, where an older
    /// version may have been overwritten in place: they must not pick an older one.
    pub fn get_latest(&self, user_key: &[u8]) -> Option<(SequenceNumber, LookupResult)> {
        if let Some(found) = self
            .nonempty_buffer()
            .and_then(|b| b.get(user_key, |e| (e.seq, lookup_of(&e))))
        {
            return Some(found);
        }
        self.runs_get(user_key, MAX_SEQUENCE)
    }

    /// The runs' newest entry of `user_key` at or below `snapshot`.
    fn runs_get(
        &self,
        user_key: &[u8],
        snapshot: SequenceNumber,
    ) -> Option<(SequenceNumber, LookupResult)> {
        let (seq, kind, value) = self.runs.get(user_key, snapshot)?;
        Some((seq, lookup(kind, value)))
    }

    /// The membuffer, unless it has none or holds no entry: a point read then skips the bucket
    /// lookup (its neighbourhood search and bucket lock). Sound because the count is read with
    /// Acquire: a reader that synchronised with a write's published sequence sees the write's
    /// increment, or a later Release decrement by the drain that moved the entry to the skiplist
    /// (so it sees the skiplist insert); a write not yet published need not be seen.
    fn nonempty_buffer(&self) -> Option<&Membuffer> {
        self.buffer.as_ref().filter(|b| !b.is_empty())
    }

    /// Starts loading what a point read of `user_key` touches in the skiplist's point index:
    /// its slot (`stage` 0) or, once that is loaded, the entry it names (`stage` 1). A hint for
    /// reads of many keys (`Db::multi_get`), which run each stage over every key first.
    pub fn prefetch_point(&self, user_key: &[u8], stage: u8) {
        self.runs.current().list.prefetch_newest(user_key, stage);
    }

    /// True if this memtable has a membuffer.
    pub fn has_membuffer(&self) -> bool {
        self.buffer.is_some()
    }

    /// Moves every buffered entry with sequence <= `upto` into the skiplist (multi-insert, a
    /// batch of neighbourhoods at a time); afterwards the skiplist holds every version <= `upto`
    /// a snapshot registered before the call can read. Returns the entries moved.
    pub fn drain(&self, upto: SequenceNumber) -> usize {
        let Some(buffer) = &self.buffer else { return 0 };
        // Without this, every iterator of a read-only phase locked every bucket (32k for the
        // default 16 MiB buffer): seekrandom ran at 4% of the skiplist's speed.
        if buffer.is_empty() {
            return 0;
        }
        let (hoods, step) = (buffer.hoods(), buffer.drain_batch_hoods());
        (0..hoods)
            .step_by(step)
            .map(|start| self.drain_hoods(buffer, start..(start + step).min(hoods), upto))
            .sum()
    }

    /// [`MemTable::drain`] for a new iterator, which first pauses the membuffer's admission of
    /// new keys for as many puts through the buffer as it has buckets (puts that skip it as keys
    /// in order, `ascending.rs`, do not count): the writer then inserts them into the
    /// skiplist itself, so while iterators keep coming (and keep the pause going) each finds the
    /// buffer empty and skips it, instead of draining what the writer buffered since the last
    /// one. FloDB drains per scan (its Algorithm 3), and under an unthrottled writer each scan
    /// then paid for a drain of hundreds of entries and a lock of every bucket. A pause of one
    /// put per bucket: a drain locks every bucket twice, while a put through the buffer saves
    /// only part of a skiplist insert, so iterators closer together than that cost more in
    /// drains than the buffer saves. With writes alone the pause runs out and the buffer takes
    /// new keys again (`docs/memory.md`, "Scans and iterators").
    pub fn drain_for_scan(&self, upto: SequenceNumber) -> usize {
        self.pause_for_scan();
        self.drain(upto)
    }

    /// Pauses the membuffer as [`MemTable::drain_for_scan`] does, without draining. True if it
    /// is then empty (Acquire: the caller also sees the skiplist inserts of the drains that
    /// emptied it), or if there is no membuffer.
    pub fn pause_for_scan(&self) -> bool {
        let Some(buffer) = &self.buffer else {
            return true;
        };
        buffer.pause_admission(buffer.bucket_count());
        buffer.is_empty()
    }

    /// Background draining: if the membuffer is over half full, drains batches of
    /// neighbourhoods, round-robin from `*cursor`, until it is at most a quarter full. Returns
    /// the entries moved.
    pub fn drain_some(&self, cursor: &mut usize) -> usize {
        let Some(buffer) = &self.buffer else { return 0 };
        let cap = buffer.capacity_entries();
        if buffer.len() * 2 <= cap && buffer.bytes() * 2 <= buffer.capacity_bytes() {
            return 0;
        }
        let (hoods, step) = (buffer.hoods(), buffer.drain_batch_hoods());
        let mut moved = 0;
        for _ in 0..hoods.div_ceil(step) {
            if buffer.len() * 4 <= cap && buffer.bytes() * 4 <= buffer.capacity_bytes() {
                break;
            }
            let start = *cursor % hoods;
            let end = (start + step).min(hoods);
            *cursor = end % hoods;
            moved += self.drain_hoods(buffer, start..end, MAX_SEQUENCE);
        }
        moved
    }

    fn drain_hoods(
        &self,
        buffer: &Membuffer,
        hoods: std::ops::Range<usize>,
        upto: SequenceNumber,
    ) -> usize {
        buffer.drain_hoods(hoods, upto, |entries| self.add_batch(entries))
    }

    /// How full the membuffer is, 0 to 1: the larger of its entries and its bytes over their
    /// capacities (a drain starts at one half, [`MemTable::drain_some`]); 0 without one.
    pub fn membuffer_fill(&self) -> f64 {
        self.buffer.as_ref().map_or(0.0, |b| {
            let entries = b.len() as f64 / b.capacity_entries().max(1) as f64;
            let bytes = b.bytes() as f64 / b.capacity_bytes().max(1) as f64;
            entries.max(bytes)
        })
    }

    /// Entries waiting in the membuffer.
    pub fn buffered_len(&self) -> usize {
        self.buffer.as_ref().map_or(0, Membuffer::len)
    }

    /// Entries puts have added to the membuffer since the memtable was made (net of versions
    /// replaced in place; drains do not lower it).
    pub fn membuffer_admitted(&self) -> usize {
        self.buffer.as_ref().map_or(0, Membuffer::admitted)
    }

    /// Inserts one entry. Safe to call from several threads (serialized internally).
    ///
    /// REQUIRES: `seq <= MAX_SEQUENCE` and no entry with the same `(user_key, seq, kind)` was
    /// added before (sequence numbers are unique); checked in debug builds only. Key and value
    /// sizes are expected to have passed [`crate::key::check_key_value`].
    pub fn add(&self, seq: SequenceNumber, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        self.add_to_run(seq, kind, user_key, value);
        self.runs.seal_if_full();
    }

    /// [`MemTable::add`] without starting a new run.
    fn add_to_run(&self, seq: SequenceNumber, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        self.runs.note_write(seq);
        self.runs.insert(seq, kind, user_key, value);
    }

    /// The newest entry for `user_key` with sequence <= `snapshot` (membuffer, then skiplist).
    pub fn get(&self, user_key: &[u8], snapshot: SequenceNumber) -> LookupResult {
        self.get_entry(user_key, snapshot)
            .map_or(LookupResult::NotFound, |(_, found)| found)
    }

    /// [`MemTable::get`] with the entry's sequence number; `None` if no entry is visible.
    pub fn get_entry(
        &self,
        user_key: &[u8],
        snapshot: SequenceNumber,
    ) -> Option<(SequenceNumber, LookupResult)> {
        if let Some(found) = self.nonempty_buffer().and_then(|b| {
            b.get(user_key, |e| {
                (e.seq <= snapshot).then(|| (e.seq, lookup_of(&e)))
            })
            .flatten()
        }) {
            return Some(found);
        }
        self.runs_get(user_key, snapshot)
    }

    /// An iterator over the skiplist's entries in internal-key order (call [`MemTable::drain`]
    /// first to include the membuffer's), each once, over the runs there are when it is made.
    /// It keeps their arenas alive, is `'static + Send`, and sees entries added to those runs
    /// after it was created when it reaches them.
    pub fn iter(&self) -> MemTableIterator {
        MemTableIterator {
            inner: self.runs.iter(),
        }
    }

    /// Bytes the entries occupy (nodes, keys, values). Flushes are triggered by this.
    pub fn approximate_memory_usage(&self) -> usize {
        self.runs.allocated_bytes() + self.buffer.as_ref().map_or(0, Membuffer::bytes)
    }

    /// Bytes reserved from the system by the memtable's arenas (chunks of 1 MiB), key filters
    /// and point indexes.
    pub fn reserved_memory(&self) -> usize {
        self.runs.reserved()
    }

    /// Entries in the skiplist plus entries in the membuffer (an entry being drained may be
    /// counted twice).
    pub fn len(&self) -> usize {
        self.runs.len() + self.buffered_len()
    }

    /// True if no entry was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The comparator ordering the entries.
    pub fn comparator(&self) -> &InternalKeyComparator {
        self.runs.comparator()
    }
}

fn entry_ref<'a>(e: &BufferedEntry<'a>) -> BatchEntry<'a> {
    BatchEntry {
        user_key: e.key(),
        seq: e.seq,
        kind: e.kind,
        value: e.value(),
    }
}

fn lookup_of(e: &BufferedEntry<'_>) -> LookupResult {
    lookup(e.kind, e.value())
}

/// What an entry of `kind` with `value` answers to a point read.
fn lookup(kind: ValueKind, value: &[u8]) -> LookupResult {
    match kind {
        ValueKind::Value => LookupResult::Found(value.to_vec()),
        ValueKind::Deletion => LookupResult::Deleted,
    }
}

/// A cursor over a memtable's entries; `key()` and `value()` borrow from its arena.
#[derive(Debug)]
pub struct MemTableIterator {
    inner: RunsCursor,
}

crate::iter::forward_internal_iterator!(MemTableIterator, inner);

#[cfg(test)]
#[path = "memtable_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "runs_tests.rs"]
mod runs_tests;
