//! Jungle compaction: append merges between levels, rewrites within a level.
//!
//! Flushes go straight into level 1 while level 0 is empty ([`Jungle::flush_plan`]), so level 0
//! holds tables only when a flush could not. In order of priority:
//! - level 0 -> 1 once level 0 holds `l0_compaction_trigger` tables: all of them are merged
//!   into level 1, appending a segment to every level-1 tree their keys reach and writing new
//!   trees where a guard range has none;
//! - a level `n >= 1` (not the last) whose file bytes pass C times its target (as in the paper,
//!   so a value is appended to fewer levels): one tree, round robin by
//!   key, is merged the same way into level `n + 1` and removed, or moved there by metadata
//!   when no tree there overlaps it and it fits one guard range (see [`Jungle::try_move`]);
//! - a tree holding more than `split_factor * target_file_size` of live data is rewritten into
//!   several (new guards cut it);
//! - a tree whose file passes `compaction_factor` times its live bytes (plus the metadata a
//!   fresh tree of them needs, [`fresh_bytes`]) is rewritten in place (the largest ratio
//!   first), dropping shadowed versions and, where nothing lies below, tombstones; on the
//!   deepest level, while its trees together pass (1 + C) / 2, every tree above the level's
//!   own ratio is ([`rewrite_ratio`]).
//!
//! No two jobs touch one tree (inputs and append targets are busy files), and no two jobs write
//! the same guard range of a level (a new tree may appear in any range the job's keys span).

use std::sync::Arc;

use crate::compaction::{Choice, CompactionStrategy, MergeSpec, OutputPlan, State, key_range};
use crate::layout::flsm::guards;
use crate::manifest::{FileMeta, VersionEdit};
use crate::options::{Layout, Options};
use crate::table::TableFormat;
use crate::version::{FileRef, Version};

use super::{JungleOptions, upkeep};

/// The Jungle strategy (its options come from `Options::layout`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Jungle;

fn options_of(options: &Options) -> &JungleOptions {
    match &options.layout {
        Layout::Jungle(jungle) => jungle,
        Layout::Leveled | Layout::Flsm(_) | Layout::Trie(_) => &JungleOptions::DEFAULT,
    }
}

/// Guard bits that make about one key in `target / average entry bytes` a guard candidate, the
/// average measured on `files`.
pub(crate) fn guard_bits(target: u64, files: &[FileRef]) -> u32 {
    let bytes: u64 = files.iter().map(|f| f.live_or_file_bytes()).sum();
    let entries: u64 = files.iter().map(|f| f.num_entries).sum();
    guard_bits_for(target, bytes, entries)
}

/// Guard bits that make about one key in `target / (bytes / entries)` a guard candidate.
fn guard_bits_for(target: u64, bytes: u64, entries: u64) -> u32 {
    if entries == 0 {
        return 0;
    }
    let average = (bytes / entries).max(1);
    (target / average).max(1).ilog2()
}

/// Bytes of leaf entry, value record and filter that a tree spends per entry beyond its key
/// and value, rounded up: about 25 for values stored apart in fixed-width leaves, about 15 in
/// compact ones and less in prefix leaves (kept at 32, so the rewrite threshold did not move
/// with the leaf format).
const ENTRY_OVERHEAD: u64 = 32;

/// Bytes a tree spends once: the root, the commit record, the filter's header.
const TREE_OVERHEAD: u64 = 4096;

/// About the bytes a freshly written tree of `t`'s entries takes: its live bytes plus the
/// leaves, filter and commit they need. The space ratio C is compared with `file_size` over
/// this, so a tree of tiny entries is not rewritten forever for its metadata (with 1 KiB values
/// it is within 3% of the live bytes alone).
pub(crate) fn fresh_bytes(t: &FileMeta) -> u64 {
    t.live_or_file_bytes() + t.num_entries * ENTRY_OVERHEAD + TREE_OVERHEAD
}

/// Bytes level `level` (>= 1, above the last) may hold before it merges down: as in the paper,
/// C times the leveled target, so a value is appended to fewer levels.
fn level_limit(options: &Options, level: usize) -> f64 {
    options.level_target_bytes(level) as f64 * options_of(options).compaction_factor
}

/// Trees the deepest level must hold before its rewrites are staggered ([`rewrite_ratio`]):
/// with fewer, the level's ratio is one or two trees' own, and a lone tree would be rewritten
/// at (1 + C) / 2 instead of C.
const STAGGER_MIN_TREES: usize = 8;

/// The space ratio (file bytes over [`fresh_bytes`]) past which a tree of `level` is rewritten,
/// or replaced rather than appended to: C, except on the deepest level (of at least
/// [`STAGGER_MIN_TREES`] trees) while its trees together pass (1 + C) / 2, when it is the
/// level's own ratio. Appends reach the deepest level's trees evenly, so trees rewritten only
/// at C all reach it together and the level's bytes swing between about 1 and C times its live
/// bytes; rewriting the trees above the level's ratio first spreads them out until their
/// ratios lie evenly between 1 and C, where the level holds (1 + C) / 2 and each tree is still
/// rewritten at about C (docs/jungle.md, "Staggered rewrites, paced writes").
fn rewrite_ratio(version: &Version, options: &Options, level: usize) -> f64 {
    let c = options_of(options).compaction_factor;
    let trees = version.files(level);
    if version.deepest_level() != Some(level) || trees.len() < STAGGER_MIN_TREES {
        return c;
    }
    let (file, fresh) = trees
        .iter()
        .filter(|t| t.format == TableFormat::Tree)
        .fold((0u64, 0u64), |(file, fresh), t| {
            (file + t.file_size, fresh + fresh_bytes(t))
        });
    let ratio = file as f64 / fresh.max(1) as f64;
    if ratio > (1.0 + c) / 2.0 {
        ratio.min(c)
    } else {
        c
    }
}

/// The guard ranges of `level` the user keys `[s, l]` fall in, as an inclusive index interval.
fn span(version: &Version, level: usize, s: &[u8], l: &[u8]) -> (usize, usize) {
    let ucmp = version.icmp().user();
    let g = version.guards(level);
    (
        guards::guard_index(ucmp.as_ref(), g, s),
        guards::guard_index(ucmp.as_ref(), g, l),
    )
}

/// True when a running job writes into one of the guard ranges `range` of `level`.
pub(super) fn span_busy(
    version: &Version,
    state: &State,
    level: usize,
    range: (usize, usize),
) -> bool {
    state.busy_ranges.iter().any(|(lv, s, l)| {
        let (a, b) = span(version, level, s, l);
        *lv == level && a <= range.1 && range.0 <= b
    })
}

fn is_busy(state: &State, files: &[FileRef]) -> bool {
    files.iter().any(|f| state.busy_files.contains(&f.number))
}

impl Jungle {
    /// A metadata move of tree `t` from `level` to `level + 1`, when it costs no write: no tree
    /// there overlaps it, its keys fall in one guard range there, and a tree already in that
    /// range (at most one) lies below it, so the move adds its smallest key as a guard and each
    /// range still holds one tree. Ascending loads (fillseq) move every tree down instead of
    /// writing each value again per level, as leveled's moves do.
    fn try_move(version: &Version, state: &State, level: usize, t: &FileRef) -> Option<Choice> {
        let out = level + 1;
        if level == 0 || out >= version.num_levels() || t.format != TableFormat::Tree {
            return None;
        }
        let (s, l) = (t.smallest_user_key(), t.largest_user_key());
        let range = span(version, out, s, l);
        if range.0 != range.1
            || state.busy_files.contains(&t.number)
            || !version.overlapping(out, Some(s), Some(l)).is_empty()
            || span_busy(version, state, level, span(version, level, s, l))
            || span_busy(version, state, out, range)
        {
            return None;
        }
        let ucmp = version.icmp().user();
        let guards = version.guards(out);
        let mut below = false;
        for other in version.files(out) {
            if guards::guard_index(ucmp.as_ref(), guards, other.smallest_user_key()) != range.0 {
                continue;
            }
            if ucmp.compare(other.smallest_user_key(), l).is_gt() {
                // A guard at `s` would leave this tree in the moved tree's range.
                return None;
            }
            below = true;
        }
        Some(Choice::Move {
            from_level: level,
            file: Arc::clone(t),
            to_level: out,
            new_guard: below.then(|| s.to_vec()),
        })
    }

    /// The merge of `victims` (of `level`) into `level + 1`, appending to the trees there whose
    /// guard ranges the victims' keys reach; `None` when one of them, or a range, is busy.
    fn into_next(
        version: &Version,
        options: &Options,
        state: &State,
        level: usize,
        victims: Vec<FileRef>,
    ) -> Option<MergeSpec> {
        let out = level + 1;
        if victims.is_empty() || is_busy(state, &victims) || out >= version.num_levels() {
            return None;
        }
        let (s, l) = key_range(version, &victims)?;
        let range = span(version, out, &s, &l);
        if span_busy(version, state, out, range) {
            return None;
        }
        let ucmp = version.icmp().user();
        let targets: Vec<FileRef> = version
            .files(out)
            .iter()
            .filter(|t| {
                let g =
                    guards::guard_index(ucmp.as_ref(), version.guards(out), t.smallest_user_key());
                range.0 <= g && g <= range.1
            })
            .cloned()
            .collect();
        // A table that is not a tree (none is, unless written by a foreign layout) is rewritten
        // into trees first; nothing can be appended to it.
        if is_busy(state, &targets) || targets.iter().any(|t| t.format != TableFormat::Tree) {
            return None;
        }
        let bits = guard_bits(options.target_file_size, &victims);
        let mut inputs = vec![(level, victims)];
        if !targets.is_empty() {
            inputs.push((out, targets));
        }
        Some(MergeSpec {
            inputs,
            output_level: out,
            output: OutputPlan::Trees {
                target_file_size: options.target_file_size,
                new_guard_bits: bits,
                rewrite: false,
                // The append that would take a tree past its rewrite ratio is a rewrite
                // instead: the next job would rewrite it anyway, and both files would share
                // the disk meanwhile.
                replace_past_percent: (rewrite_ratio(version, options, out) * 100.0) as u32,
            },
            seek: false,
        })
    }

    /// How a flush of a memtable holding user keys `[smallest, largest]` (`entries` entries of
    /// `bytes` bytes) goes straight into the trees of level 1, and the trees it appends to:
    /// the level-0 merge done at flush time, so the memtable's values are written once instead
    /// of to a level-0 table and again into the trees (docs/jungle.md, "Flushes"). `None` when
    /// level 0 holds a table (older than the memtable: it must reach level 1 first), a tree in
    /// the range is busy or a running job writes into the range: the flush then writes a
    /// level-0 table as in every layout.
    pub(crate) fn flush_plan(
        version: &Version,
        options: &Options,
        state: &State,
        (smallest, largest): (&[u8], &[u8]),
        (bytes, entries): (u64, u64),
    ) -> Option<(OutputPlan, Vec<FileRef>)> {
        if !version.files(0).is_empty() || version.num_levels() < 2 {
            return None;
        }
        let range = span(version, 1, smallest, largest);
        if span_busy(version, state, 1, range) {
            return None;
        }
        let ucmp = version.icmp().user();
        let targets: Vec<FileRef> = version
            .files(1)
            .iter()
            .filter(|t| {
                let g =
                    guards::guard_index(ucmp.as_ref(), version.guards(1), t.smallest_user_key());
                range.0 <= g && g <= range.1
            })
            .cloned()
            .collect();
        if is_busy(state, &targets) || targets.iter().any(|t| t.format != TableFormat::Tree) {
            return None;
        }
        let plan = OutputPlan::Trees {
            target_file_size: options.target_file_size,
            new_guard_bits: guard_bits_for(options.target_file_size, bytes, entries),
            rewrite: false,
            replace_past_percent: (rewrite_ratio(version, options, 1) * 100.0) as u32,
        };
        Some((plan, targets))
    }

    /// The rewrite of `trees` of `level` into new trees of that level.
    fn rewrite(options: &Options, level: usize, trees: Vec<FileRef>) -> MergeSpec {
        let bits = guard_bits(options.target_file_size, &trees);
        MergeSpec {
            inputs: vec![(level, trees)],
            output_level: level,
            output: OutputPlan::Trees {
                target_file_size: options.target_file_size,
                new_guard_bits: bits,
                rewrite: true,
                replace_past_percent: 0,
            },
            seek: false,
        }
    }

    /// The most urgent single-tree rewrite: a table that is not a tree, then a tree too large
    /// (split), then the largest space ratio past C.
    fn rewrite_due(version: &Version, options: &Options, state: &State) -> Option<MergeSpec> {
        let jungle = options_of(options);
        let split_at = options.target_file_size as f64 * jungle.split_factor;
        let mut best: Option<(f64, usize, &FileRef)> = None;
        for level in 1..version.num_levels() {
            let rewrite_at = rewrite_ratio(version, options, level);
            for t in version.files(level) {
                if state.busy_files.contains(&t.number) {
                    continue;
                }
                let live = t.live_or_file_bytes();
                let urgency = if t.format != TableFormat::Tree {
                    f64::INFINITY
                } else if live as f64 > split_at && t.file_size > fresh_bytes(t) {
                    // Only a tree grown by appends: a freshly written one is as cut as it can
                    // be (one key's versions, or one value, may exceed the split size).
                    f64::MAX
                } else if live == 0 {
                    f64::MAX
                } else {
                    let ratio = t.file_size as f64 / fresh_bytes(t) as f64;
                    if ratio <= rewrite_at {
                        continue;
                    }
                    ratio
                };
                if best.is_none_or(|(u, ..)| urgency > u) {
                    let range = span(version, level, t.smallest_user_key(), t.largest_user_key());
                    if !span_busy(version, state, level, range) {
                        best = Some((urgency, level, t));
                    }
                }
            }
        }
        best.map(|(_, level, t)| Self::rewrite(options, level, vec![Arc::clone(t)]))
    }
}

impl CompactionStrategy for Jungle {
    fn name(&self) -> &'static str {
        "jungle"
    }

    fn choose(&self, version: &Version, options: &Options, state: &State) -> Choice {
        let last = version.num_levels() - 1;
        if version.files(0).len() >= options.l0_trigger()
            && let Some(spec) =
                Self::into_next(version, options, state, 0, version.files(0).to_vec())
        {
            return Choice::Merge(spec);
        }
        let mut over: Vec<(f64, usize)> = (1..last)
            .map(|level| {
                let score = version.level_bytes(level) as f64 / level_limit(options, level);
                (score, level)
            })
            .filter(|(score, _)| *score >= 1.0)
            .collect();
        over.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (_, level) in over {
            let trees = version.files(level);
            let ucmp = version.icmp().user();
            let start = match state.compact_pointers.get(level).and_then(Option::as_ref) {
                Some(ptr) => {
                    trees.partition_point(|f| ucmp.compare(f.largest_user_key(), ptr).is_le())
                }
                None => 0,
            };
            for t in trees[start..].iter().chain(&trees[..start]) {
                if t.format != TableFormat::Tree {
                    continue;
                }
                if let Some(moved) = Self::try_move(version, state, level, t) {
                    return moved;
                }
                if let Some(spec) =
                    Self::into_next(version, options, state, level, vec![Arc::clone(t)])
                {
                    return Choice::Merge(spec);
                }
            }
        }
        match Self::rewrite_due(version, options, state) {
            Some(spec) => Choice::Merge(spec),
            None => Choice::DoNothing,
        }
    }

    /// Level 0: all its tables into level 1. A level above the last: the trees overlapping
    /// `[start, end]` into the level below. The last level: those trees rewritten in place.
    fn manual(
        &self,
        version: &Version,
        options: &Options,
        level: usize,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<MergeSpec> {
        let last = version.num_levels() - 1;
        let inputs = if level == 0 {
            version.files(0).to_vec()
        } else {
            version.overlapping(level, start, end)
        };
        if inputs.is_empty() {
            return None;
        }
        if level == last {
            return Some(Self::rewrite(options, level, inputs));
        }
        // Background work is paused, so nothing is busy.
        Self::into_next(version, options, &State::default(), level, inputs)
    }

    /// Level 0 at its trigger, and each level's excess over C times its target (what `choose`
    /// merges down); the leveled estimate would count a level within its bound as (C - 1)
    /// targets behind and slow writes that are not.
    fn pending_bytes(&self, version: &Version, options: &Options) -> u64 {
        version.pending_over_limits(options, |level| level_limit(options, level) as u64)
    }

    /// With `prune_guards`, a level-1 guard range the merge leaves without a tree is joined to
    /// its neighbour (`upkeep::drop_emptied_guards`).
    fn upkeep(&self, current: &Version, options: &Options, state: &State, edit: &mut VersionEdit) {
        if options_of(options).prune_guards {
            upkeep::drop_emptied_guards(current, state, edit);
        }
    }
}

#[cfg(test)]
#[path = "strategy_tests.rs"]
mod tests;
