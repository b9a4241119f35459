//! Pipelines: a client's many commands in one write get their replies in order, through the
//! client library, as raw multibulk and inline requests, and split at every byte.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::io::Write;

use common::{connect, exchange, raw, start};

#[test]
fn pipelined_commands_reply_in_order() {
    let (server, _dir) = start();
    let mut c = connect(&server);
    let mut pipe = redis::pipe();
    for i in 0..1000 {
        pipe.cmd("SET").arg(format!("k{i}")).arg(i).ignore();
    }
    for i in 0..1000 {
        pipe.cmd("GET").arg(format!("k{i}"));
    }
    let got: Vec<i64> = pipe.query(&mut c).unwrap();
    assert_eq!(got, (0..1000).collect::<Vec<i64>>());

    // Raw: inline and multibulk mixed, sent one byte at a time.
    let mut s = raw(server.addr());
    let request =
        b"PING\r\n*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$2\r\nyz\r\nget x\r\n*1\r\n$4\r\nPING\r\n";
    for b in request.iter() {
        s.write_all(&[*b]).unwrap();
    }
    let wanted = b"+PONG\r\n+OK\r\n$2\r\nyz\r\n+PONG\r\n";
    let (got, _) = exchange(&mut s, b"", wanted.len());
    assert_eq!(
        String::from_utf8_lossy(&got),
        String::from_utf8_lossy(wanted)
    );
    server.shutdown().unwrap();
}
