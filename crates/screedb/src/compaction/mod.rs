//! Compaction: pure strategies that choose, one job module that executes.
//!
//! A [`CompactionStrategy`] looks at a [`Version`], the options and the [`State`] of work in
//! flight, and returns a [`Choice`]; it does no I/O and takes no lock, so strategies are unit
//! tested on hand-built versions. [`job`] executes any choice.

pub mod flsm;
pub mod guard_upkeep;
pub mod job;
pub mod leveled;
#[cfg(test)]
mod test_support;

use std::collections::HashSet;

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
    /// Bytes seek-based compactions may still write (their budget minus what they wrote).
    pub seek_budget_bytes: u64,
}

/// A merge of input tables into new tables of `output_level`.
#[derive(Debug, Clone)]
pub struct MergeSpec {
    /// Input tables by level (the start level first).
    pub inputs: Vec<(usize, Vec<FileRef>)>,
    /// Level the outputs go to.
    pub output_level: usize,
    /// Size at which outputs are cut.
    pub target_file_size: u64,
    /// FLSM: a written key whose hash ends in this many one bits becomes a guard of the output
    /// level (if no table that stays spans it). `None`: no new guards.
    pub guard_bits: Option<u32>,
    /// Chosen by seek-based compaction (its output counts against the seek budget).
    pub seek: bool,
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
}

/// Levels whose score is >= 1, highest score first, as `(score, level)`: level 0 scores
/// `files / l0_compaction_trigger`, level `n >= 1` scores `bytes / level_target_bytes(n)`. The last
/// level has no level below it and is never scored.
pub fn levels_over_target(version: &Version, options: &Options) -> Vec<(f64, usize)> {
    let last = version.num_levels() - 1;
    let mut scores: Vec<(f64, usize)> = (0..last)
        .map(|level| {
            let score = if level == 0 {
                version.files(0).len() as f64 / options.l0_compaction_trigger as f64
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
