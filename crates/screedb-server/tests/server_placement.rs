//! Connections that pipeline are placed over the connection threads: one handed to another
//! thread keeps its settings (authentication, protocol, name), the partial request it had sent
//! and its place in the client count, and answers as before.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::{config, exchange, info_number, raw};

#[test]
fn a_pipelining_connection_moves_with_its_state() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.requirepass = Some("s3cret".to_string());
    // Two connection threads (what `spawn` runs): pipelining connections alternate between them.
    let server = screedb_server::spawn(cfg).unwrap();

    let mut conns = Vec::new();
    for c in 0..4 {
        let mut s = raw(server.addr());
        let setup = format!("AUTH s3cret\r\nCLIENT SETNAME conn{c}\r\n");
        let (got, _) = exchange(&mut s, setup.as_bytes(), 10);
        assert_eq!(&got[..], b"+OK\r\n+OK\r\n".as_slice());
        // RESP3 from here on: HELLO's map is read and checked for the protocol field only.
        let (got, _) = exchange(&mut s, b"HELLO 3\r\n", 1);
        let mut hello = got;
        while !String::from_utf8_lossy(&hello).contains("proto\r\n:3\r\n") {
            let (more, closed) = exchange(&mut s, b"", 1);
            assert!(!closed);
            hello.extend(more);
        }
        conns.push(s);
    }
    // Each sends a pipeline in one write, with half of the next request behind it.
    for (c, s) in conns.iter_mut().enumerate() {
        let mut pipeline = String::new();
        let mut replies = String::new();
        for i in 0..50 {
            pipeline.push_str(&format!("SET c{c}k{i} v{i}\r\n"));
            replies.push_str("+OK\r\n");
        }
        for i in 0..50 {
            pipeline.push_str(&format!("GET c{c}k{i}\r\n"));
            let v = format!("v{i}");
            replies.push_str(&format!("${}\r\n{v}\r\n", v.len()));
        }
        pipeline.push_str("*2\r\n$3\r\nGET\r\n$4\r\nc");
        let (got, _) = exchange(s, pipeline.as_bytes(), replies.len());
        assert_eq!(String::from_utf8_lossy(&got), replies);
    }
    // Wherever each one runs now, it finishes its request, is still authenticated, speaks
    // RESP3 (a null is `_`) and has its name.
    for (c, s) in conns.iter_mut().enumerate() {
        let rest = format!("{}k7\r\nGET missing\r\nCLIENT GETNAME\r\n", c);
        let name = format!("conn{c}");
        let wanted = format!("$2\r\nv7\r\n_\r\n${}\r\n{name}\r\n", name.len());
        let (got, _) = exchange(s, rest.as_bytes(), wanted.len());
        assert_eq!(String::from_utf8_lossy(&got), wanted, "connection {c}");
    }
    let url = format!("redis://:s3cret@{}/", server.addr());
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    let info: String = redis::cmd("INFO").query(&mut c).unwrap();
    // Round robin over two threads: every other pipelining connection moved.
    assert!(info_number(&info, "connections_moved") >= 1, "{info}");
    assert_eq!(info_number(&info, "connected_clients"), 5, "{info}");
    drop(conns);
    server.shutdown().unwrap();
}
