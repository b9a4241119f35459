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

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use screedb::fs::MemFs;
use screedb::table::CompressionType;
use screedb::{Db, DbIterator, Layout, Options, ReadOptions, Snapshot, WriteBatch, WriteOptions};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// splitmix64: small, seedable, good enough for choosing operations.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

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

/// A key space small enough that overwrites and deletes hit: the empty key, single bytes
/// (including 0x00 and 0xff), and keys up to 24 bytes sharing prefixes.
fn key_space(rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = vec![
        Vec::new(),
        vec![0x00],
        vec![0xff],
        vec![0xff, 0xff],
        vec![0x00, 0x00],
    ];
    let prefixes: [&[u8]; 4] = [b"a", b"ab", b"user/", b"\xfe"];
    while keys.len() < 160 {
        let mut k = prefixes[rng.below(prefixes.len())].to_vec();
        let extra = rng.range(0, 20);
        for _ in 0..extra {
            k.push(b"abcxyz\x00\xff"[rng.below(8)]);
        }
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.sort();
    keys
}

fn random_value(rng: &mut Rng) -> Vec<u8> {
    let len = if rng.chance(3) {
        10 << 10
    } else {
        rng.range(0, 300)
    };
    let tag = rng.next_u64().to_le_bytes();
    (0..len)
        .map(|i| tag[i % 8].wrapping_add((i / 8) as u8))
        .collect()
}

fn random_options(rng: &mut Rng, fs: Option<Arc<MemFs>>, layout: &Layout) -> Options {
    // Mostly the tiny trigger; sometimes a larger one so level 0 holds several tables when a
    // manual compaction picks some of them.
    let l0_trigger = [2, 2, 4][rng.below(3)];
    let mut o = Options {
        create_if_missing: true,
        write_buffer_size: rng.range(16, 64) << 10,
        target_file_size: (rng.range(8, 16) as u64) << 10,
        block_size: [256, 512, 1024][rng.below(3)],
        l0_compaction_trigger: l0_trigger,
        l0_slowdown_trigger: l0_trigger * 2,
        l0_stop_trigger: 8,
        max_bytes_for_level_base: 32 << 10,
        num_levels: rng.range(4, 7),
        max_background_jobs: rng.range(1, 2),
        block_cache_bytes: [0, 16 << 10][rng.below(2)],
        bloom_bits_per_key: [0, 10][rng.below(2)],
        compression: [CompressionType::None, CompressionType::Lz4][rng.below(2)],
        layout: layout.clone(),
        ..Options::default()
    };
    if let Some(fs) = fs {
        o.fs = fs;
    }
    o
}

fn in_range(k: &[u8], start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> bool {
    let after_start = match start {
        Bound::Included(s) => k >= s.as_slice(),
        Bound::Excluded(s) => k > s.as_slice(),
        Bound::Unbounded => true,
    };
    let before_end = match end {
        Bound::Included(e) => k <= e.as_slice(),
        Bound::Excluded(e) => k < e.as_slice(),
        Bound::Unbounded => true,
    };
    after_start && before_end
}

fn scan_forward(it: &mut DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

fn scan_backward(it: &mut DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_last();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    out.reverse();
    out
}

fn model_pairs(m: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Short rendering of a key for failure messages.
fn show(k: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(k))
}

/// Asserts two optional values are equal, printing lengths and heads rather than whole values.
fn assert_value(got: Option<Vec<u8>>, want: Option<&Vec<u8>>, what: &str) {
    let brief =
        |v: Option<&Vec<u8>>| v.map(|v| (v.len(), v.iter().take(8).copied().collect::<Vec<u8>>()));
    assert!(
        got.as_ref() == want,
        "{what}: db has {:?}, model has {:?} (length, first bytes)",
        brief(got.as_ref()),
        brief(want)
    );
}

/// Asserts two lists of pairs are equal, naming the first difference.
fn assert_pairs(got: &[(Vec<u8>, Vec<u8>)], want: &[(Vec<u8>, Vec<u8>)], what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(show(&g.0), show(&w.0), "{what}: key #{i}");
        assert_value(
            Some(g.1.clone()),
            Some(&w.1),
            &format!("{what}: value of {}", show(&g.0)),
        );
    }
    assert_eq!(got.len(), want.len(), "{what}: number of pairs");
}

/// Compares the iterator's position with the model's.
fn check_position(it: &DbIterator, model: &Model, pos: &Option<Vec<u8>>, what: &str) {
    match pos {
        None => assert!(
            !it.valid(),
            "{what}: model is off the end, db at {}",
            show(it.key())
        ),
        Some(k) => {
            assert!(
                it.valid(),
                "{what}: db is off the end, model at {}",
                show(k)
            );
            assert_eq!(show(it.key()), show(k), "{what}: key");
            assert_value(
                Some(it.value().to_vec()),
                model.get(k),
                &format!("{what}: value of {}", show(k)),
            );
        }
    }
    it.status().unwrap();
}

/// Seeks to a random target, then walks next/prev at random, checking every position.
fn seek_and_walk(rng: &mut Rng, it: &mut DbIterator, model: &Model, keys: &[Vec<u8>]) {
    let mut pos: Option<Vec<u8>> = match rng.below(4) {
        0 => {
            it.seek_to_first();
            model.keys().next().cloned()
        }
        1 => {
            it.seek_to_last();
            model.keys().next_back().cloned()
        }
        _ => {
            // A key of the space, sometimes extended or past everything.
            let mut target = keys[rng.below(keys.len())].clone();
            match rng.below(4) {
                0 => target.push(0),
                1 => target = vec![0xff; 3],
                _ => {}
            }
            it.seek(&target);
            model.range(target.clone()..).next().map(|(k, _)| k.clone())
        }
    };
    check_position(it, model, &pos, "seek");
    for step in 0..rng.range(1, 30) {
        let Some(cur) = pos.clone() else {
            // Walked off an end: re-enter from one side.
            if rng.chance(50) {
                it.seek_to_first();
                pos = model.keys().next().cloned();
            } else {
                it.seek_to_last();
                pos = model.keys().next_back().cloned();
            }
            check_position(it, model, &pos, "re-enter");
            continue;
        };
        if rng.chance(50) {
            it.next();
            pos = model
                .range((Bound::Excluded(cur), Bound::Unbounded))
                .next()
                .map(|(k, _)| k.clone());
            check_position(it, model, &pos, &format!("next #{step}"));
        } else {
            it.prev();
            pos = model.range(..cur).next_back().map(|(k, _)| k.clone());
            check_position(it, model, &pos, &format!("prev #{step}"));
        }
    }
}

fn random_bound(rng: &mut Rng, keys: &[Vec<u8>]) -> Bound<Vec<u8>> {
    let k = keys[rng.below(keys.len())].clone();
    match rng.below(3) {
        0 => Bound::Included(k),
        1 => Bound::Excluded(k),
        _ => Bound::Unbounded,
    }
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
    let mut rng = Rng(seed);
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
