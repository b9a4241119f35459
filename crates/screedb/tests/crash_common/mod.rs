//! Helpers shared by the crash, sticky-error and model tests: the layouts every suite runs over
//! ([`for_each_layout`]), a seeded RNG, tagged values, a model of the database, and a full
//! read-back of a database for comparison.
//!
//! Values carry the tag (the issue order) of the batch that wrote them, so a mismatch report says
//! which write a surviving value came from.

#![allow(
    dead_code,
    reason = "each test file uses a different subset of the helpers"
)]
#![expect(clippy::unwrap_used, reason = "test helpers")]

use std::collections::BTreeMap;
use std::io;
use std::path::Path;
use std::sync::{Arc, RwLock, RwLockReadGuard};

use screedb::fs::{FaultFs, FileLock, Fs, RandomAccessFile, WritableFile};
use screedb::{Db, Error, GuardBits, Layout, LayoutKind, Options, ReadOptions, Result, WriteBatch};

/// Keys to their values.
pub type State = BTreeMap<Vec<u8>, Vec<u8>>;

/// SplitMix64: small, seedable, good enough to pick operations.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `percent`/100.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// The seed from `SCREEDB_CRASH_SEED`, or one from the clock. Printed so a failure can be rerun.
pub fn seed(test: &str) -> u64 {
    seed_from("SCREEDB_CRASH_SEED", test)
}

/// The seed from the environment variable `var`, or one from the clock. Printed so a failure
/// can be rerun.
pub fn seed_from(var: &str, test: &str) -> u64 {
    let seed = std::env::var(var)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            t.as_nanos() as u64 ^ u64::from(std::process::id())
        });
    eprintln!("{test}: {var}={seed}");
    seed
}

/// Writes one batch of 1-6 random puts and deletes of keys below `keys` to `db`, and the same to
/// `model` (a third are deletes). `key` and `value` name the test's keys and values.
pub fn random_batch(
    db: &Db,
    model: &mut State,
    rng: &mut Rng,
    keys: u64,
    key: impl Fn(u64) -> Vec<u8>,
    value: impl Fn(u64) -> Vec<u8>,
) {
    let mut batch = WriteBatch::new();
    for _ in 0..1 + rng.below(6) {
        let j = rng.below(keys);
        if rng.below(3) == 0 {
            batch.delete(key(j));
            model.remove(&key(j));
        } else {
            batch.put(key(j), value(j));
            model.insert(key(j), value(j));
        }
    }
    db.write(batch, &screedb::WriteOptions::default()).unwrap();
}

/// An environment variable read as a number, or `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The memory component the suites run `layout` with: the one `SCREEDB_MEMORY` names
/// (`skiplist` or `flodb`) when set, else FloDB (the engine's default) with FLSM and Jungle and
/// the skiplist alone with leveled and the trie, so that the faults the suites inject meet both
/// components without every scenario running twice (`SCREEDB_MEMORY=skiplist cargo test ...`
/// runs them all with one).
pub fn memory_for(layout: &Layout) -> screedb::Memory {
    match std::env::var("SCREEDB_MEMORY") {
        Ok(name) => name.parse().expect("SCREEDB_MEMORY"),
        Err(_) => match layout.kind() {
            LayoutKind::Flsm | LayoutKind::Jungle => screedb::Memory::Flodb,
            LayoutKind::Leveled | LayoutKind::Trie => screedb::Memory::Skiplist,
        },
    }
}

/// Restricts [`for_each_layout`] to one named variant (see [`layout_named`]).
pub const LAYOUT_ENV: &str = "SCREEDB_TEST_LAYOUT";

/// The layouts every suite runs over in CI, one per [`LayoutKind`], named as
/// [`LayoutKind::name`]. The `match` is exhaustive: a new layout kind does not compile until it
/// says here which of its variants the crash, sticky-error and model suites run.
///
/// FLSM runs with guard bits so low (3 at level 1, one fewer per level) that the tiny test
/// databases have a guard every few keys: guards are split, filled and compacted on kilobytes.
pub fn test_layouts() -> Vec<(&'static str, Layout)> {
    LayoutKind::ALL
        .into_iter()
        .map(|kind| {
            let layout = match kind {
                LayoutKind::Leveled => Layout::Leveled,
                LayoutKind::Flsm => {
                    let mut layout = Layout::with_defaults(kind);
                    layout.flsm_mut().unwrap().guard_bits = GuardBits::Fixed {
                        top_level_bits: 3,
                        bit_decrement: 1,
                    };
                    layout
                }
                // Small buckets and two-table piles: containers split and merge on kilobytes.
                LayoutKind::Trie => Layout::Trie(screedb::TrieOptions {
                    bucket_bytes: 512,
                    split_tables: 2,
                    max_tables_per_container: 2,
                    ..screedb::TrieOptions::default()
                }),
                // Small nodes and a low C: trees split, grow by appends and are rewritten on
                // kilobytes.
                LayoutKind::Jungle => Layout::Jungle(screedb::JungleOptions {
                    compaction_factor: 1.5,
                    node_bytes: 512,
                    ..screedb::JungleOptions::default()
                }),
            };
            (kind.name(), layout)
        })
        .collect()
}

/// Variants run only when [`LAYOUT_ENV`] names them: `flsm-default` (FLSM as a user gets it:
/// few or no guards on test-sized data) and `flsm-max1` (dense guards, at most one table per
/// guard, so every compaction into a guard rewrites it).
pub fn extra_layouts() -> Vec<(&'static str, Layout)> {
    let (_, mut max1) = test_layouts()
        .into_iter()
        .find(|(_, l)| l.kind() == LayoutKind::Flsm)
        .unwrap();
    max1.flsm_mut().unwrap().max_sstables_per_guard = 1;
    vec![
        ("flsm-default", Layout::with_defaults(LayoutKind::Flsm)),
        ("flsm-max1", max1),
    ]
}

/// Every named variant: [`test_layouts`], then [`extra_layouts`].
fn all_layouts() -> Vec<(&'static str, Layout)> {
    let mut all = test_layouts();
    all.extend(extra_layouts());
    all
}

/// The variant called `name`, from [`test_layouts`] and [`extra_layouts`], whatever
/// [`LAYOUT_ENV`] says (a child process uses this to open its parent's layout). Panics on an
/// unknown name, listing the known ones.
pub fn layout_named(name: &str) -> (&'static str, Layout) {
    let all = all_layouts();
    let names: Vec<&str> = all.iter().map(|(n, _)| *n).collect();
    all.into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| {
            panic!(
                "unknown test layout {name:?}: expected one of {}",
                names.join(", ")
            )
        })
}

/// The layouts [`for_each_layout`] runs: [`test_layouts`], or only the one named by
/// [`LAYOUT_ENV`] when it is set (`leveled`, `flsm`, `flsm-default`, `flsm-max1`).
pub fn selected_layouts() -> Vec<(&'static str, Layout)> {
    match std::env::var(LAYOUT_ENV) {
        Ok(name) if !name.is_empty() => vec![layout_named(&name)],
        _ => test_layouts(),
    }
}

/// Runs `run` once per selected layout (see [`selected_layouts`]), printing `layout <name>`
/// first, so the output of a failing run names its layout.
pub fn for_each_layout(mut run: impl FnMut(&'static str, &Layout)) {
    for (name, layout) in selected_layouts() {
        eprintln!("layout {name}");
        run(name, &layout);
    }
}

/// How many of `total` iterations each of the selected layouts runs: `total` split evenly, but
/// at least `min`, so the suites' CI time does not grow with every layout added.
pub fn per_layout(total: usize, min: usize) -> usize {
    (total / selected_layouts().len()).max(min)
}

/// Asserts that the closed database in `dir` was created with `layout`'s kind: the suite
/// really ran the layout it names.
pub fn assert_stored_layout(dir: &Path, options: &Options, layout: &Layout) {
    let stored = screedb::check::stored_layout(dir, options)
        .unwrap_or_else(|e| panic!("layout {layout}: reading the stored layout failed: {e}"));
    assert_eq!(
        stored,
        layout.kind(),
        "layout {layout}: the database was created with another layout than the one under test"
    );
}

/// Options so small that flushes and compactions run all the time, with `layout`.
pub fn tiny_options(fs: Arc<dyn Fs>, layout: &Layout) -> Options {
    Options {
        create_if_missing: true,
        fs,
        memory: memory_for(layout),
        layout: layout.clone(),
        write_buffer_size: 32 << 10,
        target_file_size: 16 << 10,
        l0_compaction_trigger: 2,
        max_bytes_for_level_base: 64 << 10,
        block_cache_bytes: 64 << 10,
        // Tables written back every 4 KiB (default 1 MiB, past these tables' size), so power
        // cuts and injected faults also land between write-backs.
        bytes_per_sync: 4 << 10,
        // Memtables of four runs, so crashes also land while a memtable holds several.
        memtable_run_size: 8 << 10,
        // No info log: a torn write or an injected fault must hit the database's own files,
        // not a LOG line (which the engine never reads back).
        info_log: screedb::InfoLog::Off,
        ..Options::default()
    }
}

/// The key with index `i`.
pub fn key(i: u64) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

/// A value of exactly `len` bytes for `key` written by batch `tag`. Values of 12 bytes or more
/// start with the tag (`"{tag:010}:"`), so [`tag_of`] can read it back. The second half repeats
/// the first, so LZ4 halves a long value: batches of 512 bytes and more then reach the WAL as
/// compressed records (`Options::wal_compression`), smaller ones as plain records, and the
/// crash suites tear both.
pub fn value(tag: u64, key: &[u8], len: usize) -> Vec<u8> {
    let mut v = format!("{tag:010}:").into_bytes();
    let mut x = tag
        ^ key
            .iter()
            .fold(0u64, |h, &b| h.rotate_left(5) ^ u64::from(b));
    let half = len.div_ceil(2).max(1);
    while v.len() < half {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        v.push(b'a' + (x >> 59) as u8);
    }
    while v.len() < len {
        v.push(v[v.len() - half]);
    }
    v.truncate(len);
    v
}

/// The tag a value was written with, if it is long enough to carry one.
pub fn tag_of(value: &[u8]) -> Option<u64> {
    let head = value.get(..11)?;
    (head[10] == b':')
        .then(|| std::str::from_utf8(&head[..10]).ok()?.parse().ok())
        .flatten()
}

/// One operation of a batch: a put (`Some(value)`) or a delete (`None`).
pub type Op = (Vec<u8>, Option<Vec<u8>>);

/// A batch as the model sees it.
#[derive(Debug, Clone)]
pub struct Batch {
    /// Issue order, also written into every value.
    pub tag: u64,
    /// The operations, in order.
    pub ops: Vec<Op>,
}

impl Batch {
    /// The engine batch with these operations.
    pub fn to_write_batch(&self) -> WriteBatch {
        let mut b = WriteBatch::new();
        for (k, v) in &self.ops {
            match v {
                Some(v) => b.put(k, v),
                None => b.delete(k),
            };
        }
        b
    }

    /// Applies the batch to `state`.
    pub fn apply(&self, state: &mut State) {
        for (k, v) in &self.ops {
            match v {
                Some(v) => state.insert(k.clone(), v.clone()),
                None => state.remove(k),
            };
        }
    }
}

/// Keys `key(0..POINT_READ_KEYS)` are what [`read_back`] reads one by one from a database
/// whose layout keeps no key order (every suite's keys lie below it).
pub const POINT_READ_KEYS: u64 = 1000;

/// Everything in `db`, read forward; also checks that reading backward and point reads agree.
/// A layout without key order (trie) is read by a get of every key below [`POINT_READ_KEYS`].
pub fn read_back(db: &Db) -> State {
    let mut state = State::new();
    if let Err(Error::NotSupported { .. }) = db.iter(&ReadOptions::default()) {
        for i in 0..POINT_READ_KEYS {
            if let Some(v) = db.get(key(i)).unwrap() {
                state.insert(key(i), v);
            }
        }
        return state;
    }
    for item in db.range::<&[u8]>(..).unwrap() {
        let (k, v) = item.unwrap();
        assert!(state.insert(k, v).is_none(), "forward scan repeated a key");
    }
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    it.seek_to_last();
    let mut backward = Vec::new();
    while it.valid() {
        backward.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    backward.reverse();
    let forward: Vec<(Vec<u8>, Vec<u8>)> =
        state.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert!(
        backward == forward,
        "backward scan differs from forward scan"
    );
    for (k, v) in &state {
        assert_eq!(
            db.get(k).unwrap().as_ref(),
            Some(v),
            "get({k:?}) disagrees with the scan"
        );
    }
    state
}

/// Finds the first `j` such that `base` with `pending[..j]` applied equals `recovered`.
/// This is the prefix property: a crash may lose a suffix of the unsynced writes, never a
/// batch in part, and never a write without the writes issued before it.
pub fn matching_prefix(base: &State, pending: &[Batch], recovered: &State) -> Option<usize> {
    // Keys where the model (base + applied prefix) and the recovered state disagree.
    let mut state = base.clone();
    let mut differ: std::collections::BTreeSet<Vec<u8>> = state
        .keys()
        .chain(recovered.keys())
        .filter(|k| state.get(*k) != recovered.get(*k))
        .cloned()
        .collect();
    if differ.is_empty() {
        return Some(0);
    }
    for (j, batch) in pending.iter().enumerate() {
        batch.apply(&mut state);
        for (k, _) in &batch.ops {
            if state.get(k) == recovered.get(k) {
                differ.remove(k);
            } else {
                differ.insert(k.clone());
            }
        }
        if differ.is_empty() {
            return Some(j + 1);
        }
    }
    None
}

/// A readable account of how `recovered` differs from `expected` (at most a few keys).
pub fn describe_diff(expected: &State, recovered: &State) -> String {
    let show = |v: Option<&Vec<u8>>| match v {
        None => "absent".to_owned(),
        Some(v) => match tag_of(v) {
            Some(t) => format!("tag {t} ({} bytes)", v.len()),
            None => format!("{} bytes, untagged", v.len()),
        },
    };
    let mut out = String::new();
    let keys: std::collections::BTreeSet<&Vec<u8>> =
        expected.keys().chain(recovered.keys()).collect();
    let mut n = 0;
    for k in keys {
        if expected.get(k) != recovered.get(k) {
            n += 1;
            if n <= 8 {
                out += &format!(
                    "\n  {}: expected {}, recovered {}",
                    String::from_utf8_lossy(k),
                    show(expected.get(k)),
                    show(recovered.get(k))
                );
            }
        }
    }
    format!("{n} keys differ{out}")
}

/// The file system as one process sees it, for simulating power loss with a database still open.
///
/// `FaultFs` kills the file handles opened before a crash, but directory operations (create,
/// rename, remove, sync_dir) made afterwards by the database's surviving threads would still
/// change the post-crash disk: a process that no longer exists would be writing to it. After
/// [`ProcessFs::power_cut`], every operation through this view fails instead, and the crash is
/// atomic with respect to operations in flight. Reopen through a new `ProcessFs` over the same
/// `FaultFs`.
#[derive(Debug, Clone)]
pub struct ProcessFs {
    inner: FaultFs,
    alive: Arc<RwLock<bool>>,
}

impl ProcessFs {
    /// A live view of `inner`.
    pub fn new(inner: &FaultFs) -> ProcessFs {
        ProcessFs {
            inner: inner.clone(),
            alive: Arc::new(RwLock::new(true)),
        }
    }

    /// Kills this view, then runs `crash` (e.g. `FaultFs::crash`) on the file system.
    pub fn power_cut(&self, crash: impl FnOnce(&FaultFs)) {
        let mut alive = self.alive.write().unwrap_or_else(|e| e.into_inner());
        *alive = false;
        crash(&self.inner);
    }

    fn live(&self, op: &'static str, path: &Path) -> Result<RwLockReadGuard<'_, bool>> {
        let alive = self.alive.read().unwrap_or_else(|e| e.into_inner());
        if *alive {
            Ok(alive)
        } else {
            Err(Error::io(
                op,
                path,
                io::Error::other("the power was cut: this process is gone"),
            ))
        }
    }
}

impl Fs for ProcessFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let _alive = self.live("create", path)?;
        self.inner.create(path)
    }

    fn open_appendable(&self, path: &Path, committed_len: u64) -> Result<Box<dyn WritableFile>> {
        let _alive = self.live("open for appending", path)?;
        self.inner.open_appendable(path, committed_len)
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let _alive = self.live("open", path)?;
        self.inner.open(path)
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        let _alive = self.live("stat", path)?;
        self.inner.file_size(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let _alive = self.live("rename", from)?;
        self.inner.rename(from, to)
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let _alive = self.live("remove", path)?;
        self.inner.remove(path)
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let _alive = self.live("list", dir)?;
        self.inner.list(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        let _alive = self.live("create directory", dir)?;
        self.inner.create_dir_all(dir)
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        let _alive = self.live("remove directory", dir)?;
        self.inner.remove_dir(dir)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let _alive = self.live("sync directory", dir)?;
        self.inner.sync_dir(dir)
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let _alive = self.live("lock", path)?;
        self.inner.lock(path)
    }
}
