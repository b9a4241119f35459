//! Simulated power loss through `FaultFs`: random batches, a crash at a random moment (with
//! flushes and compactions running), reopen, and a check against a model of what was
//! acknowledged.
//!
//! What must hold after each crash:
//! - every write acknowledged with `sync` is there, with its value;
//! - the state is the model's state after some batch issued at or after the last synced one
//!   (prefix property: batches are atomic and survive in issue order);
//! - forward scans, backward scans and point reads agree.
//!
//! The database sees the disk through a [`ProcessFs`] per incarnation, so that its threads still
//! running after the simulated power cut cannot touch the post-crash disk. Some cycles also
//! interrupt the recovery itself (a fault at the n-th write or sync of `open`, then a crash).
//!
//! Every test runs over each layout (`crash_common::for_each_layout`, docs/testing.md).
//! `SCREEDB_CRASH_CYCLES` sets the number of crash cycles per layout (default 150),
//! `SCREEDB_CRASH_SEED` replays a run (with `SCREEDB_TEST_LAYOUT=<name>`, only that layout's).

#![allow(clippy::unwrap_used, reason = "test code")]

mod crash_common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crash_common::{
    Batch, ProcessFs, Rng, State, assert_stored_layout, describe_diff, env_usize, for_each_layout,
    key, matching_prefix, read_back, seed, tiny_options, value,
};
use screedb::fs::{FaultFs, FaultKind, MemFs};
use screedb::{Db, Layout, Options, WriteOptions};

const KEY_SPACE: u64 = 400;

/// How a cycle ends.
#[derive(Debug, Clone, Copy)]
enum Ending {
    /// `crash()` right after the last write returned.
    Crash,
    /// `crash()` after letting background work run a little.
    CrashLater(u64),
    /// `crash_tearing_last_write(keep)`.
    Tear(usize),
    /// A clean close, then a crash: everything written must survive.
    CloseThenCrash,
}

/// Options for one incarnation of the database, seeing the disk through `fs`.
fn options(fs: &ProcessFs, layout: &Layout, rng: &mut Rng) -> Options {
    let mut o = tiny_options(Arc::new(fs.clone()), layout);
    o.write_buffer_size = (32 + 32 * rng.below(2) as usize) << 10;
    o.max_background_jobs = 1 + rng.below(2) as usize;
    if rng.percent(30) {
        // The manifest is rewritten (new file, CURRENT switched) every few edits.
        o.max_manifest_file_size = 2 << 10;
    }
    o
}

/// Opens with a fault armed at the `nth` write or sync, standing in for a power loss at that
/// point of recovery: if the open fails, the power goes. Leaves the database closed either way.
fn interrupted_open(fault: &FaultFs, dir: &Path, layout: &Layout, rng: &mut Rng) -> String {
    let kind = if rng.percent(50) {
        FaultKind::Write
    } else {
        FaultKind::Sync
    };
    let nth = 1 + rng.below(12);
    fault.fail_nth(kind, nth);
    let outcome = match Db::open(dir, options(&ProcessFs::new(fault), layout, rng)) {
        Ok(db) => {
            fault.clear_faults();
            drop_within_deadline(db);
            "opened".to_owned()
        }
        Err(e) => format!("failed: {e}"),
    };
    fault.clear_faults();
    if rng.percent(50) {
        fault.crash();
    } else {
        fault.crash_tearing_last_write(rng.below(100) as usize);
    }
    format!("open with {kind:?} fault #{nth} {outcome}, then a crash")
}

fn random_batch(rng: &mut Rng, tag: u64) -> Batch {
    let n = if rng.percent(30) { 2 + rng.below(6) } else { 1 };
    let ops = (0..n)
        .map(|_| {
            let k = key(rng.below(KEY_SPACE));
            if rng.percent(20) {
                (k, None)
            } else {
                let len = if rng.percent(5) {
                    0
                } else {
                    rng.below(2000) as usize
                };
                let v = value(tag, &k, len);
                (k, Some(v))
            }
        })
        .collect();
    Batch { tag, ops }
}

/// Drops `db` on another thread and fails if that takes more than a few seconds.
fn drop_within_deadline(db: Db) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        drop(db);
        let _ = tx.send(());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("dropping the database after a crash hung");
}

#[test]
fn random_batches_survive_simulated_power_loss() {
    let seed = seed("random_batches_survive_simulated_power_loss");
    // Every layout runs the full count: the whole binary takes a few seconds.
    let cycles = env_usize("SCREEDB_CRASH_CYCLES", 150);
    for_each_layout(|name, layout| power_loss_cycles(seed, cycles, name, layout));
}

/// `cycles` crash cycles on a fresh database of `layout`, choices drawn from `seed`.
fn power_loss_cycles(seed: u64, cycles: usize, name: &str, layout: &Layout) {
    let mut rng = Rng::new(seed);
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let dir = Path::new("/db");

    // `base`: the state every later recovery must include (all synced writes, and whatever the
    // previous recovery showed). `pending`: batches issued since, not yet known durable.
    let mut base = State::new();
    let mut pending: Vec<Batch> = Vec::new();
    let mut tag = 0u64;
    let mut last_ending = None;

    for cycle in 0..=cycles {
        // Sometimes recovery itself is interrupted first.
        let interrupted = rng
            .percent(20)
            .then(|| interrupted_open(&fault, dir, layout, &mut rng));
        let fs = ProcessFs::new(&fault);
        let db = Db::open(dir, options(&fs, layout, &mut rng)).unwrap_or_else(|e| {
            panic!("cycle {cycle} (seed {seed}, layout {name}): reopen after {last_ending:?} ({interrupted:?}) failed: {e}")
        });
        let recovered = read_back(&db);
        let Some(j) = matching_prefix(&base, &pending, &recovered) else {
            let mut all = base.clone();
            pending.iter().for_each(|b| b.apply(&mut all));
            panic!(
                "cycle {cycle} (seed {seed}, layout {name}): after {last_ending:?} ({interrupted:?}) the state \
                 is not the model \
                 after any batch issued since the last synced one ({} pending, tags {:?}).\n\
                 Against the synced state: {}\nAgainst everything issued: {}",
                pending.len(),
                pending.first().map(|b| b.tag)..pending.last().map(|b| b.tag + 1),
                describe_diff(&base, &recovered),
                describe_diff(&all, &recovered),
            );
        };
        if matches!(last_ending, Some(Ending::CloseThenCrash)) && j < pending.len() {
            let mut all = base.clone();
            pending.iter().for_each(|b| b.apply(&mut all));
            assert!(
                all == recovered,
                "cycle {cycle} (seed {seed}, layout {name}): writes lost after a clean close: {}",
                describe_diff(&all, &recovered)
            );
        }
        base = recovered;
        pending.clear();
        if cycle == cycles {
            drop_within_deadline(db);
            assert_stored_layout(dir, &tiny_options(Arc::new(fs), layout), layout);
            break;
        }

        let writes = 1 + rng.below(250);
        let sync_percent = [0, 10, 30, 90][rng.below(4) as usize];
        // Sometimes another thread forces memtable switches while the writer runs.
        let flusher = rng.percent(25);
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            if flusher {
                s.spawn(|| {
                    while !stop.load(Ordering::Relaxed) {
                        db.flush().unwrap_or_else(|e| {
                            panic!("cycle {cycle} (layout {name}): flush failed: {e}")
                        });
                        std::thread::sleep(Duration::from_micros(300));
                    }
                });
            }
            for _ in 0..writes {
                tag += 1;
                let batch = random_batch(&mut rng, tag);
                let sync = rng.percent(sync_percent);
                let result = db.write(batch.to_write_batch(), &WriteOptions { sync });
                if let Err(e) = result {
                    stop.store(true, Ordering::Relaxed);
                    panic!("cycle {cycle} (seed {seed}, layout {name}): write {tag} failed: {e}");
                }
                pending.push(batch);
                if sync {
                    // Acknowledged durable: it and everything before it must survive.
                    pending.iter().for_each(|b| b.apply(&mut base));
                    pending.clear();
                }
            }
            stop.store(true, Ordering::Relaxed);
        });

        // Before the power goes, the live database holds everything issued: a wrong answer
        // here is a read or compaction bug, not a recovery one.
        let mut all = base.clone();
        pending.iter().for_each(|b| b.apply(&mut all));
        let live = read_back(&db);
        assert!(
            all == live,
            "cycle {cycle} (seed {seed}, layout {name}): before the crash, the database is not \
             what was written: {}",
            describe_diff(&all, &live)
        );
        let ending = match rng.below(10) {
            0..=3 => Ending::Crash,
            4..=5 => Ending::CrashLater(rng.below(3000)),
            6..=8 => Ending::Tear(rng.below(300) as usize),
            _ => Ending::CloseThenCrash,
        };
        match ending {
            Ending::Crash => fs.power_cut(FaultFs::crash),
            Ending::CrashLater(micros) => {
                std::thread::sleep(Duration::from_micros(micros));
                fs.power_cut(FaultFs::crash);
            }
            Ending::Tear(keep) => fs.power_cut(|f| f.crash_tearing_last_write(keep)),
            Ending::CloseThenCrash => {
                db.close().unwrap_or_else(|e| {
                    panic!("cycle {cycle} (seed {seed}, layout {name}): close failed: {e}")
                });
                fault.crash();
                last_ending = Some(ending);
                continue;
            }
        }
        drop_within_deadline(db);
        last_ending = Some(ending);
    }
}

/// postmortem: a memtable switch only flushed the old WAL to the OS. A synced write to the new
/// WAL then acknowledged writes that were still unsynced in the old one: a power loss dropped
/// them (breaking the prefix property), and a torn tail in the old WAL made the next open fail,
/// since every WAL but the newest is read strictly.
#[test]
fn synced_write_after_a_memtable_switch_keeps_earlier_unsynced_writes() {
    for_each_layout(synced_write_after_a_memtable_switch);
}

fn synced_write_after_a_memtable_switch(name: &str, layout: &Layout) {
    for tear in [None, Some(3)] {
        let fault = FaultFs::new(Arc::new(MemFs::new()));
        let dir = Path::new("/db");
        let fs = ProcessFs::new(&fault);
        let db = Db::open(dir, tiny_options(Arc::new(fs.clone()), layout)).unwrap();
        let mut expected = State::new();
        // 100 unsynced writes of ~520 bytes fill more than one 32 KiB memtable: the memtable
        // switches (whether its flush finishes before the crash is left to the scheduler).
        let n = 100;
        for i in 0..n {
            let (k, v) = (key(i), value(i, &key(i), 500));
            db.put(&k, &v).unwrap();
            expected.insert(k, v);
        }
        let i = n;
        let (k, v) = (key(i), value(i, &key(i), 500));
        let mut batch = screedb::WriteBatch::new();
        batch.put(&k, &v);
        db.write(batch, &WriteOptions::synced()).unwrap();
        expected.insert(k, v);
        match tear {
            None => fs.power_cut(FaultFs::crash),
            Some(keep) => fs.power_cut(|f| f.crash_tearing_last_write(keep)),
        }
        drop_within_deadline(db);
        let db = Db::open(dir, tiny_options(Arc::new(ProcessFs::new(&fault)), layout)).unwrap();
        let recovered = read_back(&db);
        assert!(
            recovered == expected,
            "layout {name}, tear {tear:?}: {}",
            describe_diff(&expected, &recovered)
        );
    }
}

/// postmortem: `Db::flush` switched the memtable while a write leader was appending to the WAL
/// outside the mutex. The switch installed a new WAL, then the leader put the old one back: later
/// writes went to a WAL the next flush deleted, and the leader's group went into a memtable that
/// was already immutable (and maybe already written to a table). Synced writes were lost.
#[test]
fn flush_racing_synced_writes_loses_nothing() {
    // The race needs luck: a few rounds make it likely on the unfixed engine.
    for_each_layout(|name, layout| {
        for round in 0..6 {
            flush_racing_synced_writes_round(round, name, layout);
        }
    });
}

fn flush_racing_synced_writes_round(round: u64, name: &str, layout: &Layout) {
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let dir = Path::new("/db");
    let fs = ProcessFs::new(&fault);
    let db = Db::open(dir, tiny_options(Arc::new(fs.clone()), layout)).unwrap();
    let mut expected = State::new();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                db.flush().unwrap();
            }
        });
        for i in 0..4000 {
            let (k, v) = (key(i % 300), value(i, &key(i % 300), 400));
            let mut batch = screedb::WriteBatch::new();
            batch.put(&k, &v);
            if let Err(e) = db.write(batch, &WriteOptions::synced()) {
                stop.store(true, Ordering::Relaxed);
                panic!("layout {name}, round {round}: write {i}: {e}");
            }
            expected.insert(k, v);
        }
        stop.store(true, Ordering::Relaxed);
    });
    let before = read_back(&db);
    assert!(
        before == expected,
        "layout {name}, round {round}: lost before the crash: {}",
        describe_diff(&expected, &before)
    );
    fs.power_cut(FaultFs::crash);
    drop_within_deadline(db);
    let db = Db::open(dir, tiny_options(Arc::new(ProcessFs::new(&fault)), layout)).unwrap();
    let recovered = read_back(&db);
    assert!(
        recovered == expected,
        "layout {name}, round {round}: {}",
        describe_diff(&expected, &recovered)
    );
}

/// postmortem: open created the fresh WAL before the manifest edit that retires the old ones.
/// When that open was interrupted (a failed write or sync, then a crash) after a power loss had
/// torn the tail of the newest WAL, the torn WAL was no longer the newest: the next open read it
/// strictly and refused to start ("the file ends inside a fragment"), for good.
#[test]
fn interrupted_recovery_after_a_torn_wal_still_opens() {
    for_each_layout(interrupted_recovery_after_a_torn_wal);
}

fn interrupted_recovery_after_a_torn_wal(name: &str, layout: &Layout) {
    let dir = Path::new("/db");
    for kind in [FaultKind::Write, FaultKind::Sync] {
        for nth in 1..=12 {
            let fault = FaultFs::new(Arc::new(MemFs::new()));
            let fs = ProcessFs::new(&fault);
            let mut options = tiny_options(Arc::new(fs.clone()), layout);
            options.write_buffer_size = 1 << 20;
            let db = Db::open(dir, options).unwrap();
            let mut synced = State::new();
            let mut pending = Vec::new();
            for tag in 0..40 {
                let k = key(tag % 25);
                let batch = Batch {
                    tag,
                    ops: vec![(k.clone(), Some(value(tag, &k, 300)))],
                };
                let sync = tag < 20;
                db.write(batch.to_write_batch(), &WriteOptions { sync })
                    .unwrap();
                if sync {
                    batch.apply(&mut synced);
                } else {
                    pending.push(batch);
                }
            }
            fs.power_cut(|f| f.crash_tearing_last_write(100));
            drop_within_deadline(db);

            fault.fail_nth(kind, nth);
            let first = Db::open(dir, tiny_options(Arc::new(ProcessFs::new(&fault)), layout));
            fault.clear_faults();
            match first {
                Ok(db) => drop_within_deadline(db),
                Err(_) => fault.crash(),
            }
            let db = Db::open(dir, tiny_options(Arc::new(ProcessFs::new(&fault)), layout))
                .unwrap_or_else(|e| {
                    panic!("layout {name}: {kind:?} fault #{nth} during recovery: {e}")
                });
            let recovered = read_back(&db);
            assert!(
                matching_prefix(&synced, &pending, &recovered).is_some(),
                "layout {name}: {kind:?} fault #{nth}: {}",
                describe_diff(&synced, &recovered)
            );
        }
    }
}
