//! The string commands against a real client: replies, options and Redis's error wording.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::{connect, err, run, start};
use redis::{Commands, Value};

#[test]
fn strings_behave_as_in_redis() {
    let (server, _dir) = start();
    let mut c = connect(&server);

    // SET / GET and the options.
    assert_eq!(run(&mut c, &["SET", "k", "v"]).unwrap(), Value::Okay);
    assert_eq!(c.get::<_, String>("k").unwrap(), "v");
    assert_eq!(run(&mut c, &["set", "k", "w", "NX"]).unwrap(), Value::Nil);
    assert_eq!(
        run(&mut c, &["SET", "k", "w", "XX", "GET"]).unwrap(),
        Value::BulkString(b"v".to_vec())
    );
    assert_eq!(
        run(&mut c, &["SET", "nokey", "w", "XX"]).unwrap(),
        Value::Nil
    );
    assert_eq!(c.get::<_, Option<String>>("nokey").unwrap(), None);
    assert_eq!(run(&mut c, &["SET", "k2", "x", "GET"]).unwrap(), Value::Nil);
    assert_eq!(
        run(&mut c, &["SET", "t", "1", "EX", "100"]).unwrap(),
        Value::Okay
    );
    let ttl: i64 = c.ttl("t").unwrap();
    assert!((99..=100).contains(&ttl), "{ttl}");
    assert_eq!(
        run(&mut c, &["SET", "t", "2", "KEEPTTL"]).unwrap(),
        Value::Okay
    );
    assert!(c.ttl::<_, i64>("t").unwrap() > 0);
    assert_eq!(run(&mut c, &["SET", "t", "3"]).unwrap(), Value::Okay);
    assert_eq!(
        c.ttl::<_, i64>("t").unwrap(),
        -1,
        "a plain SET clears the TTL"
    );
    let far = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 1000)
        .to_string();
    assert_eq!(
        run(&mut c, &["SET", "t", "4", "EXAT", &far]).unwrap(),
        Value::Okay
    );
    assert!(c.pttl::<_, i64>("t").unwrap() > 990_000);
    assert_eq!(
        run(&mut c, &["SET", "t", "5", "PX", "100000"]).unwrap(),
        Value::Okay
    );
    assert!(c.pttl::<_, i64>("t").unwrap() > 99_000);
    assert_eq!(
        err(&mut c, &["SET", "t", "5", "EX", "0"]),
        "ERR invalid expire time in 'set' command"
    );
    assert_eq!(
        err(&mut c, &["SET", "t", "5", "EX", "x"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["SET", "t", "5", "NX", "XX"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["SET", "t", "5", "EX", "1", "PX", "1"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["SET", "t"]),
        "ERR wrong number of arguments for 'set' command"
    );

    // SETNX, SETEX, GETDEL.
    assert_eq!(run(&mut c, &["SETNX", "n", "1"]).unwrap(), Value::Int(1));
    assert_eq!(run(&mut c, &["SETNX", "n", "2"]).unwrap(), Value::Int(0));
    assert_eq!(
        run(&mut c, &["SETEX", "e", "50", "v"]).unwrap(),
        Value::Okay
    );
    assert!(c.ttl::<_, i64>("e").unwrap() > 40);
    assert_eq!(
        err(&mut c, &["SETEX", "e", "-1", "v"]),
        "ERR invalid expire time in 'setex' command"
    );
    assert_eq!(
        run(&mut c, &["GETDEL", "n"]).unwrap(),
        Value::BulkString(b"1".to_vec())
    );
    assert_eq!(run(&mut c, &["GETDEL", "n"]).unwrap(), Value::Nil);

    // MSET / MGET / EXISTS / DEL / UNLINK.
    assert_eq!(
        run(&mut c, &["MSET", "a", "1", "b", "2", "c", "3"]).unwrap(),
        Value::Okay
    );
    assert_eq!(
        err(&mut c, &["MSET", "a", "1", "b"]),
        "ERR wrong number of arguments for 'mset' command"
    );
    let got: Vec<Option<String>> = c.mget(&["a", "zz", "c"]).unwrap();
    assert_eq!(got, vec![Some("1".into()), None, Some("3".into())]);
    assert_eq!(
        run(&mut c, &["EXISTS", "a", "a", "zz", "b"]).unwrap(),
        Value::Int(3)
    );
    assert_eq!(
        run(&mut c, &["DEL", "a", "zz", "a"]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(run(&mut c, &["UNLINK", "b", "c"]).unwrap(), Value::Int(2));
    assert_eq!(
        run(&mut c, &["EXISTS", "a", "b", "c"]).unwrap(),
        Value::Int(0)
    );

    // Counters.
    assert_eq!(run(&mut c, &["INCR", "ctr"]).unwrap(), Value::Int(1));
    assert_eq!(
        run(&mut c, &["INCRBY", "ctr", "41"]).unwrap(),
        Value::Int(42)
    );
    assert_eq!(run(&mut c, &["DECR", "ctr"]).unwrap(), Value::Int(41));
    assert_eq!(
        run(&mut c, &["DECRBY", "ctr", "-9"]).unwrap(),
        Value::Int(50)
    );
    assert_eq!(c.get::<_, String>("ctr").unwrap(), "50");
    c.set::<_, _, ()>("big", i64::MAX.to_string()).unwrap();
    assert_eq!(
        err(&mut c, &["INCR", "big"]),
        "ERR increment or decrement would overflow"
    );
    c.set::<_, _, ()>("word", "abc").unwrap();
    assert_eq!(
        err(&mut c, &["INCR", "word"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["INCRBY", "ctr", "1.5"]),
        "ERR value is not an integer or out of range"
    );

    // APPEND / STRLEN, binary-safe values.
    assert_eq!(
        run(&mut c, &["APPEND", "s", "hello"]).unwrap(),
        Value::Int(5)
    );
    assert_eq!(
        run(&mut c, &["APPEND", "s", " world"]).unwrap(),
        Value::Int(11)
    );
    assert_eq!(run(&mut c, &["STRLEN", "s"]).unwrap(), Value::Int(11));
    assert_eq!(run(&mut c, &["STRLEN", "none"]).unwrap(), Value::Int(0));
    let binary: Vec<u8> = (0..=255).collect();
    c.set::<_, _, ()>(&binary[..], &binary[..]).unwrap();
    assert_eq!(c.get::<_, Vec<u8>>(&binary[..]).unwrap(), binary);
    c.set::<_, _, ()>("empty", "").unwrap();
    assert_eq!(
        c.get::<_, Option<Vec<u8>>>("empty").unwrap(),
        Some(Vec::new())
    );

    // WRONGTYPE where Redis gives it.
    c.hset::<_, _, _, ()>("h", "f", "v").unwrap();
    let wrong = "WRONGTYPE Operation against a key holding the wrong kind of value";
    assert_eq!(err(&mut c, &["GET", "h"]), wrong);
    assert_eq!(err(&mut c, &["INCR", "h"]), wrong);
    assert_eq!(err(&mut c, &["APPEND", "h", "x"]), wrong);
    assert_eq!(err(&mut c, &["SET", "h", "x", "GET"]), wrong);
    assert_eq!(err(&mut c, &["GETDEL", "h"]), wrong);
    assert_eq!(
        run(&mut c, &["MGET", "h"]).unwrap(),
        Value::Array(vec![Value::Nil])
    );
    // A plain SET replaces any type.
    assert_eq!(run(&mut c, &["SET", "h", "x"]).unwrap(), Value::Okay);
    assert_eq!(c.get::<_, String>("h").unwrap(), "x");
    assert_eq!(
        run(&mut c, &["HGET", "h", "f"]).unwrap_err().code(),
        Some("WRONGTYPE")
    );

    // Unknown commands, case-insensitive names.
    assert_eq!(
        err(&mut c, &["NOSUCH", "a"]),
        "ERR unknown command 'NOSUCH', with args beginning with: 'a'"
    );
    assert_eq!(
        run(&mut c, &["gEt", "h"]).unwrap(),
        Value::BulkString(b"x".to_vec())
    );
    server.shutdown().unwrap();
}
