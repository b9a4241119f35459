//! Leveled compaction, as in LevelDB and RocksDB.
//!
//! Scores: level 0 scores `files / l0_compaction_trigger`; level `n >= 1` scores
//! `bytes / (max_bytes_for_level_base * multiplier^(n-1))`. The highest score >= 1 is compacted:
//! level 0 merges all its tables with the overlapping tables of level 1; level `n` picks one table
//! (round robin by key) and merges it with the overlapping tables of level `n+1`, or moves it down
//! by metadata when nothing overlaps it there.

use std::sync::Arc;

use crate::compaction::{
    Choice, CompactionStrategy, MergeSpec, OutputPlan, State, key_range, levels_over_target,
    manual_inputs, range_is_busy,
};
use crate::options::Options;
use crate::version::{FileRef, Version};

/// The leveled strategy.
#[derive(Debug, Clone, Copy, Default)]
pub struct Leveled;

impl Leveled {
    fn level0(version: &Version, options: &Options, state: &State) -> Option<Choice> {
        let inputs: Vec<FileRef> = version.files(0).to_vec();
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
        inputs: Vec<FileRef>,
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
                new_guard: None,
            });
        }
        let mut spec = MergeSpec {
            inputs: vec![(level, inputs)],
            output_level: next,
            output: OutputPlan::BySize {
                target_file_size: options.target_file_size,
            },
            seek: false,
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
        levels_over_target(version, options)
            .into_iter()
            .find_map(|(_, level)| match level {
                0 => Self::level0(version, options, state),
                _ => Self::level_n(version, options, state, level),
            })
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
        let (inputs, output_level) = manual_inputs(version, level, start, end, |files| files)?;
        Some(MergeSpec {
            inputs,
            output_level,
            output: OutputPlan::BySize {
                target_file_size: options.target_file_size,
            },
            seek: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_support::empty_version;
    use crate::key::{ValueKind, make_internal_key};
    use crate::manifest::FileMeta;
    use crate::manifest::VersionEdit;
    use crate::version::VersionBuilder;

    fn file(number: u64, smallest: &str, largest: &str, size: u64) -> FileMeta {
        FileMeta {
            number,
            file_size: size,
            smallest: make_internal_key(smallest.as_bytes(), 1, ValueKind::Value),
            largest: make_internal_key(largest.as_bytes(), 1, ValueKind::Value),
            smallest_seq: 1,
            largest_seq: 1,
            num_entries: 1,
            num_deletions: 0,

            ..FileMeta::default()
        }
    }

    /// A version with `files` as `(level, meta)`.
    fn version(files: Vec<(u32, FileMeta)>) -> Version {
        let base = empty_version(crate::layout::LayoutKind::Leveled);
        let mut b = VersionBuilder::new(&base);
        b.apply(&VersionEdit {
            new_files: files,
            ..VersionEdit::default()
        })
        .unwrap();
        b.build()
    }

    fn options() -> Options {
        Options {
            l0_compaction_trigger: 2,
            max_bytes_for_level_base: 1000,
            layout: crate::options::Layout::Leveled,
            ..Options::default()
        }
    }

    #[test]
    fn nothing_to_do_below_every_trigger() {
        let v = version(vec![
            (0, file(1, "a", "z", 10)),
            (1, file(2, "a", "m", 100)),
        ]);
        assert!(matches!(
            Leveled.choose(&v, &options(), &State::default()),
            Choice::DoNothing
        ));
    }

    #[test]
    fn level0_merges_all_its_tables_with_overlapping_level1() {
        let v = version(vec![
            (0, file(1, "c", "f", 10)),
            (0, file(2, "e", "h", 10)),
            (1, file(3, "a", "b", 10)),
            (1, file(4, "d", "g", 10)),
            (1, file(5, "x", "z", 10)),
        ]);
        let Choice::Merge(spec) = Leveled.choose(&v, &options(), &State::default()) else {
            panic!("expected a merge")
        };
        assert_eq!(spec.output_level, 1);
        let numbers: Vec<u64> = spec.all_inputs().map(|f| f.number).collect();
        assert_eq!(numbers, vec![2, 1, 4]);
    }

    #[test]
    fn a_table_overlapping_nothing_below_moves_by_metadata() {
        let v = version(vec![
            (1, file(1, "a", "c", 2000)),
            (2, file(2, "x", "z", 10)),
        ]);
        match Leveled.choose(&v, &options(), &State::default()) {
            Choice::Move {
                from_level: 1,
                to_level: 2,
                file,
                new_guard: None,
            } => assert_eq!(file.number, 1),
            other => panic!("expected a move, got {other:?}"),
        }
    }

    #[test]
    fn busy_tables_and_ranges_are_left_alone() {
        let v = version(vec![(0, file(1, "a", "c", 10)), (0, file(2, "b", "d", 10))]);
        let mut state = State::default();
        state.busy_files.insert(2);
        assert!(matches!(
            Leveled.choose(&v, &options(), &state),
            Choice::DoNothing
        ));
        let mut state = State::default();
        state.busy_ranges.push((1, b"c".to_vec(), b"q".to_vec()));
        assert!(matches!(
            Leveled.choose(&v, &options(), &state),
            Choice::DoNothing
        ));
        state.busy_ranges[0] = (1, b"e".to_vec(), b"q".to_vec());
        assert!(matches!(
            Leveled.choose(&v, &options(), &state),
            Choice::Merge(_)
        ));
    }

    #[test]
    fn round_robin_starts_after_the_compact_pointer() {
        let v = version(vec![
            (1, file(1, "a", "b", 600)),
            (1, file(2, "c", "d", 600)),
            (2, file(3, "a", "b", 10)),
            (2, file(4, "c", "d", 10)),
        ]);
        let state = State {
            compact_pointers: vec![None, Some(b"b".to_vec())],
            ..State::default()
        };
        let Choice::Merge(spec) = Leveled.choose(&v, &options(), &state) else {
            panic!("merge")
        };
        assert_eq!(spec.inputs[0].1[0].number, 2);
    }
}
