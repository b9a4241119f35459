//! Versions: the set of live tables of every level at one moment.
//!
//! A [`Version`] is immutable; a compaction or flush produces a [`crate::manifest::VersionEdit`]
//! that [`VersionSet`] applies to the current version to get the next one. Readers and iterators
//! hold an `Arc<Version>`; a table removed by an edit is deleted from disk when the last version
//! holding it is dropped (see [`obsolete`]).
//!
//! Levels: level 0 holds tables in flush order, newest first, whose key ranges may overlap.
//! Levels >= 1 hold tables sorted by smallest key. In the leveled layout their ranges never
//! overlap. In the FLSM layout (docs/flsm.md) each level >= 1 also has sorted guard keys; every
//! table lies inside one guard, and the tables (fragments) of one guard may overlap.
//!
//! Either way, each level >= 1 is also kept as a few *sorted runs*: lists of disjoint tables in
//! key order (the first-fit partition of the tables by smallest key, so there are as many runs as
//! tables overlap at the most crowded key — one in the leveled layout, at most about
//! `max_sstables_per_guard` in FLSM). Reads binary-search each run; iterators concatenate each.

mod builder;
pub mod obsolete;
mod set;

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::{Arc, OnceLock};

pub use builder::VersionBuilder;
pub use set::{RecoveredState, VersionSet};

use crate::comparator::InternalKeyComparator;
use crate::error::Result;
use crate::key::{self, SequenceNumber, ValueKind};
use crate::layout::flsm::seeks::ReadCost;
use crate::layout::flsm::{guards, seeks};
use crate::layout::{self, LayoutKind};
use crate::manifest::FileMeta;
use crate::table::htable::KeyHash;
use crate::table::{PinnedReader, TableCache, TableReader};
use obsolete::ObsoleteFiles;

pub use crate::table::Lookup;
use crate::table::Probe;

/// The live tables of every level.
pub struct Version {
    icmp: InternalKeyComparator,
    layout: LayoutKind,
    /// Seed of the key hash (hashed layouts; 0 otherwise), from the MANIFEST.
    hash_seed: u64,
    levels: Vec<Vec<FileRef>>,
    /// Per level, the total size of its tables (`level_bytes`, read by every write's stall check:
    /// summing thousands of tables per write was measurable at 50M keys).
    level_bytes: Vec<u64>,
    /// Per level >= 1, the tables as sorted runs of disjoint tables (see the module comment).
    runs: Vec<Vec<Vec<FileRef>>>,
    /// The same runs as shared lists of table metadata, for iterators (one `Arc` clone per run).
    run_metas: Vec<Vec<Arc<[Arc<FileMeta>]>>>,
    /// Per level, committed guard keys in user-key order (FLSM; empty otherwise).
    guards: Vec<Vec<Vec<u8>>>,
    /// FLSM: per guard, reads that paid for its overlapping fragments (seek compaction, seeks.rs).
    seeks: seeks::SeekCounters,
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

/// A live table of a version. Versions, compaction choices and iterators share it; when the
/// last holder of the table's file drops it, the file is deleted if an edit removed the table
/// (see [`obsolete`]).
pub struct TableFile {
    meta: Arc<FileMeta>,
    /// The open table, once a read asked for it and the cache's pin budget allowed it
    /// ([`TableFile::reader`]). Declared before `life` so the table closes before its file may
    /// be deleted.
    pinned: OnceLock<PinnedReader>,
    life: Arc<FileLife>,
}

/// The file behind one or more [`TableFile`]s: a table that grew has one `TableFile` per extent,
/// all sharing the file, which is released only when the last of them is dropped.
struct FileLife {
    number: u64,
    obsolete: Arc<ObsoleteFiles>,
}

impl Drop for FileLife {
    fn drop(&mut self) {
        self.obsolete.release(self.number);
    }
}

/// How versions and compaction choices hold tables.
pub type FileRef = Arc<TableFile>;

impl TableFile {
    fn new(meta: FileMeta, obsolete: &Arc<ObsoleteFiles>) -> FileRef {
        Arc::new(TableFile {
            life: Arc::new(FileLife {
                number: meta.number,
                obsolete: Arc::clone(obsolete),
            }),
            meta: Arc::new(meta),
            pinned: OnceLock::new(),
        })
    }

    /// The same file at a larger extent (`meta` of a "table grew" edit).
    fn grown(&self, meta: FileMeta) -> FileRef {
        Arc::new(TableFile {
            meta: Arc::new(meta),
            pinned: OnceLock::new(),
            life: Arc::clone(&self.life),
        })
    }

    /// The open table at this extent: the first call takes it from `tables` and pins it here
    /// when the cache's budget allows ([`TableCache::pin`]), so later point reads of this
    /// table neither look it up nor touch a reference count that every reading thread shares.
    pub fn reader(&self, tables: &TableCache) -> Result<Cow<'_, Arc<dyn TableReader>>> {
        if let Some(pin) = self.pinned.get() {
            return Ok(Cow::Borrowed(pin.reader()));
        }
        let reader = tables.get(&self.meta)?;
        match tables.pin(Arc::clone(&reader)) {
            // A racing reader may have pinned it first; then this pin is dropped unused.
            Some(pin) => Ok(Cow::Borrowed(self.pinned.get_or_init(|| pin).reader())),
            None => Ok(Cow::Owned(reader)),
        }
    }

    /// The table's metadata, shareable without keeping the table alive.
    pub fn meta(&self) -> &Arc<FileMeta> {
        &self.meta
    }
}

impl std::ops::Deref for TableFile {
    type Target = FileMeta;
    fn deref(&self) -> &FileMeta {
        &self.meta
    }
}

impl std::fmt::Debug for TableFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.meta.fmt(f)
    }
}

impl Version {
    /// An empty version with `num_levels` levels.
    pub fn empty(
        icmp: InternalKeyComparator,
        layout: LayoutKind,
        num_levels: usize,
        obsolete: Arc<ObsoleteFiles>,
    ) -> Self {
        Version {
            icmp,
            layout,
            hash_seed: 0,
            levels: vec![Vec::new(); num_levels],
            level_bytes: vec![0; num_levels],
            runs: vec![Vec::new(); num_levels],
            run_metas: vec![Vec::new(); num_levels],
            guards: vec![Vec::new(); num_levels],
            seeks: seeks::SeekCounters::new(vec![0; num_levels]),
            obsolete,
        }
    }

    /// The layout of levels >= 1.
    pub fn layout(&self) -> LayoutKind {
        self.layout
    }

    /// Seed of the key hash of a hashed layout (0 for the others).
    pub fn hash_seed(&self) -> u64 {
        self.hash_seed
    }

    /// The seek counters of this version's guards (FLSM's seek compaction).
    pub fn seek_counters(&self) -> &seeks::SeekCounters {
        &self.seeks
    }

    /// The tables of level `level` (>= 1) as sorted runs of disjoint tables.
    pub fn runs(&self, level: usize) -> &[Vec<FileRef>] {
        self.runs.get(level).map_or(&[], Vec::as_slice)
    }

    /// The sorted runs of level `level` (>= 1) as shared lists of table metadata.
    pub fn run_metas(&self, level: usize) -> &[Arc<[Arc<FileMeta>]>] {
        self.run_metas.get(level).map_or(&[], Vec::as_slice)
    }

    /// [`Version::runs`] of every level as shared lists of table metadata.
    fn metas_of(runs: &[Vec<Vec<FileRef>>]) -> Vec<Vec<Arc<[Arc<FileMeta>]>>> {
        runs.iter()
            .map(|level| {
                level
                    .iter()
                    .map(|run| run.iter().map(|f| Arc::clone(f.meta())).collect())
                    .collect()
            })
            .collect()
    }

    /// The tables of `level` (>= 1) inside guard `index` of that level (all tables when the
    /// level has no guards and `index == 0`).
    pub fn guard_files(&self, level: usize, index: usize) -> Vec<FileRef> {
        let ucmp = self.icmp.user();
        let guards = self.guards(level);
        self.files(level)
            .iter()
            .filter(|f| guards::guard_index(ucmp.as_ref(), guards, f.smallest_user_key()) == index)
            .cloned()
            .collect()
    }

    /// Number of levels.
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// The tables of `level` (level 0 newest first; others by smallest key).
    pub fn files(&self, level: usize) -> &[FileRef] {
        self.levels.get(level).map_or(&[], Vec::as_slice)
    }

    /// The deepest level below level 0 that holds a table, or `None` when only level 0 (or
    /// nothing) does.
    pub fn deepest_level(&self) -> Option<usize> {
        (1..self.num_levels())
            .rev()
            .find(|&level| !self.files(level).is_empty())
    }

    /// Committed guard keys of `level` (FLSM layout; empty otherwise).
    pub fn guards(&self, level: usize) -> &[Vec<u8>] {
        self.guards.get(level).map_or(&[], Vec::as_slice)
    }

    /// True if `key` is a committed guard of `level`.
    pub fn has_guard(&self, level: usize, key: &[u8]) -> bool {
        let ucmp = self.icmp.user();
        self.guards(level)
            .binary_search_by(|g| ucmp.compare(g, key))
            .is_ok()
    }

    /// Total bytes of the tables of `level`.
    pub fn level_bytes(&self, level: usize) -> u64 {
        self.level_bytes.get(level).copied().unwrap_or(0)
    }

    /// Total bytes of every table of every level.
    pub fn total_bytes(&self) -> u64 {
        self.level_bytes.iter().sum()
    }

    /// The total table size of each of `levels`.
    fn sizes_of(levels: &[Vec<FileRef>]) -> Vec<u64> {
        levels
            .iter()
            .map(|files| files.iter().map(|f| f.file_size).sum())
            .collect()
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
    ) -> Vec<FileRef> {
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

    /// The tables of `level` that may hold `user_key`: at level 0 those whose key range covers
    /// it; below, the ones the layout routes the key to.
    pub fn tables_for_key(&self, level: usize, user_key: &[u8]) -> Vec<&FileRef> {
        if level == 0 {
            let ucmp = self.icmp.user();
            return self
                .files(0)
                .iter()
                .filter(|f| {
                    ucmp.compare(user_key, f.smallest_user_key()) != Ordering::Less
                        && ucmp.compare(user_key, f.largest_user_key()) != Ordering::Greater
                })
                .collect();
        }
        let target = key::make_internal_key(user_key, key::MAX_SEQUENCE, ValueKind::FOR_SEEK);
        layout::point_candidates(self, level, user_key, &target)
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
        Ok(self.get_counting(tables, user_key, snapshot, 0)?.0)
    }

    /// [`Version::get`] that also counts, per guard, the lookups that paid for its overlapping
    /// fragments: a fragment whose filter let the key through but whose data block did not hold
    /// it, while other fragments of the guard were candidates too (a block read that a merged
    /// guard would have saved; a fragment its filter rules out costs no read and counts
    /// nothing). The cost says how many such reads it paid, and whether a guard's count reached
    /// `threshold` with this lookup (0: never). Iterator seeks are counted by
    /// [`Version::record_seek`].
    pub fn get_counting(
        &self,
        tables: &TableCache,
        user_key: &[u8],
        snapshot: SequenceNumber,
        threshold: u32,
    ) -> Result<(Lookup, ReadCost)> {
        let (found, cost) = self.get_entry_counting(tables, user_key, snapshot, threshold)?;
        Ok((found.map_or(Lookup::NotFound, |(f, _)| f), cost))
    }

    /// The newest entry for `user_key` visible at `snapshot` and its sequence number; `None` if
    /// no table holds one.
    pub fn get_entry(
        &self,
        tables: &TableCache,
        user_key: &[u8],
        snapshot: SequenceNumber,
    ) -> Result<Option<(Lookup, SequenceNumber)>> {
        Ok(self.get_entry_counting(tables, user_key, snapshot, 0)?.0)
    }

    fn get_entry_counting(
        &self,
        tables: &TableCache,
        user_key: &[u8],
        snapshot: SequenceNumber,
        threshold: u32,
    ) -> Result<(Option<(Lookup, SequenceNumber)>, ReadCost)> {
        let mut cost = ReadCost::default();
        let target = key::make_internal_key(user_key, snapshot, ValueKind::FOR_SEEK);
        let ucmp = self.icmp.user();
        // The trie layout hashes the key once per lookup (every table it probes is an HTable).
        let hash = (self.layout == LayoutKind::Trie).then(|| KeyHash::of(self.hash_seed, user_key));
        for (level, files) in self.levels.iter().enumerate() {
            if level == 0 {
                for f in files {
                    if ucmp.compare(user_key, f.smallest_user_key()) == Ordering::Less
                        || ucmp.compare(user_key, f.largest_user_key()) == Ordering::Greater
                    {
                        continue;
                    }
                    let table = f.reader(tables)?;
                    let probe = match &hash {
                        Some(h) => {
                            table.probe_hashed(user_key, &target, self.hash_seed, h, true)?
                        }
                        None => table.probe(user_key, &target)?,
                    };
                    if let Probe::Hit(found, seq) = probe {
                        return Ok((Some((found, seq)), cost));
                    }
                }
                continue;
            }
            if let Some(h) = &hash {
                match layout::trie::probe_level(self, tables, level, h, user_key, &target)? {
                    Some(found) => return Ok((Some(found), cost)),
                    None => continue,
                }
            }
            // The layout names the candidates (one per sorted run); probe the newest data first
            // and stop as soon as the best entry found is newer than anything the remaining
            // candidates hold.
            let mut candidates = layout::point_candidates(self, level, user_key, &target);
            if let [f] = candidates.as_slice() {
                if let Probe::Hit(found, seq) = Self::probe(tables, f, user_key, &target)? {
                    return Ok((Some((found, seq)), cost));
                }
                continue;
            }
            candidates.sort_by_key(|f| std::cmp::Reverse(f.largest_seq));
            let mut best: Option<(Lookup, SequenceNumber)> = None;
            for f in candidates {
                if best.as_ref().is_some_and(|(_, seq)| *seq >= f.largest_seq) {
                    break;
                }
                match Self::probe(tables, f, user_key, &target)? {
                    Probe::Hit(found, seq) if best.as_ref().is_none_or(|(_, s)| seq > *s) => {
                        best = Some((found, seq));
                    }
                    Probe::Missed if threshold > 0 => {
                        cost.extra_tables += 1;
                        cost.crossed |= self.bump(level, user_key) == threshold;
                    }
                    Probe::Hit(..) | Probe::Missed | Probe::Filtered => {}
                }
            }
            if best.is_some() {
                return Ok((best, cost));
            }
        }
        Ok((None, cost))
    }

    fn probe(
        tables: &TableCache,
        file: &TableFile,
        user_key: &[u8],
        target: &[u8],
    ) -> Result<Probe> {
        file.reader(tables)?.probe(user_key, target)
    }

    /// Checks the structural invariants: well-formed ranges; in the leveled layout, sorted,
    /// non-overlapping levels >= 1 and no guards; in the FLSM layout, strictly sorted guards, no
    /// guards at level 0, every table of a level >= 1 inside one guard, and the guards of level
    /// `i` a subset of those of level `i + 1` (skip-list property); in the Jungle layout,
    /// disjoint trees, each inside one guard (so a guard range holds at most one); in the trie
    /// layout, routes inside their level's containers. Returns a description of the first
    /// violation.
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        let ucmp = self.icmp.user();
        if self.level_bytes != Version::sizes_of(&self.levels) {
            return Err(format!(
                "cached level sizes {:?} are not the tables' sizes {:?}",
                self.level_bytes,
                Version::sizes_of(&self.levels)
            ));
        }
        for (level, files) in self.levels.iter().enumerate() {
            for f in files {
                if self.icmp.compare(&f.smallest, &f.largest) == Ordering::Greater {
                    return Err(format!(
                        "table {} of level {level} has smallest > largest",
                        f.number
                    ));
                }
            }
            let guards = self.guards(level);
            if (level == 0 || !self.layout.has_guards()) && !guards.is_empty() {
                return Err(format!(
                    "level {level} has {} guards but {} has none",
                    guards.len(),
                    if level == 0 {
                        "level 0".to_owned()
                    } else {
                        format!("the {} layout", self.layout)
                    }
                ));
            }
            if level == 0 {
                continue;
            }
            if self.layout == LayoutKind::Trie {
                // Every table sits in a container of its level.
                let containers = 8u64.checked_pow(level as u32).unwrap_or(u64::MAX);
                if let Some(f) = files.iter().find(|f| f.route >= containers) {
                    return Err(format!(
                        "table {} of level {level} has route {}, past the level's {containers} containers",
                        f.number, f.route
                    ));
                }
                self.check_trie_ages(level)?;
            }
            if self.layout.levels_are_disjoint() {
                for pair in files.windows(2) {
                    if ucmp.compare(pair[0].largest_user_key(), pair[1].smallest_user_key())
                        != Ordering::Less
                    {
                        return Err(format!(
                            "tables {} and {} of level {level} overlap or are out of order",
                            pair[0].number, pair[1].number
                        ));
                    }
                }
            }
            if !self.layout.has_guards() {
                continue;
            }
            for pair in guards.windows(2) {
                if ucmp.compare(&pair[0], &pair[1]) != Ordering::Less {
                    return Err(format!(
                        "guards {:?} and {:?} of level {level} are out of order",
                        String::from_utf8_lossy(&pair[0]),
                        String::from_utf8_lossy(&pair[1])
                    ));
                }
            }
            for f in files {
                let first = guards::guard_index(ucmp.as_ref(), guards, f.smallest_user_key());
                let last = guards::guard_index(ucmp.as_ref(), guards, f.largest_user_key());
                if first != last {
                    return Err(format!(
                        "table {} of level {level} spans guard {:?}",
                        f.number,
                        guards
                            .get(first)
                            .map(|g| String::from_utf8_lossy(g).into_owned())
                            .unwrap_or_default()
                    ));
                }
            }
            if let Some(deeper) = self.guards.get(level + 1)
                && self.layout == LayoutKind::Flsm
            {
                for g in guards {
                    if deeper.binary_search_by(|d| ucmp.compare(d, g)).is_err() {
                        return Err(format!(
                            "guard {:?} of level {level} is not a guard of level {}",
                            String::from_utf8_lossy(g),
                            level + 1
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// In the trie layout, every table of a container at `level` (>= 1) is older than every
    /// table of its parent (level 0 as a whole for level 1): a lookup stops at the first level
    /// that has the key, so a newer version below an older one would never be read.
    fn check_trie_ages(&self, level: usize) -> std::result::Result<(), String> {
        let parents: Vec<&[FileRef]> = if level == 1 {
            vec![self.files(0)]
        } else {
            self.runs(level - 1).iter().map(Vec::as_slice).collect()
        };
        for container in self.runs(level) {
            let parent_route = container[0].route >> 3;
            let Some(parent) = parents
                .iter()
                .find(|p| p.first().is_some_and(|f| f.route == parent_route))
            else {
                continue;
            };
            let (Some(child), Some(oldest_above)) = (
                container.iter().max_by_key(|f| f.largest_seq),
                parent.iter().min_by_key(|f| f.smallest_seq),
            ) else {
                continue;
            };
            if child.largest_seq >= oldest_above.smallest_seq {
                return Err(format!(
                    "table {} of level {level} (sequences up to {}) is not older than table {} \
                     of level {} above it (sequences from {})",
                    child.number,
                    child.largest_seq,
                    oldest_above.number,
                    level - 1,
                    oldest_above.smallest_seq
                ));
            }
        }
        Ok(())
    }

    /// Estimated bytes compaction must rewrite to bring every level back under its target:
    /// level 0's bytes once it reached the compaction trigger, plus each level's excess over its
    /// target (as RocksDB's estimate does). The default of
    /// [`CompactionStrategy::pending_bytes`](crate::compaction::CompactionStrategy::pending_bytes).
    pub fn pending_compaction_bytes(&self, options: &crate::options::Options) -> u64 {
        self.pending_over_limits(options, |level| options.level_target_bytes(level))
    }

    /// Level 0's bytes once it holds `l0_trigger()` tables (all of them are then owed to
    /// level 1), else 0.
    pub fn level0_pending_bytes(&self, options: &crate::options::Options) -> u64 {
        if self.files(0).len() >= options.l0_trigger() {
            self.level_bytes(0)
        } else {
            0
        }
    }

    /// Level 0's bytes once it reached the compaction trigger, plus each level's excess over
    /// `limit(level)` (levels 1 to the one above the last).
    pub fn pending_over_limits(
        &self,
        options: &crate::options::Options,
        limit: impl Fn(usize) -> u64,
    ) -> u64 {
        let mut pending = self.level0_pending_bytes(options);
        for level in 1..self.num_levels().saturating_sub(1) {
            pending += self.level_bytes(level).saturating_sub(limit(level));
        }
        pending
    }

    /// One line per level: `L<n>: <files> files, <bytes> bytes`.
    pub fn describe_levels(&self) -> String {
        let mut out = String::new();
        for level in 0..self.levels.len() {
            out.push_str(&format!(
                "L{level}: {} files, {} bytes",
                self.files(level).len(),
                self.level_bytes(level)
            ));
            if self.layout.has_guards() && level > 0 {
                let ucmp = self.icmp.user();
                let guards = self.guards(level);
                let mut per_guard = vec![0usize; guards.len() + 1];
                let mut bytes = vec![0u64; guards.len() + 1];
                for f in self.files(level) {
                    let g = guards::guard_index(ucmp.as_ref(), guards, f.smallest_user_key());
                    if let (Some(n), Some(b)) = (per_guard.get_mut(g), bytes.get_mut(g)) {
                        *n += 1;
                        *b += f.file_size;
                    }
                }
                per_guard.sort_unstable();
                bytes.sort_unstable();
                let at = |q: usize| per_guard.get(q).copied().unwrap_or(0);
                let bytes_at = |q: usize| bytes.get(q).copied().unwrap_or(0);
                let hot = (0..=guards.len())
                    .map(|g| self.seeks.count(level, g))
                    .max()
                    .unwrap_or(0);
                out.push_str(&format!(
                    ", {} guards, {} runs, fragments per guard min/median/max {}/{}/{}, \
                     bytes per guard min/median/max {}/{}/{}, most seeks in one guard {}",
                    guards.len(),
                    self.runs(level).len(),
                    at(0),
                    at(per_guard.len() / 2),
                    at(per_guard.len().saturating_sub(1)),
                    bytes_at(0),
                    bytes_at(bytes.len() / 2),
                    bytes_at(bytes.len().saturating_sub(1)),
                    hot
                ));
            }
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
#[path = "pin_tests.rs"]
mod pin_tests;
