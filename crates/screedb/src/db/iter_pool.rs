//! Iterator sources kept for reuse.
//!
//! A [`super::DbIterator`] reads a merged iterator over its super version's sources: a cursor
//! per memtable, one table iterator per level-0 table and one concatenating iterator per
//! sorted run below. Building it takes a few dozen allocations and table-cache lookups, and
//! dropping it as many frees: with `db_bench`'s seekrandom, which makes a new iterator for every
//! seek, that was a fifth of a seek at 10M keys (docs/benchmarks.md, "Iterators made again from
//! their parts"). When an iterator of the latest state drops, its merged iterator goes into
//! this pool; the next [`crate::Db::iter`] over the same sources takes it instead of building
//! one. RocksDB reaches the same end by asking the user to keep the iterator
//! (`Iterator::Refresh`); here a program written the LevelDB way gets it too.
//!
//! Reuse is safe because the sources decide what an iterator can read and the sequence number
//! decides what it sees: a memtable's skiplists show entries added after the cursor was made
//! (the [`super::DbIterator`] hides those above its sequence), tables never change. Two things
//! do change a super version's sources without replacing it, and a kept iterator is only
//! reused if neither happened: a memtable starting a new run (`Options::memtable_run_size`; the
//! [`stamp`] counts the runs) and the super version itself being replaced by a flush or
//! compaction (compared by pointer). Every positioning call resets a merged iterator, and one
//! that stopped with an error is never kept.
//!
//! An entry holds its super version, and with it the tables that version names: kept for a
//! replaced version, it would keep replaced tables on disk. The pool is therefore emptied of
//! stale entries where obsolete tables are purged ([`SourcePool::release_stale`]), and never
//! holds more than [`CAPACITY`] entries.

use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use super::SuperVersion;
use crate::iter::InternalIterator;
use crate::sync::lock;

/// Most entries kept: one per thread that iterates at once is enough for reuse.
pub(super) const CAPACITY: usize = 8;

/// How many sorted runs the memtables of `sv` hold now. Taken before an iterator's sources are
/// built: a run started after it only makes the entry look stale, never current.
pub(super) fn stamp(sv: &SuperVersion) -> usize {
    sv.memtables().map(|m| m.runs()).sum()
}

/// True if a merged iterator built over `sv` at `stamp` reads every source `now` has: the
/// same super version, whose memtables started no run since.
pub(super) fn reads_all_of(sv: &Arc<SuperVersion>, stamp: usize, now: &Arc<SuperVersion>) -> bool {
    Arc::ptr_eq(sv, now) && stamp == self::stamp(now)
}

/// A merged iterator over the sources of `sv` as they were at `stamp`.
pub(super) struct Sources {
    pub(super) merged: Box<dyn InternalIterator>,
    pub(super) sv: Arc<SuperVersion>,
    pub(super) stamp: usize,
}

/// Merged iterators of dropped [`super::DbIterator`]s, ready for the next one.
#[derive(Default)]
pub(super) struct SourcePool {
    slots: Mutex<Vec<Sources>>,
}

impl SourcePool {
    /// A kept merged iterator that reads exactly the sources of `sv` as of `stamp`, if any.
    pub(super) fn take(
        &self,
        sv: &Arc<SuperVersion>,
        stamp: usize,
    ) -> Option<Box<dyn InternalIterator>> {
        let mut slots = lock(&self.slots);
        let i = slots
            .iter()
            .position(|s| Arc::ptr_eq(&s.sv, sv) && s.stamp == stamp)?;
        Some(slots.swap_remove(i).merged)
    }

    /// Keeps `sources` if they still read everything the current super version holds and the
    /// pool has room; else drops them (after the lock is released).
    pub(super) fn give(&self, current: &ArcSwap<SuperVersion>, sources: Sources) {
        let mut slots = lock(&self.slots);
        // Loaded under the lock: an install after this check is followed by a
        // `release_stale`, which waits for the lock and then finds this entry.
        if slots.len() < CAPACITY && reads_all_of(&sources.sv, sources.stamp, &current.load()) {
            slots.push(sources);
            return;
        }
        drop(slots);
        drop(sources);
    }

    /// Drops the entries whose super version is no longer the current one (or whose memtables
    /// have started runs since), after the pool's lock is released. Dropping an entry only
    /// queues the tables it alone held for the next purge, so this may run under the database
    /// mutex; call it before purging.
    pub(super) fn release_stale(&self, current: &ArcSwap<SuperVersion>) {
        let stale: Vec<Sources> = {
            let mut slots = lock(&self.slots);
            let current = current.load_full();
            let (keep, stale) = std::mem::take(&mut *slots)
                .into_iter()
                .partition(|s| reads_all_of(&s.sv, s.stamp, &current));
            *slots = keep;
            stale
        };
        drop(stale);
    }

    /// Drops every entry (the database is closing).
    pub(super) fn release_all(&self) {
        let all = std::mem::take(&mut *lock(&self.slots));
        drop(all);
    }
}
