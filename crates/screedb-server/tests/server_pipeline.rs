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

/// Plain SETs in a row run as one batch: a later SET of a key wins over an earlier one in the
/// same run, commands between runs see every SET before them, a SET with an option runs alone,
/// a plain SET over a hash turns it into a string as a lone SET does, and INFO counts every SET.
#[test]
fn runs_of_plain_sets_keep_the_order_of_a_pipeline() {
    let (server, _dir) = start();
    let mut c = connect(&server);
    let mut pipe = redis::pipe();
    for round in 0..3 {
        for i in 0..300 {
            pipe.cmd("SET")
                .arg(format!("k{}", i % 50))
                .arg(round * 1000 + i)
                .ignore();
        }
        // Reads and a read-modify-write between the runs see all of the run before them.
        pipe.cmd("GET").arg("k7");
        pipe.cmd("INCR").arg("k7");
        pipe.cmd("SET").arg("k8").arg("x").arg("NX");
        let h = format!("h{round}");
        pipe.cmd("HSET").arg(&h).arg("f").arg(round);
        pipe.cmd("SET").arg(&h).arg("now a string").ignore();
        pipe.cmd("TYPE").arg(&h);
    }
    let got: Vec<redis::Value> = pipe.query(&mut c).unwrap();
    let text = |v: &redis::Value| redis::from_redis_value::<String>(v).unwrap();
    for round in 0..3 {
        let at = round * 5;
        // The last SET of k7 in the run: i = 257.
        assert_eq!(text(&got[at]), (round * 1000 + 257).to_string());
        assert_eq!(text(&got[at + 1]), (round * 1000 + 258).to_string());
        assert_eq!(got[at + 2], redis::Value::Nil, "NX: k8 exists");
        assert_eq!(text(&got[at + 4]), "string");
    }
    let k49: String = redis::cmd("GET").arg("k49").query(&mut c).unwrap();
    assert_eq!(k49, "2299");
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut c)
        .unwrap();
    assert!(
        info.contains("cmdstat_set:calls=906,"),
        "900 plain SETs in runs, 3 with NX, 3 over a hash: {info}"
    );
    server.shutdown().unwrap();
}

/// Plain GETs in a row run as one multi-get: each gets its own reply in order (a value, nil
/// for a missing or expired key, WRONGTYPE for a hash), a run sees every write before it and
/// none after, runs longer than one multi-get split cleanly, and INFO counts every GET.
#[test]
fn runs_of_plain_gets_keep_the_order_of_a_pipeline() {
    let (server, _dir) = start();
    let mut c = connect(&server);
    let _: () = redis::cmd("HSET")
        .arg("h")
        .arg("f")
        .arg("v")
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg("gone")
        .arg("x")
        .arg("PX")
        .arg(1)
        .query(&mut c)
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let mut pipe = redis::pipe();
    for i in 0..100 {
        pipe.cmd("SET").arg(format!("k{i}")).arg(i).ignore();
    }
    for i in 0..150 {
        pipe.cmd("GET").arg(format!("k{}", i % 110));
    }
    pipe.cmd("GET").arg("gone");
    pipe.cmd("SET").arg("k5").arg("new").ignore();
    pipe.cmd("GET").arg("k5");
    let got: Vec<redis::Value> = pipe.query(&mut c).unwrap();
    let text = |v: &redis::Value| redis::from_redis_value::<String>(v).unwrap();
    for (i, v) in got[..150].iter().enumerate() {
        match i % 110 {
            k if k < 100 => assert_eq!(text(v), k.to_string(), "GET {i}"),
            _ => assert_eq!(*v, redis::Value::Nil, "GET {i} of a missing key"),
        }
    }
    assert_eq!(got[150], redis::Value::Nil, "an expired key reads as nil");
    assert_eq!(text(&got[151]), "new");
    // A GET of a hash inside a run (raw: the client library fails a pipeline on an error).
    let mut s = raw(server.addr());
    let wanted = "$1\r\n1\r\n-WRONGTYPE Operation against a key holding the wrong kind of \
                  value\r\n$1\r\n2\r\n";
    let (got, _) = exchange(
        &mut s,
        b"*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n*2\r\n$3\r\nGET\r\n$1\r\nh\r\n\
          *2\r\n$3\r\nGET\r\n$2\r\nk2\r\n",
        wanted.len(),
    );
    assert_eq!(String::from_utf8_lossy(&got), wanted);
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut c)
        .unwrap();
    let get = info
        .lines()
        .find(|l| l.starts_with("cmdstat_get:"))
        .unwrap();
    assert!(
        get.starts_with("cmdstat_get:calls=155,") && get.ends_with("failed_calls=1"),
        "155 GETs, one of them WRONGTYPE: {info}"
    );
    server.shutdown().unwrap();
}
