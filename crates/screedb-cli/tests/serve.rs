//! `screedb serve` as a process: it answers the Redis protocol, stops cleanly on SIGTERM (exit
//! status 0, the data readable by `screedb scan` afterwards), and refuses a public address
//! without a password.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn serve_answers_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut child = Command::new(env!("CARGO_BIN_EXE_screedb"))
        .args([
            "serve",
            "--db",
            db.to_str().unwrap(),
            "--bind",
            "127.0.0.1:0",
            "--sync",
            "always",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    // "screedb: serving the Redis protocol on 127.0.0.1:PORT (sync always)"
    let addr = line
        .split(" on ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    let mut s = TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"PING\r\n*3\r\n$3\r\nSET\r\n$5\r\nhello\r\n$5\r\nworld\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    while got.len() < 12 {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed early");
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(&got[..], b"+PONG\r\n+OK\r\n".as_slice());

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "{exit:?}");
    // The connected client was closed.
    assert_eq!(s.read(&mut buf).unwrap_or(0), 0);

    // The database was closed cleanly: another process opens it and finds the key's metadata.
    let scan = Command::new(env!("CARGO_BIN_EXE_screedb"))
        .args(["scan", "--db", db.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(scan.status.success(), "{scan:?}");
    let text = String::from_utf8_lossy(&scan.stdout);
    assert!(text.lines().any(|l| l.starts_with("Mhello\t")), "{text}");
}

#[test]
fn serve_refuses_a_public_address_without_a_password() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_screedb"))
        .args([
            "serve",
            "--db",
            dir.path().to_str().unwrap(),
            "--bind",
            "0.0.0.0:0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("without --requirepass"), "{err}");
}
