//! INCR is atomic: 8 connections incrementing the same keys concurrently lose no increment, and
//! HINCRBY likewise.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::{connect, start};
use redis::Commands;

#[test]
fn concurrent_increments_are_not_lost() {
    let (server, _dir) = start();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let mut c = connect(&server);
            std::thread::spawn(move || {
                for i in 0..500 {
                    let _: i64 = c.incr("counter", 1).unwrap();
                    let _: i64 = c.hincr("hash", format!("f{}", i % 3), 2).unwrap();
                    let _: i64 = redis::cmd("DECRBY")
                        .arg("down")
                        .arg(3)
                        .query(&mut c)
                        .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = connect(&server);
    assert_eq!(c.get::<_, i64>("counter").unwrap(), 8 * 500);
    assert_eq!(c.get::<_, i64>("down").unwrap(), -3 * 8 * 500);
    let total: i64 = (0..3)
        .map(|f| c.hget::<_, _, i64>("hash", format!("f{f}")).unwrap())
        .sum();
    assert_eq!(total, 2 * 8 * 500);
    server.shutdown().unwrap();
}
