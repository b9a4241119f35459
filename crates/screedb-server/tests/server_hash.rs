//! Hash commands, including a hash deleted and re-created (a new version: old fields gone).

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::collections::HashMap;

use common::{connect, err, run, start};
use redis::{Commands, Value};

#[test]
fn hashes_behave_as_in_redis() {
    let (server, _dir) = start();
    let mut c = connect(&server);
    assert_eq!(
        run(&mut c, &["HSET", "h", "a", "1", "b", "2"]).unwrap(),
        Value::Int(2)
    );
    assert_eq!(
        run(&mut c, &["HSET", "h", "a", "10", "c", "3", "c", "4"]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(run(&mut c, &["HMSET", "h", "d", "5"]).unwrap(), Value::Okay);
    assert_eq!(
        err(&mut c, &["HSET", "h", "a"]),
        "ERR wrong number of arguments for 'hset' command"
    );
    assert_eq!(c.hget::<_, _, String>("h", "a").unwrap(), "10");
    assert_eq!(c.hget::<_, _, String>("h", "c").unwrap(), "4");
    assert_eq!(run(&mut c, &["HGET", "h", "zz"]).unwrap(), Value::Nil);
    assert_eq!(run(&mut c, &["HGET", "nohash", "zz"]).unwrap(), Value::Nil);
    let got: Vec<Option<String>> = redis::cmd("HMGET")
        .arg("h")
        .arg("a")
        .arg("x")
        .arg("d")
        .query(&mut c)
        .unwrap();
    assert_eq!(
        got,
        vec![Some("10".into()), None, Some("5".into())],
        "3 of 4 fields: one scan"
    );
    let got: Vec<Option<String>> = redis::cmd("HMGET")
        .arg("h")
        .arg("b")
        .arg("x")
        .query(&mut c)
        .unwrap();
    assert_eq!(got, vec![Some("2".into()), None], "2 fields: a lookup each");
    let all: HashMap<String, String> = c.hgetall("h").unwrap();
    let want: HashMap<String, String> = [("a", "10"), ("b", "2"), ("c", "4"), ("d", "5")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(all, want);
    let keys: Vec<String> = c.hkeys("h").unwrap();
    assert_eq!(keys, vec!["a", "b", "c", "d"]);
    let vals: Vec<String> = c.hvals("h").unwrap();
    assert_eq!(vals, vec!["10", "2", "4", "5"]);
    assert_eq!(run(&mut c, &["HLEN", "h"]).unwrap(), Value::Int(4));
    assert_eq!(run(&mut c, &["HEXISTS", "h", "b"]).unwrap(), Value::Int(1));
    assert_eq!(run(&mut c, &["HEXISTS", "h", "q"]).unwrap(), Value::Int(0));
    assert_eq!(
        run(&mut c, &["HINCRBY", "h", "a", "5"]).unwrap(),
        Value::Int(15)
    );
    assert_eq!(
        run(&mut c, &["HINCRBY", "h", "new", "-3"]).unwrap(),
        Value::Int(-3)
    );
    assert_eq!(run(&mut c, &["HLEN", "h"]).unwrap(), Value::Int(5));
    c.hset::<_, _, _, ()>("h", "txt", "abc").unwrap();
    assert_eq!(
        err(&mut c, &["HINCRBY", "h", "txt", "1"]),
        "ERR hash value is not an integer"
    );
    assert_eq!(
        run(&mut c, &["HDEL", "h", "txt", "new", "new", "none"]).unwrap(),
        Value::Int(2)
    );
    assert_eq!(run(&mut c, &["HLEN", "h"]).unwrap(), Value::Int(4));
    assert_eq!(
        run(&mut c, &["TYPE", "h"]).unwrap(),
        Value::SimpleString("hash".into())
    );

    // Removing the last field removes the key.
    assert_eq!(
        run(&mut c, &["HDEL", "h", "a", "b", "c", "d"]).unwrap(),
        Value::Int(4)
    );
    assert_eq!(run(&mut c, &["EXISTS", "h"]).unwrap(), Value::Int(0));

    // DEL then HSET: none of the old fields come back.
    c.hset_multiple::<_, _, _, ()>("g", &[("x", "1"), ("y", "2")])
        .unwrap();
    assert_eq!(run(&mut c, &["DEL", "g"]).unwrap(), Value::Int(1));
    assert_eq!(run(&mut c, &["HLEN", "g"]).unwrap(), Value::Int(0));
    c.hset::<_, _, _, ()>("g", "z", "3").unwrap();
    let all: HashMap<String, String> = c.hgetall("g").unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(run(&mut c, &["HGET", "g", "x"]).unwrap(), Value::Nil);

    // WRONGTYPE.
    c.set::<_, _, ()>("s", "v").unwrap();
    for words in [
        &["HSET", "s", "f", "v"][..],
        &["HGET", "s", "f"],
        &["HGETALL", "s"],
        &["HDEL", "s", "f"],
        &["HLEN", "s"],
        &["HINCRBY", "s", "f", "1"],
        &["HMGET", "s", "f"],
    ] {
        assert!(err(&mut c, words).starts_with("WRONGTYPE"), "{words:?}");
    }
    server.shutdown().unwrap();
}
