//! What redis-cli and redis-benchmark ask before they start, and what operators read: PING,
//! ECHO, SELECT, COMMAND (COUNT, INFO, DOCS), CONFIG GET, INFO (sections, commandstats with
//! counts, engine properties), CLIENT, QUIT.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::{connect, err, exchange, raw, run, start};
use redis::Value;

#[test]
fn admin_commands_answer_what_clients_ask() {
    let (server, _dir) = start();
    let mut c = connect(&server);
    assert_eq!(
        run(&mut c, &["PING"]).unwrap(),
        Value::SimpleString("PONG".into())
    );
    assert_eq!(
        run(&mut c, &["PING", "hi"]).unwrap(),
        Value::BulkString(b"hi".to_vec())
    );
    assert_eq!(
        run(&mut c, &["ECHO", "x y"]).unwrap(),
        Value::BulkString(b"x y".to_vec())
    );
    assert_eq!(run(&mut c, &["SELECT", "0"]).unwrap(), Value::Okay);
    assert_eq!(
        err(&mut c, &["SELECT", "1"]),
        "ERR DB index is out of range"
    );

    let Value::Int(count) = run(&mut c, &["COMMAND", "COUNT"]).unwrap() else {
        panic!()
    };
    assert!(count > 50);
    let Value::Array(all) = run(&mut c, &["COMMAND"]).unwrap() else {
        panic!()
    };
    assert_eq!(all.len() as i64, count);
    let Value::Array(info) = run(&mut c, &["COMMAND", "INFO", "get", "nosuch"]).unwrap() else {
        panic!()
    };
    let Value::Array(get) = &info[0] else {
        panic!()
    };
    assert_eq!(get[0], Value::BulkString(b"get".to_vec()));
    assert_eq!(get[1], Value::Int(2));
    assert_eq!(info[1], Value::Nil);
    assert_eq!(
        run(&mut c, &["COMMAND", "DOCS"]).unwrap(),
        Value::Array(vec![])
    );

    let save: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("save")
        .query(&mut c)
        .unwrap();
    assert_eq!(save, vec!["save", ""]);
    let aof: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("append*")
        .query(&mut c)
        .unwrap();
    assert_eq!(aof, vec!["appendonly", "yes", "appendfsync", "no"]);
    let none: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("maxmemory")
        .query(&mut c)
        .unwrap();
    assert!(none.is_empty());

    for _ in 0..3 {
        run(&mut c, &["SET", "a", "1"]).unwrap();
    }
    let _ = run(&mut c, &["INCR", "a", "b"]);
    let text: String = redis::cmd("INFO").query(&mut c).unwrap();
    for section in [
        "# Server",
        "# Clients",
        "# Stats",
        "# Commandstats",
        "# Keyspace",
    ] {
        assert!(text.contains(section), "{section} in {text}");
    }
    assert!(text.contains("cmdstat_set:calls=3,usec="), "{text}");
    assert!(text.contains("connected_clients:1"));
    let keyspace: String = redis::cmd("INFO").arg("keyspace").query(&mut c).unwrap();
    assert!(keyspace.contains("db0:keys=1,"), "{keyspace}");
    let engine: String = redis::cmd("INFO").arg("screedb").query(&mut c).unwrap();
    assert!(
        engine.contains("screedb_approximate_memory_usage:"),
        "{engine}"
    );
    assert!(!engine.contains("# Server"));
    let stats = screedb::Db::open(
        tempfile::tempdir().unwrap().path(),
        screedb::Options::default().create_if_missing(true),
    )
    .unwrap()
    .stats()
    .to_string();
    let first = stats
        .lines()
        .next()
        .unwrap()
        .split(':')
        .next()
        .unwrap()
        .to_string();
    assert!(
        engine.contains(&first),
        "INFO screedb carries the lines of `screedb stats` ({first})"
    );

    assert_eq!(
        run(&mut c, &["CLIENT", "SETNAME", "me"]).unwrap(),
        Value::Okay
    );
    assert_eq!(
        run(&mut c, &["CLIENT", "GETNAME"]).unwrap(),
        Value::BulkString(b"me".to_vec())
    );
    assert_eq!(
        run(&mut c, &["CLIENT", "SETINFO", "lib-name", "x"]).unwrap(),
        Value::Okay
    );

    let mut s = raw(server.addr());
    let (got, closed) = exchange(&mut s, b"QUIT\r\nPING\r\n", 100);
    assert_eq!(&got[..], b"+OK\r\n".as_slice());
    assert!(closed);
    server.shutdown().unwrap();
}
