//! Regression (found by db_model: an iterator failed with a missing table, and obsolete tables
//! piled up on disk): obsolete-table deletion tracked the last `Arc<FileMeta>`.
//!
//! postmortem: a table was deleted when the `Version` dropping the *last* `Arc<FileMeta>` of a
//! marked table saw `Arc::into_inner` succeed. Two holes: (1) compaction jobs hold `Arc<FileMeta>`
//! clones of their inputs (`MergeSpec`) outside any version, so when the job outlived the last
//! version, nobody released the table and its file stayed until the next open; (2) a trivial move
//! builds a *new* `FileMeta` (new `Arc`) for the same table number, so the moved table's last
//! `Arc` in newer versions could delete the file while an iterator still held an older version
//! naming the table under its old level. `ObsoleteFiles` now counts the versions holding each
//! table number; a marked table is deleted when that count reaches zero.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::Path;
use std::sync::Arc;

use screedb::fs::{Fs, MemFs};
use screedb::{Db, Options, ReadOptions};

mod purge_common;

fn options(fs: &Arc<MemFs>) -> Options {
    Options {
        create_if_missing: true,
        l0_compaction_trigger: 1,
        l0_slowdown_trigger: 20,
        l0_stop_trigger: 36,
        max_bytes_for_level_base: 4 << 10,
        target_file_size: 1 << 10,
        block_cache_bytes: 0,
        num_levels: 4,
        fs: fs.clone(),
        ..Options::default()
    }
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

fn live_tables(db: &Db) -> usize {
    db.stats().files_per_level.iter().sum()
}

#[test]
fn compacted_tables_are_deleted_at_once() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(&fs)).unwrap();
    for round in 0..4 {
        for i in 0..100 {
            db.put(format!("k{i:03}"), format!("{round}").repeat(50))
                .unwrap();
        }
        db.flush().unwrap();
        db.wait_for_idle().unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_idle().unwrap();
    let stats = db.stats();
    assert!(stats.compactions > 0, "{stats:?}");
    assert_eq!(
        table_files(&fs).len(),
        live_tables(&db),
        "obsolete tables left on disk: {:?}",
        table_files(&fs)
    );
}

#[test]
fn iterator_keeps_a_moved_table_alive() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(&fs)).unwrap();
    // `a` keys end up in level 1 (several small tables).
    for i in 0..40 {
        db.put(format!("a{i:03}"), "x".repeat(50)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_idle().unwrap();
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    // More data overflows level 1: the `a` tables move to level 2 by metadata.
    for i in 0..100 {
        db.put(format!("b{i:03}"), "z".repeat(50)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_idle().unwrap();
    assert!(db.stats().trivial_moves > 0, "{:?}", db.stats());
    // Overwriting the `a` keys compacts the moved tables away.
    for i in 0..40 {
        db.put(format!("a{i:03}"), "y".repeat(50)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.wait_for_idle().unwrap();

    // The iterator still reads its tables.
    it.seek_to_first();
    let mut n = 0;
    while it.valid() {
        assert_eq!(it.key(), format!("a{n:03}").as_bytes());
        assert_eq!(it.value(), "x".repeat(50).as_bytes());
        n += 1;
        it.next();
    }
    it.status().unwrap();
    assert_eq!(n, 40);
    assert!(table_files(&fs).len() > live_tables(&db));
    // Dropping it deletes them.
    drop(it);
    assert_eq!(
        purge_common::tables_settle(live_tables(&db), || table_files(&fs).len()),
        live_tables(&db),
        "{:?}",
        table_files(&fs)
    );
}
