//! Real process kills (sled style): the test re-runs its own binary as a child that writes
//! batches (three in four synced) to an on-disk database and prints `ack <n>` after each one returns; the parent
//! kills it with SIGKILL at a random moment (sometimes while it is still opening, sometimes in
//! the middle of a flush/compaction burst), reopens the database and checks that
//! - every acknowledged batch is there with its values (unsynced ones too: they were handed to
//!   the OS, and only a power loss may drop them), and
//! - nothing else is, except possibly the one batch that was in flight (whole, never half).
//!
//! Then the next child continues from the same directory.
//!
//! The whole run repeats for each layout (`crash_common::for_each_layout`), in a fresh directory;
//! the child is told its parent's layout by name. `SCREEDB_CRASH_LOOPS` sets the number of kills
//! per layout (default 25), `SCREEDB_CRASH_SEED` replays the parent's choices (with
//! `SCREEDB_TEST_LAYOUT=<name>`, only that layout's run).

#![allow(clippy::unwrap_used, reason = "test code")]

mod crash_common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crash_common::{
    Batch, Rng, State, assert_stored_layout, describe_diff, env_usize, for_each_layout, key,
    layout_named, read_back, seed, tiny_options, value,
};
use screedb::fs::OsFs;
use screedb::{Db, Layout, Options, WriteOptions};

/// Name of the test function the child runs.
const CHILD_TEST: &str = "child_writes_synced_batches_until_killed";
/// Set in the child only: the database directory.
const ENV_DIR: &str = "SCREEDB_KILL_CHILD_DIR";
/// Set in the child only: `steady` or `burst`.
const ENV_SCENARIO: &str = "SCREEDB_KILL_CHILD_SCENARIO";
/// Set in the child only: the tag of its first batch.
const ENV_START: &str = "SCREEDB_KILL_CHILD_START";
/// Set in the child only: the name of the parent's layout (`crash_common::layout_named`).
const ENV_LAYOUT: &str = "SCREEDB_KILL_CHILD_LAYOUT";

/// How long a child writes if nobody kills it.
const CHILD_LIFETIME: Duration = Duration::from_secs(60);
const KEY_SPACE: u64 = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    /// Small values: many batches per memtable.
    Steady,
    /// Large values: a memtable fills every few batches, so flushes and compactions never stop.
    Burst,
}

impl Scenario {
    fn name(self) -> &'static str {
        match self {
            Scenario::Steady => "steady",
            Scenario::Burst => "burst",
        }
    }

    fn parse(s: &str) -> Scenario {
        match s {
            "burst" => Scenario::Burst,
            _ => Scenario::Steady,
        }
    }
}

fn options(layout: &Layout) -> Options {
    tiny_options(Arc::new(OsFs), layout)
}

/// Batch `tag` of `scenario`: a function of both, so the parent can rebuild what the child wrote.
fn batch_for(tag: u64, scenario: Scenario) -> Batch {
    let salt = match scenario {
        Scenario::Steady => 0x5EAD,
        Scenario::Burst => 0xB0B5,
    };
    let mut rng = Rng::new(tag.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ salt);
    let (ops, min, spread) = match scenario {
        Scenario::Steady => (2 + rng.below(3), 12, 200),
        Scenario::Burst => (3 + rng.below(4), 500, 3500),
    };
    let ops = (0..ops)
        .map(|_| {
            let k = key(rng.below(KEY_SPACE));
            if rng.percent(15) {
                (k, None)
            } else {
                let v = value(tag, &k, min + rng.below(spread) as usize);
                (k, Some(v))
            }
        })
        .collect();
    Batch { tag, ops }
}

/// The child: only does something when run by the parent (with the environment set).
#[test]
fn child_writes_synced_batches_until_killed() {
    let Ok(dir) = std::env::var(ENV_DIR) else {
        return;
    };
    let scenario = Scenario::parse(&std::env::var(ENV_SCENARIO).unwrap());
    let mut tag: u64 = std::env::var(ENV_START).unwrap().parse().unwrap();
    // The parent's layout, whatever SCREEDB_TEST_LAYOUT says.
    let (_, layout) = layout_named(&std::env::var(ENV_LAYOUT).unwrap());
    let db = Db::open(&dir, options(&layout)).unwrap();
    let mut out = std::io::stdout().lock();
    // libtest has printed "test <name> ... " without a newline: start a fresh line.
    writeln!(out, "\nready").unwrap();
    out.flush().unwrap();
    let deadline = Instant::now() + CHILD_LIFETIME;
    while Instant::now() < deadline {
        let batch = batch_for(tag, scenario);
        // Mostly synced; every fourth batch only reaches the OS, which a process kill (unlike a
        // power loss) must not lose either.
        let sync = !tag.is_multiple_of(4);
        db.write(batch.to_write_batch(), &WriteOptions { sync })
            .unwrap();
        writeln!(out, "ack {tag}").unwrap();
        out.flush().unwrap();
        tag += 1;
    }
}

/// Kills the child when dropped, so a failing parent leaves no process behind.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// When the parent pulls the plug.
#[derive(Debug, Clone, Copy)]
enum Kill {
    /// This long after spawning, whether or not the child finished opening.
    EarlyAfter(Duration),
    /// This long after the child said it opened the database.
    After(Duration),
    /// As soon as this many acks arrived.
    AfterAcks(u64),
}

struct Run {
    child: ChildGuard,
    lines: Receiver<String>,
    stderr: std::thread::JoinHandle<String>,
}

fn spawn_child(dir: &Path, layout: &str, scenario: Scenario, start: u64) -> Run {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(ENV_DIR, dir)
        .env(ENV_SCENARIO, scenario.name())
        .env(ENV_START, start.to_string())
        .env(ENV_LAYOUT, layout)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    Run {
        child: ChildGuard(child),
        lines,
        stderr,
    }
}

/// Reads the child's lines until `stop` says so or `timeout` passes; returns whether `stop` held
/// (asked once more when `timeout` passes, so a time-based stop holds for a silent child).
fn read_until(
    run: &Run,
    ready: &mut bool,
    last_ack: &mut Option<u64>,
    acks: &mut u64,
    timeout: Duration,
    stop: impl Fn(bool, u64) -> bool,
) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if stop(*ready, *acks) {
            return true;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match run.lines.recv_timeout(left) {
            Ok(line) => {
                if line == "ready" {
                    *ready = true;
                } else if let Some(n) = line.strip_prefix("ack ") {
                    *last_ack = Some(n.parse().unwrap());
                    *acks += 1;
                }
            }
            // A child still running but silent (a slow fsync on a loaded machine) has reached
            // a time-based kill all the same; one that died is caught below.
            Err(RecvTimeoutError::Timeout) => return stop(*ready, *acks),
            Err(RecvTimeoutError::Disconnected) => return false,
        }
    }
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    if std::env::var(ENV_DIR).is_ok() {
        return; // this is a child
    }
    let seed = seed("acknowledged_writes_survive_kill_9");
    // 25 kills per layout: with leveled and FLSM the binary takes about 18 s instead of 7 (a
    // kill costs a process start and a database open). When a layout joins and this grows by
    // more than ~15 s, split the default: `per_layout(25, 12)`.
    let loops = env_usize("SCREEDB_CRASH_LOOPS", 25);
    for_each_layout(|name, layout| kill_loops(seed, loops, name, layout));
}

/// `loops` kills of children writing to a fresh database of `layout`, choices drawn from `seed`.
fn kill_loops(seed: u64, loops: usize, name: &'static str, layout: &Layout) {
    let mut rng = Rng::new(seed);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("db");
    let mut model = State::new();
    let mut next = 0u64;
    let (mut total_acks, mut in_flight_survived) = (0, 0);

    for cycle in 0..loops {
        let scenario = if rng.percent(40) {
            Scenario::Burst
        } else {
            Scenario::Steady
        };
        let kill = match rng.below(10) {
            0 => Kill::EarlyAfter(Duration::from_millis(rng.below(40))),
            1..=6 => Kill::After(Duration::from_millis(20 + rng.below(280))),
            _ => Kill::AfterAcks(1 + rng.below(150)),
        };
        let mut run = spawn_child(&dir, name, scenario, next);
        let (mut ready, mut last_ack, mut acks) = (false, None, 0u64);
        let started = Instant::now();
        let reached = match kill {
            Kill::EarlyAfter(d) => {
                std::thread::sleep(d);
                true
            }
            Kill::After(d) => {
                let opened = read_until(
                    &run,
                    &mut ready,
                    &mut last_ack,
                    &mut acks,
                    Duration::from_secs(20),
                    |ready, _| ready,
                );
                opened && {
                    let until = Instant::now() + d;
                    read_until(
                        &run,
                        &mut ready,
                        &mut last_ack,
                        &mut acks,
                        d + Duration::from_secs(1),
                        |_, _| Instant::now() >= until,
                    )
                }
            }
            Kill::AfterAcks(n) => read_until(
                &run,
                &mut ready,
                &mut last_ack,
                &mut acks,
                Duration::from_secs(20),
                |_, acks| acks >= n,
            ),
        };
        // Pull the plug (SIGKILL), then take every ack the child printed before it died.
        let _ = run.child.0.kill();
        let status = run.child.0.wait().unwrap();
        while let Ok(line) = run.lines.recv_timeout(Duration::from_secs(10)) {
            if let Some(n) = line.strip_prefix("ack ") {
                last_ack = Some(n.parse().unwrap());
                acks += 1;
            }
        }
        let stderr = run.stderr.join().unwrap_or_default();
        assert!(
            reached,
            "cycle {cycle} (seed {seed}, layout {name}): the child stopped or stalled before the kill \
             ({kill:?}, {scenario:?}, {acks} acks, status {status}):\n{stderr}"
        );
        assert!(
            !stderr.contains("panicked"),
            "cycle {cycle} (seed {seed}, layout {name}): the child panicked:\n{stderr}"
        );
        total_acks += acks;

        // Acknowledged: batches next..=last_ack. Possibly also the one after, in flight.
        let mut acked = model.clone();
        let first_unacked = last_ack.map_or(next, |n| n + 1);
        for tag in next..first_unacked {
            batch_for(tag, scenario).apply(&mut acked);
        }
        let mut with_in_flight = acked.clone();
        batch_for(first_unacked, scenario).apply(&mut with_in_flight);

        let db = Db::open(&dir, options(layout)).unwrap_or_else(|e| {
            panic!("cycle {cycle} (seed {seed}, layout {name}): reopen after kill ({kill:?}) failed: {e}")
        });
        let recovered = read_back(&db);
        drop(db);
        if recovered == acked {
            next = first_unacked;
        } else if recovered == with_in_flight {
            next = first_unacked + 1;
            in_flight_survived += 1;
        } else {
            panic!(
                "cycle {cycle} (seed {seed}, layout {name}, {scenario:?}, {kill:?}, {:?} after spawn): \
                 acked batches {next}..{first_unacked}; recovered state is neither the acked \
                 state ({}) nor that plus batch {first_unacked} ({})",
                started.elapsed(),
                describe_diff(&acked, &recovered),
                describe_diff(&with_in_flight, &recovered),
            );
        }
        model = recovered;
    }
    assert_stored_layout(&dir, &options(layout), layout);
    eprintln!(
        "layout {name}: {loops} kills, {total_acks} acknowledged batches, in-flight batch survived {in_flight_survived} times"
    );
    assert!(
        total_acks > 0,
        "layout {name}: no child ever acknowledged a write"
    );
}
