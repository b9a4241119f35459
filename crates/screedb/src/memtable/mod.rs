//! The memtable: recent writes, sorted in memory until they are flushed to a table.
//!
//! A [`MemTable`] is a skiplist of entries whose nodes live in an arena. Writes are
//! serialized inside the memtable; reads ([`MemTable::get`] and [`MemTableIterator`]) never take
//! a lock and may run concurrently with a write, seeing the memtable either before or after it.
//! Entries are never removed: memory is released when the last `Arc<MemTable>` (the memtable or
//! one of its iterators) drops. See `docs/memtable.md`.

mod arena;
mod bucket;
mod membuffer;
#[cfg(all(test, feature = "model-check"))]
mod model_check;
mod skiplist;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::comparator::InternalKeyComparator;
use crate::key::{self, MAX_SEQUENCE, SequenceNumber, ValueKind};

use bucket::BufferedEntry;
use membuffer::{Membuffer, PutOutcome};
pub use skiplist::BatchEntry;
use skiplist::{Iter, SkipList};

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

/// A sorted in-memory table of internal-key entries. `Send + Sync`; share it as `Arc<MemTable>`.
///
/// With a membuffer ([`MemTable::with_membuffer`], FloDB's design), [`MemTable::put`] first
/// tries a small hash table; buffered entries move to the skiplist by [`MemTable::drain`].
/// Reads consult both. Iteration sees the skiplist only: drain first.
pub struct MemTable {
    list: Arc<SkipList>,
    buffer: Option<Membuffer>,
    /// Puts that found no room in the membuffer and went to the skiplist (a statistic).
    fallbacks: AtomicU64,
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
            list: Arc::new(SkipList::new(icmp)),
            buffer: None,
            fallbacks: AtomicU64::new(0),
        }
    }

    /// An empty memtable with a membuffer of about `buffer_bytes` of keys and values, in
    /// buckets of `bucket_entries` entries.
    pub fn with_membuffer(
        icmp: InternalKeyComparator,
        buffer_bytes: usize,
        bucket_entries: usize,
    ) -> Self {
        MemTable {
            list: Arc::new(SkipList::new(icmp)),
            buffer: Some(Membuffer::new(buffer_bytes, bucket_entries)),
            fallbacks: AtomicU64::new(0),
        }
    }

    /// Inserts a batch with FloDB's multi-insert: sorts `entries` by internal key, then inserts
    /// them in one pass reusing each key's predecessors for the next. Entries whose internal key
    /// is already present are skipped. Same requirements as [`MemTable::add`].
    pub fn add_batch(&self, entries: &mut [BatchEntry<'_>]) {
        let user = Arc::clone(self.list.comparator().user());
        entries.sort_unstable_by(|a, b| {
            user.compare(a.user_key, b.user_key)
                .then(b.seq.cmp(&a.seq))
                .then(b.kind.cmp(&a.kind))
        });
        self.list.insert_sorted(entries);
    }

    /// Writes one entry as the key's newest version: into the membuffer if there is one and it
    /// has room, else into the skiplist. A buffered older version of the key is overwritten in
    /// place only if no snapshot can read it: `newest_snapshot` is the largest live snapshot
    /// sequence (or `None`), and the old version is kept (moved to the skiplist first) when it is
    /// at or below it.
    ///
    /// REQUIRES: calls serialized, each `seq` larger than every earlier one; as for `add`.
    pub fn put(
        &self,
        seq: SequenceNumber,
        kind: ValueKind,
        user_key: &[u8],
        value: &[u8],
        newest_snapshot: Option<SequenceNumber>,
    ) {
        let Some(buffer) = &self.buffer else {
            self.add(seq, kind, user_key, value);
            return;
        };
        let may_drop = |old: SequenceNumber| newest_snapshot.is_none_or(|s| old > s);
        let keep = |old: BufferedEntry<'_>| {
            self.list.insert_sorted(&[entry_ref(&old)]);
        };
        if let PutOutcome::Full = buffer.put(user_key, seq, kind, value, may_drop, keep) {
            self.fallbacks.fetch_add(1, Ordering::Relaxed);
            self.add(seq, kind, user_key, value);
        }
    }

    /// Puts that found their membuffer bucket (or the whole membuffer) full and went straight
    /// to the skiplist; 0 without a membuffer.
    pub fn membuffer_fallbacks(&self) -> u64 {
        self.fallbacks.load(Ordering::Relaxed)
    }

    /// The newest entry for `user_key`, whatever its sequence, as `(seq, result)`; `None` if the
    /// memtable has none. Reads of the latest state use it with a membuffer, where an older
    /// version may have been overwritten in place: they must not pick an older one.
    pub fn get_latest(&self, user_key: &[u8]) -> Option<(SequenceNumber, LookupResult)> {
        if let Some(found) = self
            .buffer
            .as_ref()
            .and_then(|b| b.get(user_key, |e| (e.seq, lookup_of(&e))))
        {
            return Some(found);
        }
        let target = key::make_internal_key(user_key, MAX_SEQUENCE, ValueKind::FOR_SEEK);
        let (ikey, value) = self.list.seek(&target)?;
        let parsed = key::parse_internal_key(ikey)?;
        let user = self.list.comparator().user();
        if user.compare(parsed.user_key, user_key).is_ne() {
            return None;
        }
        let found = match parsed.kind {
            ValueKind::Value => LookupResult::Found(value.to_vec()),
            ValueKind::Deletion => LookupResult::Deleted,
        };
        Some((parsed.seq, found))
    }

    /// True if this memtable has a membuffer.
    pub fn has_membuffer(&self) -> bool {
        self.buffer.is_some()
    }

    /// Moves every buffered entry with sequence <= `upto` into the skiplist (multi-insert, one
    /// neighbourhood at a time); afterwards the skiplist holds every version <= `upto` a
    /// snapshot registered before the call can read. Returns the entries moved.
    pub fn drain(&self, upto: SequenceNumber) -> usize {
        let Some(buffer) = &self.buffer else { return 0 };
        (0..buffer.hoods())
            .map(|hood| self.drain_hood(buffer, hood, upto))
            .sum()
    }

    /// Background draining: if the membuffer is over half full, drains neighbourhoods starting
    /// at `*cursor` until it is at most a quarter full. Returns the entries moved.
    pub fn drain_some(&self, cursor: &mut usize) -> usize {
        let Some(buffer) = &self.buffer else { return 0 };
        let cap = buffer.capacity_entries();
        if buffer.len() * 2 <= cap && buffer.bytes() * 2 <= buffer.capacity_bytes() {
            return 0;
        }
        let mut moved = 0;
        for _ in 0..buffer.hoods() {
            if buffer.len() * 4 <= cap && buffer.bytes() * 4 <= buffer.capacity_bytes() {
                break;
            }
            *cursor = (*cursor + 1) % buffer.hoods();
            moved += self.drain_hood(buffer, *cursor, MAX_SEQUENCE);
        }
        moved
    }

    fn drain_hood(&self, buffer: &Membuffer, hood: usize, upto: SequenceNumber) -> usize {
        buffer.drain_hood(hood, upto, |entries| self.add_batch(entries))
    }

    /// Entries waiting in the membuffer.
    pub fn buffered_len(&self) -> usize {
        self.buffer.as_ref().map_or(0, Membuffer::len)
    }

    /// Inserts one entry. Safe to call from several threads (serialized internally).
    ///
    /// REQUIRES: `seq <= MAX_SEQUENCE` and no entry with the same `(user_key, seq, kind)` was
    /// added before (sequence numbers are unique); checked in debug builds only. Key and value
    /// sizes are expected to have passed [`crate::key::check_key_value`].
    pub fn add(&self, seq: SequenceNumber, kind: ValueKind, user_key: &[u8], value: &[u8]) {
        self.list.insert(user_key, seq, kind, value);
    }

    /// The newest entry for `user_key` with sequence <= `snapshot` (membuffer, then skiplist).
    pub fn get(&self, user_key: &[u8], snapshot: SequenceNumber) -> LookupResult {
        if let Some(found) = self.buffer.as_ref().and_then(|b| {
            b.get(user_key, |e| (e.seq <= snapshot).then(|| lookup_of(&e)))
                .flatten()
        }) {
            return found;
        }
        let target =
            key::make_internal_key(user_key, snapshot.min(MAX_SEQUENCE), ValueKind::FOR_SEEK);
        let Some((ikey, value)) = self.list.seek(&target) else {
            return LookupResult::NotFound;
        };
        let Some(parsed) = key::parse_internal_key(ikey) else {
            return LookupResult::NotFound;
        };
        let user = self.list.comparator().user();
        if user.compare(parsed.user_key, user_key).is_ne() {
            return LookupResult::NotFound;
        }
        match parsed.kind {
            ValueKind::Value => LookupResult::Found(value.to_vec()),
            ValueKind::Deletion => LookupResult::Deleted,
        }
    }

    /// An iterator over the skiplist's entries in internal-key order (call [`MemTable::drain`]
    /// first to include the membuffer's). It keeps the memtable alive, is
    /// `'static + Send`, and sees entries added after it was created when it reaches them.
    pub fn iter(self: &Arc<Self>) -> MemTableIterator {
        MemTableIterator {
            inner: Iter::new(Arc::clone(&self.list)),
        }
    }

    /// Bytes the entries occupy (nodes, keys, values). Flushes are triggered by this.
    pub fn approximate_memory_usage(&self) -> usize {
        self.list.allocated_bytes() + self.buffer.as_ref().map_or(0, Membuffer::bytes)
    }

    /// Bytes reserved from the system by the memtable's arena (chunks of 1 MiB).
    pub fn reserved_memory(&self) -> usize {
        self.list.memory_usage()
    }

    /// Entries in the skiplist plus entries in the membuffer (an entry being drained may be
    /// counted twice).
    pub fn len(&self) -> usize {
        self.list.len() + self.buffered_len()
    }

    /// True if no entry was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The comparator ordering the entries.
    pub fn comparator(&self) -> &InternalKeyComparator {
        self.list.comparator()
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
    match e.kind {
        ValueKind::Value => LookupResult::Found(e.value().to_vec()),
        ValueKind::Deletion => LookupResult::Deleted,
    }
}

/// A cursor over a memtable's entries; `key()` and `value()` borrow from its arena.
#[derive(Debug)]
pub struct MemTableIterator {
    inner: Iter,
}

// The skiplist cursor cannot fail: its status is always Ok.
crate::iter::forward_internal_iterator!(MemTableIterator, inner, status: |_it| Ok(()));

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparator::default_comparator;
    use crate::iter::InternalIterator;
    use crate::key::{make_internal_key, parse_internal_key};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn mem() -> Arc<MemTable> {
        Arc::new(MemTable::new(InternalKeyComparator::new(
            default_comparator(),
        )))
    }

    /// Every entry as (user key, seq, kind, value), walking forward.
    fn forward(m: &Arc<MemTable>) -> Vec<(Vec<u8>, u64, ValueKind, Vec<u8>)> {
        let mut it = m.iter();
        let mut out = Vec::new();
        it.seek_to_first();
        while it.valid() {
            let p = parse_internal_key(it.key()).unwrap();
            out.push((p.user_key.to_vec(), p.seq, p.kind, it.value().to_vec()));
            it.next();
        }
        out
    }

    fn backward(m: &Arc<MemTable>) -> Vec<(Vec<u8>, u64, ValueKind, Vec<u8>)> {
        let mut it = m.iter();
        let mut out = Vec::new();
        it.seek_to_last();
        while it.valid() {
            let p = parse_internal_key(it.key()).unwrap();
            out.push((p.user_key.to_vec(), p.seq, p.kind, it.value().to_vec()));
            it.prev();
        }
        out.reverse();
        out
    }

    #[test]
    fn get_sees_the_newest_version_at_each_snapshot() {
        let m = mem();
        m.add(1, ValueKind::Value, b"k", b"v1");
        m.add(3, ValueKind::Value, b"k", b"v3");
        m.add(5, ValueKind::Deletion, b"k", b"");
        m.add(7, ValueKind::Value, b"k", b"v7");
        m.add(2, ValueKind::Value, b"other", b"o2");
        assert_eq!(m.get(b"k", 0), LookupResult::NotFound);
        assert_eq!(m.get(b"k", 1), LookupResult::Found(b"v1".to_vec()));
        assert_eq!(m.get(b"k", 2), LookupResult::Found(b"v1".to_vec()));
        assert_eq!(m.get(b"k", 4), LookupResult::Found(b"v3".to_vec()));
        assert_eq!(m.get(b"k", 5), LookupResult::Deleted);
        assert_eq!(m.get(b"k", 6), LookupResult::Deleted);
        assert_eq!(m.get(b"k", u64::MAX), LookupResult::Found(b"v7".to_vec()));
        assert_eq!(m.get(b"other", 1), LookupResult::NotFound);
        assert_eq!(m.get(b"other", 2), LookupResult::Found(b"o2".to_vec()));
        assert_eq!(m.get(b"j", 100), LookupResult::NotFound);
        assert_eq!(m.get(b"ka", 100), LookupResult::NotFound);
        assert_eq!(m.get(b"zzz", 100), LookupResult::NotFound);
        assert_eq!(m.len(), 5);
        assert!(!m.is_empty());
    }

    #[test]
    fn puts_without_room_in_the_membuffer_are_counted() {
        let icmp = InternalKeyComparator::new(default_comparator());
        let m = MemTable::with_membuffer(icmp, 100, 2); // one bucket of two entries
        for (seq, k) in [(1, b"a"), (2, b"b"), (3, b"c"), (4, b"a")] {
            m.put(seq, ValueKind::Value, k, b"v", None);
        }
        // "c" found the bucket full; "a" again replaced its slot.
        assert_eq!(m.membuffer_fallbacks(), 1);
        assert_eq!((m.buffered_len(), m.len()), (2, 3));
        assert_eq!(m.get(b"c", 9), LookupResult::Found(b"v".to_vec()));
        assert_eq!(mem().membuffer_fallbacks(), 0);
    }

    #[test]
    fn empty_memtable_has_nothing() {
        let m = mem();
        assert!(m.is_empty());
        assert_eq!(m.get(b"", 10), LookupResult::NotFound);
        let mut it = m.iter();
        for seek in [0, 1, 2] {
            match seek {
                0 => it.seek_to_first(),
                1 => it.seek_to_last(),
                _ => it.seek(&make_internal_key(b"a", 1, ValueKind::Value)),
            }
            assert!(!it.valid());
            assert_eq!(it.key(), b"");
            assert!(it.status().is_ok());
        }
    }

    #[test]
    fn iteration_is_ordered_both_ways() {
        let m = mem();
        let keys: [&[u8]; 5] = [b"d", b"a", b"c", b"", b"b"];
        for (i, k) in keys.iter().enumerate() {
            m.add(10 + i as u64, ValueKind::Value, k, k);
            m.add(i as u64, ValueKind::Deletion, k, b"");
        }
        let fwd = forward(&m);
        assert_eq!(fwd.len(), 10);
        let order: Vec<(Vec<u8>, u64)> = fwd.iter().map(|e| (e.0.clone(), e.1)).collect();
        let mut want: Vec<(Vec<u8>, u64)> = keys
            .iter()
            .enumerate()
            .flat_map(|(i, k)| [(k.to_vec(), 10 + i as u64), (k.to_vec(), i as u64)])
            .collect();
        want.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        assert_eq!(order, want);
        assert_eq!(backward(&m), fwd);
        // The empty user key sorts first.
        assert_eq!(fwd[0].0, b"");
    }

    #[test]
    fn seek_lands_on_first_entry_at_or_after_target() {
        let m = mem();
        for (seq, k) in [(1, b"b"), (2, b"d"), (3, b"b")] {
            m.add(seq, ValueKind::Value, k, b"x");
        }
        let mut it = m.iter();
        it.seek(&make_internal_key(b"b", 2, ValueKind::FOR_SEEK));
        assert_eq!(it.key(), make_internal_key(b"b", 1, ValueKind::Value));
        it.seek(&make_internal_key(b"a", 9, ValueKind::FOR_SEEK));
        assert_eq!(it.key(), make_internal_key(b"b", 3, ValueKind::Value));
        it.seek(&make_internal_key(b"c", 9, ValueKind::FOR_SEEK));
        assert_eq!(it.key(), make_internal_key(b"d", 2, ValueKind::Value));
        it.prev();
        assert_eq!(it.key(), make_internal_key(b"b", 1, ValueKind::Value));
        it.seek(&make_internal_key(b"e", 9, ValueKind::FOR_SEEK));
        assert!(!it.valid());
    }

    #[test]
    fn empty_keys_and_large_values_round_trip() {
        let m = mem();
        let big: Vec<u8> = (0..if cfg!(miri) { 20_000 } else { 1 << 20 })
            .map(|i: u32| (i % 251) as u8)
            .collect();
        m.add(1, ValueKind::Value, b"", b"");
        m.add(2, ValueKind::Value, b"big", &big);
        m.add(3, ValueKind::Value, b"small", b"s");
        assert_eq!(m.get(b"", 5), LookupResult::Found(Vec::new()));
        assert_eq!(m.get(b"big", 5), LookupResult::Found(big.clone()));
        assert_eq!(m.get(b"small", 5), LookupResult::Found(b"s".to_vec()));
        let fwd = forward(&m);
        assert_eq!(fwd[1].3, big);
        assert!(m.approximate_memory_usage() > big.len());
    }

    #[test]
    fn memory_usage_grows() {
        let m = mem();
        let start = m.approximate_memory_usage();
        let n = if cfg!(miri) { 200 } else { 20_000 };
        for i in 0..n {
            m.add(i, ValueKind::Value, &i.to_be_bytes(), &[7u8; 100]);
        }
        let end = m.approximate_memory_usage();
        assert!(end > start + n as usize * 100, "{start} -> {end}");
        assert!(end < start + n as usize * 400, "{start} -> {end}");
        assert!(format!("{m:?}").contains("len"));
    }

    #[test]
    fn memtable_and_iterator_are_send_sync_static() {
        fn check<T: Send + Sync + 'static>() {}
        fn check_send<T: Send + 'static>() {}
        check::<MemTable>();
        check_send::<MemTableIterator>();
        // The iterator outlives every other handle to the memtable.
        let m = mem();
        m.add(1, ValueKind::Value, b"a", b"1");
        let mut it = m.iter();
        drop(m);
        it.seek_to_first();
        assert_eq!(it.value(), b"1");
    }

    type Model = BTreeMap<(Vec<u8>, std::cmp::Reverse<u64>), (ValueKind, Vec<u8>)>;

    fn model_get(model: &Model, key: &[u8], snapshot: u64) -> LookupResult {
        let from = (key.to_vec(), std::cmp::Reverse(snapshot));
        match model.range(from..).next() {
            Some(((k, _), (kind, v))) if k == key => match kind {
                ValueKind::Value => LookupResult::Found(v.clone()),
                ValueKind::Deletion => LookupResult::Deleted,
            },
            _ => LookupResult::NotFound,
        }
    }

    fn ops() -> impl Strategy<Value = Vec<(Vec<u8>, bool, Vec<u8>, u64)>> {
        proptest::collection::vec(
            (
                proptest::collection::vec(0u8..4, 0..4),
                any::<bool>(),
                proptest::collection::vec(any::<u8>(), 0..8),
                any::<u64>(),
            ),
            0..if cfg!(miri) { 20 } else { 200 },
        )
    }

    proptest! {
        // Under Miri: few cases, and no failure file (Miri's isolation forbids the file system).
        #![proptest_config(ProptestConfig {
            failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
            ..ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 64 })
        })]
        #[test]
        fn matches_a_btreemap_model(
            ops in ops(),
            snapshots in proptest::collection::vec(0u64..300, 1..20),
            probes in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..4), 1..20),
        ) {
            let m = mem();
            let mut model = Model::new();
            // Unique sequence numbers, in an order unrelated to insertion order.
            let mut seqs: Vec<u64> = (1..=ops.len() as u64).collect();
            for i in (1..seqs.len()).rev() {
                seqs.swap(i, (ops[i].3 % (i as u64 + 1)) as usize);
            }
            for ((key, del, value, _), seq) in ops.iter().zip(&seqs) {
                let kind = if *del { ValueKind::Deletion } else { ValueKind::Value };
                m.add(*seq, kind, key, value);
                model.insert((key.clone(), std::cmp::Reverse(*seq)), (kind, value.clone()));
            }
            let want: Vec<_> = model
                .iter()
                .map(|((k, s), (kind, v))| (k.clone(), s.0, *kind, v.clone()))
                .collect();
            prop_assert_eq!(m.len(), want.len());
            prop_assert_eq!(&forward(&m), &want);
            prop_assert_eq!(&backward(&m), &want);
            for (probe, snap) in probes.iter().zip(snapshots.iter().cycle()) {
                prop_assert_eq!(m.get(probe, *snap), model_get(&model, probe, *snap));
                // seek agrees with the model's lower bound.
                let mut it = m.iter();
                it.seek(&make_internal_key(probe, *snap, ValueKind::FOR_SEEK));
                let from = (probe.clone(), std::cmp::Reverse(*snap));
                match model.range(from..).next() {
                    Some(((k, s), _)) => {
                        prop_assert!(it.valid());
                        let p = parse_internal_key(it.key()).unwrap();
                        prop_assert_eq!((p.user_key, p.seq), (&k[..], s.0));
                    }
                    None => prop_assert!(!it.valid()),
                }
            }
        }
    }
}
