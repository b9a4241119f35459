//! The membuffer: FloDB's small hash table in front of the skiplist (see `docs/memory.md`).
//!
//! Buckets are grouped into neighbourhoods, the unit a drain takes: a [`HoodMap`] picks the
//! neighbourhood (a key range when the buffer was built from a sample of keys, else by hash,
//! `hoods.rs`) and the key's hash the bucket within it (its low bits). A drain of key-range
//! neighbourhoods hands the skiplist keys a few nodes apart; with hash neighbourhoods it takes a
//! quarter of them at once ([`Membuffer::drain_batch_hoods`]) so that the sorted entries are
//! a dense sample of the key space.
//! Each bucket holds at most `bucket_entries` entries, and the whole buffer at most
//! `capacity_bytes` of keys and values; a put that finds no room is refused and goes to the
//! skiplist. The buffer keeps one version per key (the newest written to it). A bucket's
//! entries are records in one buffer the bucket owns (`bucket.rs`): no allocation per entry.
//!
//! Each bucket has its own mutex, held only to copy an entry in or out: a reader or writer
//! waits at most for one bucket operation, never for a drain's skiplist insert. A bucket is one
//! cache line holding, next to its mutex, a hash tag per entry, so a lookup reads an entry's key
//! (in the bucket's buffer, a pointer away) only when the tags match.

use std::sync::PoisonError;

// The model check (`--features model-check`, `model_check.rs`) runs the membuffer over
// shuttle's primitives, whose scheduler then explores the interleavings.
#[cfg(feature = "model-check")]
use shuttle::sync::{
    Mutex, MutexGuard,
    atomic::{AtomicUsize, Ordering},
};
#[cfg(not(feature = "model-check"))]
use std::sync::{
    Mutex, MutexGuard,
    atomic::{AtomicUsize, Ordering},
};

use xxhash_rust::xxh3::xxh3_64;

use super::bucket::{Bucket, BufferedEntry, parse};
use super::hoods::HoodMap;
use super::skiplist::BatchEntry;
use crate::key::{SequenceNumber, ValueKind};

/// Locks a bucket, ignoring poisoning (as `crate::sync::lock`, for either mutex type).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Bytes assumed per entry when turning a byte budget into a number of buckets.
const ASSUMED_ENTRY_BYTES: usize = 128;

/// Most neighbourhoods used (a power of two).
pub(super) const MAX_NEIGHBOURHOODS: usize = 1024;

/// Bytes of entries a drain of key-range neighbourhoods aims to take at once (its copy
/// buffer's size); see [`Membuffer::drain_batch_hoods`].
const DRAIN_BATCH_BYTES: usize = 4 << 20;

/// The tag of a key whose xxh3 hash is `hash`: its high 32 bits (the low bits pick the bucket).
fn tag_of(hash: u64) -> u32 {
    (hash >> 32) as u32
}

/// A bucket's mutex and contents on a cache line of their own (false sharing between the
/// writer and a drainer would cost more than the padding).
#[derive(Debug, Default)]
#[repr(align(64))]
struct Slot(Mutex<Bucket>);

/// What [`Membuffer::put`] did.
#[derive(Debug)]
pub(crate) enum PutOutcome {
    /// Stored; no older version was displaced (new key, or an in-place overwrite).
    Stored,
    /// Stored; the older version of the key was handed to the `keep` callback first.
    Displaced,
    /// No room: the caller must insert the entry into the skiplist.
    Full,
    /// Not stored: admission is paused ([`Membuffer::pause_admission`]) and the key was not
    /// buffered. The caller must insert the entry into the skiplist.
    Paused,
}

/// A fixed-size concurrent hash table of the newest buffered version per key.
#[derive(Debug)]
pub(crate) struct Membuffer {
    buckets: Box<[Slot]>,
    hoods: HoodMap,
    buckets_per_hood: usize,
    bucket_entries: usize,
    /// A bucket's share of the byte budget: its buffer's size when first allocated.
    bucket_bytes: usize,
    capacity_bytes: usize,
    /// Entries and bytes the writer's puts added (net of the versions its own puts took out).
    added: Counts,
    /// Entries and bytes drains took out. Kept apart from `added` so that the writer's
    /// counting is a plain store to a line it owns: an atomic add (a locked instruction) waited
    /// for the put's own store to the bucket, a DRAM miss at 4 GiB, and took the line back from
    /// the drain thread on every put (a fifth of the writer's time at 4 GiB in perf).
    removed: Counts,
    /// Puts left before new keys are admitted again ([`Membuffer::pause_admission`]). Only the
    /// writer decrements it, and only when it is positive, so it never wraps.
    paused_puts: AtomicUsize,
    /// The drain's buffers, kept between drains (a drainer that finds them taken by another
    /// uses fresh ones). A std mutex even in the model check: it guards no shared state.
    scratch: std::sync::Mutex<Scratch>,
}

/// An entry count and a byte count, alone on their cache lines (128 bytes: the adjacent-line
/// prefetcher pairs lines). The buffer's contents are `added - removed` of each.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Counts {
    len: AtomicUsize,
    bytes: AtomicUsize,
}

impl Counts {
    /// Adds `delta` (wrapping, so a negative `delta` may be passed as its two's complement)
    /// with a plain load and store. Only the single writer calls it, on `added`; Release pairs
    /// with [`Membuffer::is_empty`]'s Acquire.
    fn bump(counter: &AtomicUsize, delta: usize) {
        counter.store(
            counter.load(Ordering::Relaxed).wrapping_add(delta),
            Ordering::Release,
        );
    }
}

/// A drain's buffers. Allocating them per neighbourhood cost more than the drain itself at
/// 4 GiB: a few hundred KiB each, so glibc maps and unmaps them, and the kernel zeroes their
/// pages on every drain (perf: `clear_page_erms`, a fifth of the drain thread's time).
#[derive(Debug, Default)]
struct Scratch {
    /// The copied records.
    bytes: Vec<u8>,
    /// Their sequence numbers, sorted.
    seqs: Vec<SequenceNumber>,
    /// Their entries, handed to the skiplist (empty between drains).
    entries: Vec<BatchEntry<'static>>,
}

/// An empty vector of `BatchEntry<'b>` reusing the allocation of `v` (emptied first):
/// in-place collection keeps the buffer, since both element types have the same layout.
#[allow(
    clippy::unnecessary_filter_map,
    reason = "filter_map changes the lifetime, which filter cannot"
)]
fn recycle<'b>(mut v: Vec<BatchEntry<'_>>) -> Vec<BatchEntry<'b>> {
    v.clear();
    v.into_iter().filter_map(|_| None).collect()
}

impl Membuffer {
    /// A buffer of about `capacity_bytes` of keys and values in buckets of `bucket_entries`.
    ///
    /// There are enough buckets for the budget to fill them only half (`bucket_entries / 2`
    /// entries of [`ASSUMED_ENTRY_BYTES`] each): the drain thread keeps the buffer between a
    /// quarter and a half full, and with buckets sized for the whole budget a bucket at half the
    /// budget is full often enough (Poisson: 5% of puts) that those puts paid a full skiplist
    /// insert, a third of the writer's time at 4 GiB (see docs/memory.md).
    pub(crate) fn new(capacity_bytes: usize, bucket_entries: usize) -> Self {
        let bucket_entries = bucket_entries.max(1);
        let share = bucket_entries.div_ceil(2) * ASSUMED_ENTRY_BYTES;
        let wanted = (capacity_bytes / share).max(1);
        let buckets = wanted.next_power_of_two();
        let hoods = buckets.min(MAX_NEIGHBOURHOODS);
        Membuffer {
            buckets: super::huge_pages::boxed_slice(buckets, |_| Slot::default()),
            hoods: HoodMap::by_hash(hoods),
            buckets_per_hood: buckets / hoods,
            bucket_entries,
            bucket_bytes: share,
            capacity_bytes,
            added: Counts::default(),
            removed: Counts::default(),
            paused_puts: AtomicUsize::new(0),
            scratch: std::sync::Mutex::new(Scratch::default()),
        }
    }

    /// The same buffer with neighbourhoods by key range, cut at keys evenly spaced in
    /// `sample` (ascending under `cmp`: the keys cutting the memtable before this one into equal
    /// parts, [`HoodMap::by_range`]); by hash, as [`Membuffer::new`] builds it, if the sample
    /// has fewer keys than the cuts it needs. Call before the first put.
    pub(crate) fn with_ranges_from(
        mut self,
        sample: &[Vec<u8>],
        cmp: std::sync::Arc<dyn crate::comparator::Comparator>,
    ) -> Self {
        debug_assert_eq!(self.len(), 0);
        self.hoods = HoodMap::by_range(self.hoods(), sample, cmp);
        self
    }

    /// True if neighbourhoods are key ranges.
    pub(crate) fn is_by_range(&self) -> bool {
        self.hoods.is_by_range()
    }

    /// The neighbourhood of `key`.
    #[cfg(test)]
    pub(crate) fn hood(&self, key: &[u8]) -> usize {
        self.hoods.hood(key, xxh3_64(key))
    }

    /// The bucket of `key` and the key's tag.
    fn locate(&self, key: &[u8]) -> (usize, u32) {
        let hash = xxh3_64(key);
        let within = (hash % self.buckets_per_hood as u64) as usize;
        (
            self.hoods.hood(key, hash) * self.buckets_per_hood + within,
            tag_of(hash),
        )
    }

    /// Neighbourhoods a drain takes at once, at least one. By key range: those holding about
    /// [`DRAIN_BATCH_BYTES`] when the buffer is full, at most a quarter of them; their keys
    /// are neighbours in the skiplist however few are taken. By hash: a quarter of them
    /// (about what takes the buffer from half full to a quarter full), whatever the buffer's
    /// size: the fewer are taken, the more skiplist nodes lie between consecutive sorted
    /// entries and the more levels the multi-insert's finger search climbs for each (with
    /// 4 MiB per drain, a 1 GiB buffer's drains cost 4.3 us per entry against 2.2 us).
    pub(crate) fn drain_batch_hoods(&self) -> usize {
        let hoods = self.hoods();
        let quarter = (hoods / 4).max(1);
        if !self.is_by_range() {
            return quarter;
        }
        let by_bytes = (DRAIN_BATCH_BYTES as u128 * hoods as u128
            / self.capacity_bytes.max(1) as u128) as usize;
        by_bytes.clamp(1, quarter)
    }

    /// Number of neighbourhoods; [`Self::drain_hoods`] takes a range of them.
    pub(crate) fn hoods(&self) -> usize {
        self.hoods.hoods()
    }

    /// Entries buffered.
    pub(crate) fn len(&self) -> usize {
        Self::held(&self.added.len, &self.removed.len)
    }

    /// Entries the writer's puts have added since the buffer was made, net of the versions
    /// they replaced in place: unlike [`Self::len`], drains do not lower it.
    pub(crate) fn admitted(&self) -> usize {
        self.added.len.load(Ordering::Acquire)
    }

    /// True if no entry is buffered. Acquire, pairing with the Release updates of drains and
    /// of puts whose new version did not fit: a caller that sees the buffer empty also sees the
    /// skiplist inserts that emptied it.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of keys and values buffered.
    pub(crate) fn bytes(&self) -> usize {
        Self::held(&self.added.bytes, &self.removed.bytes)
    }

    /// `added - removed`, never less than what is buffered: `removed` is read first, and
    /// everything it counts was added before, so the later read of `added` counts it too (an
    /// entry still buffered is in `added` and not in `removed`). Racing puts and drains may make
    /// it more than what is buffered, never less.
    fn held(added: &AtomicUsize, removed: &AtomicUsize) -> usize {
        let removed = removed.load(Ordering::Acquire);
        added.load(Ordering::Acquire).saturating_sub(removed)
    }

    /// Bytes of keys and values the buffer holds at most.
    pub(crate) fn capacity_bytes(&self) -> usize {
        self.capacity_bytes
    }

    /// Entries the buffer can hold at most.
    pub(crate) fn capacity_entries(&self) -> usize {
        self.buckets.len() * self.bucket_entries
    }

    /// Number of buckets (a drain of the whole buffer locks each of them twice).
    pub(crate) fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    /// For the next `puts` puts, admit no key that is not buffered already: [`Membuffer::put`]
    /// answers [`PutOutcome::Paused`] and the caller writes to the skiplist. A buffered key is
    /// still updated in place, so the buffer never holds a version older than the skiplist's.
    /// Replaces the count left by an earlier call; a put racing this call may decrement the
    /// count it replaced, which only shortens the pause by one put.
    pub(crate) fn pause_admission(&self, puts: usize) {
        self.paused_puts.store(puts, Ordering::Relaxed);
    }

    /// Stores `(key, seq, kind, value)` as the key's newest version. If the key is buffered with
    /// an older version, that version is overwritten in place when `may_drop(old_seq)` says no
    /// reader can need it; otherwise `keep(old)` is called, under the bucket lock and before the
    /// overwrite, to move it to the skiplist. Readers therefore never miss a version they need.
    /// A key not buffered is refused while admission is paused ([`Membuffer::pause_admission`])
    /// or its bucket or the byte budget is full.
    ///
    /// REQUIRES: calls are serialized (one writer) and `seq` is larger than every sequence
    /// number buffered for the key.
    pub(crate) fn put(
        &self,
        key: &[u8],
        seq: SequenceNumber,
        kind: ValueKind,
        value: &[u8],
        may_drop: impl Fn(SequenceNumber) -> bool,
        keep: impl FnOnce(BufferedEntry<'_>),
    ) -> PutOutcome {
        let paused = self.paused_puts.load(Ordering::Relaxed) > 0;
        if paused {
            self.paused_puts.fetch_sub(1, Ordering::Relaxed);
            // Only this writer adds entries: with none left, the key is not buffered either.
            if self.is_empty() {
                return PutOutcome::Paused;
            }
        }
        let size = key.len() + value.len();
        let (index, tag) = self.locate(key);
        let mut bucket = lock(&self.buckets[index].0);
        if let Some(at) = bucket.find(tag, key) {
            let old = bucket.entry(at);
            debug_assert!(old.seq < seq, "membuffer versions must grow");
            let (old_seq, old_bytes) = (old.seq, old.bytes());
            let displaced = !may_drop(old_seq);
            let mut keep = Some(keep);
            if displaced && let Some(keep) = keep.take() {
                keep(old);
            }
            if !bucket.replace(at, seq, kind, value) {
                // The bucket cannot address the new version: the old one leaves and the new one
                // goes to the skiplist. The old one goes there first even if no snapshot needs
                // it: between its removal and the caller's insert, a read of the latest state
                // would otherwise find an older version, or none.
                if let Some(keep) = keep.take() {
                    keep(bucket.entry(at));
                }
                bucket.remove_where(|e| e.seq == old_seq, self.bucket_bytes);
                Counts::bump(&self.added.bytes, old_bytes.wrapping_neg());
                Counts::bump(&self.added.len, 1usize.wrapping_neg());
                return PutOutcome::Full;
            }
            Counts::bump(&self.added.bytes, size.wrapping_sub(old_bytes));
            return if displaced {
                PutOutcome::Displaced
            } else {
                PutOutcome::Stored
            };
        }
        if paused {
            return PutOutcome::Paused;
        }
        if bucket.len() >= self.bucket_entries
            || self.bytes() + size > self.capacity_bytes
            || !bucket.push(tag, seq, kind, key, value, self.bucket_bytes)
        {
            return PutOutcome::Full;
        }
        Counts::bump(&self.added.bytes, size);
        Counts::bump(&self.added.len, 1);
        PutOutcome::Stored
    }

    /// `f` applied to the buffered version of `key` (under the bucket's lock), if any.
    pub(crate) fn get<R>(&self, key: &[u8], f: impl FnOnce(BufferedEntry<'_>) -> R) -> Option<R> {
        let (index, tag) = self.locate(key);
        let bucket = lock(&self.buckets[index].0);
        let at = bucket.find(tag, key)?;
        Some(f(bucket.entry(at)))
    }

    /// Moves the entries of the neighbourhoods `hoods` with sequence <= `upto` out of the buffer:
    /// copies them, hands them to `insert` (which must make them readable in the skiplist before
    /// it returns), then removes those not overwritten meanwhile. An entry is thus always
    /// readable in the buffer, the skiplist or both. Returns the number of entries handed over.
    /// The copies go into one byte buffer, reused from drain to drain.
    pub(crate) fn drain_hoods(
        &self,
        hoods: std::ops::Range<usize>,
        upto: SequenceNumber,
        insert: impl FnOnce(&mut [BatchEntry<'_>]),
    ) -> usize {
        let range = hoods.start * self.buckets_per_hood..hoods.end * self.buckets_per_hood;
        let Some(buckets) = self.buckets.get(range) else {
            return 0;
        };
        let mut shared = self.scratch.try_lock().ok();
        let mut own = Scratch::default();
        let Scratch {
            bytes,
            seqs,
            entries,
        } = shared.as_deref_mut().unwrap_or(&mut own);
        bytes.clear();
        seqs.clear();
        let mut n = 0;
        for b in buckets {
            let bucket = lock(&b.0);
            for (at, r) in bucket.records().filter(|(_, r)| r.entry.seq <= upto) {
                bytes.extend_from_slice(bucket.record_bytes(at, r.len));
                n += 1;
            }
        }
        if n == 0 {
            return 0;
        }
        let mut taken = recycle(std::mem::take(entries));
        taken.reserve(n);
        seqs.reserve(n);
        let mut at = 0;
        for _ in 0..n {
            let r = parse(bytes, at);
            at += r.len;
            seqs.push(r.entry.seq);
            taken.push(BatchEntry {
                user_key: r.entry.key(),
                seq: r.entry.seq,
                kind: r.entry.kind,
                value: r.entry.value(),
            });
        }
        seqs.sort_unstable();
        insert(&mut taken);
        *entries = recycle(taken);
        // The counters are updated once per neighbourhood: the writer updates them on every
        // put, and each drainer update takes their cache line away from it.
        let (mut removed, mut freed) = (0, 0);
        for b in buckets {
            let mut bucket = lock(&b.0);
            let (r, f) =
                bucket.remove_where(|e| seqs.binary_search(&e.seq).is_ok(), self.bucket_bytes);
            removed += r;
            freed += f;
        }
        self.removed.bytes.fetch_add(freed, Ordering::Release);
        self.removed.len.fetch_add(removed, Ordering::Release);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::super::bucket::INLINE_TAGS;
    use super::*;

    #[test]
    fn keys_sharing_a_long_prefix_spread_over_every_neighbourhood() {
        // Zero-padded decimal keys, as db_bench writes them: the first 9 bytes are all '0'.
        // Neighbourhoods by leading bytes put all of them into one (the membuffer then held
        // 1/1024 of its capacity and refused nearly every put).
        let m = Membuffer::new(64 << 20, 8);
        assert_eq!(m.hoods(), MAX_NEIGHBOURHOODS);
        let mut per_hood = vec![0usize; m.hoods()];
        for n in 0..100_000u64 {
            per_hood[m.hood(format!("{n:016}").as_bytes())] += 1;
        }
        let mean = 100_000 / m.hoods();
        let (min, max) = (per_hood.iter().min(), per_hood.iter().max());
        assert!(
            min >= Some(&(mean / 2)) && max <= Some(&(mean * 2)),
            "{min:?} .. {max:?} keys per neighbourhood, mean {mean}"
        );
        // And such keys fill the buffer: all of them are stored (their bytes fit).
        for n in 0..100_000u64 {
            let key = format!("{n:016}");
            let out = m.put(
                key.as_bytes(),
                n + 1,
                ValueKind::Value,
                b"v",
                |_| true,
                |_| {},
            );
            assert!(matches!(out, PutOutcome::Stored), "key {n} refused");
        }
        let one = Membuffer::new(10, 8);
        assert_eq!((one.hoods(), one.buckets.len()), (1, 1));
        assert_eq!(one.hood(b"anything"), 0);
    }

    #[test]
    fn a_drain_takes_a_quarter_of_hash_neighbourhoods_or_4_mib_of_ranges() {
        assert_eq!(Membuffer::new(16 << 20, 8).drain_batch_hoods(), 256);
        assert_eq!(Membuffer::new(1 << 30, 8).drain_batch_hoods(), 256);
        assert_eq!(Membuffer::new(10, 8).drain_batch_hoods(), 1);
        let sample: Vec<Vec<u8>> = (0..4096u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let ranges = |bytes| {
            Membuffer::new(bytes, 8)
                .with_ranges_from(&sample, crate::comparator::default_comparator())
        };
        assert_eq!(ranges(16 << 20).drain_batch_hoods(), 256);
        assert_eq!(ranges(1 << 30).drain_batch_hoods(), 4);
    }

    #[test]
    fn full_bucket_refuses_and_overwrite_respects_readers() {
        let m = Membuffer::new(100, 2); // one bucket of two entries
        let drop_all = |_| true;
        assert!(matches!(
            m.put(b"a", 1, ValueKind::Value, b"1", drop_all, |_| {}),
            PutOutcome::Stored
        ));
        assert!(matches!(
            m.put(b"b", 2, ValueKind::Value, b"2", drop_all, |_| {}),
            PutOutcome::Stored
        ));
        assert!(matches!(
            m.put(b"c", 3, ValueKind::Value, b"3", drop_all, |_| {}),
            PutOutcome::Full
        ));
        // Overwrite in place: nothing kept.
        assert!(matches!(
            m.put(b"a", 4, ValueKind::Value, b"4", drop_all, |_| panic!(
                "kept"
            )),
            PutOutcome::Stored
        ));
        // A reader needs seq 4: it is handed over before the overwrite.
        let mut kept = None;
        let out = m.put(
            b"a",
            5,
            ValueKind::Deletion,
            b"",
            |s| s != 4,
            |e| {
                kept = Some((e.key().to_vec(), e.seq, e.value().to_vec()));
            },
        );
        assert!(matches!(out, PutOutcome::Displaced));
        let kept = kept.expect("kept");
        assert_eq!(kept, (b"a".to_vec(), 4, b"4".to_vec()));
        let now = m.get(b"a", |e| (e.seq, e.kind)).expect("buffered");
        assert_eq!(now, (5, ValueKind::Deletion));
        assert_eq!((m.len(), m.bytes()), (2, 3));
        // Bytes bound too.
        let small = Membuffer::new(4, 8);
        assert!(matches!(
            small.put(b"k", 1, ValueKind::Value, b"long", drop_all, |_| {}),
            PutOutcome::Full
        ));
    }

    #[test]
    fn buckets_larger_than_the_inline_tags_find_every_key() {
        let n = INLINE_TAGS + 4;
        let m = Membuffer::new(1000, n); // one bucket of n entries
        let key = |i: usize| format!("key{i}").into_bytes();
        for i in 0..n {
            let out = m.put(
                &key(i),
                i as u64 + 1,
                ValueKind::Value,
                b"v",
                |_| true,
                |_| {},
            );
            assert!(matches!(out, PutOutcome::Stored));
        }
        assert!(matches!(
            m.put(b"other", 99, ValueKind::Value, b"v", |_| true, |_| {}),
            PutOutcome::Full
        ));
        // Overwrites find keys both inside and beyond the inline tags.
        for i in [1, n - 1] {
            m.put(
                &key(i),
                100 + i as u64,
                ValueKind::Value,
                b"w",
                |_| true,
                |_| {},
            );
            assert_eq!(m.get(&key(i), |e| e.seq), Some(100 + i as u64));
        }
        assert_eq!(m.len(), n);
        // Drain the older half; the survivors move down and must stay findable.
        m.drain_hoods(0..1, n as u64 / 2, |_| {});
        for i in 0..n {
            let want = match i {
                1 => Some(101),
                _ if i == n - 1 => Some(100 + i as u64),
                _ if i < n / 2 => None,
                _ => Some(i as u64 + 1),
            };
            assert_eq!(m.get(&key(i), |e| e.seq), want, "key {i}");
        }
    }

    #[test]
    fn drain_keeps_entries_overwritten_meanwhile() {
        let m = Membuffer::new(100, 4);
        for (i, k) in [b"a", b"b", b"c"].iter().enumerate() {
            m.put(*k, i as u64 + 1, ValueKind::Value, b"v", |_| true, |_| {});
        }
        let mut handed = Vec::new();
        let n = m.drain_hoods(0..1, 2, |entries| {
            handed = entries
                .iter()
                .map(|e| (e.user_key.to_vec(), e.seq))
                .collect();
            // A write overwrites "a" while the drain inserts it.
            m.put(b"a", 9, ValueKind::Value, b"w", |_| true, |_| {});
        });
        assert_eq!(n, 2);
        assert_eq!(handed, vec![(b"a".to_vec(), 1), (b"b".to_vec(), 2)]);
        assert_eq!(m.get(b"a", |e| e.seq), Some(9));
        assert!(m.get(b"b", |_| ()).is_none());
        assert_eq!(m.get(b"c", |e| e.seq), Some(3));
        assert_eq!(m.len(), 2);
        assert_eq!(m.drain_hoods(0..1, u64::MAX, |_| {}), 2);
        assert_eq!((m.len(), m.bytes()), (0, 0));
    }
}
