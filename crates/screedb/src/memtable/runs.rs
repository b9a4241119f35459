//! A memtable's sorted runs: skiplists of bounded size, the newest taking the writes.
//!
//! A skiplist insert is a search, and each step of a search is a cache miss once the list
//! outgrows the cache: inserts into a 4 GiB skiplist cost about eight times what they cost at
//! 64 MiB (`docs/memory.md`, "Insert sweep"). A memtable larger than its *run size* therefore
//! keeps several skiplists, its runs: writes go to the newest, and once that one has allocated
//! the run size the writer seals it and starts another. Every insert then searches a list of at
//! most the run size, whatever the memtable's size. Runs are never merged in memory: a flush
//! merges them into its table.
//!
//! Reads look at the runs newest first. Each run is built alike ([`RunShape`]): its own key
//! filter or point index (sized for one run), the shared prefix of its key windows.
//!
//! Which run holds a key's newest version: when the writer seals run `i` (after its own
//! insert), it records as the run's *bound* the largest sequence written so far (into a run or
//! into the membuffer), so every entry of run `i` and the older ones has a sequence at or
//! below it. An insert that raced with the seal into the sealed run (a drain that loaded the
//! run before; an `add` from another thread) raises the bound to its own sequence before it
//! returns. A read that found a version stops at the first older run whose bound is not above
//! that version's sequence (one load, almost always the next run's), and otherwise reads on.
//! The membuffer's protocol inserts a key's versions into the skiplist in sequence order (a
//! buffered key's next version goes to the buffer, and a drain removes an entry only after
//! inserting it), so a newer run's version should be the newest; the bound checks that rather
//! than assume it. One entry can reach two runs: a drain copies it while the writer moves it to
//! the skiplist for a snapshot (a single list skips the second insert of an internal key; two
//! runs cannot), and the cursor over several runs yields it once.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::filter::KeyFilter;
use super::skiplist::{BatchEntry, Iter, Newest, Search, SkipList};
use crate::comparator::InternalKeyComparator;
use crate::error::Result;
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::{self, MAX_SEQUENCE, SequenceNumber, ValueKind};

/// Most runs a memtable starts; the last one then takes every later write. Options size runs
/// so that a write buffer needs at most half as many ([`crate::Options::memtable_run_bytes`]).
pub const MAX_RUNS: usize = 128;

/// How each run of a memtable is built.
pub(super) struct RunShape {
    pub(super) cmp: InternalKeyComparator,
    /// Bytes a run allocates before the writer starts the next; 0 for a single run.
    pub(super) run_bytes: usize,
    /// Bytes of each run's key filter (0: none).
    pub(super) filter_bytes: usize,
    /// Bytes of each run's point index (0: none); the index then holds the filter.
    pub(super) index_bytes: usize,
    /// The prefix key windows skip ([`SkipList::set_shared_prefix`]).
    pub(super) shared: Box<[u8]>,
}

/// One skiplist of a memtable, with the filter that rules keys out of it.
pub(super) struct Run {
    pub(super) list: Arc<SkipList>,
    /// The run's key filter when it has no point index (an index holds it as its overflow).
    filter: Option<KeyFilter>,
    /// Every entry of this run and of the older ones has a sequence at or below this, once the
    /// next run exists ([`MAX_SEQUENCE`] until then). Written before the next run is published.
    bound: AtomicU64,
}

impl Run {
    fn new(shape: &RunShape) -> Run {
        let mut list = SkipList::new(shape.cmp.clone());
        list.set_shared_prefix(&shape.shared);
        let mut filter = KeyFilter::with_bytes(shape.filter_bytes);
        if shape.index_bytes > 0 {
            list.set_point_index(shape.index_bytes, filter.take());
        }
        Run {
            list: Arc::new(list),
            filter,
            bound: AtomicU64::new(MAX_SEQUENCE),
        }
    }

    /// Raises the bound to `seq` if this run was sealed below it: an insert that raced with
    /// the seal ([`Runs::seal_if_full`]). Waits while a seal is being made.
    fn cover(&self, seq: SequenceNumber, sealing: &AtomicBool) {
        while sealing.load(Ordering::SeqCst) {
            std::hint::spin_loop();
        }
        if self.bound.load(Ordering::SeqCst) < seq {
            self.bound.fetch_max(seq, Ordering::SeqCst);
        }
    }

    /// The run's newest entry of `user_key` with sequence <= `snapshot`, as (sequence, kind,
    /// value).
    fn get(
        &self,
        user_key: &[u8],
        snapshot: SequenceNumber,
    ) -> Option<(SequenceNumber, ValueKind, &[u8])> {
        if self
            .filter
            .as_ref()
            .is_some_and(|f| !f.may_contain(user_key))
        {
            return None;
        }
        let (ikey, value) = match self.list.newest(user_key) {
            // The newest entry is the one to read unless it is newer than the snapshot.
            Newest::Entry(ikey, value) if key::trailer(ikey) >> 8 <= snapshot => (ikey, value),
            Newest::Absent => return None,
            Newest::Entry(..) | Newest::Unknown => {
                let target = key::make_internal_key(
                    user_key,
                    snapshot.min(MAX_SEQUENCE),
                    ValueKind::FOR_SEEK,
                );
                self.list.seek(&target)?
            }
        };
        let parsed = key::parse_internal_key(ikey)?;
        let user = self.list.comparator().user();
        if user.compare(parsed.user_key, user_key).is_ne() {
            return None;
        }
        Some((parsed.seq, parsed.kind, value))
    }

    /// Bytes reserved for the run: its arena's chunks, filter and point index.
    fn reserved(&self) -> usize {
        self.list.memory_usage()
            + self.filter.as_ref().map_or(0, KeyFilter::bytes)
            + self.list.point_index_bytes()
    }
}

/// The runs of one memtable, oldest first. Readers take no lock: a run, once published, stays
/// until the memtable drops.
pub(super) struct Runs {
    shape: RunShape,
    slots: Box<[OnceLock<Run>]>,
    /// Runs published (at least 1); the last is the one writes go to.
    count: AtomicUsize,
    /// The largest sequence the writer has written into the memtable (skiplist or membuffer).
    newest_seq: AtomicU64,
    /// Bytes the sealed runs had allocated when they were sealed.
    sealed_bytes: AtomicUsize,
    /// Held while a run is sealed (one seal at a time when several threads `add`).
    seal: Mutex<()>,
    /// Set while a seal reads the newest sequence and writes the bound: an insert that
    /// finishes then waits for it before checking the bound ([`Run::cover`]).
    sealing: AtomicBool,
}

impl Runs {
    pub(super) fn new(shape: RunShape) -> Runs {
        Runs {
            shape,
            slots: (0..MAX_RUNS).map(|_| OnceLock::new()).collect(),
            count: AtomicUsize::new(1),
            newest_seq: AtomicU64::new(0),
            sealed_bytes: AtomicUsize::new(0),
            seal: Mutex::new(()),
            sealing: AtomicBool::new(false),
        }
    }

    /// Changes how runs are built. REQUIRES: nothing was written (the first run, built when
    /// first used, is dropped if it was).
    pub(super) fn reshape(&mut self, f: impl FnOnce(&mut RunShape)) {
        debug_assert_eq!(self.len(), 0, "a memtable reshaped after a write");
        f(&mut self.shape);
        self.slots[0].take();
    }

    pub(super) fn comparator(&self) -> &InternalKeyComparator {
        &self.shape.cmp
    }

    /// The published runs, oldest first. The first is built when first used (a memtable is
    /// shaped by several calls before it is written); the others are set before they are
    /// published.
    pub(super) fn all(&self) -> impl DoubleEndedIterator<Item = &Run> {
        let n = self.count.load(Ordering::Acquire);
        self.slots[..n]
            .iter()
            .map(|slot| slot.get_or_init(|| Run::new(&self.shape)))
    }

    /// The bytes every user key in the runs starts with (the common prefix of the runs'
    /// common prefixes); empty when they hold nothing.
    pub(super) fn common_prefix(&self) -> Vec<u8> {
        let mut prefixes = self
            .all()
            .filter(|r| r.list.len() > 0)
            .map(|r| r.list.common_prefix());
        let Some(first) = prefixes.next() else {
            return Vec::new();
        };
        let n = prefixes.fold(first.len(), |n, p| {
            first[..n].iter().zip(p).take_while(|(a, b)| a == b).count()
        });
        first[..n].to_vec()
    }

    /// The distinct user keys of a sample of about `n` entries or more spread over every
    /// run, ascending ([`SkipList::sample_user_keys`] of each run, its share of `n`).
    pub(super) fn sample_user_keys(&self, n: usize) -> Vec<&[u8]> {
        let runs = self.all().count();
        let mut keys: Vec<&[u8]> = self
            .all()
            .flat_map(|r| r.list.sample_user_keys(n.div_ceil(runs)))
            .collect();
        if runs > 1 {
            keys.sort_unstable_by(|a, b| self.shape.cmp.user().compare(a, b));
            keys.dedup();
        }
        keys
    }

    /// The run writes go to.
    pub(super) fn current(&self) -> &Run {
        self.all().next_back().expect("a memtable has a run")
    }

    /// Records that the writer wrote an entry of sequence `seq` (to a run or the membuffer).
    /// Before the entry is inserted anywhere.
    pub(super) fn note_write(&self, seq: SequenceNumber) {
        if self.shape.run_bytes > 0 {
            self.newest_seq.fetch_max(seq, Ordering::SeqCst);
        }
    }

    /// Inserts one entry into the current run (its key into the filter first).
    pub(super) fn insert(&self, seq: SequenceNumber, kind: ValueKind, user_key: &[u8], v: &[u8]) {
        let run = self.current();
        if let Some(f) = &run.filter {
            f.insert(user_key);
        }
        run.list.insert(user_key, seq, kind, v);
        if self.shape.run_bytes > 0 {
            run.cover(seq, &self.sealing);
        }
    }

    /// Inserts entries sorted by internal key into the current run, their keys into the
    /// filter first.
    pub(super) fn insert_sorted(&self, entries: &[BatchEntry<'_>], search: Search) {
        let run = self.current();
        if let Some(f) = &run.filter {
            entries.iter().for_each(|e| f.insert(e.user_key));
        }
        run.list.insert_sorted(entries, search);
        if self.shape.run_bytes > 0
            && let Some(seq) = entries.iter().map(|e| e.seq).max()
        {
            run.cover(seq, &self.sealing);
        }
    }

    /// Starts a new run if the current one has allocated the run size. Called by the writer
    /// after each write (never by a drain).
    pub(super) fn seal_if_full(&self) {
        let run_bytes = self.shape.run_bytes;
        if run_bytes == 0 || self.current().list.allocated_bytes() < run_bytes {
            return;
        }
        let Ok(_seal) = self.seal.try_lock() else {
            return; // another thread is sealing it
        };
        let n = self.count.load(Ordering::Acquire);
        let current = self.current();
        if n == MAX_RUNS || current.list.allocated_bytes() < run_bytes {
            return;
        }
        let next = Run::new(&self.shape);
        // An insert into `current` noted its sequence before it inserted and checks the bound
        // after (`Run::cover`, all SeqCst). If it noted before the load below, the bound
        // covers it; if after, its check comes after `sealing` is set, so it waits for the
        // bound and raises it.
        self.sealing.store(true, Ordering::SeqCst);
        let bound = self.newest_seq.load(Ordering::SeqCst);
        current.bound.store(bound, Ordering::SeqCst);
        self.sealing.store(false, Ordering::SeqCst);
        self.sealed_bytes
            .fetch_add(current.list.allocated_bytes(), Ordering::Relaxed);
        let _ = self.slots[n].set(next);
        // Release: a reader that sees the new run sees the bound above.
        self.count.store(n + 1, Ordering::Release);
    }

    /// The newest entry of `user_key` with sequence <= `snapshot` in any run, as (sequence,
    /// kind, value).
    pub(super) fn get(
        &self,
        user_key: &[u8],
        snapshot: SequenceNumber,
    ) -> Option<(SequenceNumber, ValueKind, &[u8])> {
        let mut best: Option<(SequenceNumber, ValueKind, &[u8])> = None;
        for run in self.all().rev() {
            if let Some((seq, ..)) = best
                && run.bound.load(Ordering::Relaxed) <= seq
            {
                break; // this run and the older ones hold nothing newer
            }
            if let Some(found) = run.get(user_key, snapshot)
                && best.is_none_or(|(seq, ..)| found.0 > seq)
            {
                best = Some(found);
            }
        }
        best
    }

    /// Bytes the runs' entries occupy.
    pub(super) fn allocated_bytes(&self) -> usize {
        self.sealed_bytes.load(Ordering::Relaxed) + self.current().list.allocated_bytes()
    }

    /// Bytes reserved for the runs (arenas, filters, point indexes).
    pub(super) fn reserved(&self) -> usize {
        self.all().map(Run::reserved).sum()
    }

    /// Entries in the runs (without building the first: an unbuilt run holds none).
    pub(super) fn len(&self) -> usize {
        let n = self.count.load(Ordering::Acquire);
        self.slots[..n]
            .iter()
            .filter_map(OnceLock::get)
            .map(|r| r.list.len())
            .sum()
    }

    /// Runs published.
    pub(super) fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// A cursor over the runs published now, in internal-key order.
    pub(super) fn iter(&self) -> RunsCursor {
        let mut lists = self.all().map(|r| Arc::clone(&r.list));
        match (lists.next(), lists.next()) {
            (Some(one), None) => RunsCursor::One(Iter::new(one)),
            (first, second) => {
                let children = first
                    .into_iter()
                    .chain(second)
                    .chain(lists)
                    .map(|l| Box::new(Iter::new(l)) as Box<dyn InternalIterator>)
                    .collect();
                RunsCursor::Merged {
                    merged: MergingIterator::new(self.shape.cmp.clone(), children),
                    last: Vec::new(),
                }
            }
        }
    }
}

/// A cursor over a memtable's runs: the one run's own, or the runs merged, each entry once.
pub(super) enum RunsCursor {
    One(Iter),
    Merged {
        merged: MergingIterator,
        /// The key the cursor just left, to step over a second copy of it.
        last: Vec<u8>,
    },
}

impl std::fmt::Debug for RunsCursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunsCursor::One(it) => it.fmt(f),
            RunsCursor::Merged { merged, .. } => merged.fmt(f),
        }
    }
}

impl RunsCursor {
    /// Moves forward or back past the current key and any copy of it.
    fn step(&mut self, forward: bool) {
        match self {
            RunsCursor::One(it) if forward => it.next(),
            RunsCursor::One(it) => it.prev(),
            RunsCursor::Merged { merged, last } => {
                last.clear();
                last.extend_from_slice(merged.key());
                loop {
                    if forward {
                        merged.next();
                    } else {
                        merged.prev();
                    }
                    if !merged.valid() || merged.key() != last.as_slice() {
                        break;
                    }
                }
            }
        }
    }
}

impl InternalIterator for RunsCursor {
    fn valid(&self) -> bool {
        match self {
            RunsCursor::One(it) => it.valid(),
            RunsCursor::Merged { merged, .. } => merged.valid(),
        }
    }
    fn seek_to_first(&mut self) {
        match self {
            RunsCursor::One(it) => it.seek_to_first(),
            RunsCursor::Merged { merged, .. } => merged.seek_to_first(),
        }
    }
    fn seek_to_last(&mut self) {
        match self {
            RunsCursor::One(it) => it.seek_to_last(),
            RunsCursor::Merged { merged, .. } => merged.seek_to_last(),
        }
    }
    fn seek(&mut self, target: &[u8]) {
        match self {
            RunsCursor::One(it) => it.seek(target),
            RunsCursor::Merged { merged, .. } => merged.seek(target),
        }
    }
    fn next(&mut self) {
        self.step(true);
    }
    fn prev(&mut self) {
        self.step(false);
    }
    fn key(&self) -> &[u8] {
        match self {
            RunsCursor::One(it) => it.key(),
            RunsCursor::Merged { merged, .. } => merged.key(),
        }
    }
    fn value(&self) -> &[u8] {
        match self {
            RunsCursor::One(it) => it.value(),
            RunsCursor::Merged { merged, .. } => merged.value(),
        }
    }
    fn status(&self) -> Result<()> {
        match self {
            RunsCursor::One(_) => Ok(()),
            RunsCursor::Merged { merged, .. } => merged.status(),
        }
    }
}

/// A run's cursor as a child of the merging iterator; it cannot fail.
impl InternalIterator for Iter {
    fn valid(&self) -> bool {
        Iter::valid(self)
    }
    fn seek_to_first(&mut self) {
        Iter::seek_to_first(self);
    }
    fn seek_to_last(&mut self) {
        Iter::seek_to_last(self);
    }
    fn seek(&mut self, target: &[u8]) {
        Iter::seek(self, target);
    }
    fn next(&mut self) {
        Iter::next(self);
    }
    fn prev(&mut self) {
        Iter::prev(self);
    }
    fn key(&self) -> &[u8] {
        Iter::key(self)
    }
    fn value(&self) -> &[u8] {
        Iter::value(self)
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}
