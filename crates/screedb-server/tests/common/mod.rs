//! What every server test shares: an in-process server on 127.0.0.1:0 over a database in a
//! temporary directory, and small helpers around the `redis` crate and raw sockets.

#![allow(dead_code, reason = "each test file uses a different part")]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use screedb_server::{Config, RunningServer, SyncMode};

/// A small engine configuration so tests flush and compact quickly.
pub fn config(dir: &Path) -> Config {
    let mut c = Config::new(dir);
    c.bind = "127.0.0.1:0".to_string();
    c.sync = SyncMode::No;
    c.options.write_buffer_size = 256 << 10;
    c.sweep_interval = Duration::from_millis(20);
    c
}

/// A server over a fresh database; keep the directory alive as long as the server.
pub fn start() -> (RunningServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temporary directory");
    let server = screedb_server::spawn(config(dir.path())).expect("server starts");
    (server, dir)
}

/// A RESP2 connection.
pub fn connect(server: &RunningServer) -> redis::Connection {
    redis::Client::open(server.url())
        .expect("valid url")
        .get_connection()
        .expect("connects")
}

/// A RESP3 connection (the client sends HELLO 3 first).
pub fn connect_resp3(server: &RunningServer) -> redis::Connection {
    redis::Client::open(format!("{}?protocol=resp3", server.url()))
        .expect("valid url")
        .get_connection()
        .expect("connects with HELLO 3")
}

/// Runs a command given as words and returns its raw reply.
pub fn run(con: &mut redis::Connection, words: &[&str]) -> redis::RedisResult<redis::Value> {
    let mut cmd = redis::cmd(words[0]);
    for w in &words[1..] {
        cmd.arg(*w);
    }
    cmd.query(con)
}

/// The error text of a command that must fail (code and message, as the server sent them).
pub fn err(con: &mut redis::Connection, words: &[&str]) -> String {
    match run(con, words) {
        Ok(v) => panic!("{words:?} should fail, got {v:?}"),
        Err(e) => {
            let code = e.code().unwrap_or("");
            let detail = e.detail().unwrap_or("");
            format!("{code} {detail}").trim().to_string()
        }
    }
}

/// A raw socket with a read timeout.
pub fn raw(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    s
}

/// Sends `bytes` and reads until `expected` bytes arrived or the peer closed; returns them and
/// whether the peer closed.
pub fn exchange(s: &mut TcpStream, bytes: &[u8], expected: usize) -> (Vec<u8>, bool) {
    s.write_all(bytes).expect("send");
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while out.len() < expected {
        match s.read(&mut buf) {
            Ok(0) => return (out, true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(_) => return (out, false),
        }
    }
    (out, false)
}

/// Reads until the peer closes (or 5 s pass); true if it closed.
pub fn closed(s: &mut TcpStream) -> bool {
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// The number `field` has in an INFO reply's text.
pub fn info_number(info: &str, field: &str) -> u64 {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {info}"))
}
