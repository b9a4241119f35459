//! Leveled compaction, as in LevelDB and RocksDB.
//!
//! Scores: level 0 scores `files / l0_compaction_trigger`; level `n >= 1` scores
//! `bytes / (max_bytes_for_level_base * multiplier^(n-1))`. The highest score >= 1 is compacted:
//! level 0 merges all its tables with the overlapping tables of level 1; level `n` picks one table
//! (round robin by key) and merges it with the overlapping tables of level `n+1`, or moves it down
//! by metadata when nothing overlaps it there.

use std::sync::Arc;

use super::{Choice, CompactionStrategy, MergeSpec, State, key_range, range_is_busy};
use crate::manifest::FileMeta;
use crate::options::Options;
use crate::version::Version;

/// The leveled strategy.
#[derive(Debug, Clone, Copy, Default)]
pub struct Leveled;

impl Leveled {
    fn scores(version: &Version, options: &Options) -> Vec<(f64, usize)> {
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

    fn level0(version: &Version, options: &Options, state: &State) -> Option<Choice> {
        let inputs: Vec<Arc<FileMeta>> = version.files(0).to_vec();
        if inputs.is_empty() || inputs.iter().any(|f| state.busy_files.contains(&f.number)) {
            return None;
        }
        Self::with_next_level(version, options, state, 0, inputs)
    }

    fn level_n(
        version: &Version,
        options: &Options,
        state: &State,
        level: usize,
    ) -> Option<Choice> {
        let files = version.files(level);
        let ucmp = version.icmp().user();
        let start = match state.compact_pointers.get(level).and_then(Option::as_ref) {
            Some(ptr) => files.partition_point(|f| ucmp.compare(f.largest_user_key(), ptr).is_le()),
            None => 0,
        };
        // Round robin from the pointer, wrapping around.
        for f in files[start..].iter().chain(&files[..start]) {
            if state.busy_files.contains(&f.number) {
                continue;
            }
            if let Some(choice) =
                Self::with_next_level(version, options, state, level, vec![Arc::clone(f)])
            {
                return Some(choice);
            }
        }
        None
    }

    fn with_next_level(
        version: &Version,
        options: &Options,
        state: &State,
        level: usize,
        inputs: Vec<Arc<FileMeta>>,
    ) -> Option<Choice> {
        let (smallest, largest) = key_range(version, &inputs)?;
        if range_is_busy(version, state, level, &smallest, &largest) {
            return None;
        }
        let next = level + 1;
        let below = version.overlapping(next, Some(&smallest), Some(&largest));
        if below.iter().any(|f| state.busy_files.contains(&f.number)) {
            return None;
        }
        let (all_small, all_large) = key_range(version, inputs.iter().chain(&below))?;
        if range_is_busy(version, state, next, &all_small, &all_large) {
            return None;
        }
        if level > 0 && below.is_empty() && inputs.len() == 1 {
            return Some(Choice::Move {
                from_level: level,
                file: Arc::clone(&inputs[0]),
                to_level: next,
            });
        }
        let mut spec = MergeSpec {
            inputs: vec![(level, inputs)],
            output_level: next,
            target_file_size: options.target_file_size,
        };
        if !below.is_empty() {
            spec.inputs.push((next, below));
        }
        Some(Choice::Merge(spec))
    }
}

impl CompactionStrategy for Leveled {
    fn name(&self) -> &'static str {
        "leveled"
    }

    fn choose(&self, version: &Version, options: &Options, state: &State) -> Choice {
        for (_, level) in Self::scores(version, options) {
            let choice = if level == 0 {
                Self::level0(version, options, state)
            } else {
                Self::level_n(version, options, state, level)
            };
            if let Some(choice) = choice {
                return choice;
            }
        }
        Choice::DoNothing
    }
}
