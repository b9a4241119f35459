//! Seek counters of the FLSM layout: per level >= 1, one counter per guard, counting the reads
//! that paid for the guard's overlapping fragments: iterator seeks that positioned more than one
//! of them, and gets that read a data block of one that did not hold the key while others were
//! candidates (see [`Version::get_counting`]). Level 0 has one counter: seeks that positioned
//! more than one level-0 table.
//!
//! Each such read also reports what it paid ([`ReadCost`]: one block per table beyond the
//! first); the database adds it up, and seek-based compaction may spend a share of it in
//! writes (`FlsmOptions::seek_compaction_budget_percent`).
//!
//! The counters belong to one [`crate::version::Version`]. A new version carries over the
//! count of every guard whose bounds and fragments it kept unchanged (`carry_over`), so
//! flushes and compactions elsewhere do not reset a hot guard; a guard whose fragments changed
//! starts at zero. Each guard has its own atomic, so readers of different guards never touch
//! the same counter (sharded by guard); updates are relaxed `fetch_add`s.

use std::cmp::Ordering as KeyOrder;
use std::sync::atomic::{AtomicU32, Ordering};

use super::guards;
use crate::comparator::Comparator;
use crate::version::{FileRef, Version};

/// Per level, per guard (index 0: the sentinel guard) seek counts.
#[derive(Debug, Default)]
pub struct SeekCounters {
    levels: Vec<Box<[AtomicU32]>>,
}

impl SeekCounters {
    /// Zeroed counters for levels with `guards_per_level[level]` guards each (plus the
    /// sentinel guard; level 0 gets one, for the whole level).
    pub fn new(guards_per_level: impl IntoIterator<Item = usize>) -> Self {
        SeekCounters {
            levels: guards_per_level
                .into_iter()
                .enumerate()
                .map(|(level, n)| {
                    let len = if level == 0 { 1 } else { n + 1 };
                    (0..len).map(|_| AtomicU32::new(0)).collect()
                })
                .collect(),
        }
    }

    /// Counts one seek in guard `index` of `level`; returns the new count (0 if there is no
    /// such guard).
    pub fn record(&self, level: usize, index: usize) -> u32 {
        self.levels
            .get(level)
            .and_then(|l| l.get(index))
            .map_or(0, |c| c.fetch_add(1, Ordering::Relaxed).saturating_add(1))
    }

    /// The count of guard `index` of `level`.
    pub fn count(&self, level: usize, index: usize) -> u32 {
        self.levels
            .get(level)
            .and_then(|l| l.get(index))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// `(level, guard index, count)` of every guard whose count reached `threshold`, highest
    /// count first.
    pub fn hot(&self, threshold: u32) -> Vec<(usize, usize, u32)> {
        let mut hot: Vec<(usize, usize, u32)> = self
            .levels
            .iter()
            .enumerate()
            .flat_map(|(level, counts)| {
                counts.iter().enumerate().filter_map(move |(i, c)| {
                    let n = c.load(Ordering::Relaxed);
                    (threshold > 0 && n >= threshold).then_some((level, i, n))
                })
            })
            .collect();
        hot.sort_by_key(|h| std::cmp::Reverse(h.2));
        hot
    }
}

/// The numbers of the tables of `files` (sorted by smallest key) starting in `[start, end)`.
fn tables_in<'f>(
    ucmp: &dyn Comparator,
    files: &'f [FileRef],
    (start, end): (Option<&[u8]>, Option<&[u8]>),
) -> impl Iterator<Item = u64> + 'f {
    let below = |bound: Option<&[u8]>| match bound {
        None => files.len(),
        Some(k) => files.partition_point(|f| ucmp.compare(f.smallest_user_key(), k).is_lt()),
    };
    let from = start.map_or(0, |k| below(Some(k)));
    let to = below(end);
    files[from..to.max(from)].iter().map(|f| f.number)
}

/// Copies into `into` (the counters of a version with tables `levels` and guard keys `guards`)
/// the count of every guard of `base` with a non-zero count that has the same bounds and the
/// same tables in both. Cost: a few binary searches per counted guard.
pub(crate) fn carry_over(
    base: &Version,
    levels: &[Vec<FileRef>],
    guards: &[Vec<Vec<u8>>],
    into: &SeekCounters,
) {
    let ucmp = base.icmp().user().as_ref();
    // Level 0's count stands while its tables do.
    if let (Some(old), Some(new), Some(files)) = (
        base.seek_counters().levels.first().and_then(|l| l.first()),
        into.levels.first().and_then(|l| l.first()),
        levels.first(),
    ) && base
        .files(0)
        .iter()
        .map(|f| f.number)
        .eq(files.iter().map(|f| f.number))
    {
        new.store(old.load(Ordering::Relaxed), Ordering::Relaxed);
    }
    for (level, counts) in base.seek_counters().levels.iter().enumerate().skip(1) {
        let (Some(files), Some(keys)) = (levels.get(level), guards.get(level)) else {
            continue;
        };
        let old_keys = base.guards(level);
        for (old_index, count) in counts.iter().enumerate() {
            let n = count.load(Ordering::Relaxed);
            if n == 0 {
                continue;
            }
            let bounds = guards::guard_bounds(old_keys, old_index);
            let index = match bounds.0 {
                None => 0,
                Some(s) => match keys.binary_search_by(|g| ucmp.compare(g, s)) {
                    Ok(i) => i + 1,
                    Err(_) => continue,
                },
            };
            let same_end = match (bounds.1, guards::guard_bounds(keys, index).1) {
                (None, None) => true,
                (Some(a), Some(b)) => ucmp.compare(a, b) == KeyOrder::Equal,
                _ => false,
            };
            if same_end
                && tables_in(ucmp, base.files(level), bounds).eq(tables_in(ucmp, files, bounds))
                && let Some(c) = into.levels.get(level).and_then(|l| l.get(index))
            {
                c.store(n, Ordering::Relaxed);
            }
        }
    }
}

impl Version {
    /// Counts one read of `user_key` in its guard of `level`; returns the new count.
    pub(crate) fn bump(&self, level: usize, user_key: &[u8]) -> u32 {
        let ucmp = self.icmp().user();
        let index = guards::guard_index(ucmp.as_ref(), self.guards(level), user_key);
        self.seek_counters().record(level, index)
    }

    /// Counts an iterator seek to `user_key`: at every level >= 1 where more than one fragment
    /// overlaps the key (the seek had to position several tables of one guard), the guard's
    /// counter goes up, and level 0's when more than one of its tables holds the key's range.
    /// Returns what the seek paid and whether a count reached `threshold` (0: counts nothing).
    pub fn record_seek(&self, user_key: &[u8], threshold: u32) -> ReadCost {
        let mut cost = ReadCost::default();
        if threshold == 0 || !self.layout().has_guards() {
            return cost;
        }
        let ucmp = self.icmp().user();
        let holds = |f: &FileRef| {
            ucmp.compare(user_key, f.smallest_user_key()) != KeyOrder::Less
                && ucmp.compare(user_key, f.largest_user_key()) != KeyOrder::Greater
        };
        let level0 = self.files(0).iter().filter(|f| holds(f)).count();
        let mut tally = |level: usize, tables: usize| {
            if tables > 1 {
                cost.extra_tables += tables as u64 - 1;
                cost.crossed |= self.bump(level, user_key) == threshold;
            }
        };
        tally(0, level0);
        for level in 1..self.num_levels() {
            let overlapping = self
                .runs(level)
                .iter()
                .filter(|run| {
                    let i = run.partition_point(|f| {
                        ucmp.compare(f.largest_user_key(), user_key) == KeyOrder::Less
                    });
                    run.get(i).is_some_and(holds)
                })
                .count();
            tally(level, overlapping);
        }
        cost
    }
}

/// What one read paid for overlapping tables (see the module comment).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReadCost {
    /// Tables the read positioned or read a block of beyond one per level: each cost a block
    /// read that a merged guard (or an empty level 0) would have saved.
    pub extra_tables: u64,
    /// A guard's count reached the threshold with this read.
    pub crossed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_guard_and_lists_hot_guards() {
        let c = SeekCounters::new([0, 2, 1]);
        assert_eq!(c.record(0, 0), 1, "level 0 has one counter");
        assert_eq!(c.record(0, 1), 0, "and no guards");
        assert_eq!(c.record(1, 3), 0, "no such guard");
        for _ in 0..3 {
            c.record(1, 2);
        }
        assert_eq!(c.record(2, 0), 1);
        assert_eq!(c.count(1, 2), 3);
        assert_eq!(c.hot(2), vec![(1, 2, 3)]);
        assert_eq!(c.hot(1), vec![(1, 2, 3), (0, 0, 1), (2, 0, 1)]);
        assert!(c.hot(0).is_empty(), "threshold 0 disables");
    }
}
