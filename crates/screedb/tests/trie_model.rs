//! The trie layout against a `BTreeMap`: puts, deletes, batches, gets at snapshots held across
//! compactions, flushes, full compactions and reopens, with options so small that every level
//! of the trie fills, splits and is merged in place; `screedb check` stays clean, and every
//! call that needs key order answers `NotSupported`.
//!
//! `SCREEDB_MODEL_SEED` replays one seed (printed on failure).
#![allow(clippy::unwrap_used, reason = "test code")]

mod crash_common;
mod trie_common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crash_common::{Rng, random_batch, seed_from};
use screedb::check::{check_database, stored_layout};
use screedb::fs::{Fs, MemFs};
use screedb::{Db, Error, Layout, LayoutKind, Options, ReadOptions};
use trie_common::{key, options, value};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn seed() -> u64 {
    seed_from("SCREEDB_MODEL_SEED", "trie_model")
}

fn assert_matches(db: &Db, model: &Model, keys: u64, what: &str) {
    for i in 0..keys {
        let k = key(i);
        assert_eq!(
            db.get(&k).unwrap(),
            model.get(&k).cloned(),
            "{what}: key {}",
            String::from_utf8_lossy(&k)
        );
    }
}

#[test]
fn the_trie_layout_matches_a_model_across_compactions_and_reopens() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/trie");
    let keys = 600;
    let mut model = Model::new();
    let mut db = Db::open(dir, options(fs.clone())).unwrap();
    // Snapshots held across writes and compactions: (snapshot, model at that moment).
    let mut held = Vec::new();
    for step in 0..6000u64 {
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
            75..=84 => {
                random_batch(&db, &mut model, &mut rng, keys, key, |j| value(j, step));
            }
            85..=94 => {
                assert_eq!(
                    db.get(key(i)).unwrap(),
                    model.get(&key(i)).cloned(),
                    "step {step}"
                );
            }
            95 if held.len() < 4 => held.push((db.snapshot(), model.clone())),
            96 => db.flush().unwrap(),
            97 if step % 5 == 0 => db.compact_range(None, None).unwrap(),
            98 if step % 7 == 0 => {
                held.clear();
                db.close().unwrap();
                db = Db::open(dir, options(fs.clone())).unwrap();
                assert_matches(&db, &model, keys, &format!("after reopen at step {step}"));
            }
            _ => {
                if let Some((snapshot, then)) = held.first() {
                    let j = rng.below(keys);
                    assert_eq!(
                        db.get_with(key(j), &ReadOptions::at(snapshot)).unwrap(),
                        then.get(&key(j)).cloned(),
                        "step {step}: snapshot read of key {j}"
                    );
                }
                if rng.below(4) == 0 {
                    held.pop();
                }
            }
        }
    }
    for (snapshot, then) in &held {
        for i in 0..keys {
            assert_eq!(
                db.get_with(key(i), &ReadOptions::at(snapshot)).unwrap(),
                then.get(&key(i)).cloned()
            );
        }
    }
    drop(held);
    db.wait_for_idle().unwrap();
    assert_matches(&db, &model, keys, "at the end");
    let stats = db.stats();
    assert!(
        stats.files_per_level.iter().skip(2).any(|&n| n > 0),
        "the trie grew below level 1: {:?}",
        stats.files_per_level
    );
    db.compact_range(None, None).unwrap();
    assert_matches(&db, &model, keys, "after a full compaction");
    db.close().unwrap();

    let o = options(fs.clone());
    assert_eq!(stored_layout(dir, &o).unwrap(), LayoutKind::Trie);
    let report = check_database(dir, &o).unwrap();
    assert!(report.tables > 0, "{report:?}");
    // The full compaction left everything in the last level, whose containers hold clusters.
    assert!(report.clusters > 0, "{report:?}");
    let db = Db::open(dir, o).unwrap();
    assert_matches(&db, &model, keys, "after the check");
    let metadata: u64 = db
        .property("screedb.table-metadata-bytes")
        .unwrap()
        .parse()
        .unwrap();
    assert!(metadata > 0, "the live HTables hold filters in memory");
}

#[test]
fn calls_that_need_key_order_are_not_supported() {
    let fs = Arc::new(MemFs::new());
    let db = Db::open("/trie", options(fs)).unwrap();
    db.put(b"a", b"1").unwrap();
    let not_supported = |e: Error| {
        assert!(
            matches!(e, Error::NotSupported { layout: "trie", .. }),
            "{e}"
        );
        assert!(
            e.to_string().contains("the trie layout does not support"),
            "{e}"
        );
    };
    not_supported(db.iter(&ReadOptions::default()).unwrap_err());
    not_supported(db.range(b"a".as_slice()..b"z".as_slice()).unwrap_err());
    not_supported(db.prefix(b"a").unwrap_err());
    not_supported(db.approximate_sizes(&[(b"a", b"z")]).unwrap_err());
    assert_eq!(db.get(b"a").unwrap(), Some(b"1".to_vec()));
}

#[test]
fn the_trie_layout_refuses_a_custom_comparator_and_another_layout() {
    #[derive(Debug)]
    struct Reverse;
    impl screedb::Comparator for Reverse {
        fn name(&self) -> &str {
            "test.reverse"
        }
        fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
            b.cmp(a)
        }
    }
    let fs = Arc::new(MemFs::new());
    let o = Options {
        comparator: Arc::new(Reverse),
        ..options(fs.clone())
    };
    let err = Db::open("/trie", o).unwrap_err().to_string();
    assert!(err.contains("bytewise comparator"), "{err}");

    Db::open("/trie", options(fs.clone()))
        .unwrap()
        .close()
        .unwrap();
    let flsm = Options {
        layout: Layout::default(),
        ..options(fs)
    };
    let err = Db::open("/trie", flsm).unwrap_err().to_string();
    assert!(err.contains("trie") && err.contains("flsm"), "{err}");
}

#[test]
fn repair_rebuilds_a_trie_database_whose_manifest_is_gone() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/trie");
    let keys = 800;
    let mut model = Model::new();
    let db = Db::open(dir, options(fs.clone())).unwrap();
    for step in 0..3u64 {
        for i in 0..keys {
            if (i + step) % 5 == 0 {
                db.delete(key(i)).unwrap();
                model.remove(&key(i));
            } else {
                db.put(key(i), value(i, step)).unwrap();
                model.insert(key(i), value(i, step));
            }
        }
        db.flush().unwrap();
    }
    // The last writes stay in the log only.
    db.put(key(1), b"from the log").unwrap();
    model.insert(key(1), b"from the log".to_vec());
    db.wait_for_idle().unwrap();
    assert!(db.stats().files_per_level.iter().skip(1).any(|&n| n > 0));
    drop(db);
    for name in fs.list(dir).unwrap() {
        if name.starts_with("MANIFEST") || name == "CURRENT" {
            fs.remove(&dir.join(name)).unwrap();
        }
    }
    let report = screedb::repair_db(dir, &options(fs.clone())).unwrap();
    assert!(
        report.tables_read > 0 && report.tables_lost.is_empty(),
        "{report:?}"
    );
    let o = options(fs);
    assert_eq!(stored_layout(dir, &o).unwrap(), LayoutKind::Trie);
    check_database(dir, &o).unwrap();
    let db = Db::open(dir, o).unwrap();
    assert_matches(&db, &model, keys, "after repair");
    // Compaction places the repaired tables, and the data stays.
    db.compact_range(None, None).unwrap();
    assert_matches(&db, &model, keys, "after repair and a full compaction");
}
