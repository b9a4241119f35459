//! Large values, empty keys and values, and long keys round-trip through memtable, WAL replay,
//! flush and compaction.
#![allow(clippy::unwrap_used, reason = "test code")]

use screedb::{Db, Options};

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn empty_long_and_large_entries_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        write_buffer_size: 1 << 20,
        ..Options::default().create_if_missing(true)
    };
    let long_key = pattern(100_000, 1);
    let mib = pattern(1 << 20, 2);
    let big = pattern(64 << 20, 3);
    {
        let db = Db::open(dir.path(), opts.clone()).unwrap();
        db.put(b"", b"empty key").unwrap();
        db.put(b"empty value", b"").unwrap();
        db.put(&long_key, b"long key").unwrap();
        db.put(b"one mib", &mib).unwrap();
        db.put(b"sixty-four mib", &big).unwrap();
        assert_eq!(db.get(b"").unwrap().unwrap(), b"empty key");
        assert_eq!(db.get(b"sixty-four mib").unwrap().unwrap().len(), big.len());
        // Close without flushing: the next open replays all of it from the WAL.
        db.close().unwrap();
    }
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    let check = |db: &Db| {
        assert_eq!(db.get(b"").unwrap().unwrap(), b"empty key");
        assert_eq!(db.get(b"empty value").unwrap().unwrap(), b"");
        assert_eq!(db.get(&long_key).unwrap().unwrap(), b"long key");
        assert!(db.get(b"one mib").unwrap().unwrap() == mib);
        assert!(db.get(b"sixty-four mib").unwrap().unwrap() == big);
        let keys: Vec<Vec<u8>> = db
            .range::<&[u8]>(..)
            .unwrap()
            .map(|kv| kv.unwrap().0)
            .collect();
        assert_eq!(keys.len(), 5);
        assert_eq!(keys[0], b"");
    };
    check(&db);
    db.compact_range(None, None).unwrap();
    check(&db);
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    check(&db);
}
