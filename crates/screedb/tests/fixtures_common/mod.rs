//! What the checked-in format fixtures in `tests/fixtures/` hold, shared by their generator
//! (`fixtures_gen.rs`) and their reader (`format_fixtures.rs`).
//!
//! FROZEN: the fixtures were written from these functions once, by the code of their day, and
//! are never regenerated to make a test pass. Changing a key, a value or a round here breaks
//! `format_fixtures.rs` against the files already checked in; add a new fixture (and new
//! functions) instead.

#![allow(dead_code, reason = "each test file uses a part")]

use std::collections::BTreeMap;

use screedb::key::{SequenceNumber, ValueKind, make_internal_key};
use screedb::{Layout, LayoutKind, Options};

/// Keys written by round 0 (round 2 adds [`EXTRA_KEYS`] more after them).
pub const KEYS: u32 = 300;
/// Keys past [`KEYS`] that only round 2 writes.
pub const EXTRA_KEYS: u32 = 10;

/// One database fixture: its directory under `tests/fixtures/`, the layout it was created
/// with, and the rounds it holds.
#[derive(Debug, Clone, Copy)]
pub struct DbFixture {
    /// Directory name under `tests/fixtures/`.
    pub dir: &'static str,
    /// The layout it was created with (persisted in its MANIFEST).
    pub layout: LayoutKind,
    /// Round 2 was written after the last flush, so it is only in the WAL.
    pub wal_round: bool,
    /// Round 1's last flush stayed in level 0 (Jungle flushes straight into level 1 while
    /// level 0 is empty).
    pub level0: bool,
}

/// Every database fixture.
pub const DB_FIXTURES: [DbFixture; 5] = [
    DbFixture {
        dir: "db-flsm-v1",
        layout: LayoutKind::Flsm,
        wal_round: true,
        level0: true,
    },
    DbFixture {
        dir: "db-leveled-v1",
        layout: LayoutKind::Leveled,
        wal_round: false,
        level0: true,
    },
    // Written by the first build with the trie layout (the fifth session's).
    DbFixture {
        dir: "db-trie-v1",
        layout: LayoutKind::Trie,
        wal_round: true,
        level0: true,
    },
    // Written by the build of 2026-11-29 (406bdd4): the trie's last level with BloomClusters of
    // format version 1 (pages without box offsets).
    DbFixture {
        dir: "db-trie-clusters-v1",
        layout: LayoutKind::Trie,
        wal_round: true,
        level0: true,
    },
    // Written by the build of 2026-11-30: Jungle's tree files (appended segments).
    DbFixture {
        dir: "db-jungle-v1",
        layout: LayoutKind::Jungle,
        wal_round: true,
        level0: false,
    },
];

/// The options `fixture` was written with, and is reopened with.
pub fn options(fixture: &DbFixture) -> Options {
    Options {
        layout: match Layout::with_defaults(fixture.layout) {
            // 512-byte buckets keep the trie's tables (and the fixture) small.
            Layout::Trie(trie) => Layout::Trie(screedb::TrieOptions {
                bucket_bytes: 512,
                ..trie
            }),
            other => other,
        },
        // Large enough that only the generator's explicit flushes make tables; small tables and
        // blocks, so a few hundred keys still make several of each; two level-0 tables start a
        // compaction.
        write_buffer_size: 64 << 10,
        target_file_size: 2 << 10,
        block_size: 512,
        num_levels: 3,
        l0_compaction_trigger: 2,
        ..Options::default()
    }
}

/// The standalone table fixture.
pub const TABLE_FIXTURE: &str = "table-sorted-v1.sst";

/// The `i`-th user key.
pub fn key(i: u32) -> Vec<u8> {
    format!("key{i:05}").into_bytes()
}

/// The value round `round` writes for key `i`: 8 to 40 bytes, partly repetitive (so LZ4
/// compresses some blocks) and different in every round.
pub fn value(i: u32, round: u32) -> Vec<u8> {
    let filler = "abcdefgh".repeat((i % 5) as usize);
    format!("r{round}-i{i}-{filler}").into_bytes()
}

/// One write of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `key(i)` = `value(i, round)`.
    Put { i: u32, round: u32 },
    /// `key(i)` deleted.
    Delete { i: u32 },
}

/// The writes of round `round`, in order:
/// - 0: every key in `0..KEYS`, ascending (the generator flushes after every 100 and then
///   compacts everything to levels 1 and below);
/// - 1: every third key overwritten, then every seventh deleted (flushed to level 0);
/// - 2: every eleventh key overwritten, every thirteenth deleted, and `EXTRA_KEYS` new keys
///   (only in the WAL, and only in fixtures with `wal_round`).
pub fn round(round: u32) -> Vec<Op> {
    let mut ops = Vec::new();
    match round {
        0 => ops.extend((0..KEYS).map(|i| Op::Put { i, round })),
        1 => {
            ops.extend((0..KEYS).step_by(3).map(|i| Op::Put { i, round }));
            ops.extend((0..KEYS).step_by(7).map(|i| Op::Delete { i }));
        }
        2 => {
            ops.extend((0..KEYS).step_by(11).map(|i| Op::Put { i, round }));
            ops.extend((0..KEYS).step_by(13).map(|i| Op::Delete { i }));
            ops.extend((KEYS..KEYS + EXTRA_KEYS).map(|i| Op::Put { i, round }));
        }
        _ => {}
    }
    ops
}

/// The rounds written into `fixture`.
pub fn rounds(fixture: &DbFixture) -> std::ops::Range<u32> {
    0..if fixture.wal_round { 3 } else { 2 }
}

/// The live key-value pairs of `fixture` after all its rounds.
pub fn expected(fixture: &DbFixture) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    for r in rounds(fixture) {
        for op in round(r) {
            match op {
                Op::Put { i, round } => {
                    model.insert(key(i), value(i, round));
                }
                Op::Delete { i } => {
                    model.remove(&key(i));
                }
            }
        }
    }
    model
}

/// Every user key any round writes or deletes.
pub fn every_key() -> impl Iterator<Item = Vec<u8>> {
    (0..KEYS + EXTRA_KEYS).map(key)
}

/// The entries of the table fixture, in internal-key order: user keys `t0000..t0119`, each at
/// sequence `1000 + i`; every tenth key also has an older value at sequence `i`, and every
/// fifteenth key's newest entry is a tombstone (empty value).
pub fn table_entries() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    for i in 0..120u32 {
        let user = format!("t{i:04}").into_bytes();
        let newest: SequenceNumber = 1000 + u64::from(i);
        if i % 15 == 0 {
            out.push((
                make_internal_key(&user, newest, ValueKind::Deletion),
                Vec::new(),
            ));
        } else {
            out.push((
                make_internal_key(&user, newest, ValueKind::Value),
                format!("table-value-{i}-{}", "xy".repeat((i % 7) as usize)).into_bytes(),
            ));
        }
        if i % 10 == 0 {
            out.push((
                make_internal_key(&user, u64::from(i), ValueKind::Value),
                format!("old-{i}").into_bytes(),
            ));
        }
    }
    out
}

/// Data block size the table fixture was written with (small, so it has several blocks and
/// its index several entries).
pub const TABLE_BLOCK_SIZE: usize = 512;
