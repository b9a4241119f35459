//! Unit tests of the Jungle strategy's metadata moves on hand-built versions (no files).
use super::*;
use crate::compaction::test_support::{file, version_of};
use crate::layout::LayoutKind;
use crate::version::VersionBuilder;

/// Level 1 may hold 3 x 1000 file bytes before one of its trees goes down.
fn options() -> Options {
    Options {
        max_bytes_for_level_base: 1000,
        layout: Layout::Jungle(JungleOptions::DEFAULT),
        ..Options::default()
    }
}

/// A tree `number` over `smallest..=largest` of `size` bytes, all of them live.
fn tree(number: u64, smallest: &str, largest: &str, size: u64) -> FileMeta {
    FileMeta {
        format: TableFormat::Tree,
        live_bytes: size,
        ..file(number, smallest, largest, size)
    }
}

/// A Jungle version with `guards` as `(level, key)` and `files` as `(level, meta)`.
fn version(guards: &[(u32, &str)], files: Vec<(u32, FileMeta)>) -> Version {
    version_of(LayoutKind::Jungle, guards, files)
}

/// The version after `choice` (a move) is applied as the background thread applies it.
fn after_move(v: &Version, choice: &Choice) -> Version {
    let Choice::Move {
        from_level,
        file,
        to_level,
        new_guard,
    } = choice
    else {
        panic!("expected a move, got {choice:?}")
    };
    let mut edit = crate::compaction::job::move_edit(file, *from_level, *to_level);
    edit.added_guards
        .extend(new_guard.clone().map(|k| (*to_level as u32, k)));
    let mut b = VersionBuilder::new(v);
    b.apply(&edit).unwrap();
    b.build()
}

#[test]
fn a_tree_past_the_last_tree_of_its_range_moves_and_adds_a_guard() {
    // Level 1 is over its 3000-byte limit; level 2's only range holds a tree below "g".
    let v = version(
        &[],
        vec![(1, tree(3, "g", "k", 5000)), (2, tree(6, "a", "c", 10))],
    );
    let choice = Jungle.choose(&v, &options(), &State::default());
    match &choice {
        Choice::Move {
            from_level: 1,
            to_level: 2,
            file,
            new_guard,
        } => {
            assert_eq!(file.number, 3);
            assert_eq!(new_guard.as_deref(), Some(b"g".as_slice()));
        }
        other => panic!("expected a move, got {other:?}"),
    }
    let moved = after_move(&v, &choice);
    moved.check_invariants().unwrap();
    assert_eq!(moved.guards(2), &[b"g".to_vec()]);
    assert_eq!(moved.files(2).len(), 2);
    assert!(moved.files(1).is_empty());
}

#[test]
fn a_tree_moves_into_an_empty_range_without_a_new_guard() {
    // Level 2's range ["m", ..) is empty; its tree lies in the range below "m".
    let v = version(
        &[(2, "m")],
        vec![(1, tree(3, "n", "q", 5000)), (2, tree(6, "a", "c", 10))],
    );
    match Jungle.choose(&v, &options(), &State::default()) {
        Choice::Move {
            file, new_guard, ..
        } => {
            assert_eq!(file.number, 3);
            assert_eq!(new_guard, None);
        }
        other => panic!("expected a move, got {other:?}"),
    }
}

#[test]
fn a_tree_that_overlaps_spans_guards_or_shares_a_range_from_below_is_merged() {
    let cases = [
        // Overlaps level 2's tree.
        (vec![], tree(6, "h", "j", 10)),
        // Level 2's tree lies above it in the same range: a guard at "g" would put both in one.
        (vec![], tree(6, "x", "z", 10)),
        // Spans level 2's guard "i".
        (vec![(2, "i")], tree(6, "x", "z", 10)),
    ];
    for (guards, below) in cases {
        let v = version(&guards, vec![(1, tree(3, "g", "k", 5000)), (2, below)]);
        match Jungle.choose(&v, &options(), &State::default()) {
            Choice::Merge(spec) => {
                assert_eq!(spec.output_level, 2);
                assert_eq!(spec.inputs[0].1[0].number, 3);
            }
            other => panic!("expected a merge, got {other:?}"),
        }
    }
}

#[test]
fn a_busy_range_or_tree_is_not_moved() {
    let v = version(
        &[],
        vec![(1, tree(3, "g", "k", 5000)), (2, tree(6, "a", "c", 10))],
    );
    let mut state = State::default();
    state.busy_ranges.push((2, b"h".to_vec(), b"h".to_vec()));
    assert!(!matches!(
        Jungle.choose(&v, &options(), &state),
        Choice::Move { .. }
    ));
}

#[test]
fn pending_bytes_count_only_what_passes_c_times_a_level_target() {
    // Level 1 within C x its target (3 x 1000): nothing owed, where the leveled estimate would
    // count 1500 bytes behind and slow writes.
    let v = version(
        &[],
        vec![(1, tree(1, "a", "f", 1200)), (1, tree(2, "g", "m", 1300))],
    );
    assert_eq!(Jungle.pending_bytes(&v, &options()), 0);
    assert_eq!(v.pending_compaction_bytes(&options()), 1500);
    // Past it: the excess.
    let v = version(
        &[],
        vec![(1, tree(1, "a", "f", 1700)), (1, tree(2, "g", "m", 1800))],
    );
    assert_eq!(Jungle.pending_bytes(&v, &options()), 500);
}

/// Trees of `level`, tree `i + 1` over the keys `k{i}a..=k{i}z` holding 100,000 live bytes in a
/// file `ratios[i]` times what a fresh tree of them needs, plus `below` (a fresh tree of every
/// key one level down) when given.
fn aged_level(level: u32, ratios: &[f64], below: bool) -> Version {
    let mut files: Vec<(u32, FileMeta)> = ratios
        .iter()
        .enumerate()
        .map(|(i, &ratio)| {
            let (s, l) = (format!("k{i:02}a"), format!("k{i:02}z"));
            let t = tree(i as u64 + 1, &s, &l, 100_000);
            let file_size = (ratio * fresh_bytes(&t) as f64) as u64;
            (level, FileMeta { file_size, ..t })
        })
        .collect();
    if below {
        files.push((level + 1, tree(99, "k", "l", 100_000)));
    }
    version(&[], files)
}

/// The single-tree rewrite `choice` names, as (level, tree number).
fn rewritten(choice: &Choice) -> Option<(usize, u64)> {
    match choice {
        Choice::Merge(MergeSpec {
            inputs,
            output: OutputPlan::Trees { rewrite: true, .. },
            ..
        }) if inputs.len() == 1 && inputs[0].1.len() == 1 => {
            Some((inputs[0].0, inputs[0].1[0].number))
        }
        _ => None,
    }
}

#[test]
fn the_deepest_level_rewrites_its_fullest_trees_early_once_past_the_middle_of_1_and_c() {
    // No level past C times its target: only rewrites are due.
    let options = Options {
        max_bytes_for_level_base: 1 << 30,
        ..options()
    };
    let choose = |v: &Version| rewritten(&Jungle.choose(v, &options, &State::default()));
    // Eight trees (C = 3) holding 2.08 times their fresh bytes together, past (1 + 3) / 2:
    // the trees above the level's ratio are due before they reach C, the largest first.
    let spread = [2.6, 2.2, 2.2, 2.2, 2.0, 2.0, 1.7, 1.7];
    assert_eq!(choose(&aged_level(3, &spread, false)), Some((3, 1)));
    // Within (1 + C) / 2: only C rewrites.
    let within = [2.6, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5];
    assert_eq!(choose(&aged_level(3, &within, false)), None);
    // Past C: rewritten whatever the level holds.
    assert_eq!(choose(&aged_level(3, &[3.2, 1.1], false)), Some((3, 1)));
    // Three trees: too few to spread, so only C rewrites (a lone tree is not rewritten at 2).
    assert_eq!(choose(&aged_level(3, &[2.6, 2.2, 1.7], false)), None);
    // The same eight above a deeper level: their data merges down, so only C rewrites them.
    assert_eq!(choose(&aged_level(2, &spread, true)), None);
}
