//! Sorted sets as YCSB uses them: ZADD (with its flags), ZREM, ZSCORE, ZCARD, ZRANGE,
//! ZRANGEBYSCORE with LIMIT, negative and infinite scores in order.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::{connect, err, run, start};
use redis::{Commands, Value};

fn strings(v: Value) -> Vec<String> {
    match v {
        Value::Array(items) => items
            .into_iter()
            .map(|i| match i {
                Value::BulkString(b) => String::from_utf8(b).unwrap(),
                other => panic!("not a bulk string: {other:?}"),
            })
            .collect(),
        other => panic!("not an array: {other:?}"),
    }
}

#[test]
fn sorted_sets_behave_as_in_redis() {
    let (server, _dir) = start();
    let mut c = connect(&server);
    assert_eq!(
        run(
            &mut c,
            &[
                "ZADD", "z", "1", "a", "2", "b", "-3.5", "c", "+inf", "top", "-inf", "bottom"
            ]
        )
        .unwrap(),
        Value::Int(5)
    );
    assert_eq!(
        run(&mut c, &["ZADD", "z", "10", "a"]).unwrap(),
        Value::Int(0)
    );
    assert_eq!(
        run(&mut c, &["ZADD", "z", "CH", "11", "a", "0", "d"]).unwrap(),
        Value::Int(2)
    );
    assert_eq!(
        run(&mut c, &["ZADD", "z", "NX", "99", "a"]).unwrap(),
        Value::Int(0)
    );
    assert_eq!(
        run(&mut c, &["ZADD", "z", "XX", "99", "new"]).unwrap(),
        Value::Int(0)
    );
    assert_eq!(
        run(&mut c, &["ZADD", "z", "GT", "CH", "5", "a"]).unwrap(),
        Value::Int(0)
    );
    assert_eq!(
        run(&mut c, &["ZADD", "z", "INCR", "1", "a"]).unwrap(),
        Value::BulkString(b"12".to_vec())
    );
    assert_eq!(
        err(&mut c, &["ZADD", "z", "x", "a"]),
        "ERR value is not a valid float"
    );
    assert_eq!(
        err(&mut c, &["ZADD", "z", "NX", "XX", "1", "a"]),
        "ERR XX and NX options at the same time are not compatible"
    );
    assert_eq!(
        err(&mut c, &["ZADD", "z", "1"]),
        "ERR wrong number of arguments for 'zadd' command"
    );
    assert_eq!(run(&mut c, &["ZCARD", "z"]).unwrap(), Value::Int(6));
    assert_eq!(c.zscore::<_, _, f64>("z", "c").unwrap(), -3.5);
    assert_eq!(
        run(&mut c, &["ZSCORE", "z", "a"]).unwrap(),
        Value::BulkString(b"12".to_vec())
    );
    assert_eq!(
        run(&mut c, &["ZSCORE", "z", "top"]).unwrap(),
        Value::BulkString(b"inf".to_vec())
    );
    assert_eq!(run(&mut c, &["ZSCORE", "z", "none"]).unwrap(), Value::Nil);

    assert_eq!(
        strings(run(&mut c, &["ZRANGE", "z", "0", "-1"]).unwrap()),
        ["bottom", "c", "d", "b", "a", "top"]
    );
    assert_eq!(
        strings(run(&mut c, &["ZRANGE", "z", "1", "2"]).unwrap()),
        ["c", "d"]
    );
    assert_eq!(
        strings(run(&mut c, &["ZRANGE", "z", "-2", "-1"]).unwrap()),
        ["a", "top"]
    );
    assert_eq!(
        strings(run(&mut c, &["ZRANGE", "z", "5", "100"]).unwrap()),
        ["top"]
    );
    assert!(strings(run(&mut c, &["ZRANGE", "z", "3", "1"]).unwrap()).is_empty());
    assert!(strings(run(&mut c, &["ZRANGE", "z", "0", "-100"]).unwrap()).is_empty());
    assert_eq!(
        strings(run(&mut c, &["ZRANGE", "z", "-100", "0"]).unwrap()),
        ["bottom"]
    );
    assert_eq!(
        strings(run(&mut c, &["ZRANGE", "z", "1", "2", "WITHSCORES"]).unwrap()),
        ["c", "-3.5", "d", "0"]
    );

    assert_eq!(
        strings(run(&mut c, &["ZRANGEBYSCORE", "z", "0", "12"]).unwrap()),
        ["d", "b", "a"]
    );
    assert_eq!(
        strings(run(&mut c, &["ZRANGEBYSCORE", "z", "(0", "(12"]).unwrap()),
        ["b"]
    );
    assert_eq!(
        strings(
            run(
                &mut c,
                &["ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1", "3"]
            )
            .unwrap()
        ),
        ["c", "d", "b"]
    );
    assert_eq!(
        strings(
            run(
                &mut c,
                &[
                    "ZRANGEBYSCORE",
                    "z",
                    "-inf",
                    "0",
                    "WITHSCORES",
                    "LIMIT",
                    "0",
                    "2"
                ]
            )
            .unwrap()
        ),
        ["bottom", "-inf", "c", "-3.5"]
    );
    assert_eq!(
        err(&mut c, &["ZRANGEBYSCORE", "z", "x", "1"]),
        "ERR min or max is not a float"
    );

    assert_eq!(
        run(&mut c, &["ZREM", "z", "a", "a", "none", "b"]).unwrap(),
        Value::Int(2)
    );
    assert_eq!(run(&mut c, &["ZCARD", "z"]).unwrap(), Value::Int(4));
    assert_eq!(
        strings(run(&mut c, &["ZRANGEBYSCORE", "z", "-1", "100"]).unwrap()),
        ["d"]
    );
    assert_eq!(
        run(&mut c, &["ZREM", "z", "bottom", "c", "d", "top"]).unwrap(),
        Value::Int(4)
    );
    assert_eq!(run(&mut c, &["EXISTS", "z"]).unwrap(), Value::Int(0));
    assert_eq!(
        run(&mut c, &["TYPE", "z"]).unwrap(),
        Value::SimpleString("none".into())
    );

    // YCSB's pattern: a score index by hashed key, scanned with LIMIT.
    for i in 0..100u64 {
        c.zadd::<_, _, _, ()>("index", format!("user{i:03}"), i * 7 % 100)
            .unwrap();
    }
    let page: Vec<String> = redis::cmd("ZRANGEBYSCORE")
        .arg("index")
        .arg(50)
        .arg("+inf")
        .arg("LIMIT")
        .arg(0)
        .arg(5)
        .query(&mut c)
        .unwrap();
    assert_eq!(page.len(), 5);
    let scores: Vec<f64> = page.iter().map(|m| c.zscore("index", m).unwrap()).collect();
    assert!(
        scores.windows(2).all(|w| w[0] <= w[1]) && scores[0] >= 50.0,
        "{scores:?}"
    );

    c.set::<_, _, ()>("s", "v").unwrap();
    assert!(err(&mut c, &["ZADD", "s", "1", "a"]).starts_with("WRONGTYPE"));
    assert!(err(&mut c, &["ZRANGE", "s", "0", "1"]).starts_with("WRONGTYPE"));
    assert!(err(&mut c, &["ZSCORE", "s", "a"]).starts_with("WRONGTYPE"));
    server.shutdown().unwrap();
}
