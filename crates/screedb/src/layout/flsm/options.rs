//! The options of the FLSM layout.

use crate::error::Result;

/// How guard keys are chosen (FLSM). A key is a guard at level `i` when the low `bits(i)` bits
/// of its xxh3 hash are all ones; `bits(i)` never grows with `i`, so a guard of level `i` is a
/// candidate at every deeper level (the skip-list property).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuardBits {
    /// Density follows the data: `bits = floor(log2(target_guard_bytes / average entry bytes))`
    /// at every level, with the average entry size measured on each compaction's inputs, so a
    /// guard holds about `target_guard_bytes` whatever the store size (deeper levels hold more
    /// data, hence more guards). `target_guard_bytes = 0` means
    /// `max_sstables_per_guard * target_file_size`.
    Adaptive {
        /// Bytes a guard should hold. Default: 0 (derived, see above).
        target_guard_bytes: u64,
    },
    /// PebblesDB's fixed scheme: `bits(i) = top_level_bits - (i-1) * bit_decrement` (at least 1).
    /// PebblesDB's compile-time defaults were 27 and 2.
    Fixed {
        /// Bits at level 1.
        top_level_bits: u32,
        /// Bits fewer at each deeper level.
        bit_decrement: u32,
    },
}

/// Level-0 tables that start a level-0 compaction in this layout while
/// `Options::l0_compaction_trigger` is 0 (its default). Six where LevelDB and RocksDB (and the
/// other layouts) take four: a level-0 compaction appends one run to every level-1 guard, a
/// guard four runs deep goes down, and the deepest level merges a guard in place whenever it
/// fills; carrying 1.5 times the bytes per level-0 compaction sends each level-1 guard down
/// with 1.5 times the bytes, so a deepest guard is rewritten about two thirds as often per byte
/// it takes in. At 100M keys the load writes 8% fewer bytes (WA 4.80 against 5.20) and took no
/// write slowdowns (1540 with four); seeks right after it pay for the extra runs per guard
/// (docs/flsm.md, "Level 0 merged at six tables").
pub const L0_COMPACTION_TRIGGER: usize = 6;

/// Level-0 tables at which a seek compaction of level 0 runs with any budget left (it may
/// overdraw it; what it writes is charged as usual): LevelDB's and RocksDB's trigger.
/// [`L0_COMPACTION_TRIGGER`] lets level 0 hold more for the writes' sake; once seeks pay for
/// its tables (level 0's seek count reached `seek_compaction_threshold`), the store is folded
/// as LevelDB would have folded it. After a 2M-key load (five tables, under six) the budget
/// otherwise kept the first ~50k seeks paying for six sources each.
pub const L0_SEEK_TRIGGER: usize = crate::layout::LEVELDB_L0_COMPACTION_TRIGGER;

/// Options of the FLSM layout, carried by [`crate::Layout::default()`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlsmOptions {
    /// Most fragments (sorted runs, each possibly cut into several tables) a guard holds at
    /// one key. A compaction appends a fragment to a guard of the next level; when the guard's
    /// tables overlapping the incoming range are already this deep (this many of them hold one
    /// key), they are merged with the incoming data instead (so `1` gives leveled LSM), except
    /// above the deepest level holding data, where the full guard is first compacted down.
    /// Default: 4. PebblesDB: `max_sstables_per_guard` (default 2, where a guard reaching it
    /// was compacted down; its fragments were single tables).
    pub max_sstables_per_guard: usize,
    /// Levels >= 1 target this many times the leveled sizes (`max_bytes_for_level_base *
    /// level_size_multiplier^(n-1)`). A leveled level 1 stays small because every level-0
    /// compaction rewrites what it overlaps there; FLSM appends a fragment to a guard instead,
    /// so a larger level 1 costs no rewrite and each guard later pushed down carries more bytes
    /// per child guard. Default: 4 (level 1 targets 1 GiB with the 256 MiB base; 1, 2, 4 and 8
    /// were tried on stores shaped like 100M and 200M keys, docs/flsm.md). RocksDB: none (its
    /// `max_bytes_for_level_base` is the leveled target).
    pub level_target_scale: u64,
    /// How guards are chosen. Default: `Adaptive { target_guard_bytes: 0 }`.
    /// PebblesDB: `Fixed { top_level_bits: 27, bit_decrement: 2 }`.
    pub guard_bits: GuardBits,
    /// Second-to-last level: a guard is merged in place instead of into the last level when
    /// the last-level fragments that would have to be merged hold more than this many times
    /// the guard's bytes (0 disables). Default: 25 (PebblesDB's heuristic).
    pub second_last_rewrite_ratio: u64,
    /// Aggressive compaction (PebblesDB section 4): a level `n >= 1` under its target is still
    /// compacted into level `n + 1` when its bytes are within this percentage of level `n + 1`'s
    /// bytes (`bytes(n) >= (100 - p)% of bytes(n + 1)`, and level `n + 1` not empty), so fewer
    /// levels hold data a seek must visit. 0 disables; at most 100. Default: 25 (PebblesDB's).
    pub aggressive_compaction_percent: u64,
    /// Seek-based compaction: a guard whose reads paid for its overlapping fragments this many
    /// times since the last version change (iterator seeks that positioned more than one of
    /// them; gets that read a block of one that did not hold the key while others were
    /// candidates) has its fragments merged in place, even when nothing is written; so is
    /// level 0 into level 1 once this many seeks positioned more than one level-0 table. 0
    /// disables. Default: 1024.
    /// PebblesDB: 10 consecutive seeks; LevelDB: one seek per 16 KiB of a table.
    pub seek_compaction_threshold: u32,
    /// Write budget of seek-based compaction, in percent of what writes and reads earned: a
    /// seek compaction runs only while the bytes all seek compactions wrote plus its input
    /// bytes stay within `percent * (user_bytes_written + overlap_read_bytes) / 100`, where
    /// `overlap_read_bytes` counts one block (`block_size`) per table a read paid for beyond
    /// one per level (see `Stats`). Reads that keep paying for overlapping tables thus earn the
    /// compaction that removes the overlap, and compaction can never run away from them
    /// (cockroachdb/pebble#1143); level 0 holding [`L0_SEEK_TRIGGER`] tables is folded by seeks
    /// with any budget left. 0 disables. Default: 25 (10 until guards were full by depth,
    /// which leaves more runs per guard after a load; docs/flsm.md).
    pub seek_compaction_budget_percent: u64,
}

impl Default for FlsmOptions {
    fn default() -> Self {
        FlsmOptions::DEFAULT
    }
}

impl FlsmOptions {
    /// The defaults, as a constant.
    pub const DEFAULT: FlsmOptions = FlsmOptions {
        max_sstables_per_guard: 4,
        level_target_scale: 4,
        guard_bits: GuardBits::Adaptive {
            target_guard_bytes: 0,
        },
        second_last_rewrite_ratio: 25,
        aggressive_compaction_percent: 25,
        seek_compaction_threshold: 1024,
        seek_compaction_budget_percent: 25,
    };

    /// Checks that every option is in range; the error names the option.
    pub fn validate(&self) -> Result<()> {
        let check = crate::options::require;
        check(
            (1..=1024).contains(&self.max_sstables_per_guard),
            "flsm.max_sstables_per_guard must be between 1 and 1024",
        )?;
        check(
            (1..=1024).contains(&self.level_target_scale),
            "flsm.level_target_scale must be between 1 and 1024",
        )?;
        check(
            self.aggressive_compaction_percent <= 100,
            "flsm.aggressive_compaction_percent must be at most 100",
        )?;
        if let GuardBits::Fixed { top_level_bits, .. } = self.guard_bits {
            check(
                (1..=63).contains(&top_level_bits),
                "flsm.guard_bits top_level_bits must be between 1 and 63",
            )?;
        }
        Ok(())
    }
}
