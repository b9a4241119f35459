#![allow(clippy::unwrap_used, reason = "test code")]
//! `Db::multi_get`: against a `BTreeMap` model, with keys spread over the live memtable, an
//! immutable one and the tables, with deletions and a snapshot, for both memory components and
//! with and without memtable point indexes; and a multi-get racing a writer sees one point in
//! time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

use screedb::fs::MemFs;
use screedb::{Db, Memory, Options, ReadOptions, WriteBatch, WriteOptions};

fn options(memory: Memory, index_ratio: f64) -> Options {
    Options {
        create_if_missing: true,
        fs: Arc::new(MemFs::new()),
        memory,
        memtable_index_ratio: index_ratio,
        write_buffer_size: 64 << 10,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// `i` scattered over `0..n` (Knuth's multiplicative hash): a fixed, unordered sequence.
fn scatter(i: u64, n: u64) -> u64 {
    (i.wrapping_mul(2_654_435_761) >> 7) % n
}

#[test]
fn multi_get_matches_a_model_and_each_get() {
    for memory in [Memory::Skiplist, Memory::Flodb] {
        for index_ratio in [0.0, 0.25] {
            let db = Db::open("/db", options(memory, index_ratio)).unwrap();
            let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
            let mut frozen = None;
            for step in 0..6000u64 {
                let k = key(scatter(step, 1500));
                if scatter(step, 5) == 0 {
                    db.delete(&k).unwrap();
                    model.remove(&k);
                } else {
                    let v = format!("v{step}-{}", "x".repeat(scatter(step, 60) as usize));
                    db.put(&k, v.as_bytes()).unwrap();
                    model.insert(k, v.into_bytes());
                }
                if step == 3000 {
                    frozen = Some((db.snapshot(), model.clone()));
                }
            }
            // Keys present, deleted and never written, in no particular order.
            let keys: Vec<Vec<u8>> = (0..400).map(|i| key(scatter(i + 9000, 1700))).collect();
            let got = db.multi_get(&keys).unwrap();
            for (k, v) in keys.iter().zip(&got) {
                assert_eq!(v.as_ref(), model.get(k), "{memory:?} {index_ratio}: {k:?}");
                assert_eq!(v, &db.get(k).unwrap());
            }
            let (snapshot, old) = frozen.unwrap();
            let options = ReadOptions {
                snapshot: Some(&snapshot),
            };
            let got = db.multi_get_with(&keys, &options).unwrap();
            for (k, v) in keys.iter().zip(&got) {
                assert_eq!(
                    v.as_ref(),
                    old.get(k),
                    "{memory:?} {index_ratio} at the snapshot"
                );
            }
            assert!(db.multi_get::<Vec<u8>>(&[]).unwrap().is_empty());
        }
    }
}

#[test]
fn a_multi_get_racing_a_writer_sees_one_point_in_time() {
    for memory in [Memory::Skiplist, Memory::Flodb] {
        let db = Arc::new(Db::open("/db", options(memory, 0.25)).unwrap());
        // Every write sets all of `keys` to the same round number in one batch, so a read at
        // one point in time finds them equal.
        let keys: Vec<Vec<u8>> = (0..16).map(|i| key(i * 97)).collect();
        let done = Arc::new(AtomicBool::new(false));
        let writer = {
            let (db, keys, done) = (Arc::clone(&db), keys.clone(), Arc::clone(&done));
            thread::spawn(move || {
                for round in 0u64..3000 {
                    let mut batch = WriteBatch::new();
                    for k in &keys {
                        batch.put(k, round.to_be_bytes());
                        // Filler, so memtables fill and flush while readers read.
                        batch.put([k.as_slice(), b"-pad"].concat(), [7u8; 64]);
                    }
                    db.write(batch, &WriteOptions::default()).unwrap();
                }
                done.store(true, Ordering::Release);
            })
        };
        let mut reads = 0;
        while !done.load(Ordering::Acquire) || reads == 0 {
            let got = db.multi_get(&keys).unwrap();
            let first = &got[0];
            assert!(
                got.iter().all(|v| v == first),
                "{memory:?}: torn read {got:?}"
            );
            reads += 1;
        }
        writer.join().unwrap();
    }
}
