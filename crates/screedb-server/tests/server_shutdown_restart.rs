//! Shutdown with clients connected (by the handle, and by the SHUTDOWN command) closes the
//! database cleanly; a restart over the same directory finds every key, hash and zset intact.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::time::Duration;

use common::{closed, config, connect, exchange, raw, run};
use redis::{Commands, Value};

#[test]
fn shutdown_with_clients_and_restart_keep_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let server = screedb_server::spawn(config(dir.path())).unwrap();
    let mut c = connect(&server);
    for i in 0..2000 {
        c.set::<_, _, ()>(format!("k{i}"), format!("v{i}")).unwrap();
    }
    c.hset_multiple::<_, _, _, ()>("h", &[("a", "1"), ("b", "2")])
        .unwrap();
    c.zadd::<_, _, _, ()>("z", "m", 2.5).unwrap();
    // Idle clients, one half-way through a request.
    let mut idle = raw(server.addr());
    let mut partial = raw(server.addr());
    let _ = exchange(&mut partial, b"*2\r\n$3\r\nGET\r\n", 0);
    server.shutdown().unwrap();
    assert!(closed(&mut idle));
    assert!(closed(&mut partial));
    assert!(run(&mut c, &["PING"]).is_err());

    // Restart: everything is there. Then stop it with the SHUTDOWN command.
    let mut server = screedb_server::spawn(config(dir.path())).unwrap();
    let mut c = connect(&server);
    for i in (0..2000).step_by(37) {
        assert_eq!(
            c.get::<_, String>(format!("k{i}")).unwrap(),
            format!("v{i}")
        );
    }
    assert_eq!(run(&mut c, &["DBSIZE"]).unwrap(), Value::Int(2002));
    assert_eq!(c.hget::<_, _, String>("h", "b").unwrap(), "2");
    assert_eq!(c.zscore::<_, _, f64>("z", "m").unwrap(), 2.5);
    let mut other = connect(&server);
    let _ = run(&mut c, &["SHUTDOWN"]);
    server.join().unwrap();
    std::thread::sleep(Duration::from_millis(10));
    assert!(run(&mut other, &["PING"]).is_err());

    // And once more, the database opens.
    let server = screedb_server::spawn(config(dir.path())).unwrap();
    let mut c = connect(&server);
    assert_eq!(c.get::<_, String>("k1999").unwrap(), "v1999");
    server.shutdown().unwrap();
}
