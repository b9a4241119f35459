//! Snapshots and iterators against flushes and compactions: what compaction must keep, what it
//! may drop, and when obsolete tables leave the disk.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::Path;
use std::sync::Arc;

use screedb::fs::{Fs, MemFs};
use screedb::{Db, Error, Options, ReadOptions};

mod purge_common;

fn options(fs: &Arc<MemFs>) -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        target_file_size: 16 << 10,
        max_bytes_for_level_base: 64 << 10,
        num_levels: 4,
        block_cache_bytes: 0,
        fs: fs.clone(),
        ..Options::default()
    }
}

fn scan(db: &Db, ro: &ReadOptions<'_>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter(ro).unwrap();
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

fn table_files(fs: &MemFs) -> Vec<String> {
    let mut names: Vec<String> = fs
        .list(Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .collect();
    names.sort();
    names
}

fn total_bytes(db: &Db) -> u64 {
    db.stats().bytes_per_level.iter().sum()
}

/// A snapshot names a point in its own database's history only: another database's (even one
/// reopened from the same directory) is refused, never read at a number that means nothing.
#[test]
fn a_snapshot_of_another_database_is_invalid_argument() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/a", options(&fs)).unwrap();
    let other = Db::open("/b", options(&fs)).unwrap();
    db.put("k", "v").unwrap();
    for i in 0..100 {
        other.put(format!("k{i}"), "x").unwrap();
    }
    // Past `db`'s last sequence: read there, it would see writes not yet made.
    let foreign = other.snapshot();
    let is_invalid = |r: Result<(), Error>| matches!(r, Err(Error::InvalidArgument(_)));
    assert!(is_invalid(
        db.get_with("k", &ReadOptions::at(&foreign)).map(drop)
    ));
    assert!(is_invalid(db.iter(&ReadOptions::at(&foreign)).map(drop)));
    let msg = db
        .get_with("k", &ReadOptions::at(&foreign))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("another database"), "{msg}");
    // Its own database still reads at it.
    assert_eq!(
        other
            .get_with("k7", &ReadOptions::at(&foreign))
            .unwrap()
            .as_deref(),
        Some(&b"x"[..])
    );

    // The same directory reopened is another database: the old handle's snapshot is refused.
    let mine = db.snapshot();
    assert_eq!(
        db.get_with("k", &ReadOptions::at(&mine))
            .unwrap()
            .as_deref(),
        Some(&b"v"[..])
    );
    db.close().unwrap();
    let reopened = Db::open("/a", options(&fs)).unwrap();
    assert!(is_invalid(
        reopened.get_with("k", &ReadOptions::at(&mine)).map(drop)
    ));
    drop(mine);
    assert_eq!(reopened.get("k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn snapshot_keeps_overwritten_and_deleted_value_across_full_compaction() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(&fs)).unwrap();
    db.put("k", "v1").unwrap();
    db.put("other", "o").unwrap();
    let snap = db.snapshot();
    db.put("k", "v2").unwrap();
    db.flush().unwrap();
    let snap2 = db.snapshot();
    db.delete("k").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_idle().unwrap();

    assert_eq!(db.get("k").unwrap(), None);
    let old = db.get_with("k", &ReadOptions::at(&snap)).unwrap();
    assert_eq!(old.as_deref(), Some(&b"v1"[..]));
    let mid = db.get_with("k", &ReadOptions::at(&snap2)).unwrap();
    assert_eq!(mid.as_deref(), Some(&b"v2"[..]));
    assert_eq!(
        scan(&db, &ReadOptions::at(&snap)),
        vec![
            (b"k".to_vec(), b"v1".to_vec()),
            (b"other".to_vec(), b"o".to_vec())
        ]
    );
    assert_eq!(
        scan(&db, &ReadOptions::default()),
        vec![(b"other".to_vec(), b"o".to_vec())]
    );
    // The data went through compactions, not just the memtable.
    let stats = db.stats();
    assert!(
        stats.compactions > 0 && stats.files_per_level[0] == 0,
        "{stats:?}"
    );
}

#[test]
fn old_versions_are_dropped_once_the_snapshot_is_released() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(&fs)).unwrap();
    // Pseudo-random bytes per key and round, so sizes track the data whatever the compression.
    let value = |round: u64, i: u64| {
        let mut x = (round << 32 | i).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..1000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect::<Vec<u8>>()
    };
    for i in 0..200u64 {
        db.put(format!("key{i:04}"), value(1, i)).unwrap();
    }
    let snap = db.snapshot();
    for i in 0..200u64 {
        db.put(format!("key{i:04}"), value(2, i)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_idle().unwrap();
    let with_snapshot = total_bytes(&db);
    // Both versions survive: at least ~2 x 200 KB.
    assert!(with_snapshot > 380_000, "{with_snapshot}");
    assert_eq!(
        db.get_with("key0007", &ReadOptions::at(&snap)).unwrap(),
        Some(value(1, 7))
    );

    drop(snap);
    // Everything sits in the last level now, which compact_range does not rewrite on its own:
    // two keys bracketing the whole range make the next full compaction merge into it.
    db.put("a", "first").unwrap();
    db.put("z", "last").unwrap();
    db.compact_range(None, None).unwrap();
    db.wait_for_idle().unwrap();
    let without = total_bytes(&db);
    assert!(
        without < with_snapshot * 6 / 10,
        "old versions not dropped: {with_snapshot} -> {without} bytes"
    );
    assert_eq!(db.get("key0007").unwrap(), Some(value(2, 7)));
    let sizes = db.approximate_sizes(&[(&b"key"[..], &b"kez"[..])]).unwrap();
    assert!(sizes[0] < with_snapshot * 6 / 10, "{sizes:?}");
}

#[test]
fn tombstone_hides_lower_level_data_after_upper_levels_compact() {
    let fs = Arc::new(MemFs::new());
    let opts = Options {
        // Every flush is compacted from level 0 into level 1 right away.
        l0_compaction_trigger: 1,
        ..options(&fs)
    };
    let db = Db::open("/db", opts).unwrap();
    for i in 0..300u32 {
        db.put(format!("key{i:04}"), format!("value{i}")).unwrap();
    }
    // All data to the last level.
    db.compact_range(None, None).unwrap();
    let levels = db.stats().files_per_level;
    assert!(
        levels[3] > 0 && levels[..3].iter().all(|&n| n == 0),
        "{levels:?}"
    );

    for i in (0..300u32).step_by(3) {
        db.delete(format!("key{i:04}")).unwrap();
    }
    // The tombstones go to level 0, then background compaction merges them into level 1 only.
    db.flush().unwrap();
    db.wait_for_idle().unwrap();
    let stats = db.stats();
    assert_eq!(stats.files_per_level[0], 0, "{stats:?}");
    assert!(stats.files_per_level[1] > 0, "{stats:?}");
    assert!(stats.files_per_level[3] > 0, "{stats:?}");

    for i in 0..300u32 {
        let got = db.get(format!("key{i:04}")).unwrap();
        if i % 3 == 0 {
            assert_eq!(got, None, "key{i:04} came back");
        } else {
            assert_eq!(got, Some(format!("value{i}").into_bytes()));
        }
    }
    assert_eq!(scan(&db, &ReadOptions::default()).len(), 200);
    // Still deleted after a reopen.
    db.close().unwrap();
    let db = Db::open("/db", options(&fs)).unwrap();
    assert_eq!(db.get("key0003").unwrap(), None);
    assert_eq!(scan(&db, &ReadOptions::default()).len(), 200);
}

#[test]
fn iterator_outlives_compaction_then_releases_obsolete_tables() {
    let fs = Arc::new(MemFs::new());
    let opts = Options {
        // Keep several tables in level 0 until the manual compaction.
        l0_compaction_trigger: 8,
        l0_slowdown_trigger: 20,
        l0_stop_trigger: 36,
        ..options(&fs)
    };
    let db = Db::open("/db", opts).unwrap();
    for round in 0..4u32 {
        for i in 0..100u32 {
            db.put(format!("key{i:04}"), format!("r{round}-{i}"))
                .unwrap();
        }
        db.flush().unwrap();
    }
    let before = table_files(&fs);
    assert_eq!(before.len(), 4);
    let expected: Vec<(Vec<u8>, Vec<u8>)> = (0..100u32)
        .map(|i| {
            (
                format!("key{i:04}").into_bytes(),
                format!("r3-{i}").into_bytes(),
            )
        })
        .collect();

    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek(b"key0050");
    assert_eq!(it.value(), b"r3-50");
    for i in 0..100u32 {
        db.put(format!("key{i:04}"), "after").unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_idle().unwrap();

    // The old tables are out of the version but still on disk, and the iterator reads them.
    let after = table_files(&fs);
    assert!(
        before.iter().all(|t| after.contains(t)),
        "{before:?} {after:?}"
    );
    let mut seen = Vec::new();
    it.seek_to_first();
    while it.valid() {
        seen.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    assert_eq!(seen, expected);
    it.seek_to_last();
    it.prev();
    assert_eq!(it.key(), b"key0098");

    drop(it);
    let live: usize = db.stats().files_per_level.iter().sum();
    purge_common::tables_settle(live, || table_files(&fs).len());
    let remaining = table_files(&fs);
    assert_eq!(remaining.len(), live, "{remaining:?}");
    assert!(
        before.iter().all(|t| !remaining.contains(t)),
        "{remaining:?}"
    );
    assert_eq!(db.get("key0042").unwrap().as_deref(), Some(&b"after"[..]));
}

#[test]
fn full_compaction_drops_tombstones_and_shadowed_versions() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), Options::default().create_if_missing(true)).unwrap();
    for round in 0..3u32 {
        for i in 0..500u32 {
            db.put(format!("k{i:04}"), format!("v{round}")).unwrap();
        }
        db.flush().unwrap();
    }
    for i in 0..250u32 {
        db.delete(format!("k{i:04}")).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.compact_range(None, None).unwrap(); // a second full compaction is harmless
    let stats = db.stats();
    let last = stats.files_per_level.len() - 1;
    assert!(stats.files_per_level[last] > 0, "{stats}");
    assert_eq!(
        stats.files_per_level[..last].iter().sum::<usize>(),
        0,
        "{stats}"
    );
    let live: Vec<_> = db.range::<&[u8]>(..).unwrap().collect();
    assert_eq!(live.len(), 250);
    db.close().unwrap();
    // Only the 250 live keys remain on disk, one version each, and no tombstones.
    let report = screedb::check::check_database(dir.path(), &Options::default()).unwrap();
    assert_eq!((report.entries, report.deletions), (250, 0), "{report:?}");
}
