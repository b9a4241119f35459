#![allow(clippy::unwrap_used, reason = "test code")]
//! Recovery replays a log's records in chunks: consecutive records are gathered and inserted
//! into the memtable with one sorted multi-insert (`db/open.rs`, `REPLAY_CHUNK`). Here a log of
//! far more records than a chunk, with keys overwritten and deleted across chunk boundaries and
//! batches of several operations, is replayed after a power cut into memtables small enough to
//! be flushed in the middle of the replay; every key must read as the last write left it.

mod crash_common;

use std::collections::BTreeMap;
use std::sync::Arc;

use crash_common::{ProcessFs, Rng};
use screedb::fs::{FaultFs, MemFs};
use screedb::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

fn options(fs: Arc<ProcessFs>, write_buffer_size: usize) -> Options {
    Options {
        create_if_missing: true,
        fs,
        write_buffer_size,
        ..Options::default()
    }
}

#[test]
fn a_log_replayed_in_chunks_reads_as_written() {
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let fs = Arc::new(ProcessFs::new(&fault));
    // A memtable that holds every write: they all stay in the one log.
    let db = Db::open("/db", options(fs.clone(), 64 << 20)).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = Rng::new(0x5eed_0123);
    for i in 0..20_000u32 {
        let mut batch = WriteBatch::new();
        // Mostly single operations (one record each), now and then a batch of three.
        let ops = if i % 50 == 0 { 3 } else { 1 };
        for _ in 0..ops {
            let key = format!("key{:05}", rng.below(3_000)).into_bytes();
            if rng.percent(10) {
                batch.delete(&key);
                model.remove(&key);
            } else {
                let value = format!("value{i}").into_bytes();
                batch.put(&key, &value);
                model.insert(key, value);
            }
        }
        let sync = i == 19_999;
        db.write(batch, &WriteOptions { sync }).unwrap();
    }
    fs.power_cut(FaultFs::crash);
    drop(db);

    // Memtables of 64 KiB: the replay flushes several level-0 tables as it goes.
    let db = Db::open("/db", options(Arc::new(ProcessFs::new(&fault)), 64 << 10)).unwrap();
    for k in 0..3_000u32 {
        let key = format!("key{k:05}").into_bytes();
        assert_eq!(
            db.get(&key).unwrap(),
            model.get(&key).cloned(),
            "key {}",
            String::from_utf8_lossy(&key)
        );
    }
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_first();
    let mut read = BTreeMap::new();
    while it.valid() {
        read.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    assert_eq!(read, model);
    // The replay did flush in the middle (its LOG line counts the tables it wrote).
    let log = screedb::fs::read_all(&fault, std::path::Path::new("/db/LOG")).unwrap();
    let log = String::from_utf8_lossy(&log);
    let line = log.lines().find(|l| l.contains("recovered:")).unwrap();
    let tables: usize = line
        .split(" tables written")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(tables >= 3, "{line}");
}
