//! Randomized model test: a seeded stream of operations runs against the database and against a
//! `BTreeMap`, and every read is compared.
//!
//! Operations: puts, deletes, batches (with repeated keys: the last op wins), gets, snapshots
//! (the model is a clone of the map), reads and scans at snapshots after many later writes and
//! compactions, forward/backward scans, seeks followed by random walks of next/prev (off both
//! ends), range and prefix scans, a long-lived iterator read after compactions, flush,
//! compact_range over random ranges, and reopen.
//!
//! Both tests run over each layout (`crash_common::for_each_layout`), with the same seeds.
//!
//! Environment: `SCREEDB_MODEL_SEED` replays one seed (printed on failure, with the layout);
//! `SCREEDB_TEST_LAYOUT` restricts the run to one layout; `SCREEDB_MODEL_STEPS` sets the number
//! of steps per run (`model_real_dir` runs a quarter of them, split between the layouts).
#![allow(clippy::unwrap_used, reason = "test code")]

mod crash_common;
mod model_common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use screedb::fs::MemFs;
use screedb::{Db, DbIterator, Layout, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

use model_common::{
    Model, Rng, assert_pairs, assert_value, in_range, key_space, model_pairs, random_bound,
    random_options, random_value, scan_backward, scan_forward, seek_and_walk, show,
};

/// Prints the seed (and how to replay it) if the test panics.
struct SeedGuard {
    seed: u64,
    label: &'static str,
    layout: &'static str,
}

impl Drop for SeedGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "db_model[{}] failed with seed {} on layout {}: replay with \
                 SCREEDB_MODEL_SEED={} SCREEDB_TEST_LAYOUT={}",
                self.label, self.seed, self.layout, self.seed, self.layout
            );
        }
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn default_seed() -> u64 {
    env_u64("SCREEDB_MODEL_SEED").unwrap_or_else(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        nanos ^ u64::from(std::process::id())
    })
}

/// A database under test plus everything needed to reopen it.
struct Harness {
    db: Option<Db>,
    path: PathBuf,
    options: Options,
    model: Model,
    snapshots: Vec<(Snapshot, Model)>,
    /// A long-lived iterator and the state it must show.
    pinned_iter: Option<(DbIterator, Model)>,
    reopens: usize,
}

impl Harness {
    fn db(&self) -> &Db {
        self.db.as_ref().unwrap()
    }

    fn reopen(&mut self) {
        self.snapshots.clear();
        self.pinned_iter = None;
        self.db.take().unwrap().close().unwrap();
        self.db = Some(Db::open(&self.path, self.options.clone()).unwrap());
        self.reopens += 1;
    }
}

/// Runs `steps` random operations and returns the harness for final checks.
fn run(seed: u64, steps: usize, path: &Path, fs: Option<Arc<MemFs>>, layout: &Layout) -> Harness {
    let mut rng = Rng::new(seed);
    let keys = key_space(&mut rng);
    let options = random_options(&mut rng, fs, layout);
    let db = Db::open(path, options.clone()).unwrap();
    let mut h = Harness {
        db: Some(db),
        path: path.to_path_buf(),
        options,
        model: Model::new(),
        snapshots: Vec::new(),
        pinned_iter: None,
        reopens: 0,
    };
    let pick = |rng: &mut Rng| keys[rng.below(keys.len())].clone();
    for step in 0..steps {
        let op = rng.below(1000);
        match op {
            0..=299 => {
                let (k, v) = (pick(&mut rng), random_value(&mut rng));
                h.db().put(&k, &v).unwrap();
                h.model.insert(k, v);
            }
            300..=399 => {
                let k = pick(&mut rng);
                h.db().delete(&k).unwrap();
                h.model.remove(&k);
            }
            400..=469 => {
                let mut batch = WriteBatch::new();
                // Few distinct keys so a batch often names one key several times.
                let few: Vec<Vec<u8>> = (0..rng.range(1, 4)).map(|_| pick(&mut rng)).collect();
                for _ in 0..rng.range(1, 12) {
                    let k = few[rng.below(few.len())].clone();
                    if rng.chance(30) {
                        batch.delete(&k);
                        h.model.remove(&k);
                    } else {
                        let v = random_value(&mut rng);
                        batch.put(&k, &v);
                        h.model.insert(k, v);
                    }
                }
                let sync = rng.chance(5);
                h.db().write(batch, &WriteOptions { sync }).unwrap();
            }
            470..=599 => {
                let k = pick(&mut rng);
                assert_value(
                    h.db().get(&k).unwrap(),
                    h.model.get(&k),
                    &format!("get {}", show(&k)),
                );
            }
            600..=619 => {
                if h.snapshots.len() < 4 {
                    let snap = h.db().snapshot();
                    h.snapshots.push((snap, h.model.clone()));
                }
            }
            620..=634 => {
                if !h.snapshots.is_empty() {
                    let i = rng.below(h.snapshots.len());
                    h.snapshots.swap_remove(i);
                }
            }
            635..=684 => {
                if !h.snapshots.is_empty() {
                    let i = rng.below(h.snapshots.len());
                    let (snap, m) = &h.snapshots[i];
                    let ro = ReadOptions {
                        snapshot: Some(snap),
                    };
                    for _ in 0..5 {
                        let k = pick(&mut rng);
                        assert_value(
                            h.db().get_with(&k, &ro).unwrap(),
                            m.get(&k),
                            &format!("get {} at snapshot {}", show(&k), snap.sequence()),
                        );
                    }
                    if rng.chance(30) {
                        let mut it = h.db().iter(&ro).unwrap();
                        if rng.chance(50) {
                            assert_pairs(
                                &scan_forward(&mut it),
                                &model_pairs(m),
                                "scan at snapshot",
                            );
                        } else {
                            seek_and_walk(&mut rng, &mut it, m, &keys);
                        }
                    }
                }
            }
            685..=699 => {
                let mut it = h.db().iter(&ReadOptions::default()).unwrap();
                if rng.chance(50) {
                    assert_pairs(
                        &scan_forward(&mut it),
                        &model_pairs(&h.model),
                        "forward scan",
                    );
                } else {
                    assert_pairs(
                        &scan_backward(&mut it),
                        &model_pairs(&h.model),
                        "backward scan",
                    );
                }
            }
            700..=779 => {
                let mut it = h.db().iter(&ReadOptions::default()).unwrap();
                seek_and_walk(&mut rng, &mut it, &h.model, &keys);
            }
            780..=819 => {
                let (start, end) = (random_bound(&mut rng, &keys), random_bound(&mut rng, &keys));
                let got: Vec<_> = h
                    .db()
                    .range((start.clone(), end.clone()))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                let want: Vec<_> = h
                    .model
                    .iter()
                    .filter(|(k, _)| in_range(k, &start, &end))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                assert_pairs(&got, &want, &format!("range {start:?}..{end:?}"));
            }
            820..=844 => {
                let k = pick(&mut rng);
                let prefix = k[..rng.range(0, k.len().min(3))].to_vec();
                let got: Vec<_> = h
                    .db()
                    .prefix(&prefix)
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
                let want: Vec<_> = h
                    .model
                    .iter()
                    .filter(|(k, _)| k.starts_with(&prefix))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                assert_pairs(&got, &want, &format!("prefix {}", show(&prefix)));
            }
            845..=869 => {
                // A long-lived iterator: opened now, read after later writes and compactions.
                match h.pinned_iter.take() {
                    None => {
                        let it = h.db().iter(&ReadOptions::default()).unwrap();
                        h.pinned_iter = Some((it, h.model.clone()));
                    }
                    Some((mut it, m)) => {
                        if rng.chance(50) {
                            assert_pairs(
                                &scan_forward(&mut it),
                                &model_pairs(&m),
                                "pinned iterator",
                            );
                        } else {
                            seek_and_walk(&mut rng, &mut it, &m, &keys);
                        }
                    }
                }
            }
            870..=899 => h.db().flush().unwrap(),
            900..=929 => {
                let (a, b) = (pick(&mut rng), pick(&mut rng));
                let (a, b) = if a <= b { (a, b) } else { (b, a) };
                match rng.below(4) {
                    0 => h.db().compact_range(None, Some(&b)).unwrap(),
                    1 => h.db().compact_range(Some(&a), None).unwrap(),
                    2 => h.db().compact_range(None, None).unwrap(),
                    _ => h.db().compact_range(Some(&a), Some(&b)).unwrap(),
                }
            }
            930..=939 => h.db().wait_for_idle().unwrap(),
            940..=947 => h.reopen(),
            _ => {
                // Bursts of writes make memtables fill and background work pile up. Half of them
                // stay inside a narrow window of keys, so tables have narrow, disjoint ranges.
                let (lo, width) = if rng.chance(50) {
                    (rng.below(keys.len()), rng.range(2, 12))
                } else {
                    (0, keys.len())
                };
                for _ in 0..rng.range(10, 60) {
                    let k = keys[(lo + rng.below(width)).min(keys.len() - 1)].clone();
                    let v = random_value(&mut rng);
                    h.db().put(&k, &v).unwrap();
                    h.model.insert(k, v);
                }
                if rng.chance(30) {
                    h.db().flush().unwrap();
                }
            }
        }
        if step % 500 == 499 {
            let mut it = h.db().iter(&ReadOptions::default()).unwrap();
            assert_pairs(
                &scan_forward(&mut it),
                &model_pairs(&h.model),
                "periodic scan",
            );
        }
    }
    h
}

/// Final checks: the whole contents, every snapshot, then again after a reopen; the run must
/// have exercised flushes and compactions, on a database of `layout`.
fn finish(mut h: Harness, layout: &Layout) {
    h.pinned_iter = None;
    let db = h.db();
    db.wait_for_idle().unwrap();
    // With no iterator left, every table on disk is live: obsolete ones were deleted.
    let on_disk = h
        .options
        .fs
        .list(&h.path)
        .unwrap()
        .iter()
        .filter(|n| n.ends_with(".sst"))
        .count();
    let live: usize = db.stats().files_per_level.iter().sum();
    assert_eq!(
        on_disk, live,
        "tables on disk vs tables in the current version"
    );
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    assert_pairs(&scan_forward(&mut it), &model_pairs(&h.model), "final scan");
    drop(it);
    for (snap, m) in &h.snapshots {
        let ro = ReadOptions {
            snapshot: Some(snap),
        };
        let mut it = db.iter(&ro).unwrap();
        assert_pairs(
            &scan_forward(&mut it),
            &model_pairs(m),
            "final snapshot scan",
        );
    }
    let stats = db.stats();
    assert!(stats.flushes > 0, "no flush happened: {stats:?}");
    assert!(
        stats.compactions + stats.trivial_moves > 0,
        "no compaction happened: {stats:?}"
    );
    // Recovery checks the version invariants (sorted, disjoint levels >= 1) and fails on
    // violation; every edit is checked the same way before it is applied.
    h.reopen();
    let mut it = h.db().iter(&ReadOptions::default()).unwrap();
    assert_pairs(
        &scan_forward(&mut it),
        &model_pairs(&h.model),
        "scan after reopen",
    );
    for (k, v) in &h.model {
        assert_value(
            h.db().get(k).unwrap(),
            Some(v),
            &format!("get {} after reopen", show(k)),
        );
    }
    h.db.take().unwrap().close().unwrap();
    crash_common::assert_stored_layout(&h.path, &h.options, layout);
}

fn steps(default: usize) -> usize {
    env_u64("SCREEDB_MODEL_STEPS").map_or(default, |s| s as usize)
}

#[test]
fn model_memfs() {
    let base = default_seed();
    crash_common::for_each_layout(|name, layout| {
        if !layout.kind().keeps_key_order() {
            // Scans, seeks and ranges are this model's subject; the trie has none (its own
            // model test, trie_model.rs, covers what it has).
            return;
        }
        // Several seeds, so each run covers several option sets.
        for i in 0..3 {
            let seed = base.wrapping_add(i);
            let _guard = SeedGuard {
                seed,
                label: "memfs",
                layout: name,
            };
            let fs = Arc::new(MemFs::new());
            let h = run(seed, steps(5000), Path::new("/db"), Some(fs), layout);
            finish(h, layout);
            if env_u64("SCREEDB_MODEL_SEED").is_some() {
                break;
            }
        }
    });
}

#[test]
fn model_real_dir() {
    let seed = env_u64("SCREEDB_MODEL_SEED").unwrap_or_else(|| default_seed() ^ 0x5eed);
    // This run is bound by fsyncs (it is here for the real file system), and FLSM with dense
    // guards writes many small tables: its steps (a quarter of the in-memory run's) are split
    // between the layouts rather than repeated, so that a busy disk does not blow up CI time.
    // The layouts get their full steps in `model_memfs`.
    let steps = crash_common::per_layout(steps(5000) / 4, 300);
    crash_common::for_each_layout(|name, layout| {
        if !layout.kind().keeps_key_order() {
            return;
        }
        let _guard = SeedGuard {
            seed,
            label: "real dir",
            layout: name,
        };
        let dir = tempfile::tempdir().unwrap();
        let h = run(seed, steps, &dir.path().join("db"), None, layout);
        finish(h, layout);
    });
}
