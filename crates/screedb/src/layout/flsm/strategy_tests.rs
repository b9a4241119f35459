//! Unit tests of the FLSM strategy on hand-built versions (no files).
use super::*;
use crate::compaction::test_support::{GUARDS, empty_version, file, version};
use crate::manifest::{FileMeta, VersionEdit};
use crate::options::FlsmOptions;
use crate::version::VersionBuilder;

pub(super) fn options(max_per_guard: usize) -> Options {
    Options {
        l0_compaction_trigger: 2,
        max_bytes_for_level_base: 1000,
        layout: crate::options::Layout::Flsm(FlsmOptions {
            max_sstables_per_guard: max_per_guard,
            // Level 1 targets exactly `max_bytes_for_level_base` in these versions.
            level_target_scale: 1,
            ..FlsmOptions::default()
        }),
        ..Options::default()
    }
}

pub(super) fn numbers(files: &[FileRef]) -> Vec<u64> {
    files.iter().map(|f| f.number).collect()
}

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
    assert!(matches!(spec.output, OutputPlan::ByGuards { .. }));
}

/// Two level-0 tables over [a, d]; level 1's sentinel guard holds tables 3 and 4, both holding
/// "b" (two deep), and guard "m" table 5.
fn level0_over_a_level1_guard_two_deep() -> Vec<(u32, FileMeta)> {
    vec![
        (0, file(10, "a", "c", 10)),
        (0, file(11, "b", "d", 10)),
        (1, file(3, "a", "b", 10)),
        (1, file(4, "b", "e", 10)),
        (1, file(5, "n", "p", 10)),
    ]
}

#[test]
fn a_full_child_guard_is_merged_and_max1_is_leveled() {
    let v = version(GUARDS, level0_over_a_level1_guard_two_deep());
    // max 2: the sentinel guard of level 1 holds 2 fragments overlapping [a, d], both holding
    // "b" (depth 2): merged.
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
fn a_full_guard_above_the_deepest_level_is_pushed_down_first() {
    let mut files = level0_over_a_level1_guard_two_deep();
    files.push((2, file(6, "g", "h", 10)));
    let v = version(GUARDS, files);
    // Level 1's sentinel guard is full (depth 2) and level 2 holds data: the guard goes down
    // whole into level 2 (PebblesDB's rule) instead of being merged with level 0 in place.
    let Choice::Merge(spec) = Flsm.choose(&v, &options(2), &State::default()) else {
        panic!("merge")
    };
    assert_eq!(spec.output_level, 2, "{spec:?}");
    assert_eq!(spec.inputs.len(), 1, "level 2's guard has room: {spec:?}");
    assert_eq!(spec.inputs[0].0, 1);
    assert_eq!(numbers(&spec.inputs[0].1), vec![3, 4]);
    // While that guard is being pushed down, level 0 waits rather than rewriting it.
    let mut state = State::default();
    state.busy_files.extend([3, 4]);
    state.busy_ranges.push((2, b"a".to_vec(), b"e".to_vec()));
    if let Choice::Merge(spec) = Flsm.choose(&v, &options(2), &state) {
        assert!(spec.inputs.iter().all(|(level, _)| *level != 0), "{spec:?}");
    }
    // One run per guard is leveled compaction: level 0 merges with what it overlaps.
    let Choice::Merge(spec) = Flsm.choose(&v, &options(1), &State::default()) else {
        panic!("merge")
    };
    assert_eq!(spec.output_level, 1);
    assert_eq!(numbers(&spec.inputs[1].1), vec![3, 4]);
}

#[test]
fn a_guard_is_full_by_its_depth_not_its_table_count() {
    // Level 1's sentinel guard holds one run cut into three tables, and a second run over
    // part of it: depth 2 at most.
    let files = vec![
        (0, file(10, "a", "c", 10)),
        (0, file(11, "b", "k", 10)),
        (1, file(3, "a", "c", 10)),
        (1, file(4, "d", "f", 10)),
        (1, file(6, "e", "h", 10)),
        (1, file(5, "g", "k", 10)),
    ];
    let v = version(GUARDS, files);
    // Four tables overlap [a, k], but no key is in more than two: with max 3 there is room.
    let Choice::Merge(spec) = Flsm.choose(&v, &options(3), &State::default()) else {
        panic!("merge")
    };
    assert_eq!(spec.inputs.len(), 1, "appended: {spec:?}");
    // With max 2 the guard is full, and all of its overlapping tables are merged.
    let Choice::Merge(spec) = Flsm.choose(&v, &options(2), &State::default()) else {
        panic!("merge")
    };
    let mut merged = numbers(&spec.inputs[1].1);
    merged.sort_unstable();
    assert_eq!(merged, vec![3, 4, 5, 6]);
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
            new_guard: None,
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
    o.layout.flsm_mut().unwrap().second_last_rewrite_ratio = 0;
    let Choice::Merge(spec) = Flsm.choose(&v, &o, &State::default()) else {
        panic!("merge")
    };
    assert_eq!(spec.output_level, 3);
    assert_eq!(numbers(&spec.inputs[1].1), vec![5]);
}

#[test]
fn invariants_reject_spanning_tables_and_broken_skip_lists() {
    let base = empty_version(crate::layout::LayoutKind::Flsm);
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
    o.layout.flsm_mut().unwrap().guard_bits = GuardBits::Fixed {
        top_level_bits: 27,
        bit_decrement: 2,
    };
    assert_eq!(guard_bits(&o, 1, &small), 27);
    assert_eq!(guard_bits(&o, 3, &small), 23);
}

/// The level a choice takes its (first) input from.
fn from_level(choice: &Choice) -> Option<usize> {
    match choice {
        Choice::DoNothing => None,
        Choice::Move { from_level, .. } => Some(*from_level),
        Choice::Merge(spec) => Some(spec.inputs[0].0),
    }
}

#[test]
fn aggressive_compaction_takes_a_level_within_the_ratio_of_the_next() {
    // Level 1 (target 1000) holds 500 bytes, under target; level 2 holds 600.
    let files = |l1: u64| {
        vec![
            (1, file(3, "a", "c", l1 / 2)),
            (1, file(4, "b", "d", l1 / 2)),
            (2, file(5, "a", "e", 300)),
            (2, file(6, "n", "p", 300)),
        ]
    };
    let v = version(GUARDS, files(500));
    assert_eq!(aggressive_levels(&v, &options(4)), vec![1]);
    let choice = Flsm.choose(&v, &options(4), &State::default());
    assert_eq!(from_level(&choice), Some(1), "{choice:?}");
    // 500 >= 75% of 600; 440 is not.
    let v = version(GUARDS, files(440));
    assert!(aggressive_levels(&v, &options(4)).is_empty());
    let choice = Flsm.choose(&v, &options(4), &State::default());
    assert_eq!(from_level(&choice), None, "{choice:?}");
    // 0 disables it.
    let v = version(GUARDS, files(500));
    let mut o = options(4);
    o.layout.flsm_mut().unwrap().aggressive_compaction_percent = 0;
    let choice = Flsm.choose(&v, &o, &State::default());
    assert_eq!(from_level(&choice), None, "{choice:?}");
    // 100 compacts any level whose next level holds data; never the last, nor into an empty one.
    o.layout.flsm_mut().unwrap().aggressive_compaction_percent = 100;
    let v = version(
        GUARDS,
        vec![(1, file(3, "a", "c", 1)), (3, file(6, "n", "p", 900))],
    );
    assert!(aggressive_levels(&v, &o).is_empty(), "level 2 is empty");
    let v = version(
        GUARDS,
        vec![
            (1, file(3, "a", "c", 1)),
            (2, file(5, "a", "e", 900)),
            (3, file(6, "n", "p", 1)),
        ],
    );
    assert_eq!(aggressive_levels(&v, &o), vec![2, 1], "fullest first");
}

#[test]
fn aggressive_percent_is_validated() {
    let mut o = Options::default();
    o.layout.flsm_mut().unwrap().aggressive_compaction_percent = 101;
    let err = o.validate().unwrap_err().to_string();
    assert!(err.contains("aggressive_compaction_percent"), "{err}");
}
