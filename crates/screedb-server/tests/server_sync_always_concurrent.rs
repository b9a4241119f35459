//! `--sync always` with many connections: each synced write (single commands and pipelined SET
//! runs) waits for its fsync off the connection threads, reads on the same threads are served
//! meanwhile, and after a restart every acknowledged write is there.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::{config, connect};
use redis::Commands;
use screedb_server::SyncMode;

#[test]
fn synced_writes_from_many_connections_are_acknowledged_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.sync = SyncMode::Always;
    let server = screedb_server::spawn(cfg.clone()).unwrap();
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let mut c = connect(&server);
            std::thread::spawn(move || {
                for round in 0..20 {
                    // A pipelined run of plain SETs: one synced batch.
                    let mut pipe = redis::pipe();
                    for i in 0..10 {
                        pipe.set(format!("k{t}-{round}-{i}"), format!("v{round}"))
                            .ignore();
                    }
                    pipe.query::<()>(&mut c).unwrap();
                    let _: i64 = c.incr("counter", 1).unwrap();
                    // A read between synced writes, on whichever thread serves it.
                    let got: String = c.get(format!("k{t}-{round}-9")).unwrap();
                    assert_eq!(got, format!("v{round}"));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    server.shutdown().unwrap();

    let server = screedb_server::spawn(cfg).unwrap();
    let mut c = connect(&server);
    assert_eq!(c.get::<_, i64>("counter").unwrap(), 6 * 20);
    for t in 0..6 {
        for round in 0..20 {
            for i in 0..10 {
                let got: String = c.get(format!("k{t}-{round}-{i}")).unwrap();
                assert_eq!(got, format!("v{round}"));
            }
        }
    }
    server.shutdown().unwrap();
}
