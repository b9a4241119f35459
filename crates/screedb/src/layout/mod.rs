//! Layouts: how the levels >= 1 of a database are organised, side by side.
//!
//! A layout is a compaction strategy plus the read routing over one Version/MANIFEST model:
//! - [`leveled`]: LevelDB/RocksDB's leveled LSM, one sorted run of disjoint tables per level;
//! - [`flsm`]: PebblesDB's fragmented LSM, levels cut by guard keys, guards holding overlapping
//!   fragments (its guards, seek counters and guard upkeep live in that folder too);
//! - [`trie`]: LSM-trie, a trie of containers addressed by the key's hash, each a pile of
//!   HTables ([`crate::table::htable`]); it keeps no key order;
//! - [`jungle`]: Jungle, levels of disjoint copy-on-write B+-trees (one per guard range) that
//!   merges grow by appending segments, rewritten past a space ratio C.
//!
//! [`Layout`] is a closed enum whose variants carry their options; only its [`LayoutKind`] is
//! persisted (MANIFEST tag 11), so a database is always reopened with the layout it was created
//! with, while its options may change between opens. Everything that differs between layouts is
//! a `match` on the kind, so a new layout does not compile until every place has said what it
//! does. What a layout cannot serve is [`crate::Error::NotSupported`].

pub mod flsm;
pub mod jungle;
pub mod leveled;
mod sorted_runs;
pub mod trie;

use std::fmt;
use std::sync::Arc;

use crate::compaction::CompactionStrategy;
use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::manifest::FileMeta;
use crate::table::TableFormat;
use crate::version::{FileRef, Version};

use flsm::FlsmOptions;
use jungle::JungleOptions;
use trie::TrieOptions;

/// LevelDB's and RocksDB's level-0 compaction trigger: the default of every layout but FLSM
/// (which writes with [`flsm::L0_COMPACTION_TRIGGER`] and lets seeks fold level 0 at this
/// count, [`flsm::L0_SEEK_TRIGGER`]).
pub const LEVELDB_L0_COMPACTION_TRIGGER: usize = 4;

/// How the levels >= 1 of a database are organised, with that layout's options. The kind is
/// written to the manifest at creation. Default: `Flsm(FlsmOptions::default())`.
/// RocksDB: `compaction_style` (leveled); PebblesDB: always FLSM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// LevelDB/RocksDB leveled LSM: each level >= 1 is one sorted run of disjoint tables, and a
    /// compaction rewrites the overlapping tables of the level below.
    Leveled,
    /// PebblesDB's fragmented LSM: each level >= 1 is partitioned by guard keys; a guard holds up
    /// to `max_sstables_per_guard` possibly overlapping fragments, and compaction appends
    /// fragments to the guards of the next level instead of rewriting them (docs/flsm.md).
    Flsm(FlsmOptions),
    /// LSM-trie: levels >= 1 are a trie of containers addressed by the key's hash, each a pile
    /// of HTables, about one bucket read per get; no key order, so no iterators
    /// (docs/lsm-trie.md). Requires the bytewise comparator.
    Trie(TrieOptions),
    /// Jungle: levels >= 1 hold disjoint copy-on-write B+-trees, one per guard range; a merge
    /// appends a segment to each tree it reaches instead of rewriting it, and a tree is
    /// rewritten once its file passes `compaction_factor` times its live bytes
    /// (docs/jungle.md).
    Jungle(JungleOptions),
}

impl Default for Layout {
    fn default() -> Self {
        Layout::Flsm(FlsmOptions::default())
    }
}

impl Layout {
    /// The kind, as persisted.
    pub fn kind(&self) -> LayoutKind {
        match self {
            Layout::Leveled => LayoutKind::Leveled,
            Layout::Flsm(_) => LayoutKind::Flsm,
            Layout::Trie(_) => LayoutKind::Trie,
            Layout::Jungle(_) => LayoutKind::Jungle,
        }
    }

    /// The layout of `kind` with default options.
    pub fn with_defaults(kind: LayoutKind) -> Layout {
        match kind {
            LayoutKind::Leveled => Layout::Leveled,
            LayoutKind::Flsm => Layout::Flsm(FlsmOptions::default()),
            LayoutKind::Trie => Layout::Trie(TrieOptions::default()),
            LayoutKind::Jungle => Layout::Jungle(JungleOptions::default()),
        }
    }

    /// The FLSM options, when this is the FLSM layout.
    pub fn flsm(&self) -> Option<&FlsmOptions> {
        match self {
            Layout::Flsm(options) => Some(options),
            Layout::Leveled | Layout::Trie(_) | Layout::Jungle(_) => None,
        }
    }

    /// The FLSM options to change, when this is the FLSM layout.
    pub fn flsm_mut(&mut self) -> Option<&mut FlsmOptions> {
        match self {
            Layout::Flsm(options) => Some(options),
            Layout::Leveled | Layout::Trie(_) | Layout::Jungle(_) => None,
        }
    }

    /// How many times the leveled level targets this layout's levels >= 1 hold (FLSM's
    /// `level_target_scale`; 1 for every other layout).
    pub fn level_target_scale(&self) -> u64 {
        self.flsm().map_or(1, |f| f.level_target_scale)
    }

    /// Level-0 tables that start a level-0 compaction when `Options::l0_compaction_trigger` is
    /// 0 (its default): FLSM's [`flsm::L0_COMPACTION_TRIGGER`] (6),
    /// [`LEVELDB_L0_COMPACTION_TRIGGER`] (4) for every other layout.
    pub fn default_l0_compaction_trigger(&self) -> usize {
        match self {
            Layout::Flsm(_) => flsm::L0_COMPACTION_TRIGGER,
            Layout::Leveled | Layout::Trie(_) | Layout::Jungle(_) => LEVELDB_L0_COMPACTION_TRIGGER,
        }
    }

    /// The name used in options, the CLI and error messages: `leveled`, `flsm`, `trie` or `jungle`.
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    /// Checks the layout's options; the error names the option.
    pub fn validate(&self) -> Result<()> {
        match self {
            Layout::Leveled => Ok(()),
            Layout::Flsm(options) => options.validate(),
            Layout::Trie(options) => options.validate(),
            Layout::Jungle(options) => options.validate(),
        }
    }

    /// The layout's compaction strategy.
    pub fn strategy(&self) -> Box<dyn CompactionStrategy> {
        match self {
            Layout::Leveled => Box::new(leveled::Leveled),
            Layout::Flsm(_) => Box::new(flsm::Flsm),
            Layout::Trie(_) => Box::new(trie::Trie),
            Layout::Jungle(_) => Box::new(jungle::Jungle),
        }
    }
}

impl fmt::Display for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which layout a database has, as its MANIFEST records it (tag 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LayoutKind {
    /// See [`Layout::Leveled`].
    Leveled,
    /// See [`Layout::Flsm`].
    Flsm,
    /// See [`Layout::Trie`].
    Trie,
    /// See [`Layout::Jungle`].
    Jungle,
}

impl LayoutKind {
    /// Every kind, in code order (for tests that run over every layout).
    pub const ALL: [LayoutKind; 4] = [
        LayoutKind::Leveled,
        LayoutKind::Flsm,
        LayoutKind::Trie,
        LayoutKind::Jungle,
    ];

    /// The name used in options, the CLI and error messages.
    pub fn name(self) -> &'static str {
        match self {
            LayoutKind::Leveled => "leveled",
            LayoutKind::Flsm => "flsm",
            LayoutKind::Trie => "trie",
            LayoutKind::Jungle => "jungle",
        }
    }

    /// The frozen on-disk code of MANIFEST tag 11.
    pub fn code(self) -> u8 {
        match self {
            LayoutKind::Leveled => 0,
            LayoutKind::Flsm => 1,
            LayoutKind::Trie => 2,
            LayoutKind::Jungle => 3,
        }
    }

    /// The kind of an on-disk code, if this build knows it.
    pub fn from_code(code: u8) -> Option<LayoutKind> {
        LayoutKind::ALL.into_iter().find(|k| k.code() == code)
    }

    /// True when the layout keeps user keys in order, so iterators, ranges and size estimates
    /// work.
    pub fn keeps_key_order(self) -> bool {
        match self {
            LayoutKind::Leveled | LayoutKind::Flsm | LayoutKind::Jungle => true,
            LayoutKind::Trie => false,
        }
    }

    /// The format of the tables flushes and repair write (and merges, except Jungle's, which
    /// write trees below level 0).
    pub fn table_format(self) -> TableFormat {
        match self {
            LayoutKind::Leveled | LayoutKind::Flsm | LayoutKind::Jungle => TableFormat::Sorted,
            LayoutKind::Trie => TableFormat::HTable,
        }
    }

    /// The level repair puts the tables it writes in: the last level when they may form it
    /// (disjoint sorted tables), level 0 when the layout places tables by hash (trie) or
    /// keeps trees below level 0 (Jungle), so compaction places them.
    pub fn repair_level(self, num_levels: usize) -> usize {
        match self {
            LayoutKind::Leveled | LayoutKind::Flsm => num_levels - 1,
            LayoutKind::Trie | LayoutKind::Jungle => 0,
        }
    }

    /// True when keys are placed by a seeded hash (recorded in the MANIFEST, tag 14).
    pub fn is_hashed(self) -> bool {
        match self {
            LayoutKind::Leveled | LayoutKind::Flsm | LayoutKind::Jungle => false,
            LayoutKind::Trie => true,
        }
    }

    /// [`Error::NotSupported`] for `op` unless the layout keeps key order.
    pub fn require_key_order(self, op: &'static str) -> Result<()> {
        if self.keeps_key_order() {
            Ok(())
        } else {
            Err(Error::NotSupported {
                layout: self.name(),
                op,
            })
        }
    }

    /// True when levels >= 1 are cut by guard keys (recorded in the MANIFEST, tags 8 and 9).
    pub fn has_guards(self) -> bool {
        match self {
            LayoutKind::Leveled | LayoutKind::Trie => false,
            LayoutKind::Flsm | LayoutKind::Jungle => true,
        }
    }

    /// True when each level >= 1 is one sorted run of disjoint tables (leveled; Jungle's trees).
    pub fn levels_are_disjoint(self) -> bool {
        match self {
            LayoutKind::Leveled | LayoutKind::Jungle => true,
            LayoutKind::Flsm | LayoutKind::Trie => false,
        }
    }
}

impl fmt::Display for LayoutKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for LayoutKind {
    type Err = Error;
    fn from_str(name: &str) -> Result<LayoutKind> {
        LayoutKind::ALL
            .into_iter()
            .find(|k| k.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = LayoutKind::ALL.iter().map(|k| k.name()).collect();
                Error::invalid(format!(
                    "unknown layout {name:?}: expected one of {}",
                    names.join(", ")
                ))
            })
    }
}

/// The tables of `level` (>= 1) of a version built from `files` (sorted by smallest key), as
/// the sorted runs reads and iterators walk.
pub(crate) fn runs_of(
    kind: LayoutKind,
    icmp: &InternalKeyComparator,
    files: &[FileRef],
) -> Vec<Vec<FileRef>> {
    match kind {
        // Disjoint by invariant (checked before a version is installed): one run.
        LayoutKind::Leveled | LayoutKind::Jungle if files.is_empty() => Vec::new(),
        LayoutKind::Leveled | LayoutKind::Jungle => vec![files.to_vec()],
        LayoutKind::Flsm => sorted_runs::first_fit(icmp, files),
        LayoutKind::Trie => trie::containers(files),
    }
}

/// `files` (sorted by smallest key) as runs of disjoint tables, in key order within each run
/// (first fit; a compaction reads each run through one concatenating iterator).
pub(crate) fn disjoint_runs(icmp: &InternalKeyComparator, files: &[FileRef]) -> Vec<Vec<FileRef>> {
    sorted_runs::first_fit(icmp, files)
}

/// The tables of `level` (>= 1) a point lookup of `target` (an internal key) must probe, at
/// most one per sorted run.
pub(crate) fn point_candidates<'v>(
    version: &'v Version,
    level: usize,
    user_key: &[u8],
    target: &[u8],
) -> Vec<&'v FileRef> {
    match version.layout() {
        LayoutKind::Leveled | LayoutKind::Flsm | LayoutKind::Jungle => {
            sorted_runs::candidates(version, level, user_key, target)
        }
        LayoutKind::Trie => trie::candidates(version, level, user_key),
    }
}

/// The sorted runs of `level` (>= 1) an iterator concatenates, or [`Error::NotSupported`].
pub(crate) fn iteration_runs(version: &Version, level: usize) -> Result<&[Arc<[Arc<FileMeta>]>]> {
    match version.layout() {
        LayoutKind::Leveled | LayoutKind::Flsm | LayoutKind::Jungle => Ok(version.run_metas(level)),
        LayoutKind::Trie => Err(Error::NotSupported {
            layout: LayoutKind::Trie.name(),
            op: "ordered iteration",
        }),
    }
}
