//! Expiry: a key set with a short PX is gone on read once it expires, whatever its type; the
//! sweeper deletes expired keys (INFO expired_keys) and the subkeys of deleted and expired
//! hashes, which the test checks in the engine itself after the server closed it.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::time::{Duration, Instant};

use common::{config, connect, info_number, run};
use redis::{Commands, Value};

fn info_field(c: &mut redis::Connection, field: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("stats").query(c).unwrap();
    info_number(&info, field)
}

#[test]
fn expired_keys_vanish_on_read_and_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let server = screedb_server::spawn(config(dir.path())).unwrap();
    let mut c = connect(&server);
    assert_eq!(
        run(&mut c, &["SET", "short", "v", "PX", "150"]).unwrap(),
        Value::Okay
    );
    c.hset_multiple::<_, _, _, ()>("h", &[("a", "1"), ("b", "2")])
        .unwrap();
    assert_eq!(
        run(&mut c, &["PEXPIRE", "h", "150"]).unwrap(),
        Value::Int(1)
    );
    c.zadd::<_, _, _, ()>("z", "m", 1).unwrap();
    assert_eq!(
        run(&mut c, &["PEXPIRE", "z", "150"]).unwrap(),
        Value::Int(1)
    );
    c.hset_multiple::<_, _, _, ()>("deleted", &[("x", "1"), ("y", "2"), ("z", "3")])
        .unwrap();
    assert_eq!(run(&mut c, &["DEL", "deleted"]).unwrap(), Value::Int(1));
    c.set::<_, _, ()>("keep", "v").unwrap();
    assert_eq!(c.get::<_, String>("short").unwrap(), "v");
    std::thread::sleep(Duration::from_millis(200));

    // Gone on read, at once.
    assert_eq!(run(&mut c, &["GET", "short"]).unwrap(), Value::Nil);
    assert_eq!(
        run(&mut c, &["HGETALL", "h"]).unwrap(),
        Value::Array(vec![])
    );
    assert_eq!(run(&mut c, &["ZCARD", "z"]).unwrap(), Value::Int(0));
    assert_eq!(run(&mut c, &["TTL", "short"]).unwrap(), Value::Int(-2));
    assert_eq!(
        run(&mut c, &["EXISTS", "short", "h", "z", "keep"]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(run(&mut c, &["DBSIZE"]).unwrap(), Value::Int(1));
    // An expired key is absent for writers too: SET NX succeeds, HSET starts a new hash.
    c.hset::<_, _, _, ()>("h", "c", "3").unwrap();
    assert_eq!(run(&mut c, &["HLEN", "h"]).unwrap(), Value::Int(1));
    assert_eq!(run(&mut c, &["HGET", "h", "a"]).unwrap(), Value::Nil);

    // The sweeper deletes the expired metadata (two keys: "short" and "z").
    let deadline = Instant::now() + Duration::from_secs(10);
    while info_field(&mut c, "expired_keys") < 2 {
        assert!(Instant::now() < deadline, "active expiry did not run");
        std::thread::sleep(Duration::from_millis(20));
    }
    // Give the subkey collector a few rounds too (ten at the default 100 ms: a loaded machine
    // delays the sweeper's ticks).
    std::thread::sleep(Duration::from_millis(1000));
    drop(c);
    server.shutdown().unwrap();

    // In the engine: metadata of "h" (new) and "keep" only; subkeys of h's new version only.
    let db = screedb::Db::open(dir.path(), screedb::Options::default()).unwrap();
    let keys: Vec<Vec<u8>> = db
        .range(b"".as_slice()..)
        .unwrap()
        .map(|kv| kv.unwrap().0)
        .collect();
    let metas: Vec<&Vec<u8>> = keys.iter().filter(|k| k[0] == b'M').collect();
    assert_eq!(metas, vec![&b"Mh".to_vec(), &b"Mkeep".to_vec()]);
    let subs: Vec<&Vec<u8>> = keys.iter().filter(|k| k[0] != b'M').collect();
    assert_eq!(subs.len(), 1, "only h's live field is left: {subs:?}");
    assert!(subs[0].ends_with(b"c"));
    db.close().unwrap();
}
