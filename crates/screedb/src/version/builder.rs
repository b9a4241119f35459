//! Applying version edits to a version.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::{FileRef, TableFile, Version};
use crate::layout::flsm::seeks;
use crate::manifest::VersionEdit;

/// Accumulates edits on top of a base version and produces the next version.
#[derive(Debug)]
pub struct VersionBuilder<'a> {
    base: &'a Version,
    deleted: Vec<HashSet<u64>>,
    added: Vec<Vec<FileRef>>,
    /// Per level, guard keys in user-key order without duplicates.
    guards: Vec<Vec<Vec<u8>>>,
    /// Tables of the base version that the edits removed (a re-added one is a move).
    removed: HashMap<u64, FileRef>,
    /// Seed of the key hash, if an edit set it.
    hash_seed: Option<u64>,
}

impl<'a> VersionBuilder<'a> {
    /// Starts from `base`.
    pub fn new(base: &'a Version) -> Self {
        let n = base.num_levels();
        VersionBuilder {
            base,
            deleted: vec![HashSet::new(); n],
            added: vec![Vec::new(); n],
            guards: (0..n).map(|l| base.guards(l).to_vec()).collect(),
            removed: HashMap::new(),
            hash_seed: None,
        }
    }

    /// Applies one edit. Levels beyond the version's are an error (named in the message).
    pub fn apply(&mut self, edit: &VersionEdit) -> std::result::Result<(), String> {
        let n = self.base.num_levels();
        let check = |level: u32| {
            if (level as usize) < n {
                Ok(level as usize)
            } else {
                Err(format!(
                    "edit names level {level} but the database has {n} levels"
                ))
            }
        };
        if let Some(seed) = edit.hash_seed {
            self.hash_seed = Some(seed);
        }
        for &(level, number) in &edit.deleted_files {
            let level = check(level)?;
            if let Some(f) = self.base.files(level).iter().find(|f| f.number == number) {
                self.removed.insert(number, Arc::clone(f));
            }
            self.deleted[level].insert(number);
            self.added[level].retain(|f| f.number != number);
        }
        for (level, meta) in &edit.new_files {
            let level = check(*level)?;
            self.deleted[level].remove(&meta.number);
            // A table moved to another level keeps its one `TableFile`: versions before and after
            // the move share it, so it is released only when neither can read it any more.
            let file = match self.removed.get(&meta.number) {
                Some(existing) => Arc::clone(existing),
                None => TableFile::new(meta.clone(), &self.base.obsolete),
            };
            self.added[level].push(file);
        }
        for (level, meta) in &edit.grown_files {
            let level = check(*level)?;
            let number = meta.number;
            let live = self.added[level]
                .iter()
                .position(|f| f.number == number)
                .map(|i| self.added[level].swap_remove(i))
                .or_else(|| {
                    (!self.deleted[level].contains(&number))
                        .then(|| self.base.files(level).iter().find(|f| f.number == number))
                        .flatten()
                        .cloned()
                });
            let Some(live) = live else {
                return Err(format!(
                    "edit grows table {number} at level {level}, which is not there"
                ));
            };
            if meta.file_size < live.file_size {
                return Err(format!(
                    "edit shrinks table {number} from {} to {} bytes",
                    live.file_size, meta.file_size
                ));
            }
            self.deleted[level].insert(number);
            self.added[level].push(live.grown(meta.clone()));
        }
        let ucmp = std::sync::Arc::clone(self.base.icmp.user());
        for (level, key) in &edit.removed_guards {
            let guards = &mut self.guards[check(*level)?];
            if let Ok(i) = guards.binary_search_by(|g| ucmp.compare(g, key)) {
                guards.remove(i);
            }
        }
        for (level, key) in &edit.added_guards {
            let guards = &mut self.guards[check(*level)?];
            if let Err(i) = guards.binary_search_by(|g| ucmp.compare(g, key)) {
                guards.insert(i, key.clone());
            }
        }
        Ok(())
    }

    /// The resulting version. Tables carried over share their `Arc` with the base version.
    pub fn build(self) -> Version {
        let icmp = self.base.icmp.clone();
        let mut levels = Vec::with_capacity(self.added.len());
        for (level, added) in self.added.into_iter().enumerate() {
            let mut files: Vec<FileRef> = self
                .base
                .files(level)
                .iter()
                .filter(|f| !self.deleted[level].contains(&f.number))
                .cloned()
                .chain(added)
                .collect();
            if level == 0 {
                files.sort_by_key(|f| std::cmp::Reverse(f.number));
            } else {
                files.sort_by(|a, b| {
                    icmp.compare(&a.smallest, &b.smallest)
                        .then(a.number.cmp(&b.number))
                });
            }
            levels.push(files);
        }
        let runs: Vec<Vec<Vec<super::FileRef>>> = levels
            .iter()
            .enumerate()
            .map(|(level, files)| match level {
                0 => Vec::new(),
                _ => crate::layout::runs_of(self.base.layout, &icmp, files),
            })
            .collect();
        let seeks = seeks::SeekCounters::new(self.guards.iter().map(Vec::len));
        if self.base.layout.has_guards() {
            seeks::carry_over(self.base, &levels, &self.guards, &seeks);
        }
        Version {
            icmp,
            layout: self.base.layout,
            hash_seed: self.hash_seed.unwrap_or(self.base.hash_seed),
            level_bytes: Version::sizes_of(&levels),
            levels,
            run_metas: Version::metas_of(&runs),
            runs,
            seeks,
            guards: self.guards,
            obsolete: Arc::clone(&self.base.obsolete),
        }
    }
}

#[cfg(test)]
#[path = "builder_tests.rs"]
mod tests;
