//! Limits and bad input: an oversized bulk, too many arguments, an over-long inline line and
//! garbage bytes each get an error reply and a closed connection, while other clients go on
//! being served; the client limit and the output-buffer limit disconnect.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::io::Write;

use common::{closed, config, connect, exchange, raw, run};
use redis::Value;
use screedb_server::resp::Limits;

#[test]
fn bad_requests_are_answered_and_closed() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.limits = Limits {
        max_bulk_len: 1024,
        max_args: 16,
        max_inline_len: 256,
        max_query_buffer: 64 << 10,
    };
    cfg.max_clients = 4;
    cfg.max_output_buffer = 64 << 10;
    let server = screedb_server::spawn(cfg).unwrap();
    let mut bystander = connect(&server);
    assert_eq!(
        run(&mut bystander, &["SET", "k", "v"]).unwrap(),
        Value::Okay
    );

    let cases: [(&[u8], &str); 6] = [
        (
            b"*1\r\n$1025\r\n",
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*17\r\n",
            "-ERR Protocol error: invalid multibulk length\r\n",
        ),
        (
            b"*1\r\n$-3\r\n",
            "-ERR Protocol error: invalid bulk length\r\n",
        ),
        (
            b"*2\r\n:12\r\n",
            "-ERR Protocol error: expected '$', got ':'\r\n",
        ),
        (
            b"*1\r\n$3\r\nGETxx",
            "-ERR Protocol error: bulk string not followed by CRLF\r\n",
        ),
        (
            b"SET \"unbalanced\r\n",
            "-ERR Protocol error: unbalanced quotes in request\r\n",
        ),
    ];
    for (request, reply) in cases {
        let mut s = raw(server.addr());
        let (got, _) = exchange(&mut s, request, reply.len());
        assert_eq!(String::from_utf8_lossy(&got), reply);
        assert!(closed(&mut s), "closed after {reply}");
    }
    // An inline line longer than the limit, without its end.
    let mut s = raw(server.addr());
    let (got, _) = exchange(&mut s, &[b'a'; 300], 10);
    assert!(got.starts_with(b"-ERR Protocol error: too big inline request"));
    assert!(closed(&mut s));
    // Garbage: random bytes (with no newline, longer than the inline limit) are refused too.
    let mut s = raw(server.addr());
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 | 1)
        .filter(|&b| b != b'\n')
        .collect();
    let _ = s.write_all(&garbage);
    assert!(closed(&mut s));

    // The output-buffer limit: a reply bigger than it drops the client.
    for i in 0..100 {
        run(
            &mut bystander,
            &["SET", &format!("big{i}"), &"x".repeat(1000)],
        )
        .unwrap();
    }
    let mut s = raw(server.addr());
    let mut req = Vec::new();
    for chunk in 0..10 {
        req.extend_from_slice(b"*11\r\n$4\r\nMGET\r\n");
        for i in 0..10 {
            let k = format!("big{}", chunk * 10 + i);
            req.extend_from_slice(format!("${}\r\n{k}\r\n", k.len()).as_bytes());
        }
    }
    s.write_all(&req).unwrap();
    // 10 replies of 10 KB each, 100 KB in all, are sent as they come (at most half the limit
    // waits at a time): not a violation.
    let (got, _) = exchange(&mut s, b"", 100 * 1000);
    assert!(got.len() >= 100 * 1000);

    // The client limit: the bystander plus 3 more is the limit; the next is refused. (Closed
    // connections leave the count as soon as the server notices.)
    drop(s);
    std::thread::sleep(std::time::Duration::from_millis(1000));
    let held: Vec<_> = (0..3).map(|_| connect(&server)).collect();
    let mut extra = raw(server.addr());
    let (got, _) = exchange(&mut extra, b"PING\r\n", 38);
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-ERR max number of clients reached\r\n"
    );
    drop(held);

    // The bystander was served throughout.
    assert_eq!(
        run(&mut bystander, &["GET", "k"]).unwrap(),
        Value::BulkString(b"v".to_vec())
    );
    drop(bystander);
    server.shutdown().unwrap();
}

#[test]
fn a_reply_beyond_the_output_limit_drops_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.max_output_buffer = 16 << 10;
    let server = screedb_server::spawn(cfg).unwrap();
    let mut c = connect(&server);
    run(&mut c, &["SET", "big", &"x".repeat(20 << 10)]).unwrap();
    let mut s = raw(server.addr());
    s.write_all(b"GET big\r\n").unwrap();
    assert!(closed(&mut s));
    assert_eq!(
        run(&mut c, &["STRLEN", "big"]).unwrap(),
        Value::Int(20 << 10)
    );
    server.shutdown().unwrap();
}
