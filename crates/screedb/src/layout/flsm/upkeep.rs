//! FLSM guard upkeep at install time: which of a compaction's new guards may be committed, and
//! which guards it leaves empty or nearly empty (PebblesDB's future work: guard deletion and
//! rebalancing).
//!
//! Both run under the database mutex on the version the edit is about to be applied to, so they
//! see every edit installed while the job ran. Removing a guard key only joins two neighbouring
//! ranges: every table still lies inside one guard and the skip-list property holds (a key is
//! removed from every level that has it), so removal is always safe; adding one is safe only
//! where no table would have to be split.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{GuardBits, guards, options_of};
use crate::compaction::State;
use crate::manifest::VersionEdit;
use crate::options::Options;
use crate::version::{Version, VersionBuilder};

/// Bytes a guard should hold: `GuardBits::Adaptive`'s target, or `max_sstables_per_guard *
/// target_file_size` when that is 0 or guards are fixed.
pub fn target_guard_bytes(options: &Options) -> u64 {
    match options_of(options).guard_bits {
        GuardBits::Adaptive { target_guard_bytes } if target_guard_bytes > 0 => target_guard_bytes,
        _ => options
            .target_file_size
            .saturating_mul(options_of(options).max_sstables_per_guard as u64),
    }
}

/// `current` with the files and guards of `edit` applied (`None` if the edit does not apply).
fn after(current: &Version, edit: &VersionEdit) -> Option<Version> {
    let mut builder = VersionBuilder::new(current);
    builder.apply(edit).ok()?;
    Some(builder.build())
}

/// Removes from `edit` every new guard that cannot be committed on top of `current` any more:
/// a table of the resulting version would span it, or a running job (`state`) is writing
/// across it at that level. A guard is kept or dropped at all its levels together. Dropping is
/// always safe: outputs cut at an uncommitted key still lie inside one committed guard.
pub fn drop_unsafe_guards(current: &Version, state: &State, edit: &mut VersionEdit) {
    if edit.added_guards.is_empty() {
        return;
    }
    let ucmp = Arc::clone(current.icmp().user());
    let files_only = VersionEdit {
        deleted_files: edit.deleted_files.clone(),
        new_files: edit.new_files.clone(),
        removed_guards: edit.removed_guards.clone(),
        ..VersionEdit::default()
    };
    let Some(after) = after(current, &files_only) else {
        edit.added_guards.clear();
        return;
    };
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
            .filter(|&l| !after.has_guard(l, &key))
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

/// Bytes of the guard starting at `key` at `level` and of the guard just before it, or `None`
/// when `key` is not a guard there. (Tables of a level are sorted by smallest key, and each lies
/// inside one guard, so a guard's tables are those starting within its bounds.)
fn guard_and_previous_bytes(version: &Version, level: usize, key: &[u8]) -> Option<(u64, u64)> {
    let ucmp = version.icmp().user();
    let keys = version.guards(level);
    let i = keys.binary_search_by(|g| ucmp.compare(g, key)).ok()?;
    let files = version.files(level);
    let start_of = |k: Option<&Vec<u8>>| {
        k.map_or(files.len(), |k| {
            files.partition_point(|f| ucmp.compare(f.smallest_user_key(), k).is_lt())
        })
    };
    let previous = i.checked_sub(1).map_or(0, |j| start_of(keys.get(j)));
    let (here, end) = (start_of(keys.get(i)), start_of(keys.get(i + 1)));
    let bytes = |from: usize, to: usize| -> u64 {
        files
            .get(from..to)
            .map_or(0, |fs| fs.iter().map(|f| f.file_size).sum())
    };
    Some((bytes(here, end), bytes(previous, here)))
}

/// Adds to `edit` the removal of every guard it touches (a guard holding one of its deleted or
/// new tables, at any level) that would be left empty at every level, or — with
/// `GuardBits::Adaptive`, whose density is meant to follow the data — that would hold less
/// than 1/16 of [`target_guard_bytes`] while it and the guard before it hold less than half of
/// it together (an under-full run: the two become one). `GuardBits::Fixed` keeps the density
/// the user chose: only empty guards go. Guards the edit adds are left alone, and of two
/// neighbouring candidates only the first is removed in one edit.
pub fn drop_small_guards(current: &Version, options: &Options, edit: &mut VersionEdit) {
    let Some(after) = after(current, edit) else {
        return;
    };
    let ucmp = Arc::clone(current.icmp().user());
    let mut touched: BTreeSet<Vec<u8>> = BTreeSet::new();
    let deleted = edit.deleted_files.iter().filter_map(|(level, number)| {
        let level = *level as usize;
        let f = current.files(level).iter().find(|f| f.number == *number)?;
        Some((level, f.smallest_user_key().to_vec()))
    });
    let added = edit
        .new_files
        .iter()
        .map(|(level, f)| (*level as usize, f.smallest_user_key().to_vec()));
    for (level, smallest) in deleted.chain(added).filter(|(l, _)| *l > 0) {
        let keys = after.guards(level);
        let g = guards::guard_index(ucmp.as_ref(), keys, &smallest);
        // The guard holding the table (if not the sentinel) and the one after it.
        touched.extend(g.checked_sub(1).and_then(|i| keys.get(i)).cloned());
        touched.extend(keys.get(g).cloned());
    }
    // 0 under fixed bits: only empty guards qualify.
    let target = match options_of(options).guard_bits {
        GuardBits::Adaptive { .. } => target_guard_bytes(options),
        GuardBits::Fixed { .. } => 0,
    };
    let mut removed: Vec<Vec<u8>> = Vec::new();
    for key in touched {
        if edit.added_guards.iter().any(|(_, k)| *k == key) {
            continue;
        }
        let levels: Vec<usize> = (1..after.num_levels())
            .filter(|&l| after.has_guard(l, &key))
            .collect();
        let Some(&first) = levels.first() else {
            continue;
        };
        // The previous guard at the shallowest level: if it was just removed, skip this one.
        let keys = after.guards(first);
        let position = keys.partition_point(|g| ucmp.compare(g, &key).is_lt());
        if position
            .checked_sub(1)
            .and_then(|i| keys.get(i))
            .is_some_and(|prev| removed.last() == Some(prev))
        {
            continue;
        }
        let (mut here, mut before) = (0u64, 0u64);
        for &level in &levels {
            if let Some((h, b)) = guard_and_previous_bytes(&after, level, &key) {
                here += h;
                before += b;
            }
        }
        if here == 0 || (here < target / 16 && here.saturating_add(before) < target / 2) {
            edit.removed_guards
                .extend(levels.iter().map(|&l| (l as u32, key.clone())));
            removed.push(key);
        }
    }
}

#[cfg(test)]
#[path = "upkeep_tests.rs"]
mod tests;
