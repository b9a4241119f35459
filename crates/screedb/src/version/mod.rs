//! Versions: the set of live tables of every level at one moment.
//!
//! A [`Version`] is immutable; a compaction or flush produces a [`crate::manifest::VersionEdit`]
//! that [`VersionSet`] applies to the current version to get the next one. Readers and iterators
//! hold an `Arc<Version>`; a table removed by an edit is deleted from disk when the last version
//! holding its number is dropped (see [`obsolete`]).
//!
//! Levels: level 0 holds tables in flush order, newest first, whose key ranges may overlap.
//! Levels >= 1 hold tables sorted by smallest key whose ranges do not overlap (leveled layout).
//! `guards` is reserved for the FLSM layout: per level, the committed guard keys.

mod builder;
pub mod obsolete;
mod set;

use std::cmp::Ordering;
use std::sync::Arc;

pub use builder::VersionBuilder;
pub use set::{RecoveredState, VersionSet};

use crate::comparator::InternalKeyComparator;
use crate::error::Result;
use crate::key::{self, SequenceNumber, ValueKind};
use crate::manifest::FileMeta;
use crate::table::TableCache;
use obsolete::ObsoleteFiles;

/// What a point lookup found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The newest visible entry is a value.
    Found(Vec<u8>),
    /// The newest visible entry is a tombstone.
    Deleted,
    /// No visible entry.
    NotFound,
}

/// The live tables of every level.
pub struct Version {
    icmp: InternalKeyComparator,
    levels: Vec<Vec<Arc<FileMeta>>>,
    guards: Vec<Vec<Vec<u8>>>,
    obsolete: Arc<ObsoleteFiles>,
}

impl std::fmt::Debug for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let counts: Vec<usize> = self.levels.iter().map(Vec::len).collect();
        f.debug_struct("Version")
            .field("files_per_level", &counts)
            .finish_non_exhaustive()
    }
}

impl Drop for Version {
    fn drop(&mut self) {
        self.obsolete
            .release(self.levels.iter().flatten().map(|f| f.number));
    }
}

impl Version {
    /// An empty version with `num_levels` levels.
    pub fn empty(
        icmp: InternalKeyComparator,
        num_levels: usize,
        obsolete: Arc<ObsoleteFiles>,
    ) -> Self {
        Version {
            icmp,
            levels: vec![Vec::new(); num_levels],
            guards: vec![Vec::new(); num_levels],
            obsolete,
        }
    }

    /// Number of levels.
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// The tables of `level` (level 0 newest first; others by smallest key).
    pub fn files(&self, level: usize) -> &[Arc<FileMeta>] {
        self.levels.get(level).map_or(&[], Vec::as_slice)
    }

    /// Committed guard keys of `level` (FLSM layout; empty otherwise).
    pub fn guards(&self, level: usize) -> &[Vec<u8>] {
        self.guards.get(level).map_or(&[], Vec::as_slice)
    }

    /// Total bytes of the tables of `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.files(level).iter().map(|f| f.file_size).sum()
    }

    /// Every table number of every level.
    pub fn all_file_numbers(&self) -> impl Iterator<Item = u64> + '_ {
        self.levels.iter().flatten().map(|f| f.number)
    }

    /// The comparator.
    pub fn icmp(&self) -> &InternalKeyComparator {
        &self.icmp
    }

    /// Tables of `level` whose user-key range intersects `[begin, end]` (`None` = unbounded).
    pub fn overlapping(
        &self,
        level: usize,
        begin: Option<&[u8]>,
        end: Option<&[u8]>,
    ) -> Vec<Arc<FileMeta>> {
        let ucmp = self.icmp.user();
        self.files(level)
            .iter()
            .filter(|f| {
                let before = end
                    .is_some_and(|e| ucmp.compare(f.smallest_user_key(), e) == Ordering::Greater);
                let after =
                    begin.is_some_and(|b| ucmp.compare(f.largest_user_key(), b) == Ordering::Less);
                !before && !after
            })
            .cloned()
            .collect()
    }

    /// Index of the first table of sorted level `level` (>= 1) whose largest key is >= `ikey`.
    pub fn find_file(&self, level: usize, ikey: &[u8]) -> usize {
        self.files(level)
            .partition_point(|f| self.icmp.compare(&f.largest, ikey) == Ordering::Less)
    }

    /// Newest entry for `user_key` visible at `snapshot`, searching level 0 newest first, then
    /// each sorted level.
    pub fn get(
        &self,
        tables: &TableCache,
        user_key: &[u8],
        snapshot: SequenceNumber,
    ) -> Result<Lookup> {
        let target = key::make_internal_key(user_key, snapshot, ValueKind::FOR_SEEK);
        let ucmp = self.icmp.user();
        for (level, files) in self.levels.iter().enumerate() {
            if level == 0 {
                for f in files {
                    if ucmp.compare(user_key, f.smallest_user_key()) != Ordering::Less
                        && ucmp.compare(user_key, f.largest_user_key()) != Ordering::Greater
                        && let Some(found) =
                            Self::probe(tables, f, user_key, &target, ucmp.as_ref())?
                    {
                        return Ok(found);
                    }
                }
                continue;
            }
            let i = self.find_file(level, &target);
            if let Some(f) = files.get(i)
                && ucmp.compare(user_key, f.smallest_user_key()) != Ordering::Less
                && let Some(found) = Self::probe(tables, f, user_key, &target, ucmp.as_ref())?
            {
                return Ok(found);
            }
        }
        Ok(Lookup::NotFound)
    }

    fn probe(
        tables: &TableCache,
        file: &FileMeta,
        user_key: &[u8],
        target: &[u8],
        ucmp: &dyn crate::comparator::Comparator,
    ) -> Result<Option<Lookup>> {
        let table = tables.get(file.number)?;
        let Some((ikey, value)) = table.get(target)? else {
            return Ok(None);
        };
        let Some(parsed) = key::parse_internal_key(&ikey) else {
            return Err(crate::error::Error::corruption(
                format!("{:06}.sst", file.number),
                0,
                "table holds an internal key with a bad trailer",
            ));
        };
        if ucmp.compare(parsed.user_key, user_key) != Ordering::Equal {
            return Ok(None);
        }
        Ok(Some(match parsed.kind {
            ValueKind::Value => Lookup::Found(value),
            ValueKind::Deletion => Lookup::Deleted,
        }))
    }

    /// Checks the structural invariants: sorted, non-overlapping levels >= 1, well-formed ranges.
    /// Returns a description of the first violation.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        for (level, files) in self.levels.iter().enumerate() {
            for f in files {
                if self.icmp.compare(&f.smallest, &f.largest) == Ordering::Greater {
                    return Err(format!(
                        "table {} of level {level} has smallest > largest",
                        f.number
                    ));
                }
            }
            if level == 0 {
                continue;
            }
            for pair in files.windows(2) {
                if self
                    .icmp
                    .user()
                    .compare(pair[0].largest_user_key(), pair[1].smallest_user_key())
                    != Ordering::Less
                {
                    return Err(format!(
                        "tables {} and {} of level {level} overlap or are out of order",
                        pair[0].number, pair[1].number
                    ));
                }
            }
        }
        Ok(())
    }

    /// One line per level: `L<n>: <files> files, <bytes> bytes`.
    pub fn describe_levels(&self) -> String {
        let mut out = String::new();
        for level in 0..self.levels.len() {
            out.push_str(&format!(
                "L{level}: {} files, {} bytes\n",
                self.files(level).len(),
                self.level_bytes(level)
            ));
        }
        out
    }
}
