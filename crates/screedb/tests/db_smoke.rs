//! Basic behaviour of an open database: writes, reads, deletes, flush, compaction, reopen.
#![allow(clippy::unwrap_used, reason = "test code")]

use screedb::{Db, Options, ReadOptions};

fn small_options() -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        target_file_size: 32 << 10,
        max_bytes_for_level_base: 128 << 10,
        l0_compaction_trigger: 2,
        ..Options::default()
    }
}

#[test]
fn put_get_delete_survive_flush_compaction_and_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let n = 5000u32;
    {
        let db = Db::open(dir.path(), small_options()).unwrap();
        for i in 0..n {
            db.put(format!("key{i:06}"), format!("value{i}-{}", "x".repeat(50)))
                .unwrap();
        }
        for i in (0..n).step_by(3) {
            db.delete(format!("key{i:06}")).unwrap();
        }
        db.flush().unwrap();
        db.wait_for_idle().unwrap();
        for i in 0..n {
            let got = db.get(format!("key{i:06}")).unwrap();
            if i % 3 == 0 {
                assert_eq!(got, None, "key{i:06}");
            } else {
                assert_eq!(
                    got,
                    Some(format!("value{i}-{}", "x".repeat(50)).into_bytes()),
                    "key{i:06}"
                );
            }
        }
        let stats = db.stats();
        assert!(stats.flushes > 0, "{stats:?}");
        db.compact_range(None, None).unwrap();
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), small_options()).unwrap();
    let mut count = 0;
    for item in db.range::<&[u8]>(..).unwrap() {
        let (k, _) = item.unwrap();
        assert!(k.starts_with(b"key"));
        count += 1;
    }
    assert_eq!(count, n - n.div_ceil(3));
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_last();
    assert_eq!(it.key(), format!("key{:06}", n - 1).as_bytes());
    it.prev(); // key004998 is deleted (a multiple of 3)
    assert_eq!(it.key(), format!("key{:06}", n - 3).as_bytes());
    assert!(db.stats().write_amplification() > 0.0);
}

#[test]
fn db_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Db>();
    assert_send_sync::<screedb::Snapshot>();
    fn assert_send<T: Send>() {}
    assert_send::<screedb::DbIterator>();
}

#[test]
fn manifest_rolls_over_and_old_files_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        max_manifest_file_size: 2 << 10,
        ..small_options()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    for round in 0..30u32 {
        for i in 0..200u32 {
            db.put(format!("key{i:04}"), format!("round{round}"))
                .unwrap();
        }
        db.flush().unwrap();
    }
    db.wait_for_idle().unwrap();
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let manifests = names.iter().filter(|n| n.starts_with("MANIFEST-")).count();
    assert_eq!(manifests, 1, "{names:?}");
    let logs = names.iter().filter(|n| n.ends_with(".log")).count();
    assert_eq!(logs, 1, "flushed logs must be deleted: {names:?}");
    let live_tables: usize = db.stats().files_per_level.iter().sum();
    let tables = names.iter().filter(|n| n.ends_with(".sst")).count();
    assert_eq!(
        tables, live_tables,
        "compacted tables must be deleted: {names:?}"
    );
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(db.get("key0199").unwrap(), Some(b"round29".to_vec()));
}

#[test]
fn properties_and_stats_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    for i in 0..3000u32 {
        db.put(format!("key{i:06}"), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_idle().unwrap();
    let before = db.stats();
    assert!(before.user_bytes_written >= 3000 * 109);
    assert!(before.write_amplification() > 1.0, "{before}");
    let text = db.property("screedb.stats").unwrap();
    assert!(text.contains("write amplification"), "{text}");
    let files: usize = (0..7)
        .map(|l| {
            db.property(&format!("screedb.num-files-at-level{l}"))
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    assert_eq!(files, before.files_per_level.iter().sum::<usize>());
    assert!(db.property("screedb.num-files-at-level99").is_none());
    assert!(db.property("screedb.no-such-property").is_none());
    let mem: usize = db
        .property("screedb.approximate-memory-usage")
        .unwrap()
        .parse()
        .unwrap();
    let _ = mem;
    let sizes = db
        .approximate_sizes(&[(b"key000000", b"key003000"), (b"x", b"y")])
        .unwrap();
    // The range covers every key: its size is most of the bytes on disk (values compress well).
    let on_disk: u64 = before.bytes_per_level.iter().sum();
    assert!(
        sizes[0] * 2 >= on_disk && sizes[0] <= on_disk,
        "{sizes:?} of {on_disk}"
    );
    assert_eq!(sizes[1], 0);
    db.close().unwrap();
    let db = Db::open(dir.path(), small_options()).unwrap();
    let after = db.stats();
    assert_eq!(after.user_bytes_written, before.user_bytes_written);
    assert!(after.flush_bytes_written >= before.flush_bytes_written);
    assert!(after.compaction_bytes_written >= before.compaction_bytes_written);
}
