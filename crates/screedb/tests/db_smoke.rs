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
