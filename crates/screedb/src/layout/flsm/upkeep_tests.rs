//! Unit tests of guard upkeep on hand-built versions (no files).
use super::*;
use crate::compaction::test_support::{GUARDS, file, version};
use crate::options::GuardBits;

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

/// Options whose guards should hold 1600 bytes: "small" is under 100 bytes, a run under 800.
fn small_options() -> Options {
    let mut o = Options::default();
    o.layout.flsm_mut().unwrap().guard_bits = GuardBits::Adaptive {
        target_guard_bytes: 1600,
    };
    o
}

fn removed(edit: &VersionEdit) -> Vec<(u32, &str)> {
    edit.removed_guards
        .iter()
        .map(|(l, k)| (*l, std::str::from_utf8(k).unwrap()))
        .collect()
}

#[test]
fn a_guard_emptied_at_every_level_is_removed_from_every_level() {
    // Guard "t" holds one table at level 2 and nothing at level 3; guard "m" holds data.
    let v = version(
        GUARDS,
        vec![
            (2, file(5, "n", "p", 1000)),
            (2, file(6, "u", "w", 1000)),
            (3, file(7, "g", "h", 1000)),
        ],
    );
    let mut edit = VersionEdit {
        deleted_files: vec![(2, 6)],
        ..VersionEdit::default()
    };
    drop_small_guards(&v, &small_options(), &mut edit);
    assert_eq!(removed(&edit), vec![(2, "t"), (3, "t")]);
    // With a table left in "t" at level 3 it stays.
    let v = version(
        GUARDS,
        vec![(2, file(6, "u", "w", 1000)), (3, file(7, "u", "v", 1000))],
    );
    let mut edit = VersionEdit {
        deleted_files: vec![(2, 6)],
        ..VersionEdit::default()
    };
    drop_small_guards(&v, &small_options(), &mut edit);
    assert!(removed(&edit).is_empty(), "{edit:?}");
}

#[test]
fn an_under_full_guard_joins_its_small_neighbour() {
    // Level 3: guard "f" 300 bytes, guard "m" 50 bytes, guard "t" 1000 bytes.
    let files = |m_bytes| {
        vec![
            (3, file(5, "g", "h", 300)),
            (3, file(6, "n", "o", m_bytes)),
            (3, file(7, "u", "v", 1000)),
        ]
    };
    let v = version(GUARDS, files(50));
    let mut edit = VersionEdit {
        deleted_files: vec![(3, 6)],
        new_files: vec![(3, file(8, "n", "o", 50))],
        ..VersionEdit::default()
    };
    drop_small_guards(&v, &small_options(), &mut edit);
    // "m" (50 < 100) joins "f" (300 + 50 < 800), at every level that has it.
    assert_eq!(removed(&edit), vec![(1, "m"), (2, "m"), (3, "m")]);
    // 150 bytes is not under-full; nor is a guard whose neighbour is large.
    let v = version(GUARDS, files(150));
    let mut edit = VersionEdit {
        deleted_files: vec![(3, 6)],
        new_files: vec![(3, file(8, "n", "o", 150))],
        ..VersionEdit::default()
    };
    drop_small_guards(&v, &small_options(), &mut edit);
    assert!(removed(&edit).is_empty(), "{edit:?}");
    let mut edit = VersionEdit {
        deleted_files: vec![(3, 7)],
        new_files: vec![(3, file(8, "u", "v", 50))],
        ..VersionEdit::default()
    };
    let v = version(GUARDS, files(1000));
    drop_small_guards(&v, &small_options(), &mut edit);
    assert!(
        removed(&edit).is_empty(),
        "t's neighbour m is large: {edit:?}"
    );
}

#[test]
fn guards_the_edit_adds_are_kept() {
    let v = version(GUARDS, vec![(3, file(5, "u", "v", 10))]);
    let mut edit = VersionEdit {
        deleted_files: vec![(3, 5)],
        new_files: vec![(3, file(6, "u", "v", 10))],
        added_guards: vec![(3, b"u".to_vec())],
        ..VersionEdit::default()
    };
    drop_small_guards(&v, &small_options(), &mut edit);
    assert!(removed(&edit).iter().all(|(_, k)| *k != "u"), "{edit:?}");
}
