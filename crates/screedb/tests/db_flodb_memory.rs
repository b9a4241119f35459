#![allow(clippy::unwrap_used, reason = "test code")]
//! The FloDB memory component (`Memory::Flodb`): hot-key overwrites with and without snapshots,
//! membuffer-full fallback, scans racing writers, scans pausing the membuffer, a membuffer
//! drained whole once writes stop, drain racing flush, recovery with entries still buffered, and a random model check against a `BTreeMap`
//! with snapshots.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread;

mod crash_common;

use crash_common::ProcessFs;
use screedb::fs::{FaultFs, Fs, MemFs};
use screedb::{Db, Memory, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

fn options<F: Fs + 'static>(fs: &Arc<F>) -> Options {
    Options {
        create_if_missing: true,
        fs: fs.clone(),
        memory: Memory::Flodb,
        write_buffer_size: 256 << 10,
        // Four runs per memtable: drains, iterators and snapshots across runs.
        memtable_run_size: 64 << 10,
        ..Options::default()
    }
}

fn all(db: &Db, snapshot: Option<&Snapshot>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = db.iter(&ReadOptions { snapshot }).unwrap();
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    out
}

#[test]
fn hot_key_overwrites_keep_what_snapshots_read() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(&fs)).unwrap();
    // Without a snapshot: overwritten in place, the latest value wins.
    for i in 0..100u32 {
        db.put("hot", i.to_string()).unwrap();
    }
    assert_eq!(db.get("hot").unwrap(), Some(b"99".to_vec()));
    // With snapshots between updates: each still reads its version.
    let mut snaps = Vec::new();
    for i in 100..110u32 {
        db.put("hot", i.to_string()).unwrap();
        snaps.push((db.snapshot(), i));
        db.put("hot", format!("{i}-shadowed")).unwrap();
    }
    db.delete("hot").unwrap();
    assert_eq!(db.get("hot").unwrap(), None);
    for (s, i) in &snaps {
        assert_eq!(
            db.get_with("hot", &ReadOptions::at(s)).unwrap(),
            Some(i.to_string().into_bytes())
        );
        assert_eq!(
            all(&db, Some(s)),
            vec![(b"hot".to_vec(), i.to_string().into_bytes())]
        );
    }
    drop(snaps);
    // After the snapshots are gone, overwrites are in place again.
    db.put("hot", "last").unwrap();
    assert_eq!(db.get("hot").unwrap(), Some(b"last".to_vec()));
    db.flush().unwrap();
    assert_eq!(db.get("hot").unwrap(), Some(b"last".to_vec()));
}

#[test]
fn full_membuffer_falls_back_to_the_skiplist() {
    let fs = Arc::new(MemFs::new());
    let opts = Options {
        membuffer_size: Some(64),
        membuffer_bucket_entries: 1,
        ..options(&fs)
    };
    let db = Db::open("/db", opts).unwrap();
    let snap = db.snapshot();
    // Keys in no order (keys in order would skip the membuffer, docs/memory.md).
    for i in 0..500u32 {
        let k = i * 7 % 500;
        db.put(format!("k{k:04}"), format!("v{k}")).unwrap();
    }
    for i in 0..500u32 {
        assert_eq!(
            db.get(format!("k{i:04}")).unwrap(),
            Some(format!("v{i}").into_bytes())
        );
    }
    assert_eq!(all(&db, None).len(), 500);
    assert!(all(&db, Some(&snap)).is_empty());
}

/// What the `screedb.memory` property counts over the current memtables.
#[derive(Debug, Clone, Copy)]
struct MembufferCounts {
    /// Entries in the membuffers now.
    buffered: u64,
    /// Entries puts added to them (drains do not lower it).
    admitted: u64,
    /// Puts that went past them while scans paused them.
    paused: u64,
    /// Puts that went past them in ascending key order.
    appended: u64,
}

fn membuffer_counts(db: &Db) -> MembufferCounts {
    let text = db.property("screedb.memory").unwrap();
    let numbers: Vec<u64> = text
        .split([' ', ','])
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(numbers.len(), 4, "{text}");
    MembufferCounts {
        buffered: numbers[0],
        admitted: numbers[1],
        paused: numbers[2],
        appended: numbers[3],
    }
}

#[test]
fn memtables_after_the_first_cut_their_neighbourhoods_by_key_range() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(&fs)).unwrap();
    let by_range = |db: &Db| {
        let text = db.property("screedb.memory").unwrap();
        assert!(text.contains("live neighbourhoods by "), "{text}");
        text.ends_with("by key range")
    };
    assert!(
        !by_range(&db),
        "the first memtable has no predecessor to sample"
    );
    // db_bench's keys: zero-padded numbers, sharing their first nine bytes. The drain thread
    // samples a memtable once it is half full, so write until a switch found a sample.
    let mut model = BTreeMap::new();
    let mut put = |i: u64| {
        let k = format!("{:016}", i.wrapping_mul(0x9e37_79b9) % 1_000_000);
        let v = format!("value {i:0100}");
        db.put(k.as_bytes(), v.as_bytes()).unwrap();
        model.insert(k.into_bytes(), v.into_bytes());
    };
    let mut i = 0;
    while !by_range(&db) {
        assert!(i < 2_000_000, "no memtable cut its neighbourhoods by range");
        put(i);
        i += 1;
    }
    (i..i + 20_000).for_each(&mut put);
    let want: Vec<_> = model.into_iter().collect();
    assert_eq!(all(&db, None), want);
    for (k, v) in want.iter().step_by(97) {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
}

#[test]
fn scans_pause_the_membuffer_and_writes_alone_bring_it_back() {
    let fs = Arc::new(MemFs::new());
    let opts = Options {
        membuffer_size: Some(64 << 10),
        write_buffer_size: 8 << 20,
        ..options(&fs)
    };
    let db = Db::open("/db", opts.clone()).unwrap();
    let mut model = BTreeMap::new();
    let mut version = 0u32;
    let mut write = |db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, n: u32| {
        for _ in 0..n {
            version += 1;
            let (k, v) = (format!("k{:04}", version * 7 % 3000), format!("v{version}"));
            db.put(&k, &v).unwrap();
            model.insert(k.into_bytes(), v.into_bytes());
        }
    };
    let expected = |model: &BTreeMap<Vec<u8>, Vec<u8>>| -> Vec<(Vec<u8>, Vec<u8>)> {
        model.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    };
    for round in 0..4 {
        // Writes alone: the membuffer takes them (the drain thread may already have moved
        // them on, so what it admitted is counted, not what it holds).
        let admitted_before = membuffer_counts(&db).admitted;
        write(&db, &mut model, 2000);
        let counts = membuffer_counts(&db);
        assert!(
            counts.admitted > admitted_before,
            "round {round}: nothing admitted: {counts:?}"
        );
        let paused_before = counts.paused;
        // Scans among writes: each drains and pauses the buffer, and the writes go past it.
        // (The count of buffered entries is not checked here: a background drain still running
        // from the writes above subtracts what it removed only when it finishes.)
        for _ in 0..10 {
            assert_eq!(all(&db, None), expected(&model), "round {round}");
            write(&db, &mut model, 20);
        }
        assert_eq!(
            membuffer_counts(&db).paused,
            paused_before + 200,
            "round {round}"
        );
    }
    for (k, v) in &model {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
    }
    db.close().unwrap();
    let db = Db::open("/db", opts).unwrap();
    assert_eq!(all(&db, None), expected(&model));
}

#[test]
fn a_membuffer_that_writes_left_is_drained_whole() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/db", options(&fs)).unwrap();
    let snap = db.snapshot();
    for i in 0..500u32 {
        db.put(format!("k{i:04}"), format!("v{i}")).unwrap();
    }
    db.put("k0007", "newer").unwrap();
    // Read before the drain too: "k0007" is buffered over its appended version.
    assert_eq!(db.get("k0007").unwrap(), Some(b"newer".to_vec()));
    let first = membuffer_counts(&db);
    assert!(first.admitted > 0, "{first:?}");
    // Keys in order skip the buffer once a streak of them has been seen; the older key
    // overwritten last is buffered.
    assert!(first.admitted < 50 && first.appended > 450, "{first:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while membuffer_counts(&db).buffered > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "still buffered long after the last write: {:?}",
            membuffer_counts(&db)
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // Everything is in the skiplist now, and reads see what they saw before.
    assert_eq!(db.get("k0007").unwrap(), Some(b"newer".to_vec()));
    assert_eq!(db.get("k0499").unwrap(), Some(b"v499".to_vec()));
    // A new write is buffered again (before any scan, which would pause the buffer).
    let before = membuffer_counts(&db).admitted;
    db.put("k9999", "again").unwrap();
    assert!(membuffer_counts(&db).admitted > before);
    assert_eq!(all(&db, None).len(), 501);
    assert!(all(&db, Some(&snap)).is_empty());
}

#[test]
fn recovery_replays_writes_still_in_the_membuffer() {
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let opts = |fs: Arc<ProcessFs>| Options {
        // A buffer too large to reach the drain threshold here: the writes stay buffered.
        membuffer_size: Some(64 << 10),
        ..options(&fs)
    };
    let fs = Arc::new(ProcessFs::new(&fault));
    let db = Db::open("/db", opts(fs.clone())).unwrap();
    for i in 0..50u32 {
        db.put(format!("k{i}"), format!("v{i}")).unwrap();
        db.put("hot", format!("h{i}")).unwrap();
    }
    let mut last = WriteBatch::new();
    last.delete("k7");
    db.write(last, &WriteOptions { sync: true }).unwrap();
    // Power loss with the database open: only the synced WAL survives.
    fs.power_cut(FaultFs::crash);
    drop(db);
    let db = Db::open("/db", opts(Arc::new(ProcessFs::new(&fault)))).unwrap();
    assert_eq!(db.get("hot").unwrap(), Some(b"h49".to_vec()));
    assert_eq!(db.get("k7").unwrap(), None);
    assert_eq!(db.get("k8").unwrap(), Some(b"v8".to_vec()));
    assert_eq!(all(&db, None).len(), 50);
}

#[test]
fn scans_racing_writers_see_point_in_time_states() {
    let fs = Arc::new(MemFs::new());
    let db = Arc::new(Db::open("/db", options(&fs)).unwrap());
    const KEYS: u32 = 64;
    // Every batch sets all keys to the same round number: a consistent scan sees one round.
    let mut batch = WriteBatch::new();
    for k in 0..KEYS {
        batch.put(format!("k{k:03}"), 0u32.to_le_bytes());
    }
    db.write(batch, &Default::default()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let rounds_done = Arc::new(AtomicU32::new(0));
    let writer = {
        let (db, stop, rounds_done) = (db.clone(), stop.clone(), rounds_done.clone());
        thread::spawn(move || {
            let mut round = 1u32;
            while !stop.load(Ordering::Relaxed) {
                let mut batch = WriteBatch::new();
                // Half the rounds are hot-key single puts spread over the keys, then the batch.
                db.put(format!("k{:03}", round % KEYS), u32::MAX.to_le_bytes())
                    .unwrap();
                for k in 0..KEYS {
                    batch.put(format!("k{k:03}"), round.to_le_bytes());
                }
                db.write(batch, &Default::default()).unwrap();
                rounds_done.store(round, Ordering::Relaxed);
                round += 1;
            }
            round
        })
    };
    // Scan until both enough scans and enough rounds have happened, however threads are scheduled.
    let scans = if cfg!(debug_assertions) { 200 } else { 2000 };
    let mut done = 0;
    while done < scans || rounds_done.load(Ordering::Relaxed) < 20 {
        done += 1;
        let rows = all(&db, None);
        assert_eq!(rows.len(), KEYS as usize);
        let values: Vec<u32> = rows
            .iter()
            .map(|(_, v)| u32::from_le_bytes(v.as_slice().try_into().unwrap()))
            .collect();
        // Either all keys share one round, or exactly one key holds the hot value and the rest
        // share the previous round.
        let rounds: std::collections::BTreeSet<u32> =
            values.iter().copied().filter(|v| *v != u32::MAX).collect();
        assert_eq!(rounds.len(), 1, "torn scan: {values:?}");
        assert!(values.iter().filter(|v| **v == u32::MAX).count() <= 1);
    }
    stop.store(true, Ordering::Relaxed);
    assert!(writer.join().unwrap() > 20);
}

#[test]
fn drain_racing_flush_loses_nothing() {
    let fs = Arc::new(MemFs::new());
    let opts = Options {
        write_buffer_size: 64 << 10,
        ..options(&fs)
    };
    let db = Arc::new(Db::open("/db", opts.clone()).unwrap());
    let flusher = {
        let db = db.clone();
        thread::spawn(move || {
            for _ in 0..20 {
                db.flush().unwrap();
            }
        })
    };
    let n = 5000u32;
    // Keys in no order, so that they are buffered (keys in order skip the membuffer).
    for i in 0..n {
        db.put(format!("k{:05}", i * 7 % 1500), format!("v{i}"))
            .unwrap();
    }
    flusher.join().unwrap();
    let check = |db: &Db| {
        for k in 0..1500u32 {
            let last = (0..n).rev().find(|i| i * 7 % 1500 == k).unwrap();
            assert_eq!(
                db.get(format!("k{k:05}")).unwrap(),
                Some(format!("v{last}").into_bytes())
            );
        }
        assert_eq!(all(db, None).len(), 1500);
    };
    check(&db);
    db.flush().unwrap();
    check(&db);
    drop(db);
    let db = Db::open("/db", opts).unwrap();
    check(&db);
}

/// A small deterministic random generator (xorshift64*).
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

#[test]
fn random_operations_match_a_model_with_snapshots() {
    for seed in 1..=4u64 {
        let fs = Arc::new(MemFs::new());
        let opts = Options {
            write_buffer_size: 16 << 10,
            membuffer_size: Some(2 << 10),
            membuffer_bucket_entries: 2,
            ..options(&fs)
        };
        let mut db = Db::open("/db", opts.clone()).unwrap();
        let mut rng = Rng(seed * 0x9e37_79b9);
        let mut model = Model::new();
        let mut snaps: Vec<(screedb::Snapshot, Model)> = Vec::new();
        for step in 0..3000u64 {
            let range = if rng.below(2) == 0 { 4 } else { 60 };
            let key = format!("k{:02}", rng.below(range));
            match rng.below(100) {
                0..=49 => {
                    let v = format!("{step}");
                    db.put(&key, &v).unwrap();
                    model.insert(key.into_bytes(), v.into_bytes());
                }
                50..=64 => {
                    db.delete(&key).unwrap();
                    model.remove(key.as_bytes());
                }
                65..=79 => assert_eq!(db.get(&key).unwrap().as_ref(), model.get(key.as_bytes())),
                80..=84 => snaps.push((db.snapshot(), model.clone())),
                85..=89 if !snaps.is_empty() => {
                    let i = rng.below(snaps.len() as u64) as usize;
                    let (s, m) = &snaps[i];
                    assert_eq!(
                        db.get_with(&key, &ReadOptions::at(s)).unwrap().as_ref(),
                        m.get(key.as_bytes())
                    );
                    let want: Vec<_> = m.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    assert_eq!(all(&db, Some(s)), want, "seed {seed} step {step}");
                }
                90..=92 if !snaps.is_empty() => {
                    let i = rng.below(snaps.len() as u64) as usize;
                    snaps.swap_remove(i);
                }
                93 => {
                    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                    assert_eq!(all(&db, None), want, "seed {seed} step {step}");
                }
                94 => {
                    snaps.clear();
                    db.close().unwrap();
                    db = Db::open("/db", opts.clone()).unwrap();
                }
                _ => {}
            }
        }
        let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(all(&db, None), want);
    }
}
