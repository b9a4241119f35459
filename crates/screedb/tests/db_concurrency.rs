//! Writers, readers and iterators at once, on tiny options so flushes and compactions run while
//! they work.
//!
//! - Each writer owns a disjoint key range and writes key pairs (`a` and `b` of one index) in one
//!   batch, both with the writer's next version: `value = key:version`.
//! - Readers `get` random keys; for one reader a key's version never goes backwards.
//! - Scanners take a snapshot and scan everything: keys ascending without duplicates, and no
//!   pair split across versions. After more writes and a flush, the same snapshot must give the
//!   identical scan.
//! - At the end the database holds each writer's last versions, also after a reopen.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use screedb::{Db, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

const WRITERS: usize = 3;
const PAIRS_PER_WRITER: usize = 40;
const RUN_FOR: Duration = Duration::from_millis(2000);

fn options() -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 16 << 10,
        target_file_size: 8 << 10,
        block_size: 512,
        l0_compaction_trigger: 2,
        l0_slowdown_trigger: 4,
        l0_stop_trigger: 8,
        max_bytes_for_level_base: 32 << 10,
        num_levels: 4,
        max_background_jobs: 2,
        block_cache_bytes: 8 << 10,
        ..Options::default()
    }
}

fn key(writer: usize, side: char, index: usize) -> Vec<u8> {
    format!("w{writer}-{side}{index:03}").into_bytes()
}

/// `key:version:padding`, so values have some size and name their own key.
fn value(key: &[u8], version: u64) -> Vec<u8> {
    let mut v = format!("{}:{version:010}:", String::from_utf8_lossy(key)).into_bytes();
    v.resize(v.len() + (version % 97) as usize, b'.');
    v
}

/// The version a value carries, checking it belongs to `key`.
fn version_of(key: &[u8], value: &[u8]) -> u64 {
    let text = std::str::from_utf8(value).unwrap();
    let mut parts = text.splitn(3, ':');
    assert_eq!(
        parts.next().unwrap().as_bytes(),
        key,
        "value {text} under another key"
    );
    parts.next().unwrap().parse().unwrap()
}

/// Parses `w<writer>-<side><index>`.
fn parse_key(key: &[u8]) -> (usize, char, usize) {
    let text = std::str::from_utf8(key).unwrap();
    let rest = text.strip_prefix('w').unwrap();
    let (w, rest) = rest.split_once('-').unwrap();
    let side = rest.chars().next().unwrap();
    (w.parse().unwrap(), side, rest[1..].parse().unwrap())
}

fn rng_step(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Writes pairs until `stop`; returns the last version written per pair index.
fn writer(db: &Db, id: usize, stop: &AtomicBool) -> Vec<u64> {
    let mut last = vec![0u64; PAIRS_PER_WRITER];
    let mut rng = 0x9e37_79b9 ^ (id as u64 + 1);
    let mut version = 0u64;
    while !stop.load(Ordering::Relaxed) {
        version += 1;
        let i = (rng_step(&mut rng) % PAIRS_PER_WRITER as u64) as usize;
        let mut batch = WriteBatch::new();
        for side in ['a', 'b'] {
            let k = key(id, side, i);
            batch.put(&k, value(&k, version));
        }
        let sync = version.is_multiple_of(50);
        db.write(batch, &WriteOptions { sync }).unwrap();
        last[i] = version;
    }
    last
}

/// Gets random keys; a key's version never goes backwards for this reader.
fn reader(db: &Db, id: u64, stop: &AtomicBool) -> u64 {
    let mut seen: HashMap<Vec<u8>, u64> = HashMap::new();
    let mut rng = 0x1234_5678 ^ id;
    let mut reads = 0;
    while !stop.load(Ordering::Relaxed) {
        let r = rng_step(&mut rng) as usize;
        let side = if r & 1 == 0 { 'a' } else { 'b' };
        let k = key((r >> 1) % WRITERS, side, (r >> 8) % PAIRS_PER_WRITER);
        let version = db.get(&k).unwrap().map_or(0, |v| version_of(&k, &v));
        let before = seen.entry(k.clone()).or_insert(0);
        assert!(
            version >= *before,
            "reader {id}: {} went back from version {before} to {version}",
            String::from_utf8_lossy(&k)
        );
        *before = version;
        reads += 1;
    }
    reads
}

/// A full scan at `snapshot` (`None` = now), checked for order and for pairs split across versions.
fn checked_scan(db: &Db, snapshot: Option<&Snapshot>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let ro = ReadOptions { snapshot };
    let mut it = db.iter(&ro).unwrap();
    let mut out: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    it.seek_to_first();
    while it.valid() {
        if let Some((prev, _)) = out.last() {
            assert!(prev.as_slice() < it.key(), "scan not strictly ascending");
        }
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    // Pairs: every `a` has its `b` with the same version, and the reverse.
    let versions: HashMap<(usize, char, usize), u64> = out
        .iter()
        .map(|(k, v)| (parse_key(k), version_of(k, v)))
        .collect();
    for (&(w, side, i), &version) in &versions {
        let other = if side == 'a' { 'b' } else { 'a' };
        assert_eq!(
            versions.get(&(w, other, i)),
            Some(&version),
            "snapshot {:?}: pair w{w}/{i} split: {side} has version {version}",
            snapshot.map(Snapshot::sequence)
        );
    }
    out
}

/// Snapshot, scan, let writes and a flush (or compaction) happen, scan again: identical.
fn scanner(db: &Db, id: u64, stop: &AtomicBool, flushes: &AtomicU64) -> u64 {
    let mut scans = 0;
    let mut round = 0u64;
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        let snap = db.snapshot();
        let first = checked_scan(db, Some(&snap));
        thread::sleep(Duration::from_millis(10));
        if (round + id).is_multiple_of(4) {
            db.compact_range(None, None).unwrap();
        } else {
            db.flush().unwrap();
        }
        flushes.fetch_add(1, Ordering::Relaxed);
        let second = checked_scan(db, Some(&snap));
        assert!(first == second, "snapshot {} changed", snap.sequence());
        // Point reads at the snapshot agree with the scan.
        let ro = ReadOptions {
            snapshot: Some(&snap),
        };
        for (k, v) in first.iter().step_by(7) {
            assert_eq!(db.get_with(k, &ro).unwrap().as_ref(), Some(v));
        }
        scans += 2;
    }
    scans
}

fn check_final(db: &Db, last: &[Vec<u64>], when: &str) {
    for (w, versions) in last.iter().enumerate() {
        for (i, &version) in versions.iter().enumerate() {
            for side in ['a', 'b'] {
                let k = key(w, side, i);
                let got = db.get(&k).unwrap().map_or(0, |v| version_of(&k, &v));
                assert_eq!(got, version, "{when}: {}", String::from_utf8_lossy(&k));
            }
        }
    }
    let all = checked_scan(db, None);
    let written = last.iter().flatten().filter(|&&v| v > 0).count() * 2;
    assert_eq!(all.len(), written, "{when}: keys in a full scan");
}

#[test]
fn writers_readers_and_snapshot_scans_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::open(&path, options()).unwrap();
    let stop = AtomicBool::new(false);
    let flushes = AtomicU64::new(0);
    let started = Instant::now();
    let (last, reads, scans) = thread::scope(|s| {
        let writers: Vec<_> = (0..WRITERS)
            .map(|id| {
                let (db, stop) = (&db, &stop);
                s.spawn(move || writer(db, id, stop))
            })
            .collect();
        let readers: Vec<_> = (0..2)
            .map(|id| {
                let (db, stop) = (&db, &stop);
                s.spawn(move || reader(db, id, stop))
            })
            .collect();
        let scanners: Vec<_> = (0..2)
            .map(|id| {
                let (db, stop, flushes) = (&db, &stop, &flushes);
                s.spawn(move || scanner(db, id, stop, flushes))
            })
            .collect();
        thread::sleep(RUN_FOR);
        // Past RUN_FOR, until a flush and a compaction have run alongside the threads (a slow,
        // shared machine may not have finished one in time); bounded, so a stuck engine fails.
        while (db.stats().flushes == 0 || db.stats().compactions == 0)
            && started.elapsed() < RUN_FOR * 15
        {
            thread::sleep(Duration::from_millis(50));
        }
        stop.store(true, Ordering::Relaxed);
        let last: Vec<Vec<u64>> = writers.into_iter().map(|h| h.join().unwrap()).collect();
        let reads: u64 = readers.into_iter().map(|h| h.join().unwrap()).sum();
        let scans: u64 = scanners.into_iter().map(|h| h.join().unwrap()).sum();
        (last, reads, scans)
    });
    let stats = db.stats();
    eprintln!(
        "{:?}: {} writes, {reads} reads, {scans} scans, {} flush calls; {stats:?}",
        started.elapsed(),
        last.iter().map(|v| v.iter().max().unwrap()).sum::<u64>(),
        flushes.load(Ordering::Relaxed)
    );
    assert!(reads > 0 && scans > 0);
    assert!(stats.flushes > 0, "{stats:?}");
    assert!(stats.compactions > 0, "{stats:?}");

    db.wait_for_idle().unwrap();
    check_final(&db, &last, "before reopen");
    db.close().unwrap();
    let db = Db::open(&path, options()).unwrap();
    check_final(&db, &last, "after reopen");
}
