//! Tables a compaction replaced are deleted while the database is open, not only at the next open.
//!
//! postmortem: the merge job held its inputs as `Arc<FileMeta>` until after the new version was
//! installed, so the old version was not their last holder, `ObsoleteFiles::release` never ran and
//! every compaction input stayed on disk until the next open swept it.
#![allow(clippy::unwrap_used, reason = "test code")]

use screedb::{Db, Options};

mod purge_common;

fn tables_on_disk(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_str().unwrap().ends_with(".sst")
        })
        .count()
}

/// Small tables that stay in level 0 until eight have been flushed.
fn level0_options() -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        target_file_size: 32 << 10,
        l0_compaction_trigger: 8,
        ..Options::default()
    }
}

/// Writes 1,000 keys per round of `rounds`, each round flushed to a table of its own.
fn flushed_rounds(db: &Db, rounds: std::ops::Range<u32>) {
    for round in rounds {
        for i in 0..1000u32 {
            db.put(format!("key{i:06}"), format!("value-{round}-{i}"))
                .unwrap();
        }
        db.flush().unwrap();
    }
}

#[test]
fn compaction_inputs_are_deleted_while_open() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        target_file_size: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        l0_compaction_trigger: 2,
        ..Options::default()
    };
    let db = Db::open(dir.path(), options).unwrap();
    for round in 0..4u32 {
        for i in 0..2000u32 {
            db.put(
                format!("key{i:06}"),
                format!("value-{round}-{i}-{}", "x".repeat(40)),
            )
            .unwrap();
        }
        db.flush().unwrap();
    }
    db.wait_for_idle().unwrap();
    let stats = db.stats();
    assert!(stats.compactions > 0, "{stats:?}");
    let live: usize = stats.files_per_level.iter().sum();
    assert_eq!(tables_on_disk(dir.path()), live, "{stats:?}");
    db.compact_range(None, None).unwrap();
    let live: usize = db.stats().files_per_level.iter().sum();
    assert_eq!(tables_on_disk(dir.path()), live);
    db.close().unwrap();
}

/// An iterator that pins the tables a compaction replaced keeps them on disk, and deletes them
/// when it is dropped: the reader that releases the last reference deletes, so nothing waits
/// for the next background job (which, in a read-only phase, may never come).
#[test]
fn tables_an_iterator_pinned_are_deleted_when_it_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), level0_options()).unwrap();
    flushed_rounds(&db, 0..3);
    let it = db.iter(&screedb::ReadOptions::default()).unwrap();
    db.compact_range(None, None).unwrap();
    let live: usize = db.stats().files_per_level.iter().sum();
    assert!(
        tables_on_disk(dir.path()) > live,
        "the iterator pins the replaced tables"
    );
    drop(it);
    assert_eq!(
        purge_common::tables_settle(live, || tables_on_disk(dir.path())),
        live
    );
    db.close().unwrap();
}

/// An iterator dropped before a compaction leaves its sources to the next iterator
/// (`db/iter_pool.rs`); once the compaction replaces them, they do not keep the replaced tables
/// on disk.
#[test]
fn sources_kept_from_a_dropped_iterator_do_not_keep_replaced_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), level0_options()).unwrap();
    flushed_rounds(&db, 0..3);
    let mut it = db.iter(&screedb::ReadOptions::default()).unwrap();
    it.seek_to_first();
    assert!(it.valid());
    drop(it);
    db.compact_range(None, None).unwrap();
    let live: usize = db.stats().files_per_level.iter().sum();
    assert_eq!(tables_on_disk(dir.path()), live);
    // And again through the background threads' own compactions.
    let mut it = db.iter(&screedb::ReadOptions::default()).unwrap();
    it.seek_to_first();
    drop(it);
    flushed_rounds(&db, 3..12);
    db.wait_for_idle().unwrap();
    let stats = db.stats();
    assert!(stats.compactions > 1, "{stats:?}");
    let live: usize = stats.files_per_level.iter().sum();
    assert_eq!(
        purge_common::tables_settle(live, || tables_on_disk(dir.path())),
        live
    );
    db.close().unwrap();
}
