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
