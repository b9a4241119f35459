//! Jungle guard upkeep at install time (`JungleOptions::prune_guards`): a level-1 guard range
//! that a merge leaves without a tree is joined to a neighbour, so level 1's guards follow the
//! trees it holds instead of every tree that ever passed through it.
//!
//! Why: a merge into a level cuts its output at every guard there, and a level-0 merge spans
//! the whole key space, so a level 1 that once held many small trees (fillseq's flushes, each
//! keeping its guard) has every later level-0 merge append to hundreds of small trees, each
//! append paying its own path, filter, commit, file sync and reopen (docs/jungle.md, "Level-1
//! guards pruned").
//! Once those trees have gone down, their guards go too and new trees are cut at about
//! `target_file_size` again. Deeper levels keep their guards: a merge into them takes one
//! tree's key range, and guards shared with the level above let a tree move down unwritten.
//!
//! Removing guard `g` joins ranges `g` and `g + 1` of its level (guard `g` starts range
//! `g + 1`). Only a range left empty is joined, to the range before it (the first range to the
//! one after), so every range still holds at most one tree; a chain of removals in one edit
//! joins at most one occupied range, since each removal has an empty side. A range a running
//! job writes into is left alone (its outputs were cut at the guards it saw).

use crate::compaction::State;
use crate::layout::flsm::guards::guard_index;
use crate::manifest::VersionEdit;
use crate::version::{Version, VersionBuilder};

use super::strategy::span_busy;

/// The level whose guards are pruned.
const LEVEL: usize = 1;

/// Adds to `edit` (about to be applied to `current`) the removal of each level-1 guard whose
/// range the edit leaves empty by deleting a tree there.
pub fn drop_emptied_guards(current: &Version, state: &State, edit: &mut VersionEdit) {
    // The smallest user key of each level-1 tree the edit deletes.
    let emptied: Vec<Vec<u8>> = edit
        .deleted_files
        .iter()
        .filter(|(level, _)| *level as usize == LEVEL)
        .filter_map(|&(_, number)| {
            let tree = current.files(LEVEL).iter().find(|f| f.number == number)?;
            Some(tree.smallest_user_key().to_vec())
        })
        .collect();
    if emptied.is_empty() {
        return;
    }
    let mut builder = VersionBuilder::new(current);
    if builder.apply(edit).is_err() {
        return;
    }
    let after = builder.build();
    let ucmp = after.icmp().user();
    let guards = after.guards(LEVEL);
    let mut removed: Vec<(u32, Vec<u8>)> = Vec::new();
    for key in emptied {
        let range = guard_index(ucmp.as_ref(), guards, &key);
        let occupied = after
            .files(LEVEL)
            .iter()
            .any(|f| guard_index(ucmp.as_ref(), guards, f.smallest_user_key()) == range);
        // The guard that starts the range (the first range: the one that ends it).
        let g = range.saturating_sub(1);
        let Some(guard) = guards.get(g) else {
            continue;
        };
        let entry = (LEVEL as u32, guard.clone());
        if occupied
            || removed.contains(&entry)
            || edit.added_guards.contains(&entry)
            || span_busy(&after, state, LEVEL, (g, g + 1))
        {
            continue;
        }
        removed.push(entry);
    }
    edit.removed_guards.extend(removed);
}

#[cfg(test)]
#[path = "upkeep_tests.rs"]
mod tests;
