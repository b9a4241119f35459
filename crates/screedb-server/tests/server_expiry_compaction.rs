//! Expiry enforced by compaction: keys that expired and were never read again (the sweeper
//! held off) leave the disk when a compaction runs the server's expiry filter; live keys stay.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{config, connect, run};
use redis::Value;
use screedb_server::expiry::ExpiryFilter;

fn metadata_keys(db: &screedb::Db) -> Vec<Vec<u8>> {
    db.range(b"M".as_slice()..b"N".as_slice())
        .unwrap()
        .map(|kv| kv.unwrap().0)
        .collect()
}

#[test]
fn expired_keys_leave_the_disk_at_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    // No sweeping: only compaction may remove what expired.
    cfg.sweep_interval = Duration::from_secs(3600);
    let server = screedb_server::spawn(cfg).unwrap();
    let mut c = connect(&server);
    for i in 0..50 {
        let key = format!("gone{i}");
        assert_eq!(
            run(&mut c, &["SET", &key, "v", "PX", "50"]).unwrap(),
            Value::Okay
        );
        let key = format!("kept{i}");
        assert_eq!(run(&mut c, &["SET", &key, "v"]).unwrap(), Value::Okay);
    }
    std::thread::sleep(Duration::from_millis(120));
    drop(c);
    server.shutdown().unwrap();

    let options = |filter: bool| screedb::Options {
        compaction_filter: filter
            .then(|| Arc::new(ExpiryFilter) as Arc<dyn screedb::compaction::CompactionFilter>),
        ..screedb::Options::default()
    };
    // Without the filter a compaction keeps the expired metadata...
    let db = screedb::Db::open(dir.path(), options(false)).unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(metadata_keys(&db).len(), 100);
    db.close().unwrap();
    // ...with it, as the server opens the engine, they go.
    let db = screedb::Db::open(dir.path(), options(true)).unwrap();
    db.compact_range(None, None).unwrap();
    let left = metadata_keys(&db);
    assert_eq!(left.len(), 50, "{left:?}");
    assert!(left.iter().all(|k| k.starts_with(b"Mkept")), "{left:?}");
    db.close().unwrap();
}
