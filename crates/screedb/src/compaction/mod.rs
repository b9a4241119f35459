//! Compaction: pure strategies that choose, one job module that executes.
//!
//! A [`CompactionStrategy`] looks at a [`Version`], the options and the [`State`] of work in
//! flight, and returns a [`Choice`]; it does no I/O and takes no lock, so strategies are unit
//! tested on hand-built versions. [`job`] executes any choice ([`tree_job`] the merges into
//! Jungle trees; `clusters` writes the BloomClusters of the trie's last-level containers a job
//! adds to). The strategies themselves live with their layouts
//! (`crate::layout::{leveled, flsm, trie, jungle}`).

mod clusters;
mod filter;
pub mod job;
#[cfg(test)]
mod merge_tests;
mod parallel;
mod sync_batch;
pub mod tree_job;

pub use filter::CompactionFilter;
#[cfg(test)]
pub(crate) mod test_support;

use std::collections::HashSet;

use crate::manifest::VersionEdit;
use crate::options::Options;
use crate::version::{FileRef, Version};

/// Work already in flight, which a new choice must not touch.
#[derive(Debug, Clone, Default)]
pub struct State {
    /// Tables that are inputs of a running compaction.
    pub busy_files: HashSet<u64>,
    /// `(output level, smallest user key, largest user key)` of every running compaction: no new
    /// compaction may take inputs at that level inside that range.
    pub busy_ranges: Vec<(usize, Vec<u8>, Vec<u8>)>,
    /// Per level, the largest user key of the last table compacted there (round robin).
    pub compact_pointers: Vec<Option<Vec<u8>>>,
    /// Bytes read-triggered (seek) compactions may still write: their budget minus what they
    /// wrote. A layout without seek compaction leaves it unused.
    pub seek_budget_bytes: u64,
}

/// Input tables by level (the start level first).
pub type LevelInputs = Vec<(usize, Vec<FileRef>)>;

/// A merge of input tables into new tables of `output_level`.
#[derive(Debug, Clone)]
pub struct MergeSpec {
    /// Input tables by level (the start level first).
    pub inputs: LevelInputs,
    /// Level the outputs go to.
    pub output_level: usize,
    /// How the outputs are cut and placed.
    pub output: OutputPlan,
    /// Chosen by seek-based compaction (its output counts against the seek budget).
    pub seek: bool,
}

/// How a merge cuts its outputs and places them in the output level. A layout that writes
/// another kind of output (a hash split into child containers, an append to an existing table)
/// adds a variant here and its execution in [`job`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputPlan {
    /// Cut at `target_file_size`; the outputs replace every table of the output level they
    /// overlap (leveled).
    BySize {
        /// Size at which outputs are cut.
        target_file_size: u64,
    },
    /// Cut at `target_file_size` and before every guard of the output level; the outputs are
    /// added beside the tables already there (FLSM fragments). A written key whose guard hash
    /// ends in `new_guard_bits` one bits becomes a guard of the output level, and so may a
    /// guard of the next level down that the outputs pass, if no table that stays spans it.
    ByGuards {
        /// Size at which outputs are cut.
        target_file_size: u64,
        /// Trailing one bits that make a written key a new guard.
        new_guard_bits: u32,
    },
    /// Split by the key's hash into the containers of the output level (the trie layout): one
    /// table per container touched, each cut once it is full; the outputs are piled on top of
    /// the tables already in their containers.
    ByHash {
        /// Size at which outputs are cut.
        target_file_size: u64,
    },
    /// Into the Jungle trees of the output level ([`tree_job`]): one per guard range. Inputs at
    /// other levels are merged and removed; with `rewrite` false, the inputs at the output
    /// level are the trees their keys reach, each grown by one appended segment (kept, not
    /// removed); with `rewrite` true, every input is at the output level and is replaced. A
    /// guard range without a tree gets new trees, cut before every key whose guard hash ends in
    /// `new_guard_bits` one bits and once a tree holds `target_file_size` of live data; each
    /// cut key becomes a guard of the output level. A target whose append would take its file
    /// past `replace_past_percent` hundredths of the bytes a fresh tree of its entries needs
    /// (Jungle's rewrite ratio: C, lower on a deepest level whose rewrites are staggered) is
    /// replaced instead: merged with its batch into a new tree.
    Trees {
        /// Live bytes at which a new tree is cut.
        target_file_size: u64,
        /// Trailing one bits that make a written key a new guard.
        new_guard_bits: u32,
        /// The inputs at the output level are replaced rather than appended to.
        rewrite: bool,
        /// Space ratio, in hundredths, past which an append target is replaced instead (0:
        /// never).
        replace_past_percent: u32,
    },
}

impl OutputPlan {
    /// Size at which outputs are cut.
    pub fn target_file_size(&self) -> u64 {
        match *self {
            OutputPlan::BySize { target_file_size }
            | OutputPlan::ByHash { target_file_size }
            | OutputPlan::ByGuards {
                target_file_size, ..
            }
            | OutputPlan::Trees {
                target_file_size, ..
            } => target_file_size,
        }
    }
}

impl MergeSpec {
    /// Every input table.
    pub fn all_inputs(&self) -> impl Iterator<Item = &FileRef> {
        self.inputs.iter().flat_map(|(_, files)| files.iter())
    }
}

/// What a strategy decided.
#[derive(Debug, Clone)]
pub enum Choice {
    /// Nothing needs compaction.
    DoNothing,
    /// Move one table to another level by metadata only.
    Move {
        /// Level the table is in.
        from_level: usize,
        /// The table.
        file: FileRef,
        /// Level it moves to.
        to_level: usize,
        /// A guard the move adds at `to_level` (Jungle: the table's smallest user key, when the
        /// guard range it lands in already holds a tree below it, so each range keeps one).
        new_guard: Option<Vec<u8>>,
    },
    /// Merge tables.
    Merge(MergeSpec),
}

/// A pure compaction policy.
pub trait CompactionStrategy: Send + Sync + std::fmt::Debug {
    /// A short name for logs and stats.
    fn name(&self) -> &'static str;
    /// Chooses the next compaction. Must not do I/O or take locks.
    fn choose(&self, version: &Version, options: &Options, state: &State) -> Choice;
    /// The merge a manual compaction of `[start, end]` (`None`: unbounded) runs at `level`:
    /// `level`'s overlapping tables (and whatever must go with them) into the level below, the
    /// last level's in place. `None` when nothing at `level` overlaps. Manual compactions run
    /// one level at a time with background work paused, so `State` is not consulted.
    fn manual(
        &self,
        version: &Version,
        options: &Options,
        level: usize,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Option<MergeSpec>;
    /// Amends a finished merge's `edit` just before it is applied to `current` (which other
    /// jobs may have changed since the merge was chosen): the layout's upkeep of its own
    /// structures. Pure, like `choose`. Default: nothing.
    fn upkeep(&self, current: &Version, options: &Options, state: &State, edit: &mut VersionEdit) {
        let _ = (current, options, state, edit);
    }
    /// Estimated bytes compaction must still merge before this layout's levels are within the
    /// bounds `choose` keeps them to; drives the pending-compaction write stall
    /// (`Options::soft_pending_compaction_bytes`). Pure, like `choose`, and cheap: the write
    /// leader asks for every write group, holding the database mutex. Default: level 0's bytes
    /// once it reached the compaction trigger, plus each level's excess over
    /// `Options::level_target_bytes`
    /// ([`Version::pending_compaction_bytes`], as RocksDB estimates it for leveled).
    fn pending_bytes(&self, version: &Version, options: &Options) -> u64 {
        version.pending_compaction_bytes(options)
    }
}

/// The inputs of a manual compaction of `[start, end]` at `level` (see
/// [`CompactionStrategy::manual`]) for layouts whose levels are sorted runs: the overlapping
/// tables, grown at level 0 until no other level-0 table overlaps them and at other levels by
/// `widen`; then the overlapping tables of the output level. Returns the inputs by level and
/// the output level.
pub fn manual_inputs(
    version: &Version,
    level: usize,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
    widen: impl FnOnce(Vec<FileRef>) -> Vec<FileRef>,
) -> Option<(LevelInputs, usize)> {
    let mut inputs = version.overlapping(level, start, end);
    if inputs.is_empty() {
        return None;
    }
    inputs = if level == 0 {
        expand_level0(version, inputs)
    } else {
        widen(inputs)
    };
    let output_level = (level + 1).min(version.num_levels() - 1);
    let mut by_level = vec![(level, inputs)];
    if output_level != level {
        let (s, l) = key_range(version, &by_level[0].1).unwrap_or_default();
        let below = version.overlapping(output_level, Some(&s), Some(&l));
        if !below.is_empty() {
            by_level.push((output_level, below));
        }
    }
    Some((by_level, output_level))
}

/// Grows a set of level-0 inputs until no other level-0 table overlaps its key range. Level-0
/// tables overlap each other: moving a newer table below an older one holding the same key would
/// let the older value shadow the newer one.
fn expand_level0(version: &Version, mut inputs: Vec<FileRef>) -> Vec<FileRef> {
    while let Some((s, l)) = key_range(version, &inputs) {
        let grown = version.overlapping(0, Some(&s), Some(&l));
        if grown.len() == inputs.len() {
            break;
        }
        inputs = grown;
    }
    inputs
}

/// Levels whose score is >= 1, highest score first, as `(score, level)`: level 0 scores
/// `files / l0_trigger()`, level `n >= 1` scores `bytes / level_target_bytes(n)`. The last
/// level has no level below it and is never scored.
pub fn levels_over_target(version: &Version, options: &Options) -> Vec<(f64, usize)> {
    let last = version.num_levels() - 1;
    let mut scores: Vec<(f64, usize)> = (0..last)
        .map(|level| {
            let score = if level == 0 {
                version.files(0).len() as f64 / options.l0_trigger() as f64
            } else {
                version.level_bytes(level) as f64 / options.level_target_bytes(level) as f64
            };
            (score, level)
        })
        .filter(|(s, _)| *s >= 1.0)
        .collect();
    scores.sort_by(|a, b| b.0.total_cmp(&a.0));
    scores
}

/// The user-key range `[smallest, largest]` covered by `files`.
pub fn key_range<'a>(
    version: &Version,
    files: impl IntoIterator<Item = &'a FileRef>,
) -> Option<(Vec<u8>, Vec<u8>)> {
    let ucmp = version.icmp().user();
    let mut range: Option<(&[u8], &[u8])> = None;
    for f in files {
        let (s, l) = (f.smallest_user_key(), f.largest_user_key());
        range = Some(match range {
            None => (s, l),
            Some((rs, rl)) => (
                if ucmp.compare(s, rs).is_lt() { s } else { rs },
                if ucmp.compare(l, rl).is_gt() { l } else { rl },
            ),
        });
    }
    range.map(|(s, l)| (s.to_vec(), l.to_vec()))
}

/// True when `[smallest, largest]` at `level` intersects a range being written by a running job.
pub fn range_is_busy(
    version: &Version,
    state: &State,
    level: usize,
    smallest: &[u8],
    largest: &[u8],
) -> bool {
    let ucmp = version.icmp().user();
    state.busy_ranges.iter().any(|(l, s, e)| {
        *l == level && ucmp.compare(smallest, e).is_le() && ucmp.compare(s, largest).is_le()
    })
}
