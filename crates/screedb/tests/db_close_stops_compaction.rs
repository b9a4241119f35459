//! Closing the database stops a running merge instead of waiting for it (as LevelDB does): the
//! merge's unfinished outputs are named by no edit, nothing written is lost, no background error
//! is recorded, and the next open removes the unfinished outputs.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::collections::BTreeMap;
use std::path::Path;

use screedb::{Db, Layout, Options};

fn options() -> Options {
    Options {
        create_if_missing: true,
        // Leveled, so that every level-0 merge rewrites the whole growing level 1 (FLSM would
        // append small fragments) and a close right after a burst of writes finds one running.
        layout: Layout::Leveled,
        write_buffer_size: 128 << 10,
        l0_compaction_trigger: 2,
        target_file_size: 64 << 20,
        max_bytes_for_level_base: 64 << 20,
        ..Options::default()
    }
}

fn tables_on_disk(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_str().unwrap().ends_with(".sst")
        })
        .count()
}

fn verify(db: &Db, model: &BTreeMap<String, String>) {
    for (k, v) in model {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(v.as_bytes()), "key {k}");
    }
}

#[test]
fn close_stops_a_running_merge_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    let mut stopped = 0;
    for round in 0..12u32 {
        let db = Db::open(dir.path(), options()).unwrap();
        verify(&db, &model);
        stopped = db.stats().compactions_stopped_by_close;
        if stopped > 0 && round >= 2 {
            db.close().unwrap();
            break;
        }
        for i in 0..8000u32 {
            let k = format!("key{:06}", (i * 7919 + round * 13) % 30_000);
            let v = format!("{round}-{i}-{}", "v".repeat(200));
            db.put(&k, &v).unwrap();
            model.insert(k, v);
        }
        // Close at once: the flushes and merges of the burst are still running.
        db.close().unwrap();
    }
    assert!(stopped > 0, "no close stopped a running merge");

    // The stopped merges left no background error, every value reads back, and once the
    // background work is done every table on disk is a live one.
    let db = Db::open(dir.path(), options()).unwrap();
    verify(&db, &model);
    db.wait_for_idle().unwrap();
    let live: usize = db.stats().files_per_level.iter().sum();
    assert_eq!(tables_on_disk(dir.path()), live);
    db.close().unwrap();
    let report = screedb::check::check_database(dir.path(), &options()).unwrap();
    assert_eq!(report.tables, tables_on_disk(dir.path()));
}
