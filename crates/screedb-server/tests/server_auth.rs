//! AUTH: with --requirepass, commands before AUTH get NOAUTH, a wrong password WRONGPASS, the
//! right one (AUTH or HELLO ... AUTH) opens the connection; without a password AUTH is an error;
//! a non-loopback bind without a password is refused.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use common::{config, err, exchange, raw, run};
use redis::Value;

#[test]
fn auth_guards_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.requirepass = Some("s3cret".to_string());
    let server = screedb_server::spawn(cfg).unwrap();

    let mut s = raw(server.addr());
    let (got, _) = exchange(&mut s, b"GET k\r\n", 33);
    assert_eq!(&got[..], b"-NOAUTH Authentication required.\r\n".as_slice());
    let (got, _) = exchange(&mut s, b"AUTH wrong\r\n", 63);
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    let (got, _) = exchange(&mut s, b"AUTH s3cret\r\nPING\r\n", 12);
    assert_eq!(&got[..], b"+OK\r\n+PONG\r\n".as_slice());

    // The client library with the password in the URL, RESP2 and RESP3 (HELLO 3 AUTH ...).
    let url = format!("redis://:s3cret@{}/", server.addr());
    let mut c = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    assert_eq!(run(&mut c, &["SET", "k", "v"]).unwrap(), Value::Okay);
    let mut c3 = redis::Client::open(format!("{url}?protocol=resp3"))
        .unwrap()
        .get_connection()
        .unwrap();
    assert_eq!(
        run(&mut c3, &["GET", "k"]).unwrap(),
        Value::BulkString(b"v".to_vec())
    );
    let bad = format!("redis://:nope@{}/", server.addr());
    assert!(
        redis::Client::open(bad.as_str())
            .unwrap()
            .get_connection()
            .is_err()
    );
    server.shutdown().unwrap();

    // No password configured: AUTH is an error, as in Redis.
    let dir = tempfile::tempdir().unwrap();
    let server = screedb_server::spawn(config(dir.path())).unwrap();
    let mut c = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    assert!(
        err(&mut c, &["AUTH", "x"]).starts_with("ERR AUTH <password> called without any password")
    );
    server.shutdown().unwrap();

    // Protected mode: no password, no public address.
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.bind = "0.0.0.0:0".to_string();
    let refused = screedb_server::spawn(cfg).unwrap_err().to_string();
    assert!(refused.contains("without --requirepass"), "{refused}");
}
