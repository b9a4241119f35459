//! The Jungle layout against a `BTreeMap`: puts, deletes, batches, gets and ordered iteration,
//! with snapshots and iterators held while merges append segments to trees and rewrite them,
//! across flushes, full compactions and reopens; options so small that trees split, grow by
//! appends and pass their space ratio within a few thousand writes. `screedb check` stays clean
//! and the engine's statistics show appends and rewrites really ran.
//!
//! `SCREEDB_MODEL_SEED` replays one seed (printed on failure).
#![allow(clippy::unwrap_used, reason = "test code")]

mod crash_common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crash_common::{Rng, random_batch, seed_from};
use screedb::check::{check_database, stored_layout};
use screedb::fs::MemFs;
use screedb::{Db, DbIterator, JungleOptions, Layout, LayoutKind, Options, ReadOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn seed() -> u64 {
    seed_from("SCREEDB_MODEL_SEED", "jungle_model")
}

/// Tiny trees and nodes, a low C and four levels: every mechanism of the layout runs within a
/// few thousand writes, level-1 guard pruning included (the other Jungle suites run without).
fn options(fs: Arc<MemFs>) -> Options {
    Options {
        create_if_missing: true,
        fs,
        layout: Layout::Jungle(JungleOptions {
            compaction_factor: 1.5,
            node_bytes: 512,
            inline_value_max: 16,
            prune_guards: true,
            ..JungleOptions::default()
        }),
        write_buffer_size: 8 << 10,
        target_file_size: 8 << 10,
        max_bytes_for_level_base: 24 << 10,
        l0_compaction_trigger: 2,
        num_levels: 4,
        block_cache_bytes: 32 << 10,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

fn value(i: u64, step: u64) -> Vec<u8> {
    let mut v = format!("v{i}.{step}.").into_bytes();
    v.resize(8 + (step % 90) as usize, b'x');
    v
}

/// Every entry an iterator yields from the first key.
fn scan(mut it: DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

fn as_list(model: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    model.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn assert_matches(db: &Db, model: &Model, what: &str) {
    let got = scan(db.iter(&ReadOptions::default()).unwrap());
    assert_eq!(got.len(), model.len(), "{what}: entry count");
    assert!(
        got == as_list(model),
        "{what}: the scan differs from the model"
    );
    for k in model.keys().take(50) {
        assert_eq!(db.get(k).unwrap().as_ref(), model.get(k), "{what}");
    }
}

#[test]
fn the_jungle_layout_matches_a_model_across_appends_rewrites_and_reopens() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/jungle");
    let keys = 800;
    let mut model = Model::new();
    let mut db = Db::open(dir, options(fs.clone())).unwrap();
    // Snapshots and iterators held across writes and compactions, with the model then.
    let mut held = Vec::new();
    let mut iters: Vec<(DbIterator, Model)> = Vec::new();
    for step in 0..8000u64 {
        let i = rng.below(keys);
        match rng.below(100) {
            0..=59 => {
                db.put(key(i), value(i, step)).unwrap();
                model.insert(key(i), value(i, step));
            }
            60..=72 => {
                db.delete(key(i)).unwrap();
                model.remove(&key(i));
            }
            73..=82 => {
                random_batch(&db, &mut model, &mut rng, keys, key, |j| value(j, step));
            }
            83..=90 => {
                assert_eq!(
                    db.get(key(i)).unwrap(),
                    model.get(&key(i)).cloned(),
                    "step {step}: key {i}"
                );
            }
            91 if held.len() < 4 => held.push((db.snapshot(), model.clone())),
            92 if iters.len() < 2 => {
                iters.push((db.iter(&ReadOptions::default()).unwrap(), model.clone()));
            }
            93 => {
                if let Some((it, then)) = iters.pop() {
                    assert!(
                        scan(it) == as_list(&then),
                        "step {step}: an iterator held across compactions changed"
                    );
                }
            }
            94 => db.flush().unwrap(),
            95 if step % 9 == 0 => db.compact_range(None, None).unwrap(),
            96 if step % 7 == 0 => {
                held.clear();
                iters.clear();
                db.close().unwrap();
                db = Db::open(dir, options(fs.clone())).unwrap();
                assert_matches(&db, &model, &format!("after reopen at step {step}"));
            }
            _ => {
                if let Some((snapshot, then)) = held.first() {
                    let j = rng.below(keys);
                    assert_eq!(
                        db.get_with(key(j), &ReadOptions::at(snapshot)).unwrap(),
                        then.get(&key(j)).cloned(),
                        "step {step}: snapshot read of key {j}"
                    );
                    if rng.below(8) == 0 {
                        let it = db.iter(&ReadOptions::at(snapshot)).unwrap();
                        assert!(scan(it) == as_list(then), "step {step}: snapshot scan");
                    }
                }
                if rng.below(4) == 0 {
                    held.pop();
                }
            }
        }
    }
    for (it, then) in iters.drain(..) {
        assert!(
            scan(it) == as_list(&then),
            "an iterator held to the end changed"
        );
    }
    for (snapshot, then) in &held {
        let it = db.iter(&ReadOptions::at(snapshot)).unwrap();
        assert!(
            scan(it) == as_list(then),
            "a snapshot held to the end changed"
        );
    }
    drop(held);
    db.wait_for_idle().unwrap();
    assert_matches(&db, &model, "at the end");
    let stats = db.stats();
    eprintln!("{stats}");
    assert!(
        stats.tree_appended_value_bytes + stats.tree_appended_node_bytes > 0,
        "merges appended to trees: {stats}"
    );
    assert!(stats.tree_new_bytes > 0, "trees were written: {stats}");
    assert!(
        stats.tree_replacements > 0,
        "appends that would pass C replaced their trees: {stats}"
    );
    assert!(
        stats.files_per_level.iter().skip(2).any(|&n| n > 0),
        "trees reached level 2: {:?}",
        stats.files_per_level
    );
    db.compact_range(None, None).unwrap();
    assert_matches(&db, &model, "after a full compaction");
    db.close().unwrap();

    let o = options(fs.clone());
    assert_eq!(stored_layout(dir, &o).unwrap(), LayoutKind::Jungle);
    let report = check_database(dir, &o).unwrap();
    assert!(report.tables > 0, "{report:?}");
    let db = Db::open(dir, o).unwrap();
    assert_matches(&db, &model, "after the check");
}
