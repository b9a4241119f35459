//! `Options::wal_compression`: write groups of at least `wal::COMPRESS_RECORDS_FROM` bytes go
//! to the WAL LZ4-compressed; the log costs fewer bytes, replays after a reopen whichever
//! setting the reopen uses, and a damaged compressed record is reported, never replayed.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::collections::BTreeMap;
use std::path::Path;

use screedb::table::CompressionType;
use screedb::{Db, Options, WriteBatch, WriteOptions};

fn options(wal_compression: CompressionType) -> Options {
    Options {
        create_if_missing: true,
        wal_compression,
        ..Options::default()
    }
}

/// Writes `batches` batches of ten puts of 100-byte values that compress well (about 1.3 KB
/// each: every one goes through the compressor), plus a lone small put per batch (under
/// the threshold: written plain). Returns what was written and the WAL bytes per user byte.
fn load(db: &Db, tag: &str, batches: usize, model: &mut BTreeMap<Vec<u8>, Vec<u8>>) -> f64 {
    let before = db.stats();
    for b in 0..batches {
        let mut batch = WriteBatch::new();
        for i in 0..10 {
            let key = format!("{tag}-{b:04}-{i}").into_bytes();
            let value = format!("{b:04}{i}").repeat(20).into_bytes();
            batch.put(&key, &value);
            model.insert(key, value);
        }
        db.write(batch, &WriteOptions::default()).unwrap();
        let key = format!("{tag}-{b:04}-lone").into_bytes();
        db.put(&key, b"v").unwrap();
        model.insert(key, b"v".to_vec());
    }
    let after = db.stats();
    (after.wal_bytes_written - before.wal_bytes_written) as f64
        / (after.user_bytes_written - before.user_bytes_written) as f64
}

fn assert_holds(dir: &Path, wal_compression: CompressionType, model: &BTreeMap<Vec<u8>, Vec<u8>>) {
    let db = Db::open(dir, options(wal_compression)).unwrap();
    for (k, v) in model {
        assert_eq!(
            db.get(k).unwrap().as_ref(),
            Some(v),
            "{}",
            String::from_utf8_lossy(k)
        );
    }
    db.close().unwrap();
}

#[test]
fn compressed_logs_replay_under_either_setting_and_cost_fewer_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();

    let db = Db::open(dir.path(), options(CompressionType::Lz4)).unwrap();
    let packed = load(&db, "a", 300, &mut model);
    drop(db); // no flush: the writes live only in the WAL
    assert_holds(dir.path(), CompressionType::None, &model);

    let db = Db::open(dir.path(), options(CompressionType::None)).unwrap();
    let plain = load(&db, "b", 300, &mut model);
    drop(db);
    assert_holds(dir.path(), CompressionType::Lz4, &model);

    assert!(
        plain > 1.0,
        "an uncompressed WAL holds every user byte: {plain:.2}"
    );
    assert!(
        packed < 0.6 * plain,
        "compressed WAL bytes per user byte {packed:.2} against {plain:.2} plain"
    );
}

#[test]
fn a_flipped_byte_in_a_compressed_record_is_reported_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    let db = Db::open(dir.path(), options(CompressionType::Lz4)).unwrap();
    load(&db, "a", 50, &mut model);
    drop(db);
    let log = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "log"))
        .unwrap();
    let mut bytes = std::fs::read(&log).unwrap();
    // The first record is a compressed batch (type 5); flip a byte in its payload.
    assert_eq!(bytes[6], 5, "the first WAL record is compressed");
    bytes[20] ^= 0x01;
    std::fs::write(&log, bytes).unwrap();
    let err = Db::open(dir.path(), options(CompressionType::Lz4)).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains(".log"), "{msg}");
    assert!(msg.contains("checksum"), "{msg}");
}

#[test]
fn groups_of_compressed_and_plain_batches_from_many_threads_replay_whole() {
    let dir = tempfile::tempdir().unwrap();
    let db = std::sync::Arc::new(Db::open(dir.path(), options(CompressionType::Lz4)).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let db = std::sync::Arc::clone(&db);
            std::thread::spawn(move || {
                let mut model = BTreeMap::new();
                for b in 0..300 {
                    // Big batches are compressed by their writer, lone puts are not: a leader's
                    // group mixes both kinds of piece.
                    if b % 2 == 0 {
                        load(&db, &format!("t{t}-{b}"), 1, &mut model);
                    } else {
                        let key = format!("t{t}-{b}-small").into_bytes();
                        db.put(&key, b"x").unwrap();
                        model.insert(key, b"x".to_vec());
                    }
                }
                model
            })
        })
        .collect();
    let mut model = BTreeMap::new();
    for t in threads {
        model.extend(t.join().unwrap());
    }
    drop(db);
    assert_holds(dir.path(), CompressionType::None, &model);
}
