//! Unit tests of Jungle's guard upkeep on hand-built versions (no files).
use super::*;
use crate::compaction::test_support::{file, version_of};
use crate::layout::LayoutKind;
use crate::manifest::FileMeta;
use crate::table::TableFormat;

/// A tree `number` over `smallest..=largest`.
fn tree(number: u64, smallest: &str, largest: &str) -> FileMeta {
    FileMeta {
        format: TableFormat::Tree,
        live_bytes: 100,
        ..file(number, smallest, largest, 100)
    }
}

/// Level 1 with guards "g" and "m" and a tree in each of its three ranges.
fn three_ranges() -> Version {
    version_of(
        LayoutKind::Jungle,
        &[(1, "g"), (1, "m")],
        vec![
            (1, tree(1, "a", "c")),
            (1, tree(2, "h", "k")),
            (1, tree(3, "n", "p")),
        ],
    )
}

/// `edit` with upkeep applied to `v`: the removed guards and the level-1 guards after it.
fn upkeep(v: &Version, state: &State, mut edit: VersionEdit) -> (Vec<(u32, String)>, Vec<String>) {
    drop_emptied_guards(v, state, &mut edit);
    let removed = edit
        .removed_guards
        .iter()
        .map(|(l, k)| (*l, String::from_utf8_lossy(k).into_owned()))
        .collect();
    let mut b = VersionBuilder::new(v);
    b.apply(&edit).unwrap();
    let after = b.build();
    after.check_invariants().unwrap();
    // Every range still holds at most one tree.
    let ucmp = after.icmp().user();
    let mut ranges: Vec<usize> = after
        .files(1)
        .iter()
        .map(|f| guard_index(ucmp.as_ref(), after.guards(1), f.smallest_user_key()))
        .collect();
    let n = ranges.len();
    ranges.dedup();
    assert_eq!(ranges.len(), n, "two trees in one range");
    let guards = after
        .guards(1)
        .iter()
        .map(|g| String::from_utf8_lossy(g).into_owned())
        .collect();
    (removed, guards)
}

fn deleting(numbers: &[u64]) -> VersionEdit {
    VersionEdit {
        deleted_files: numbers.iter().map(|&n| (1, n)).collect(),
        ..VersionEdit::default()
    }
}

#[test]
fn a_range_left_empty_joins_the_range_before_it() {
    let (removed, guards) = upkeep(&three_ranges(), &State::default(), deleting(&[2]));
    assert_eq!(removed, [(1, "g".to_owned())]);
    assert_eq!(guards, ["m"]);
}

#[test]
fn the_first_range_left_empty_joins_the_range_after_it() {
    let (removed, guards) = upkeep(&three_ranges(), &State::default(), deleting(&[1]));
    assert_eq!(removed, [(1, "g".to_owned())]);
    assert_eq!(guards, ["m"]);
}

#[test]
fn a_level_emptied_keeps_no_guard() {
    let (removed, guards) = upkeep(&three_ranges(), &State::default(), deleting(&[1, 2, 3]));
    assert_eq!(removed.len(), 2, "{removed:?}");
    assert!(guards.is_empty(), "{guards:?}");
}

#[test]
fn a_range_the_edit_fills_again_keeps_its_guard() {
    // A rewrite: the tree of range "g" replaced by a new one there.
    let mut edit = deleting(&[2]);
    edit.new_files.push((1, tree(4, "h", "j")));
    let (removed, guards) = upkeep(&three_ranges(), &State::default(), edit);
    assert!(removed.is_empty(), "{removed:?}");
    assert_eq!(guards, ["g", "m"]);
}

#[test]
fn a_range_a_running_job_writes_keeps_its_guard() {
    // Another job is writing a new tree into the emptied range, or into the one it would join.
    for (s, l) in [("h", "i"), ("b", "b")] {
        let state = State {
            busy_ranges: vec![(1, s.into(), l.into())],
            ..State::default()
        };
        let (removed, guards) = upkeep(&three_ranges(), &state, deleting(&[2]));
        assert!(removed.is_empty(), "busy {s}..{l}: {removed:?}");
        assert_eq!(guards, ["g", "m"]);
    }
    // A job writing elsewhere on the level does not stop it.
    let state = State {
        busy_ranges: vec![(1, "o".into(), "o".into())],
        ..State::default()
    };
    assert_eq!(upkeep(&three_ranges(), &state, deleting(&[2])).1, ["m"]);
}

#[test]
fn only_level_one_is_pruned() {
    let v = version_of(
        LayoutKind::Jungle,
        &[(1, "g"), (2, "g")],
        vec![
            (0, file(5, "a", "z", 10)),
            (1, tree(1, "a", "c")),
            (2, tree(2, "h", "k")),
        ],
    );
    let edit = VersionEdit {
        deleted_files: vec![(0, 5)],
        ..VersionEdit::default()
    };
    let (removed, _) = upkeep(&v, &State::default(), edit);
    assert!(removed.is_empty(), "{removed:?}");
    // Level 2's tree deleted: its guard stays.
    let edit = VersionEdit {
        deleted_files: vec![(2, 2)],
        ..VersionEdit::default()
    };
    let (removed, guards) = upkeep(&v, &State::default(), edit);
    assert!(removed.is_empty(), "{removed:?}");
    assert_eq!(guards, ["g"]);
}

#[test]
fn the_strategy_prunes_only_when_asked() {
    use crate::compaction::CompactionStrategy;
    use crate::layout::jungle::{Jungle, JungleOptions};
    use crate::options::{Layout, Options};
    for prune in [false, true] {
        let options = Options {
            layout: Layout::Jungle(JungleOptions {
                prune_guards: prune,
                ..JungleOptions::DEFAULT
            }),
            ..Options::default()
        };
        let mut edit = deleting(&[2]);
        Jungle.upkeep(&three_ranges(), &options, &State::default(), &mut edit);
        assert_eq!(
            edit.removed_guards.len(),
            usize::from(prune),
            "prune_guards {prune}"
        );
    }
}
