//! Key-space commands: SCAN (cursor, MATCH, COUNT, TYPE) visits every key exactly once, KEYS,
//! TYPE, DBSIZE, FLUSHDB, EXPIRE/PEXPIRE/EXPIREAT options, TTL/PTTL, PERSIST.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::collections::BTreeSet;

use common::{connect, err, run, start};
use redis::{Commands, Value};

fn scan_all(c: &mut redis::Connection, extra: &[&str]) -> Vec<String> {
    let mut cursor = "0".to_string();
    let mut out = Vec::new();
    let mut rounds = 0;
    loop {
        let mut cmd = redis::cmd("SCAN");
        cmd.arg(&cursor);
        for e in extra {
            cmd.arg(*e);
        }
        let (next, keys): (String, Vec<String>) = cmd.query(c).unwrap();
        out.extend(keys);
        rounds += 1;
        if next == "0" {
            break;
        }
        cursor = next;
        assert!(rounds < 10_000, "SCAN does not end");
    }
    out
}

#[test]
fn key_space_commands_behave_as_in_redis() {
    let (server, _dir) = start();
    let mut c = connect(&server);
    for i in 0..250 {
        c.set::<_, _, ()>(format!("user:{i}"), i).unwrap();
    }
    c.hset::<_, _, _, ()>("hash:1", "f", "v").unwrap();
    c.zadd::<_, _, _, ()>("zset:1", "m", 1).unwrap();
    assert_eq!(run(&mut c, &["DBSIZE"]).unwrap(), Value::Int(252));

    let all = scan_all(&mut c, &["COUNT", "7"]);
    let unique: BTreeSet<_> = all.iter().cloned().collect();
    assert_eq!(all.len(), 252, "every key once");
    assert_eq!(unique.len(), 252);
    let users = scan_all(&mut c, &["MATCH", "user:1?", "COUNT", "100"]);
    assert_eq!(users.len(), 10);
    assert_eq!(scan_all(&mut c, &["TYPE", "hash"]), vec!["hash:1"]);
    assert_eq!(
        scan_all(&mut c, &["TYPE", "zset", "MATCH", "z*"]),
        vec!["zset:1"]
    );
    assert_eq!(err(&mut c, &["SCAN", "x"]), "ERR invalid cursor");
    assert_eq!(
        err(&mut c, &["SCAN", "0", "COUNT", "0"]),
        "ERR syntax error"
    );
    let mut keys: Vec<String> = c.keys("user:2??").unwrap();
    keys.sort();
    assert_eq!(keys.len(), 50);
    assert_eq!(keys[0], "user:200");
    assert_eq!(
        run(&mut c, &["TYPE", "user:1"]).unwrap(),
        Value::SimpleString("string".into())
    );
    assert_eq!(
        run(&mut c, &["TYPE", "zset:1"]).unwrap(),
        Value::SimpleString("zset".into())
    );
    assert_eq!(
        run(&mut c, &["TYPE", "nothing"]).unwrap(),
        Value::SimpleString("none".into())
    );

    // EXPIRE family.
    assert_eq!(run(&mut c, &["TTL", "nothing"]).unwrap(), Value::Int(-2));
    assert_eq!(run(&mut c, &["TTL", "user:1"]).unwrap(), Value::Int(-1));
    assert_eq!(
        run(&mut c, &["EXPIRE", "user:1", "100"]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(run(&mut c, &["TTL", "user:1"]).unwrap(), Value::Int(100));
    assert_eq!(
        run(&mut c, &["EXPIRE", "user:1", "50", "NX"]).unwrap(),
        Value::Int(0)
    );
    assert_eq!(
        run(&mut c, &["EXPIRE", "user:1", "50", "GT"]).unwrap(),
        Value::Int(0)
    );
    assert_eq!(
        run(&mut c, &["EXPIRE", "user:1", "50", "LT"]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(
        run(&mut c, &["EXPIRE", "user:2", "50", "XX"]).unwrap(),
        Value::Int(0)
    );
    assert_eq!(
        run(&mut c, &["PEXPIRE", "hash:1", "200000"]).unwrap(),
        Value::Int(1)
    );
    let pttl: i64 = c.pttl("hash:1").unwrap();
    assert!((190_000..=200_000).contains(&pttl), "{pttl}");
    assert_eq!(
        run(&mut c, &["EXPIRE", "nothing", "10"]).unwrap(),
        Value::Int(0)
    );
    assert_eq!(run(&mut c, &["PERSIST", "hash:1"]).unwrap(), Value::Int(1));
    assert_eq!(run(&mut c, &["PERSIST", "hash:1"]).unwrap(), Value::Int(0));
    assert_eq!(run(&mut c, &["TTL", "hash:1"]).unwrap(), Value::Int(-1));
    assert_eq!(
        run(&mut c, &["EXPIREAT", "user:3", "1"]).unwrap(),
        Value::Int(1),
        "a time in the past deletes"
    );
    assert_eq!(run(&mut c, &["EXISTS", "user:3"]).unwrap(), Value::Int(0));
    assert_eq!(
        run(&mut c, &["PEXPIRE", "user:4", "-1"]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(run(&mut c, &["GET", "user:4"]).unwrap(), Value::Nil);
    assert_eq!(
        err(&mut c, &["EXPIRE", "user:5", "x"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(run(&mut c, &["DBSIZE"]).unwrap(), Value::Int(250));

    assert_eq!(run(&mut c, &["FLUSHDB"]).unwrap(), Value::Okay);
    assert_eq!(run(&mut c, &["DBSIZE"]).unwrap(), Value::Int(0));
    assert!(scan_all(&mut c, &[]).is_empty());
    assert_eq!(run(&mut c, &["HLEN", "hash:1"]).unwrap(), Value::Int(0));
    server.shutdown().unwrap();
}
