//! `--sync everysec`: the background task syncs the WAL about once a second (the engine's sync
//! counter in INFO grows while nothing else syncs), its empty synced batches leave a database
//! that `screedb check` accepts and that reopens with every key.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::time::Duration;

use common::{config, connect};
use redis::Commands;
use screedb_server::SyncMode;

fn wal_syncs(c: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO").arg("screedb").query(c).unwrap();
    let line = info
        .lines()
        .find(|l| l.starts_with("write groups / syncs"))
        .unwrap_or_else(|| panic!("no sync counter in {info}"));
    line.rsplit('/').next().unwrap().trim().parse().unwrap()
}

#[test]
fn everysec_syncs_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.sync = SyncMode::Everysec;
    let server = screedb_server::spawn(cfg).unwrap();
    let mut c = connect(&server);
    for i in 0..100 {
        c.set::<_, _, ()>(format!("k{i}"), i).unwrap();
    }
    let before = wal_syncs(&mut c);
    // About one sync a second: at least two in 3.5 s even when a loaded machine delays a
    // tick, and nowhere near one per write (100 were acknowledged before the window).
    std::thread::sleep(Duration::from_millis(3500));
    let after = wal_syncs(&mut c);
    assert!(
        (2..=5).contains(&(after - before)),
        "{before} -> {after} syncs in 3.5 s"
    );
    drop(c);
    server.shutdown().unwrap();

    let report = screedb::check::check_database(dir.path(), &screedb::Options::default()).unwrap();
    assert!(report.last_sequence >= 100, "{report:?}");
    let server = screedb_server::spawn(config(dir.path())).unwrap();
    let mut c = connect(&server);
    assert_eq!(c.get::<_, i64>("k99").unwrap(), 99);
    server.shutdown().unwrap();
}
