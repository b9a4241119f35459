//! FLSM compaction (PebblesDB's fragmented LSM; docs/flsm.md).
//!
//! Every level >= 1 is cut by its guard keys; a guard holds fragments that may overlap. Scores
//! are the leveled ones (level 0 by table count, level `n` by bytes over target). The unit of
//! work is a guard:
//! - level 0 -> 1: all level-0 tables are merged and the output is partitioned by level 1's
//!   guards, one new fragment per guard it touches;
//! - level `n` -> `n+1`: one guard (round robin) is merged and partitioned by level `n+1`'s
//!   guards;
//! - appending, not rewriting: a child guard receives a new fragment unless its fragments
//!   overlapping the incoming range are already `max_sstables_per_guard` deep (runs holding one
//!   key, not tables), in which case those are merged with the incoming data (so
//!   `max_sstables_per_guard = 1` is leveled compaction, and the last level, which nothing
//!   drains, rewrites a guard whenever it is full);
//! - a full child guard above the deepest level holding data is first compacted into its own
//!   next level (PebblesDB's rule, recursively), so the incoming merge appends to it instead
//!   of rewriting it in place (except with `max_sstables_per_guard = 1`, leveled);
//! - second-to-last level: a guard is merged in place instead when the full last-level fragments
//!   would cost more than `second_last_rewrite_ratio` times its own bytes;
//! - trivial moves: a fragment that overlaps nothing else in its guard, fits inside one guard of
//!   the next level and overlaps nothing there moves down by metadata only (so does the oldest
//!   level-0 table), which keeps sequential loads free of rewrites.
//!
//! Guards of disjoint ranges compact in parallel: inputs and outputs are registered as busy
//! files and ranges, and a child guard lies inside its parent guard (skip-list property).

use std::sync::Arc;

use super::{GuardBits, L0_SEEK_TRIGGER, guards, options_of, upkeep as guard_upkeep};
use crate::compaction::{
    Choice, CompactionStrategy, MergeSpec, OutputPlan, State, key_range, levels_over_target,
    manual_inputs, range_is_busy,
};
use crate::manifest::VersionEdit;
use crate::options::Options;
use crate::version::{FileRef, Version};

/// The FLSM strategy (its options come from `Options::layout`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Flsm;

/// Guard bits for a compaction into `level` with `inputs` (see [`GuardBits`]).
pub fn guard_bits(options: &Options, level: usize, inputs: &[FileRef]) -> u32 {
    match options_of(options).guard_bits {
        GuardBits::Fixed {
            top_level_bits,
            bit_decrement,
        } => {
            let down = u32::try_from(level.saturating_sub(1)).unwrap_or(u32::MAX);
            top_level_bits
                .saturating_sub(down.saturating_mul(bit_decrement))
                .max(1)
        }
        GuardBits::Adaptive { .. } => {
            let target = guard_upkeep::target_guard_bytes(options);
            let bytes: u64 = inputs.iter().map(|f| f.file_size).sum();
            let entries: u64 = inputs.iter().map(|f| f.num_entries).sum();
            let entry = (bytes / entries.max(1)).max(1);
            (target / entry).max(1).ilog2().clamp(2, 63)
        }
    }
}

/// Levels `n` (1 <= n < last) whose bytes are within `aggressive_compaction_percent` of level
/// `n + 1`'s bytes (PebblesDB section 4), fullest relative to the next level first.
pub fn aggressive_levels(version: &Version, options: &Options) -> Vec<usize> {
    let percent = options_of(options).aggressive_compaction_percent.min(100);
    if percent == 0 {
        return Vec::new();
    }
    let last = version.num_levels().saturating_sub(1);
    let mut due: Vec<(f64, usize)> = (1..last)
        .filter_map(|level| {
            let here = u128::from(version.level_bytes(level));
            let next = u128::from(version.level_bytes(level + 1));
            (here > 0 && next > 0 && here * 100 >= next * u128::from(100 - percent))
                .then(|| (here as f64 / next as f64, level))
        })
        .collect();
    due.sort_by(|a, b| b.0.total_cmp(&a.0));
    due.into_iter().map(|(_, level)| level).collect()
}

/// Seek-based compaction: the hottest guard (see [`super::seeks`]) whose count
/// reached `seek_compaction_threshold`, whose fragments overlap (so a read probes several) and
/// whose bytes (plus 1/8 slack) fit in `state.seek_budget_bytes`, has its fragments merged in place: the cost is
/// exactly the guard's bytes, and afterwards a read probes one fragment there. When level 0's
/// count is the hottest (seeks positioned several of its tables), level 0 is compacted into
/// level 1 within the same budget (from [`L0_SEEK_TRIGGER`] tables, with any budget left),
/// appending one run to each guard it reaches even where that guard is full: a store that
/// stopped taking writes otherwise keeps its level-0 tables, and every read pays for each of
/// them. Overlapping level-0 tables are merged into one run, never
/// the oldest moved alone (`Flsm::level0_for_reads`).
pub fn seek_compaction(version: &Version, options: &Options, state: &State) -> Option<Choice> {
    let threshold = options_of(options).seek_compaction_threshold;
    if threshold == 0 || state.seek_budget_bytes == 0 {
        return None;
    }
    let fits = |bytes: u64| bytes.saturating_add(bytes / 8) <= state.seek_budget_bytes;
    let ucmp = version.icmp().user();
    for (level, index, _) in version.seek_counters().hot(threshold) {
        if level == 0 {
            if version.files(0).len() < 2 {
                continue;
            }
            match Flsm::level0_for_reads(version, options, state) {
                Some(Choice::Merge(mut spec)) => {
                    // Level 0's tables only: a level-1 guard already full gets one run more
                    // instead of being rewritten (the next level-0 compaction that writes
                    // drive merges it). Every level-0 table a read probes becomes one run, so
                    // the reads gain as much, and the cost is level 0's bytes. When full
                    // level-1 guards must go down first (a deeper level holds data), this is
                    // that step instead: a full level-1 guard appended to level 2 (even where
                    // a level-2 guard is full) within the same budget; level 0 follows later.
                    spec.inputs.truncate(1);
                    let bytes = spec.inputs.iter().flat_map(|(_, f)| f).map(|f| f.file_size);
                    // Level 0 at LevelDB's trigger is folded with any budget left (its bytes
                    // still count as seek-compaction bytes).
                    let level0_full =
                        spec.inputs[0].0 == 0 && spec.inputs[0].1.len() >= L0_SEEK_TRIGGER;
                    if level0_full || fits(bytes.sum()) {
                        spec.seek = true;
                        return Some(Choice::Merge(spec));
                    }
                }
                Some(moved @ Choice::Move { .. }) => return Some(moved),
                _ => {}
            }
            continue;
        }
        let mut frags = version.guard_files(level, index);
        frags.sort_by(|a, b| ucmp.compare(a.smallest_user_key(), b.smallest_user_key()));
        let overlap = frags.windows(2).any(|w| {
            ucmp.compare(w[1].smallest_user_key(), w[0].largest_user_key())
                .is_le()
        });
        let bytes: u64 = frags.iter().map(|f| f.file_size).sum();
        // Outputs may carry a little more per-table overhead than the inputs: keep 1/8 slack.
        if !overlap || !fits(bytes) || frags.iter().any(|f| state.busy_files.contains(&f.number)) {
            continue;
        }
        let (smallest, largest) = key_range(version, &frags)?;
        if range_is_busy(version, state, level, &smallest, &largest) {
            continue;
        }
        return Some(Choice::Merge(MergeSpec {
            output: OutputPlan::ByGuards {
                target_file_size: options.target_file_size,
                new_guard_bits: guard_bits(options, level, &frags),
            },
            inputs: vec![(level, frags)],
            output_level: level,
            seek: true,
        }));
    }
    None
}

/// True when `file`'s user-key range meets that of any of `others`.
fn overlaps_any(version: &Version, file: &FileRef, others: &[FileRef]) -> bool {
    let ucmp = version.icmp().user();
    others.iter().any(|o| {
        ucmp.compare(o.smallest_user_key(), file.largest_user_key())
            .is_le()
            && ucmp
                .compare(file.smallest_user_key(), o.largest_user_key())
                .is_le()
    })
}

/// The tables of `level` grouped by guard, in key order: `(guard index, fragments)`.
fn by_guard(version: &Version, level: usize) -> Vec<(usize, Vec<FileRef>)> {
    let ucmp = version.icmp().user();
    let committed = version.guards(level);
    let mut groups: Vec<(usize, Vec<FileRef>)> = Vec::new();
    for f in version.files(level) {
        let g = guards::guard_index(ucmp.as_ref(), committed, f.smallest_user_key());
        match groups.last_mut() {
            Some((last, files)) if *last == g => files.push(Arc::clone(f)),
            _ => groups.push((g, vec![Arc::clone(f)])),
        }
    }
    groups
}

/// Every table of `level` in a guard holding one of `files` (a compaction must never take part
/// of a guard: a fragment left behind could hold older versions of keys that move down).
pub fn whole_guards(version: &Version, level: usize, files: &[FileRef]) -> Vec<FileRef> {
    let ucmp = version.icmp().user();
    let committed = version.guards(level);
    let index = |f: &FileRef| guards::guard_index(ucmp.as_ref(), committed, f.smallest_user_key());
    let wanted: Vec<usize> = files.iter().map(index).collect();
    version
        .files(level)
        .iter()
        .filter(|f| wanted.contains(&index(f)))
        .cloned()
        .collect()
}

/// True when `file` lies inside one guard of `level`.
fn fits_one_guard(version: &Version, level: usize, file: &FileRef) -> bool {
    let ucmp = version.icmp().user();
    let committed = version.guards(level);
    guards::guard_index(ucmp.as_ref(), committed, file.smallest_user_key())
        == guards::guard_index(ucmp.as_ref(), committed, file.largest_user_key())
}

/// The most of `tables` (one guard's, in the level's order: by smallest key) that hold one
/// key: the guard's depth over their range, the runs a read there may probe. A run cut into
/// several tables counts once, so a guard of one run is never full however many tables it has.
fn depth(ucmp: &dyn crate::comparator::Comparator, tables: &[FileRef]) -> usize {
    let mut open: Vec<&[u8]> = Vec::new();
    let mut deepest = 0;
    for t in tables {
        // Tables ending before this one starts no longer overlap anything after it.
        open.retain(|end| ucmp.compare(end, t.smallest_user_key()).is_ge());
        open.push(t.largest_user_key());
        deepest = deepest.max(open.len());
    }
    deepest
}

/// The fragments of `level` that must be merged with incoming data covering `[smallest,
/// largest]`: those of every guard whose tables overlapping the range are at least
/// `max_sstables_per_guard` deep somewhere ([`depth`]).
fn full_children(
    version: &Version,
    options: &Options,
    level: usize,
    smallest: &[u8],
    largest: &[u8],
) -> Vec<FileRef> {
    let ucmp = version.icmp().user();
    let committed = version.guards(level);
    let overlapping = version.overlapping(level, Some(smallest), Some(largest));
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(first) = overlapping.get(i) {
        let g = guards::guard_index(ucmp.as_ref(), committed, first.smallest_user_key());
        let end = overlapping[i..]
            .iter()
            .position(|f| guards::guard_index(ucmp.as_ref(), committed, f.smallest_user_key()) != g)
            .map_or(overlapping.len(), |n| i + n);
        if depth(ucmp.as_ref(), &overlapping[i..end]) >= options_of(options).max_sstables_per_guard
        {
            out.extend(overlapping[i..end].iter().cloned());
        }
        i = end;
    }
    out
}

impl Flsm {
    /// Levels to compact, most urgent first: those over target (leveled scores), then those
    /// due for aggressive compaction ([`aggressive_levels`]).
    fn scores(version: &Version, options: &Options) -> Vec<(f64, usize)> {
        let mut scores = levels_over_target(version, options);
        for level in aggressive_levels(version, options) {
            if !scores.iter().any(|(_, l)| *l == level) {
                scores.push((0.0, level));
            }
        }
        scores
    }

    /// A metadata move of `file` from `level` to `level + 1`, if it fits one guard there and
    /// overlaps nothing there.
    fn try_move(version: &Version, state: &State, level: usize, file: &FileRef) -> Option<Choice> {
        let (s, l) = (file.smallest_user_key(), file.largest_user_key());
        let next = level + 1;
        (fits_one_guard(version, next, file)
            && version.overlapping(next, Some(s), Some(l)).is_empty()
            && !range_is_busy(version, state, level, s, l)
            && !range_is_busy(version, state, next, s, l))
        .then(|| Choice::Move {
            from_level: level,
            file: Arc::clone(file),
            to_level: next,
            new_guard: None,
        })
    }

    fn level0(version: &Version, options: &Options, state: &State) -> Option<Choice> {
        Self::level0_choice(version, options, state, false)
    }

    /// Level 0's compaction for seek-based compaction: as [`Flsm::level0`], but the oldest
    /// table moves alone only when no newer level-0 table overlaps it (keys in order).
    /// Otherwise the newer tables would follow it as a second run over the same range of
    /// level 1, which the reads that asked for the compaction would still pay for (and a
    /// second seek compaction would rewrite both); merging them all leaves one run.
    fn level0_for_reads(version: &Version, options: &Options, state: &State) -> Option<Choice> {
        Self::level0_choice(version, options, state, true)
    }

    fn level0_choice(
        version: &Version,
        options: &Options,
        state: &State,
        disjoint_moves_only: bool,
    ) -> Option<Choice> {
        let inputs = version.files(0);
        if inputs.is_empty() || inputs.iter().any(|f| state.busy_files.contains(&f.number)) {
            return None;
        }
        // The oldest table may go down alone: every other level-0 table is newer.
        if let Some((oldest, newer)) = inputs.split_last()
            && !(disjoint_moves_only && overlaps_any(version, oldest, newer))
            && let Some(choice) = Self::try_move(version, state, 0, oldest)
        {
            return Some(choice);
        }
        Self::merge_into_next(version, options, state, 0, inputs.to_vec())
    }

    fn level_n(
        version: &Version,
        options: &Options,
        state: &State,
        level: usize,
    ) -> Option<Choice> {
        let groups = by_guard(version, level);
        let ucmp = version.icmp().user();
        let start = match state.compact_pointers.get(level).and_then(Option::as_ref) {
            Some(ptr) => {
                let g = guards::guard_index(ucmp.as_ref(), version.guards(level), ptr);
                groups.partition_point(|(i, _)| *i <= g)
            }
            None => 0,
        };
        let (wrapped, from_pointer) = groups.split_at(start.min(groups.len()));
        for (_, frags) in from_pointer.iter().chain(wrapped) {
            if frags.iter().any(|f| state.busy_files.contains(&f.number)) {
                continue;
            }
            for f in frags {
                let alone = frags.iter().all(|o| {
                    o.number == f.number
                        || ucmp
                            .compare(o.largest_user_key(), f.smallest_user_key())
                            .is_lt()
                        || ucmp
                            .compare(f.largest_user_key(), o.smallest_user_key())
                            .is_lt()
                });
                if alone && let Some(choice) = Self::try_move(version, state, level, f) {
                    return Some(choice);
                }
            }
            if let Some(choice) =
                Self::merge_into_next(version, options, state, level, frags.clone())
            {
                return Some(choice);
            }
        }
        None
    }

    fn merge_into_next(
        version: &Version,
        options: &Options,
        state: &State,
        level: usize,
        inputs: Vec<FileRef>,
    ) -> Option<Choice> {
        let (smallest, largest) = key_range(version, &inputs)?;
        if range_is_busy(version, state, level, &smallest, &largest) {
            return None;
        }
        let next = level + 1;
        let children = full_children(version, options, next, &smallest, &largest);
        // With one run per guard (`max_sstables_per_guard = 1`, leveled) every non-empty guard
        // is full, and pushing it down would only cascade data to the deepest level.
        if !children.is_empty()
            && options_of(options).max_sstables_per_guard > 1
            && version
                .deepest_level()
                .is_some_and(|deepest| next < deepest)
        {
            return Self::push_down(version, options, state, next, &children);
        }
        if children
            .iter()
            .any(|f| state.busy_files.contains(&f.number))
        {
            return None;
        }
        let (all_small, all_large) = key_range(version, inputs.iter().chain(&children))?;
        if range_is_busy(version, state, next, &all_small, &all_large) {
            return None;
        }
        let input_bytes: u64 = inputs.iter().map(|f| f.file_size).sum();
        let child_bytes: u64 = children.iter().map(|f| f.file_size).sum();
        let ratio = options_of(options).second_last_rewrite_ratio;
        let in_place = level > 0
            && next + 1 == version.num_levels()
            && ratio > 0
            && inputs.len() >= 2
            && child_bytes > input_bytes.saturating_mul(ratio);
        let output_level = if in_place { level } else { next };
        let new_guard_bits = guard_bits(
            options,
            output_level,
            &inputs.iter().chain(&children).cloned().collect::<Vec<_>>(),
        );
        let mut spec = MergeSpec {
            inputs: vec![(level, inputs)],
            output_level,
            output: OutputPlan::ByGuards {
                target_file_size: options.target_file_size,
                new_guard_bits,
            },
            seek: false,
        };
        if !in_place && !children.is_empty() {
            spec.inputs.push((next, children));
        }
        Some(Choice::Merge(spec))
    }

    /// PebblesDB's rule for a full guard above the deepest level: it is compacted into the
    /// next level (appended there, or recursively pushing full guards further down) before
    /// the merge that met it appends to it. Merging it with the incoming data instead writes
    /// its bytes once more at its own level, and they still go down later.
    fn push_down(
        version: &Version,
        options: &Options,
        state: &State,
        level: usize,
        full: &[FileRef],
    ) -> Option<Choice> {
        let ucmp = version.icmp().user();
        let committed = version.guards(level);
        let index =
            |f: &FileRef| guards::guard_index(ucmp.as_ref(), committed, f.smallest_user_key());
        by_guard(version, level)
            .into_iter()
            .filter(|(g, _)| full.iter().any(|f| index(f) == *g))
            .filter(|(_, frags)| !frags.iter().any(|f| state.busy_files.contains(&f.number)))
            .find_map(|(_, frags)| Self::merge_into_next(version, options, state, level, frags))
    }
}

impl CompactionStrategy for Flsm {
    fn name(&self) -> &'static str {
        "flsm"
    }

    fn choose(&self, version: &Version, options: &Options, state: &State) -> Choice {
        Self::scores(version, options)
            .into_iter()
            .find_map(|(_, level)| match level {
                0 => Self::level0(version, options, state),
                _ => Self::level_n(version, options, state, level),
            })
            .or_else(|| seek_compaction(version, options, state))
            .unwrap_or(Choice::DoNothing)
    }

    fn manual(
        &self,
        version: &Version,
        options: &Options,
        level: usize,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<MergeSpec> {
        // Whole guards: a fragment left behind could hold older versions of keys that move
        // down, and would then shadow them.
        let (inputs, output_level) = manual_inputs(version, level, start, end, |files| {
            whole_guards(version, level, &files)
        })?;
        let new_guard_bits = guard_bits(options, output_level, &inputs[0].1);
        Some(MergeSpec {
            inputs,
            output_level,
            output: OutputPlan::ByGuards {
                target_file_size: options.target_file_size,
                new_guard_bits,
            },
            seek: false,
        })
    }

    fn upkeep(&self, current: &Version, options: &Options, state: &State, edit: &mut VersionEdit) {
        guard_upkeep::drop_unsafe_guards(current, state, edit);
        guard_upkeep::drop_small_guards(current, options, edit);
    }
}

#[cfg(test)]
#[path = "strategy_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "strategy_seek_tests.rs"]
mod seek_tests;
