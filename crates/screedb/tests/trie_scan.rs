//! `Db::scan_unordered`, the full scan of the trie layout (which keeps no key order), against a
//! `BTreeMap`: every live key exactly once with its newest value, as of now or of a snapshot
//! held across writes, flushes, compactions and reopens, with either memory component; a scan
//! running beside a writer sees one point in time; with a layout that keeps key order it is
//! the ordered scan.
//!
//! `SCREEDB_MODEL_SEED` replays one seed (printed on failure).
#![allow(clippy::unwrap_used, reason = "test code")]

mod crash_common;
mod trie_common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crash_common::{Rng, random_batch, seed_from};
use screedb::fs::MemFs;
use screedb::{Db, Layout, Memory, Options, ReadOptions, Snapshot};
use trie_common::{key, value};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options(fs: Arc<MemFs>, memory: Memory) -> Options {
    Options {
        memory,
        ..trie_common::options(fs)
    }
}

/// Everything `scan_unordered` returns, failing on a key returned twice.
fn scan(db: &Db, snapshot: Option<&Snapshot>) -> Model {
    let options = snapshot.map_or_else(ReadOptions::default, ReadOptions::at);
    let mut got = Model::new();
    for item in db.scan_unordered(&options).unwrap() {
        let (k, v) = item.unwrap();
        let k_shown = String::from_utf8_lossy(&k).into_owned();
        assert!(got.insert(k, v).is_none(), "key {k_shown} returned twice");
    }
    got
}

#[test]
fn an_unordered_scan_returns_every_live_key_once() {
    for memory in [Memory::Skiplist, Memory::Flodb] {
        let seed = seed_from("SCREEDB_MODEL_SEED", "trie_scan");
        let mut rng = Rng::new(seed);
        let fs = Arc::new(MemFs::new());
        let dir = Path::new("/scan");
        let keys = 500;
        let mut model = Model::new();
        let mut db = Db::open(dir, options(fs.clone(), memory)).unwrap();
        let mut held: Option<(Snapshot, Model)> = None;
        for step in 0..4000u64 {
            let i = rng.below(keys);
            match rng.below(100) {
                0..=59 => {
                    db.put(key(i), value(i, step)).unwrap();
                    model.insert(key(i), value(i, step));
                }
                60..=74 => {
                    db.delete(key(i)).unwrap();
                    model.remove(&key(i));
                }
                75..=84 => random_batch(&db, &mut model, &mut rng, keys, key, |j| value(j, step)),
                85 => db.flush().unwrap(),
                86 if step % 9 == 0 => db.compact_range(None, None).unwrap(),
                87 if step % 13 == 0 => {
                    held = None;
                    db.close().unwrap();
                    db = Db::open(dir, options(fs.clone(), memory)).unwrap();
                }
                88 if held.is_none() => held = Some((db.snapshot(), model.clone())),
                89 => held = None,
                90..=91 => {
                    assert_eq!(scan(&db, None), model, "{memory:?}, step {step}");
                    if let Some((snapshot, then)) = &held {
                        assert_eq!(
                            &scan(&db, Some(snapshot)),
                            then,
                            "{memory:?}, step {step}: at a snapshot"
                        );
                    }
                }
                _ => {}
            }
        }
        drop(held);
        db.wait_for_idle().unwrap();
        let levels = db.stats().files_per_level;
        assert!(
            levels.iter().skip(2).any(|&n| n > 0),
            "the trie grew below level 1: {levels:?}"
        );
        assert_eq!(scan(&db, None), model, "{memory:?}, at the end");
        db.close().unwrap();
    }
}

/// Keys written in order by a writer beside the scans: a scan of one point in time returns
/// exactly the first `n` keys for some `n`, each with its value.
#[test]
fn a_scan_beside_a_writer_sees_one_point_in_time() {
    let fs = Arc::new(MemFs::new());
    let db = Arc::new(Db::open("/scan", options(fs, Memory::Flodb)).unwrap());
    let first = 300u64;
    for i in 0..first {
        db.put(key(i), value(i, i)).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, stop) = (Arc::clone(&db), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut i = first;
            while !stop.load(Ordering::Relaxed) && i < 20_000 {
                db.put(key(i), value(i, i)).unwrap();
                i += 1;
            }
            i
        })
    };
    let mut sizes = Vec::new();
    for _ in 0..30 {
        let got = scan(&db, None);
        let n = got.len() as u64;
        assert!(n >= first, "{n} keys");
        for (i, (k, v)) in got.iter().enumerate() {
            let i = i as u64;
            assert_eq!((k, v), (&key(i), &value(i, i)), "a scan of {n} keys");
        }
        sizes.push(n);
    }
    stop.store(true, Ordering::Relaxed);
    let written = writer.join().unwrap();
    assert_eq!(scan(&db, None).len() as u64, written);
    assert!(
        sizes.windows(2).all(|w| w[0] <= w[1]),
        "later scans saw fewer keys: {sizes:?}"
    );
}

#[test]
fn with_key_order_the_scan_is_the_ordered_one() {
    let fs = Arc::new(MemFs::new());
    let o = Options {
        layout: Layout::default(),
        ..options(fs, Memory::Skiplist)
    };
    let db = Db::open("/ordered", o).unwrap();
    let mut model = Model::new();
    for i in (0..400u64).rev() {
        db.put(key(i), value(i, 0)).unwrap();
        model.insert(key(i), value(i, 0));
    }
    db.delete(key(7)).unwrap();
    model.remove(&key(7));
    let got: Vec<(Vec<u8>, Vec<u8>)> = db
        .scan_unordered(&ReadOptions::default())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(got, model.into_iter().collect::<Vec<_>>());
}
