//! FLSM compaction (PebblesDB's fragmented LSM; docs/flsm.md).
//!
//! Every level >= 1 is cut by its guard keys; a guard holds fragments that may overlap. Scores
//! are the leveled ones (level 0 by table count, level `n` by bytes over target). The unit of
//! work is a guard:
//! - level 0 -> 1: all level-0 tables are merged and the output is partitioned by level 1's
//!   guards, one new fragment per guard it touches;
//! - level `n` -> `n+1`: one guard (round robin) is merged and partitioned by level `n+1`'s
//!   guards;
//! - appending, not rewriting: a child guard receives a new fragment unless it already holds
//!   `max_sstables_per_guard` fragments overlapping the incoming range, in which case those are
//!   merged with the incoming data (so `max_sstables_per_guard = 1` is leveled compaction, and the
//!   last level, which nothing drains, rewrites a guard whenever it is full);
//! - second-to-last level: a guard is merged in place instead when the full last-level fragments
//!   would cost more than `second_last_rewrite_ratio` times its own bytes;
//! - trivial moves: a fragment that overlaps nothing else in its guard, fits inside one guard of
//!   the next level and overlaps nothing there moves down by metadata only (so does the oldest
//!   level-0 table), which keeps sequential loads free of rewrites.
//!
//! Guards of disjoint ranges compact in parallel: inputs and outputs are registered as busy
//! files and ranges, and a child guard lies inside its parent guard (skip-list property).

use std::sync::Arc;

use super::{Choice, CompactionStrategy, MergeSpec, State, key_range, range_is_busy};
use crate::manifest::VersionEdit;
use crate::options::{GuardBits, Options};
use crate::version::{FileRef, Version, VersionBuilder, guards};

/// The FLSM strategy.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flsm;

/// Guard bits for a compaction into `level` with `inputs` (see [`GuardBits`]).
pub fn guard_bits(options: &Options, level: usize, inputs: &[FileRef]) -> u32 {
    match options.flsm.guard_bits {
        GuardBits::Fixed {
            top_level_bits,
            bit_decrement,
        } => {
            let down = u32::try_from(level.saturating_sub(1)).unwrap_or(u32::MAX);
            top_level_bits
                .saturating_sub(down.saturating_mul(bit_decrement))
                .max(1)
        }
        GuardBits::Adaptive { target_guard_bytes } => {
            let target = if target_guard_bytes == 0 {
                options
                    .target_file_size
                    .saturating_mul(options.flsm.max_sstables_per_guard as u64)
            } else {
                target_guard_bytes
            };
            let bytes: u64 = inputs.iter().map(|f| f.file_size).sum();
            let entries: u64 = inputs.iter().map(|f| f.num_entries).sum();
            let entry = (bytes / entries.max(1)).max(1);
            (target / entry).max(1).ilog2().clamp(2, 63)
        }
    }
}

/// Removes from `edit` every new guard that cannot be committed on top of `current` any more:
/// a table of the resulting version would span it, or a running job (`state`) is writing
/// across it at that level. A guard is kept or dropped at all its levels together. Dropping is
/// always safe: outputs cut at an uncommitted key still lie inside one committed guard.
pub fn drop_unsafe_guards(current: &Version, state: &State, edit: &mut VersionEdit) {
    let ucmp = Arc::clone(current.icmp().user());
    let files_only = VersionEdit {
        deleted_files: edit.deleted_files.clone(),
        new_files: edit.new_files.clone(),
        removed_guards: edit.removed_guards.clone(),
        ..VersionEdit::default()
    };
    let mut builder = VersionBuilder::new(current);
    if builder.apply(&files_only).is_err() {
        edit.added_guards.clear();
        return;
    }
    let after = builder.build();
    let mut keys: Vec<(usize, Vec<u8>)> = Vec::new();
    for (level, key) in &edit.added_guards {
        match keys.iter_mut().find(|(_, k)| k == key) {
            Some((l, _)) => *l = (*l).min(*level as usize),
            None => keys.push((*level as usize, key.clone())),
        }
    }
    let mut added = Vec::new();
    for (first, key) in keys {
        let levels: Vec<usize> = (first..after.num_levels())
            .filter(|&l| {
                after
                    .guards(l)
                    .binary_search_by(|g| ucmp.compare(g, &key))
                    .is_err()
            })
            .collect();
        let safe = levels.iter().all(|&l| {
            after
                .files(l)
                .iter()
                .all(|f| !guards::spans(ucmp.as_ref(), f, &key))
                && !state.busy_ranges.iter().any(|(bl, s, e)| {
                    *bl == l && ucmp.compare(s, &key).is_lt() && ucmp.compare(&key, e).is_le()
                })
        });
        if safe {
            added.extend(levels.into_iter().map(|l| (l as u32, key.clone())));
        }
    }
    edit.added_guards = added;
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

/// The fragments of `level` that must be merged with incoming data covering `[smallest,
/// largest]`: those of every guard holding at least `max_sstables_per_guard` fragments that
/// overlap the range.
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
        if end - i >= options.flsm.max_sstables_per_guard {
            out.extend(overlapping[i..end].iter().cloned());
        }
        i = end;
    }
    out
}

impl Flsm {
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
        })
    }

    fn level0(version: &Version, options: &Options, state: &State) -> Option<Choice> {
        let inputs: Vec<FileRef> = version.files(0).to_vec();
        if inputs.is_empty() || inputs.iter().any(|f| state.busy_files.contains(&f.number)) {
            return None;
        }
        // The oldest table may go down alone: every other level-0 table is newer.
        if let Some(oldest) = inputs.last()
            && let Some(choice) = Self::try_move(version, state, 0, oldest)
        {
            return Some(choice);
        }
        Self::merge_into_next(version, options, state, 0, inputs)
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
        let ratio = options.flsm.second_last_rewrite_ratio;
        let in_place = level > 0
            && next + 1 == version.num_levels()
            && ratio > 0
            && inputs.len() >= 2
            && child_bytes > input_bytes.saturating_mul(ratio);
        let output_level = if in_place { level } else { next };
        let guard_bits = Some(guard_bits(
            options,
            output_level,
            &inputs.iter().chain(&children).cloned().collect::<Vec<_>>(),
        ));
        let mut spec = MergeSpec {
            inputs: vec![(level, inputs)],
            output_level,
            target_file_size: options.target_file_size,
            guard_bits,
        };
        if !in_place && !children.is_empty() {
            spec.inputs.push((next, children));
        }
        Some(Choice::Merge(spec))
    }
}

impl CompactionStrategy for Flsm {
    fn name(&self) -> &'static str {
        "flsm"
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::comparator::{InternalKeyComparator, default_comparator};
    use crate::fs::MemFs;
    use crate::key::{ValueKind, make_internal_key};
    use crate::manifest::FileMeta;
    use crate::options::{FlsmOptions, Layout};
    use crate::table::{TableCache, TableOptions};
    use crate::version::obsolete::ObsoleteFiles;

    fn file(number: u64, smallest: &str, largest: &str, size: u64) -> FileMeta {
        FileMeta {
            number,
            file_size: size,
            smallest: make_internal_key(smallest.as_bytes(), number, ValueKind::Value),
            largest: make_internal_key(largest.as_bytes(), number, ValueKind::Value),
            smallest_seq: number,
            largest_seq: number,
            num_entries: 10,
            num_deletions: 0,
        }
    }

    /// An FLSM version with 4 levels, `guards` as `(level, key)` and `files` as `(level, meta)`.
    fn version(guards: &[(u32, &str)], files: Vec<(u32, FileMeta)>) -> Version {
        let icmp = InternalKeyComparator::new(default_comparator());
        let fs = Arc::new(MemFs::new());
        let tables = Arc::new(TableCache::new(
            fs.clone(),
            PathBuf::from("/db"),
            TableOptions::default(),
            icmp.clone(),
            16,
            None,
        ));
        let obsolete = Arc::new(ObsoleteFiles::new(fs, PathBuf::from("/db"), tables));
        let base = Version::empty(icmp, Layout::Flsm, 4, obsolete);
        let mut b = VersionBuilder::new(&base);
        b.apply(&VersionEdit {
            new_files: files,
            added_guards: guards
                .iter()
                .map(|(l, k)| (*l, k.as_bytes().to_vec()))
                .collect(),
            ..VersionEdit::default()
        })
        .unwrap();
        let v = b.build();
        v.check_invariants().unwrap();
        v
    }

    fn options(max_per_guard: usize) -> Options {
        Options {
            l0_compaction_trigger: 2,
            max_bytes_for_level_base: 1000,
            flsm: FlsmOptions {
                max_sstables_per_guard: max_per_guard,
                ..FlsmOptions::default()
            },
            ..Options::default()
        }
    }

    fn numbers(files: &[FileRef]) -> Vec<u64> {
        files.iter().map(|f| f.number).collect()
    }

    /// Guards "m" at levels 1-3, "f" and "t" at levels 2-3 (skip-list property).
    const GUARDS: &[(u32, &str)] = &[
        (1, "m"),
        (2, "f"),
        (2, "m"),
        (2, "t"),
        (3, "f"),
        (3, "m"),
        (3, "t"),
    ];

    #[test]
    fn level0_appends_fragments_without_rewriting_level1() {
        let v = version(
            GUARDS,
            vec![
                (0, file(10, "a", "z", 10)),
                (0, file(11, "c", "x", 10)),
                (1, file(3, "b", "k", 10)),
                (1, file(4, "n", "y", 10)),
            ],
        );
        let Choice::Merge(spec) = Flsm.choose(&v, &options(4), &State::default()) else {
            panic!("expected a merge")
        };
        assert_eq!(spec.output_level, 1);
        assert_eq!(
            spec.inputs.len(),
            1,
            "nothing of level 1 is rewritten: {spec:?}"
        );
        assert_eq!(numbers(&spec.inputs[0].1), vec![11, 10]);
        assert!(spec.guard_bits.is_some());
    }

    #[test]
    fn a_full_child_guard_is_merged_and_max1_is_leveled() {
        let files = vec![
            (0, file(10, "a", "c", 10)),
            (0, file(11, "b", "d", 10)),
            (1, file(3, "a", "b", 10)),
            (1, file(4, "c", "e", 10)),
            (1, file(5, "n", "p", 10)),
        ];
        let v = version(GUARDS, files);
        // max 2: the sentinel guard of level 1 holds 2 fragments overlapping [a, d]: merged.
        let Choice::Merge(spec) = Flsm.choose(&v, &options(2), &State::default()) else {
            panic!("merge")
        };
        assert_eq!(numbers(&spec.inputs[1].1), vec![3, 4]);
        // max 3: room left, append.
        let Choice::Merge(spec) = Flsm.choose(&v, &options(3), &State::default()) else {
            panic!("merge")
        };
        assert_eq!(spec.inputs.len(), 1);
        // max 1: every overlapping table below is merged, as in leveled compaction.
        let Choice::Merge(spec) = Flsm.choose(&v, &options(1), &State::default()) else {
            panic!("merge")
        };
        assert_eq!(numbers(&spec.inputs[1].1), vec![3, 4]);
    }

    #[test]
    fn a_level_over_target_compacts_one_guard_into_the_next_level() {
        let v = version(
            GUARDS,
            vec![
                (1, file(3, "a", "k", 600)),
                (1, file(4, "b", "j", 600)),
                (1, file(5, "n", "z", 600)),
                (2, file(6, "a", "d", 10)),
            ],
        );
        let Choice::Merge(spec) = Flsm.choose(&v, &options(4), &State::default()) else {
            panic!("merge")
        };
        assert_eq!(spec.output_level, 2);
        assert_eq!(
            numbers(&spec.inputs[0].1),
            vec![3, 4],
            "one guard: the sentinel"
        );
        assert_eq!(spec.inputs.len(), 1, "child has room");
        // With the sentinel guard busy, the other guard is taken (parallel compaction).
        let mut state = State::default();
        state.busy_files.extend([3, 4]);
        state.busy_ranges.push((2, b"a".to_vec(), b"k".to_vec()));
        // (table 5 spans level 2's guard "t", so it is merged and split there, not moved).
        match Flsm.choose(&v, &options(4), &state) {
            Choice::Merge(spec) => assert_eq!(numbers(&spec.inputs[0].1), vec![5]),
            other => panic!("expected the other guard, got {other:?}"),
        }
    }

    #[test]
    fn a_fragment_that_fits_one_child_guard_moves_by_metadata() {
        let v = version(
            GUARDS,
            vec![(1, file(3, "g", "k", 2000)), (2, file(6, "n", "p", 10))],
        );
        match Flsm.choose(&v, &options(4), &State::default()) {
            Choice::Move {
                from_level: 1,
                to_level: 2,
                file,
            } => assert_eq!(file.number, 3),
            other => panic!("expected a move, got {other:?}"),
        }
        // Spanning child guard "m" of level 2: it must be merged (and split) instead.
        let v = version(GUARDS, vec![(1, file(3, "n", "u", 2000))]);
        assert!(matches!(
            Flsm.choose(&v, &options(4), &State::default()),
            Choice::Merge(_)
        ));
    }

    #[test]
    fn second_to_last_level_rewrites_in_place_when_the_last_level_is_huge() {
        let mut o = options(1);
        o.max_bytes_for_level_base = 10;
        o.level_size_multiplier = 2;
        let v = version(
            GUARDS,
            vec![
                (2, file(3, "a", "c", 10)),
                (2, file(4, "b", "d", 10)),
                (3, file(5, "a", "e", 100_000)),
            ],
        );
        let Choice::Merge(spec) = Flsm.choose(&v, &o, &State::default()) else {
            panic!("merge")
        };
        assert_eq!(spec.output_level, 2, "{spec:?}");
        o.flsm.second_last_rewrite_ratio = 0;
        let Choice::Merge(spec) = Flsm.choose(&v, &o, &State::default()) else {
            panic!("merge")
        };
        assert_eq!(spec.output_level, 3);
        assert_eq!(numbers(&spec.inputs[1].1), vec![5]);
    }

    #[test]
    fn invariants_reject_spanning_tables_and_broken_skip_lists() {
        let icmp = InternalKeyComparator::new(default_comparator());
        let fs = Arc::new(MemFs::new());
        let tables = Arc::new(TableCache::new(
            fs.clone(),
            PathBuf::from("/db"),
            TableOptions::default(),
            icmp.clone(),
            16,
            None,
        ));
        let obsolete = Arc::new(ObsoleteFiles::new(fs, PathBuf::from("/db"), tables));
        let base = Version::empty(icmp, Layout::Flsm, 4, obsolete);
        let build = |edit: VersionEdit| {
            let mut b = VersionBuilder::new(&base);
            b.apply(&edit).unwrap();
            b.build().check_invariants()
        };
        let spanning = VersionEdit {
            new_files: vec![(2, file(3, "a", "z", 1))],
            added_guards: vec![(2, b"m".to_vec()), (3, b"m".to_vec())],
            ..VersionEdit::default()
        };
        assert!(build(spanning).unwrap_err().contains("spans guard"));
        let not_nested = VersionEdit {
            added_guards: vec![(1, b"m".to_vec())],
            ..VersionEdit::default()
        };
        assert!(
            build(not_nested)
                .unwrap_err()
                .contains("is not a guard of level 2")
        );
        let at_level0 = VersionEdit {
            added_guards: vec![(0, b"m".to_vec())],
            ..VersionEdit::default()
        };
        assert!(build(at_level0).unwrap_err().contains("level 0"));
    }

    #[test]
    fn unsafe_new_guards_are_dropped_at_every_level() {
        let v = version(GUARDS, vec![(3, file(3, "g", "k", 10))]);
        let mut edit = VersionEdit {
            added_guards: vec![
                (1, b"h".to_vec()),
                (2, b"h".to_vec()),
                (3, b"h".to_vec()),
                (2, b"u".to_vec()),
                (3, b"u".to_vec()),
            ],
            ..VersionEdit::default()
        };
        drop_unsafe_guards(&v, &State::default(), &mut edit);
        // "h" is spanned by table 3 at level 3; "u" is free.
        assert_eq!(
            edit.added_guards,
            vec![(2, b"u".to_vec()), (3, b"u".to_vec())]
        );
        let mut state = State::default();
        state.busy_ranges.push((3, b"s".to_vec(), b"v".to_vec()));
        drop_unsafe_guards(&v, &state, &mut edit);
        assert!(
            edit.added_guards.is_empty(),
            "a running job writes across u"
        );
    }

    #[test]
    fn adaptive_bits_follow_the_entry_size() {
        let mut o = options(4);
        o.target_file_size = 1 << 20; // guard target 4 MiB
        let small: Vec<FileRef> = version(&[], vec![(1, file(1, "a", "b", 1000))])
            .files(1)
            .to_vec(); // 100-byte entries
        assert_eq!(
            guard_bits(&o, 1, &small),
            (4u64 << 20).div_euclid(100).ilog2()
        );
        o.flsm.guard_bits = GuardBits::Fixed {
            top_level_bits: 27,
            bit_decrement: 2,
        };
        assert_eq!(guard_bits(&o, 1, &small), 27);
        assert_eq!(guard_bits(&o, 3, &small), 23);
    }
}
