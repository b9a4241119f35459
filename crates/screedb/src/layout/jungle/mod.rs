//! The Jungle layout (Jungle, Ahn et al., HotStorage'19; docs/jungle.md): every level >= 1 is
//! a set of disjoint copy-on-write B+-trees (`table::jungle`), one per guard range.
//!
//! Level 0 holds flushed sorted tables, as in every layout. A merge into level `n + 1` does not
//! rewrite the trees there: it *appends* one segment to each overlapping tree (the batch's
//! values, the leaves it touches and their paths to a new root), so a level takes writes like a
//! tiered stack of runs while a lookup still descends one tree per level. A tree is rewritten
//! only when its file passes `compaction_factor` (C) times its live bytes, or when it holds
//! more than `split_factor` times `target_file_size` of live data (then it is cut into
//! several). C trades write amplification against space: at C = 3 a level may take up to three
//! times its live bytes on disk.
//!
//! Tree boundaries are guard keys, per level (MANIFEST tags 8 and 9), as in FLSM: a key whose
//! hash ends in enough one bits (about one key per `target_file_size` of data) becomes a guard
//! of a level when a new tree is written there past the last key of the range's tree; a tree
//! being rewritten is also cut once it reaches `target_file_size`. Every tree lies inside one
//! guard range and a range holds at most one tree, so a level is one sorted run and reads
//! route like the leveled layout's. Unlike FLSM, the guards of a level need not be guards of
//! the level below: a merge splits its batch by the guards of the level it writes.
//!
//! The MANIFEST pins each tree at a commit by its extent (tag 13, "table grew"); an open cuts
//! every tree file back to its MANIFEST extent, since a longer tail is an append whose edit was
//! never logged.

mod strategy;
mod upkeep;

pub use strategy::Jungle;
pub(crate) use strategy::fresh_bytes;

use crate::error::Result;

/// Options of the Jungle layout, carried by [`crate::Layout::Jungle`]. Trees aim at
/// `Options::target_file_size` of live data (Jungle's paper used 64 MiB runs); they may change
/// between opens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JungleOptions {
    /// C: a tree is rewritten once its file holds more than C times its live bytes (key and
    /// value bytes of the entries it holds). At least 1.1. Default: 3.0 (Jungle's code default
    /// is 300%). Lower C saves space and costs writes. The deepest level's trees are rewritten
    /// a little earlier while that level together passes (1 + C) / 2, so they do not all reach
    /// C at once. C bounds the store's space only while compaction keeps up with the writer; a
    /// writer faster than it piles merges up in the upper levels unless
    /// `Options::soft_pending_compaction_bytes` / `hard_pending_compaction_bytes` pace it
    /// (docs/jungle.md, "Staggered rewrites, paced writes").
    pub compaction_factor: f64,
    /// A tree holding more than this many times `target_file_size` of live data is rewritten
    /// into trees of at most `target_file_size`. At least 1.1. Default: 1.5 (Jungle's).
    pub split_factor: f64,
    /// Bytes at which a tree node is closed. Default: 4096 (the paper's node size).
    pub node_bytes: usize,
    /// Values up to this length are stored in their leaf; longer ones apart, in value records.
    /// Default: 64.
    pub inline_value_max: usize,
    /// Join a level-1 guard range that a merge leaves without a tree to its neighbour, so
    /// level 1's trees follow the data it holds instead of every tree that ever passed through
    /// it, and a level-0 merge appends to a few trees instead of hundreds. Default: false. In
    /// setup J (docs/jungle.md, "Level-1 guards pruned") later overwrite passes ran 1.3-1.4x as
    /// fast and sampled space fell by 4%, at 4% more write amplification. No RocksDB equivalent.
    pub prune_guards: bool,
}

// `compaction_factor` and `split_factor` are validated finite, so equality is an equivalence.
impl Eq for JungleOptions {}

impl Default for JungleOptions {
    fn default() -> Self {
        JungleOptions::DEFAULT
    }
}

impl JungleOptions {
    /// The defaults, as a constant.
    pub const DEFAULT: JungleOptions = JungleOptions {
        compaction_factor: 3.0,
        split_factor: 1.5,
        node_bytes: 4096,
        inline_value_max: 64,
        prune_guards: false,
    };

    /// Checks that every option is in range; the error names the option.
    pub fn validate(&self) -> Result<()> {
        let check = crate::options::require;
        check(
            self.compaction_factor.is_finite() && self.compaction_factor >= 1.1,
            "jungle.compaction_factor must be a number of at least 1.1",
        )?;
        check(
            self.split_factor.is_finite() && self.split_factor >= 1.1,
            "jungle.split_factor must be a number of at least 1.1",
        )?;
        check(
            (512..=1 << 20).contains(&self.node_bytes),
            "jungle.node_bytes must be between 512 and 1048576",
        )?;
        check(
            self.inline_value_max <= 4096,
            "jungle.inline_value_max must be at most 4096",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_out_of_range_are_named() {
        for bad in [
            JungleOptions {
                compaction_factor: 1.0,
                ..JungleOptions::DEFAULT
            },
            JungleOptions {
                compaction_factor: f64::NAN,
                ..JungleOptions::DEFAULT
            },
        ] {
            let err = bad.validate().unwrap_err().to_string();
            assert!(err.contains("jungle.compaction_factor"), "{err}");
        }
        let err = JungleOptions {
            node_bytes: 100,
            ..JungleOptions::DEFAULT
        }
        .validate()
        .unwrap_err()
        .to_string();
        assert!(err.contains("jungle.node_bytes"), "{err}");
        JungleOptions::DEFAULT.validate().unwrap();
    }
}
