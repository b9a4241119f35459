//! A kill -9 of a server process running `--sync always` loses no acknowledged write.
//!
//! The test re-runs its own binary as the server process (as the engine's db_crash_kill.rs
//! does): the child serves the database in the directory named by an environment variable and
//! prints its port. Four client threads write strings and hash fields as fast as they can,
//! remembering every write that got its reply; the parent kills the child with SIGKILL in the
//! middle of it, restarts a server in-process over the same directory and checks that every
//! acknowledged write is there. Three rounds over the same directory.

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use redis::Commands;
use screedb_server::SyncMode;

const CHILD_TEST: &str = "child_serves_until_killed";
const ENV_DIR: &str = "SCREEDB_SERVER_KILL_CHILD_DIR";

/// In the child: serve with `--sync always` and print the port. Does nothing in the parent.
#[test]
fn child_serves_until_killed() {
    let Some(dir) = std::env::var_os(ENV_DIR) else {
        return;
    };
    let mut cfg = common::config(std::path::Path::new(&dir));
    cfg.sync = SyncMode::Always;
    let server = screedb_server::spawn(cfg).expect("child server starts");
    println!("port {}", server.addr().port());
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn kill_9_loses_no_acknowledged_write() {
    if std::env::var_os(ENV_DIR).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // (hash, key or field, value): hash `None` for a string.
    let mut acked: Vec<(Option<String>, String, String)> = Vec::new();
    for round in 0..3 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", CHILD_TEST, "--nocapture", "--test-threads=1"])
            .env(ENV_DIR, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let port = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| {
                l.split("port ")
                    .nth(1)
                    .and_then(|p| p.trim().parse::<u16>().ok())
            })
            .expect("the child prints its port");
        let url = format!("redis://127.0.0.1:{port}/");
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..4)
            .map(|t| {
                let url = url.clone();
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
                    let mut mine = Vec::new();
                    for i in 0.. {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let (k, v) = (format!("r{round}t{t}k{i}"), format!("v{i}"));
                        let hash = (i % 2 == 1).then(|| format!("h{round}t{t}"));
                        let ok = match &hash {
                            None => c.set::<_, _, ()>(&k, &v).is_ok(),
                            Some(h) => c.hset::<_, _, _, ()>(h, &k, &v).is_ok(),
                        };
                        if !ok {
                            break;
                        }
                        mine.push((hash, k, v));
                    }
                    mine
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300 + 200 * round));
        child.kill().unwrap();
        let _ = child.wait();
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            acked.extend(w.join().unwrap());
        }

        let server = screedb_server::spawn(common::config(dir.path())).unwrap();
        let mut c = common::connect(&server);
        let mut missing = Vec::new();
        for (hash, k, v) in &acked {
            let got: Option<String> = match hash {
                None => c.get(k).unwrap(),
                Some(h) => c.hget(h, k).unwrap(),
            };
            if got.as_deref() != Some(v.as_str()) {
                missing.push(k.clone());
            }
        }
        assert!(
            missing.is_empty(),
            "round {round}: {} of {} acknowledged writes lost, e.g. {:?}",
            missing.len(),
            acked.len(),
            &missing[..missing.len().min(5)]
        );
        server.shutdown().unwrap();
    }
    assert!(
        acked.len() > 100,
        "only {} writes acknowledged",
        acked.len()
    );
}
