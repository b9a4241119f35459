//! Unit tests of FLSM's seek-based compaction and seek counters on hand-built versions (no
//! files).
use super::tests::{numbers, options};
use super::*;
use crate::compaction::test_support::{GUARDS, file, version};
use crate::manifest::VersionEdit;
use crate::version::VersionBuilder;

/// Level 2 guard "f" holds two overlapping fragments (300 bytes), guard "t" one.
fn seek_version() -> Version {
    version(
        GUARDS,
        vec![
            (2, file(5, "g", "k", 150)),
            (2, file(6, "h", "l", 150)),
            (2, file(7, "u", "w", 100)),
            (3, file(8, "a", "e", 100_000)),
        ],
    )
}

fn seek_options(threshold: u32) -> Options {
    let mut o = options(4);
    o.layout.flsm_mut().unwrap().aggressive_compaction_percent = 0;
    o.layout.flsm_mut().unwrap().seek_compaction_threshold = threshold;
    o
}

fn budget(bytes: u64) -> State {
    State {
        seek_budget_bytes: bytes,
        ..State::default()
    }
}

#[test]
fn a_hot_guard_is_merged_in_place_once_its_seeks_reach_the_threshold() {
    let v = seek_version();
    let o = seek_options(3);
    assert!(!v.record_seek(b"i", 3).crossed, "1 of 3");
    assert_eq!(
        v.record_seek(b"u", 3).extra_tables,
        0,
        "one fragment at u: not counted"
    );
    assert!(!v.record_seek(b"j", 3).crossed, "2 of 3");
    assert!(
        matches!(Flsm.choose(&v, &o, &budget(1000)), Choice::DoNothing),
        "under the threshold"
    );
    assert!(v.record_seek(b"k", 3).crossed, "3 of 3 crosses");
    assert!(!v.record_seek(b"k", 3).crossed, "crossing is reported once");
    assert_eq!(v.seek_counters().count(2, 1), 4);
    assert_eq!(v.seek_counters().count(2, 3), 0);
    let Choice::Merge(spec) = Flsm.choose(&v, &o, &budget(1000)) else {
        panic!("seek compaction")
    };
    assert!(spec.seek);
    assert_eq!(spec.output_level, 2, "in place");
    assert_eq!(spec.inputs.len(), 1);
    assert_eq!(numbers(&spec.inputs[0].1), vec![5, 6]);
    // A busy guard is skipped.
    let mut state = budget(1000);
    state.busy_files.insert(5);
    assert!(matches!(Flsm.choose(&v, &o, &state), Choice::DoNothing));
    // Threshold 0 disables it.
    assert!(matches!(
        Flsm.choose(&v, &seek_options(0), &budget(1000)),
        Choice::DoNothing
    ));
}

#[test]
fn seeks_that_pay_for_several_level0_tables_compact_level0_within_the_budget() {
    let mut o = seek_options(2);
    o.l0_compaction_trigger = 4;
    let v = version(
        GUARDS,
        vec![(0, file(20, "a", "z", 40)), (0, file(21, "b", "y", 40))],
    );
    assert!(
        matches!(Flsm.choose(&v, &o, &budget(1000)), Choice::DoNothing),
        "two tables are under the trigger"
    );
    let cost = v.record_seek(b"c", 2);
    assert_eq!(cost.extra_tables, 1, "two level-0 tables hold c");
    assert!(!cost.crossed);
    assert_eq!(v.record_seek(b"a", 2).extra_tables, 0, "only one holds a");
    assert!(v.record_seek(b"x", 2).crossed);
    // 80 bytes + 1/8 slack = 90.
    assert!(matches!(
        Flsm.choose(&v, &o, &budget(89)),
        Choice::DoNothing
    ));
    let Choice::Merge(spec) = Flsm.choose(&v, &o, &budget(90)) else {
        panic!("level 0 compaction")
    };
    assert!(spec.seek);
    assert_eq!((spec.inputs[0].0, spec.output_level), (0, 1));
    assert_eq!(
        numbers(&spec.inputs[0].1),
        vec![21, 20],
        "level 0, newest first"
    );
    // The count stands while level 0 does, and is gone once its tables change.
    let mut b = VersionBuilder::new(&v);
    b.apply(&VersionEdit {
        new_files: vec![(3, file(22, "x", "y", 10))],
        ..VersionEdit::default()
    })
    .unwrap();
    assert_eq!(b.build().seek_counters().count(0, 0), 2);
    let mut b = VersionBuilder::new(&v);
    b.apply(&VersionEdit {
        new_files: vec![(0, file(23, "a", "b", 10))],
        ..VersionEdit::default()
    })
    .unwrap();
    assert_eq!(b.build().seek_counters().count(0, 0), 0);
}

#[test]
fn level0_seek_compaction_appends_to_a_full_guard_and_pays_only_for_level0() {
    let mut o = seek_options(1);
    o.l0_compaction_trigger = 4;
    o.layout.flsm_mut().unwrap().max_sstables_per_guard = 2;
    // Level 1's first guard (up to "m") is two runs deep over [b, k]: full.
    let v = version(
        GUARDS,
        vec![
            (0, file(20, "a", "l", 40)),
            (0, file(21, "b", "k", 40)),
            (1, file(3, "b", "k", 400)),
            (1, file(4, "c", "j", 400)),
        ],
    );
    assert!(v.record_seek(b"c", 1).crossed);
    // A write-driven level-0 compaction would merge the full guard: 880 bytes. The seek
    // compaction takes level 0 alone: 80 bytes + 1/8 slack = 90.
    let Choice::Merge(spec) = Flsm.choose(&v, &o, &budget(90)) else {
        panic!("level 0 compaction within a budget of level 0's bytes")
    };
    assert!(spec.seek);
    assert_eq!(spec.output_level, 1);
    assert_eq!(spec.inputs.len(), 1, "level 1 is not rewritten: {spec:?}");
    assert_eq!(numbers(&spec.inputs[0].1), vec![21, 20]);
    assert!(matches!(
        Flsm.choose(&v, &o, &budget(89)),
        Choice::DoNothing
    ));
}

#[test]
fn seek_compaction_stays_within_its_budget() {
    let v = seek_version();
    let o = seek_options(1);
    assert!(v.record_seek(b"i", 1).crossed);
    // 300 bytes + 1/8 slack = 337.
    for (left, fires) in [
        (0, false),
        (300, false),
        (336, false),
        (337, true),
        (10_000, true),
    ] {
        let choice = Flsm.choose(&v, &o, &budget(left));
        assert_eq!(
            matches!(choice, Choice::Merge(ref s) if s.seek),
            fires,
            "budget {left}: {choice:?}"
        );
    }
}

#[test]
fn levels_report_bytes_per_guard_and_seeks() {
    let v = seek_version();
    v.record_seek(b"i", 0);
    v.record_seek(b"i", 5);
    v.record_seek(b"j", 5);
    let levels = v.describe_levels();
    let l2 = levels.lines().find(|l| l.starts_with("L2:")).unwrap();
    // Guard slots of level 2: sentinel 0, "f" 300, "m" 0, "t" 100 bytes.
    assert!(
        l2.contains("bytes per guard min/median/max 0/100/300, most seeks in one guard 2"),
        "{l2}"
    );
}

#[test]
fn seek_counts_survive_versions_that_leave_their_guard_alone() {
    let v = seek_version();
    for _ in 0..3 {
        v.record_seek(b"i", 100);
    }
    assert_eq!(v.seek_counters().count(2, 1), 3);
    // A flush and a compaction elsewhere (level 0, guard "t" of level 2): guard "f" keeps its
    // count, the changed guard "t" starts again.
    let mut b = VersionBuilder::new(&v);
    b.apply(&VersionEdit {
        new_files: vec![(0, file(9, "a", "z", 10)), (2, file(10, "u", "v", 10))],
        ..VersionEdit::default()
    })
    .unwrap();
    let next = b.build();
    assert_eq!(next.seek_counters().count(2, 1), 3, "guard f unchanged");
    // A new fragment in guard "f" resets it; so does a new guard key splitting it.
    for edit in [
        VersionEdit {
            new_files: vec![(2, file(11, "i", "j", 10))],
            ..VersionEdit::default()
        },
        VersionEdit {
            added_guards: vec![(2, b"g".to_vec()), (3, b"g".to_vec())],
            ..VersionEdit::default()
        },
    ] {
        let mut b = VersionBuilder::new(&next);
        b.apply(&edit).unwrap();
        let after = b.build();
        assert_eq!(after.seek_counters().count(2, 1), 0, "{edit:?}");
    }
}

#[test]
fn level0_seek_compaction_merges_overlapping_tables_into_one_run() {
    let mut o = seek_options(1);
    o.l0_compaction_trigger = 4; // two tables: below the trigger, so only reads ask
    // Random keys: both tables lie in level 1's first guard (up to "m"), where nothing is,
    // so the older could move by metadata; the seek compaction merges both instead.
    let v = version(
        GUARDS,
        vec![(0, file(20, "a", "k", 40)), (0, file(21, "b", "l", 40))],
    );
    assert!(v.record_seek(b"c", 1).crossed);
    let Choice::Merge(spec) = Flsm.choose(&v, &o, &budget(90)) else {
        panic!("one merge of both level-0 tables")
    };
    assert!(spec.seek);
    assert_eq!(numbers(&spec.inputs[0].1), vec![21, 20]);
    // The oldest table ends before either newer one starts: it moves down for free (the
    // newer two, which the seeks found overlapping, are merged by the next seek compaction).
    let v = version(
        GUARDS,
        vec![
            (0, file(20, "a", "b", 40)),
            (0, file(21, "c", "f", 40)),
            (0, file(22, "d", "g", 40)),
        ],
    );
    assert!(v.record_seek(b"e", 1).crossed);
    match Flsm.choose(&v, &o, &budget(200)) {
        Choice::Move { file, to_level, .. } => assert_eq!((file.number, to_level), (20, 1)),
        other => panic!("expected a move of table 20, got {other:?}"),
    }
}

#[test]
fn level0_at_leveldbs_trigger_is_folded_by_seeks_with_any_budget_left() {
    let mut o = seek_options(1);
    o.l0_compaction_trigger = 6; // writes would wait for six tables
    let tables = |n: u64| -> Vec<(u32, crate::manifest::FileMeta)> {
        (0..n).map(|i| (0, file(20 + i, "a", "l", 40))).collect()
    };
    // Three tables (120 bytes) need 135 bytes of budget.
    let v = version(GUARDS, tables(3));
    assert!(v.record_seek(b"c", 1).crossed);
    assert!(matches!(
        Flsm.choose(&v, &o, &budget(134)),
        Choice::DoNothing
    ));
    assert!(matches!(
        Flsm.choose(&v, &o, &budget(135)),
        Choice::Merge(_)
    ));
    // Four tables: folded with any budget left.
    let v = version(GUARDS, tables(4));
    assert!(v.record_seek(b"c", 1).crossed);
    let Choice::Merge(spec) = Flsm.choose(&v, &o, &budget(1)) else {
        panic!("level 0 at four tables folded by seeks")
    };
    assert!(spec.seek);
    assert_eq!(spec.inputs[0].1.len(), 4);
    assert!(matches!(Flsm.choose(&v, &o, &budget(0)), Choice::DoNothing));
}
