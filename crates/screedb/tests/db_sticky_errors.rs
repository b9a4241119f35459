//! Failed syncs and writes, and a full disk, through `FaultFs`: the first failure is reported,
//! every later write fails with the read-only error (which says to reopen), reads keep working,
//! and after a reopen nothing acknowledged before the failure is lost. Every test runs over each
//! layout (`crash_common::for_each_layout`).

#![allow(clippy::unwrap_used, reason = "test code")]

mod crash_common;

use std::sync::Arc;

use crash_common::{
    Batch, ProcessFs, Rng, State, describe_diff, for_each_layout, key, read_back, seed,
    tiny_options, value,
};
use screedb::fs::{FaultFs, FaultKind, MemFs};
use screedb::{Db, Error, Layout, Options, WriteOptions};

const DIR: &str = "/db";

/// Options without background work for small amounts of data.
fn quiet_options(fault: &FaultFs, layout: &Layout) -> Options {
    Options {
        create_if_missing: true,
        fs: Arc::new(fault.clone()),
        layout: layout.clone(),
        memory: crash_common::memory_for(layout),
        write_buffer_size: 4 << 20,
        // Fault positions count the database's own writes, not LOG lines.
        info_log: screedb::InfoLog::Off,
        ..Options::default()
    }
}

fn random_batch(rng: &mut Rng, tag: u64, max_len: u64) -> Batch {
    let ops = (0..1 + rng.below(4))
        .map(|_| {
            let k = key(rng.below(300));
            if rng.percent(15) {
                (k, None)
            } else {
                let v = value(tag, &k, 12 + rng.below(max_len) as usize);
                (k, Some(v))
            }
        })
        .collect();
    Batch { tag, ops }
}

/// Writes `n` batches (some synced) that must all succeed; returns the next tag.
fn acked_writes(db: &Db, rng: &mut Rng, first: u64, n: u64, expected: &mut State) -> u64 {
    for tag in first..first + n {
        let batch = random_batch(rng, tag, 300);
        let sync = rng.percent(30);
        db.write(batch.to_write_batch(), &WriteOptions { sync })
            .unwrap_or_else(|e| panic!("write {tag} failed: {e}"));
        batch.apply(expected);
    }
    first + n
}

fn assert_read_only(result: screedb::Result<()>, what: &str) {
    match result {
        Err(e @ Error::ReadOnly(_)) => {
            let msg = e.to_string();
            assert!(
                msg.contains("reopen"),
                "{what}: message does not say to reopen: {msg}"
            );
        }
        other => panic!("{what}: expected the read-only error, got {other:?}"),
    }
}

/// Every kind of write fails with the read-only error; reads still show `expected`.
fn assert_writes_refused_reads_work(db: &Db, expected: &State) {
    assert_read_only(db.put(b"after", b"x"), "put");
    assert_read_only(db.delete(key(1)), "delete");
    let mut batch = screedb::WriteBatch::new();
    batch.put(b"after", b"y");
    assert_read_only(db.write(batch, &WriteOptions::synced()), "synced write");
    assert_read_only(db.flush(), "flush");
    let now = read_back(db);
    assert!(
        now == *expected,
        "reads after the failure: {}",
        describe_diff(expected, &now)
    );
}

/// Reopens (faults cleared) and checks the state is `expected`, or `expected` plus `maybe`
/// (the write that failed: its record may have reached the log before the failure).
fn assert_reopened(fault: &FaultFs, options: Options, expected: &State, maybe: Option<&Batch>) {
    fault.clear_faults();
    let db = Db::open(DIR, options).unwrap();
    let recovered = read_back(&db);
    let mut with_failed = expected.clone();
    if let Some(b) = maybe {
        b.apply(&mut with_failed);
    }
    assert!(
        recovered == *expected || recovered == with_failed,
        "after reopen: {}",
        describe_diff(expected, &recovered)
    );
    db.close().unwrap();
}

#[test]
fn failed_wal_sync_makes_the_database_read_only_until_reopened() {
    let seed = seed("failed_wal_sync");
    for_each_layout(|_, layout| failed_wal_sync_read_only(seed, layout));
}

fn failed_wal_sync_read_only(seed: u64, layout: &Layout) {
    let mut rng = Rng::new(seed);
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let db = Db::open(DIR, quiet_options(&fault, layout)).unwrap();
    let mut expected = State::new();
    let tag = acked_writes(&db, &mut rng, 0, 200, &mut expected);

    fault.fail_nth(FaultKind::Sync, 1);
    let failed = random_batch(&mut rng, tag, 300);
    let err = db
        .write(failed.to_write_batch(), &WriteOptions::synced())
        .unwrap_err();
    assert!(
        matches!(err, Error::Io { .. }) && err.to_string().contains("fsync failed"),
        "the failed sync itself is reported: {err}"
    );
    assert_writes_refused_reads_work(&db, &expected);
    let syncs = fault.stats().syncs;
    let closed = db.close();
    assert!(
        closed.is_err(),
        "close reported success although a write failed: {closed:?}"
    );
    assert_eq!(
        fault.stats().syncs,
        syncs,
        "an fsync was retried after it failed (its data may be gone while it reports success)"
    );
    assert_reopened(
        &fault,
        quiet_options(&fault, layout),
        &expected,
        Some(&failed),
    );
}

#[test]
fn failed_wal_sync_then_power_loss_keeps_what_was_synced() {
    let seed = seed("failed_wal_sync_then_power_loss");
    for_each_layout(|_, layout| failed_wal_sync_then_power_loss(seed, layout));
}

fn failed_wal_sync_then_power_loss(seed: u64, layout: &Layout) {
    let mut rng = Rng::new(seed);
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let fs = ProcessFs::new(&fault);
    let options = Options {
        fs: Arc::new(fs.clone()),
        ..quiet_options(&fault, layout)
    };
    let db = Db::open(DIR, options).unwrap();
    let mut expected = State::new();
    let mut tag = acked_writes(&db, &mut rng, 0, 100, &mut expected);
    // The last acknowledged write is synced: everything before it is durable.
    let last = random_batch(&mut rng, tag, 300);
    db.write(last.to_write_batch(), &WriteOptions::synced())
        .unwrap();
    last.apply(&mut expected);
    tag += 1;

    fault.fail_nth(FaultKind::Sync, 1);
    let failed = random_batch(&mut rng, tag, 300);
    assert!(
        db.write(failed.to_write_batch(), &WriteOptions::synced())
            .is_err()
    );
    assert_writes_refused_reads_work(&db, &expected);
    fs.power_cut(FaultFs::crash);
    drop(db);
    assert_reopened(
        &fault,
        quiet_options(&fault, layout),
        &expected,
        Some(&failed),
    );
}

#[test]
fn full_disk_fails_the_write_with_no_space_and_loses_nothing() {
    let seed = seed("full_disk");
    for_each_layout(|_, layout| full_disk(seed, layout));
}

fn full_disk(seed: u64, layout: &Layout) {
    let mut rng = Rng::new(seed);
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let db = Db::open(DIR, quiet_options(&fault, layout)).unwrap();
    let mut expected = State::new();
    let tag = acked_writes(&db, &mut rng, 0, 300, &mut expected);

    fault.fail_always(FaultKind::Write);
    let failed = random_batch(&mut rng, tag, 300);
    let err = db
        .write(failed.to_write_batch(), &WriteOptions::default())
        .unwrap_err();
    assert!(
        err.to_string().contains("No space left on device"),
        "the error does not say the disk is full: {err}"
    );
    assert_eq!(err.io_kind(), Some(std::io::ErrorKind::StorageFull));
    assert_writes_refused_reads_work(&db, &expected);
    drop(db);

    // Still full: opening needs to write (a new WAL and manifest), so it fails cleanly...
    let err = Db::open(DIR, quiet_options(&fault, layout)).unwrap_err();
    assert!(
        err.to_string().contains("No space left on device"),
        "open on a full disk: {err}"
    );
    // ...and leaves the database intact for when space is back.
    assert_reopened(
        &fault,
        quiet_options(&fault, layout),
        &expected,
        Some(&failed),
    );
}

#[test]
fn write_failure_in_a_background_flush_is_sticky_and_loses_nothing() {
    for_each_layout(write_failure_in_a_background_flush);
}

fn write_failure_in_a_background_flush(name: &str, layout: &Layout) {
    // Fail the n-th write after the memtable is handed to the flush: the table's blocks, then
    // the manifest edit. Stop once n is past the flush's writes.
    let mut seen_table = false;
    let mut seen_manifest = false;
    let mut n = 1;
    loop {
        // A Jungle flush appends to trees record by record: several hundred writes.
        assert!(n < 2000, "the flush never stopped failing");
        // The same writes for every n, so the flush makes the same writes and n walks through
        // each of them (with data varying by n, a flush of fewer writes could end the walk
        // before it reached the manifest).
        let mut rng = Rng::new(1);
        let fault = FaultFs::new(Arc::new(MemFs::new()));
        let db = Db::open(DIR, quiet_options(&fault, layout)).unwrap();
        let mut expected = State::new();
        acked_writes(&db, &mut rng, 0, 300, &mut expected);
        fault.fail_nth(FaultKind::Write, n);
        let Err(err) = db.flush() else {
            // The flush finished before the n-th write: every position has been covered.
            fault.clear_faults();
            db.close().unwrap();
            break;
        };
        let msg = err.to_string();
        assert!(
            msg.contains("No space left on device"),
            "layout {name}, n={n}: {msg}"
        );
        eprintln!("n={n}: {msg}");
        seen_table |= msg.contains(".sst");
        seen_manifest |= msg.contains("MANIFEST");
        assert_writes_refused_reads_work(&db, &expected);
        // Close reports the background failure, not success.
        let closed = db.close().unwrap_err().to_string();
        assert!(
            msg.ends_with(&closed),
            "layout {name}, n={n}: close said {closed}"
        );
        assert_reopened(&fault, quiet_options(&fault, layout), &expected, None);
        n += 1;
    }
    assert!(
        seen_table && seen_manifest,
        "layout {name}: faults hit the table ({seen_table}) and the manifest ({seen_manifest})"
    );
}

#[test]
fn random_fault_during_busy_background_work_is_sticky_and_loses_nothing() {
    let seed = seed("random_fault_during_busy_background_work");
    for_each_layout(|name, layout| random_fault_during_busy_background_work(seed, name, layout));
}

fn random_fault_during_busy_background_work(seed: u64, name: &str, layout: &Layout) {
    let mut rng = Rng::new(seed);
    for round in 0..12 {
        let fault = FaultFs::new(Arc::new(MemFs::new()));
        let options = tiny_options(Arc::new(fault.clone()), layout);
        let db = Db::open(DIR, options.clone()).unwrap();
        let mut expected = State::new();
        let first = 20 + rng.below(200);
        let mut tag = acked_writes(&db, &mut rng, 0, first, &mut expected);
        let (kind, nth) = if rng.percent(50) {
            (FaultKind::Write, 1 + rng.below(300))
        } else {
            (FaultKind::Sync, 1 + rng.below(8))
        };
        fault.fail_nth(kind, nth);
        // Large values keep flushes and compactions going; some write meets the fault or
        // a background failure within a bounded number of writes.
        let mut failed = None;
        for _ in 0..5000 {
            let batch = random_batch(&mut rng, tag, 2000);
            tag += 1;
            let sync = rng.percent(10);
            match db.write(batch.to_write_batch(), &WriteOptions { sync }) {
                Ok(()) => batch.apply(&mut expected),
                Err(e) => {
                    failed = Some((batch, e));
                    break;
                }
            }
        }
        let Some((batch, err)) = failed else {
            panic!(
                "round {round} (seed {seed}, layout {name}): {kind:?} fault #{nth} never surfaced"
            );
        };
        // The failure is the fault itself (a foreground WAL write) or, if a background job
        // hit it, the read-only error.
        let msg = err.to_string();
        eprintln!("round {round}: {kind:?} #{nth} after {tag} writes: {msg}");
        assert!(
            msg.contains("injected"),
            "round {round} (seed {seed}, layout {name}): not the injected fault: {msg}"
        );
        assert_writes_refused_reads_work(&db, &expected);
        drop(db);
        assert_reopened(&fault, options, &expected, Some(&batch));
    }
}
