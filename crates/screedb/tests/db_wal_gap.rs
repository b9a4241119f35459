//! Recovery across several logs when an older one lost its unsynced tail.
//!
//! A memtable switch no longer syncs the log it leaves (issue 15: the sync held every writer),
//! so a power loss can cut any log, not only the newest, while a newer log keeps later writes.
//! Recovery must then return a prefix of the writes: it replays up to the first gap in sequence
//! numbers and drops what follows. Here the logs are written by hand (a database's own log,
//! rewritten, and a newer one) to make each case exact.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::Path;

use screedb::fs::{Fs, OsFs};
use screedb::wal::LogWriter;
use screedb::{Db, Options, WriteBatch};

/// Writes one batch per key, with consecutive sequence numbers from `first_seq`, to
/// `dir/<number>.log`, then `tail` raw bytes (a torn record, or zeros).
fn write_log(dir: &Path, number: u64, first_seq: u64, keys: &[String], tail: &[u8]) {
    let path = dir.join(format!("{number:06}.log"));
    let mut w = LogWriter::new(OsFs.create(&path).unwrap());
    for (seq, key) in (first_seq..).zip(keys) {
        let mut b = WriteBatch::new();
        b.put(key, format!("value of {key}"));
        b.set_sequence(seq);
        w.add_record(b.data()).unwrap();
    }
    w.sync().unwrap();
    drop(w);
    if !tail.is_empty() {
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(tail);
        std::fs::write(&path, bytes).unwrap();
    }
}

fn keys(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i:03}")).collect()
}

/// A database whose only log is number `n` (returned), holding nothing yet.
fn empty_db(dir: &Path) -> u64 {
    let options = Options {
        create_if_missing: true,
        ..Options::default()
    };
    Db::open(dir, options).unwrap().close().unwrap();
    let mut logs: Vec<u64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".log")?.parse().ok()
        })
        .collect();
    assert_eq!(logs.len(), 1);
    logs.pop().unwrap()
}

/// Reopens `dir` and returns which of `keys` are present (with their value checked).
fn present(dir: &Path, keys: &[String]) -> Vec<bool> {
    let db = Db::open(dir, Options::default()).unwrap();
    let found = keys
        .iter()
        .map(|k| match db.get(k).unwrap() {
            Some(v) => {
                assert_eq!(v, format!("value of {k}").into_bytes());
                true
            }
            None => false,
        })
        .collect();
    // The database takes writes after such a recovery, and keeps them.
    db.put("after", "x").unwrap();
    db.close().unwrap();
    let db = Db::open(dir, Options::default()).unwrap();
    assert_eq!(db.get("after").unwrap(), Some(b"x".to_vec()));
    found
}

/// Two logs: the older holds `a` keys from sequence 1 (then `tail`), the newer `b` keys from
/// `b_first_seq`. Returns (a present, b present) after recovery.
fn recover(a: usize, tail: &[u8], b_first_seq: u64) -> (Vec<bool>, Vec<bool>) {
    let dir = tempfile::tempdir().unwrap();
    let n = empty_db(dir.path());
    let (ka, kb) = (keys("a", a), keys("b", 10));
    write_log(dir.path(), n, 1, &ka, tail);
    write_log(dir.path(), n + 100, b_first_seq, &kb, &[]);
    let both: Vec<String> = ka.iter().chain(&kb).cloned().collect();
    let mut found = present(dir.path(), &both);
    let fb = found.split_off(a);
    (found, fb)
}

#[test]
fn logs_that_continue_each_other_are_all_replayed() {
    let (a, b) = recover(40, &[], 41);
    assert!(a.iter().all(|&p| p) && b.iter().all(|&p| p), "{a:?} {b:?}");
}

#[test]
fn a_zero_filled_tail_loses_nothing() {
    // A mapped log left by a crash ends in its zero-filled reserve.
    let (a, b) = recover(40, &[0; 5000], 41);
    assert!(a.iter().all(|&p| p) && b.iter().all(|&p| p), "{a:?} {b:?}");
}

#[test]
fn a_newer_log_after_a_lost_tail_is_dropped() {
    // Records 41..=50 of the older log never reached the disk; the newer log's did.
    let (a, b) = recover(40, &[], 51);
    assert!(a.iter().all(|&p| p), "the older log's records stay: {a:?}");
    assert!(
        b.iter().all(|&p| !p),
        "writes after the gap are dropped: {b:?}"
    );
}

#[test]
fn a_newer_log_after_a_torn_record_is_dropped() {
    // The older log ends inside record 41 (a header promising more bytes than follow).
    let torn = [0x12, 0x34, 0x56, 0x78, 0xff, 0x00, 1, b'x', b'y'];
    let (a, b) = recover(40, &torn, 42);
    assert!(a.iter().all(|&p| p), "{a:?}");
    assert!(b.iter().all(|&p| !p), "{b:?}");
}

/// The MANIFEST's log is gone (its directory entry never synced) and a newer log holds writes
/// from `first_seq`. Returns which of the newer log's keys are present after recovery.
fn recover_without_first_log(first_seq: u64) -> Vec<bool> {
    let dir = tempfile::tempdir().unwrap();
    let n = empty_db(dir.path());
    std::fs::remove_file(dir.path().join(format!("{n:06}.log"))).unwrap();
    let kb = keys("b", 10);
    write_log(dir.path(), n + 100, first_seq, &kb, &[]);
    present(dir.path(), &kb)
}

#[test]
fn a_log_that_starts_where_the_manifest_says_is_replayed() {
    // The MANIFEST records that its log starts at sequence 1; a log holding 1.. continues it
    // even when the named log itself is missing.
    let b = recover_without_first_log(1);
    assert!(b.iter().all(|&p| p), "{b:?}");
}

#[test]
fn a_newer_log_after_a_lost_whole_log_is_dropped() {
    // Sequences 1..=5 were in the MANIFEST's log, lost whole; only the MANIFEST's log start
    // shows the gap (there is no older log to end anywhere).
    let b = recover_without_first_log(6);
    assert!(
        b.iter().all(|&p| !p),
        "writes after the gap are dropped: {b:?}"
    );
}
