//! Helpers shared by the crash and sticky-error tests: a seeded RNG, tagged values, a model of
//! the database, and a full read-back of a database for comparison.
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
use screedb::{Db, Error, Options, ReadOptions, Result, WriteBatch};

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
    let seed = std::env::var("SCREEDB_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            t.as_nanos() as u64 ^ u64::from(std::process::id())
        });
    eprintln!("{test}: SCREEDB_CRASH_SEED={seed}");
    seed
}

/// An environment variable read as a number, or `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The memory component named by `SCREEDB_MEMORY` (`skiplist` or `flodb`), default skiplist:
/// the same scenarios run against either (`SCREEDB_MEMORY=flodb cargo test ...`).
pub fn memory_from_env() -> screedb::Memory {
    match std::env::var("SCREEDB_MEMORY") {
        Ok(name) => name.parse().expect("SCREEDB_MEMORY"),
        Err(_) => screedb::Memory::Skiplist,
    }
}

/// Options so small that flushes and compactions run all the time.
///
/// `SCREEDB_TEST_LAYOUT` picks a variant: `leveled`; `flsm-dense` (FLSM with guard bits so low
/// that there is a guard every few keys); `flsm-max1` (FLSM with `max_sstables_per_guard = 1`);
/// unset: the default options.
pub fn tiny_options(fs: Arc<dyn Fs>) -> Options {
    let mut o = Options {
        create_if_missing: true,
        fs,
        memory: memory_from_env(),
        write_buffer_size: 32 << 10,
        target_file_size: 16 << 10,
        l0_compaction_trigger: 2,
        max_bytes_for_level_base: 64 << 10,
        block_cache_bytes: 64 << 10,
        ..Options::default()
    };
    apply_layout_variant(&mut o);
    o
}

/// Applies `SCREEDB_TEST_LAYOUT` (see [`tiny_options`]) to `o`.
pub fn apply_layout_variant(o: &mut Options) {
    match std::env::var("SCREEDB_TEST_LAYOUT").as_deref() {
        Ok("leveled") => o.layout = screedb::Layout::Leveled,
        Ok("flsm-dense") => {
            o.layout = screedb::Layout::Flsm;
            o.flsm.guard_bits = screedb::GuardBits::Fixed {
                top_level_bits: 3,
                bit_decrement: 1,
            };
        }
        Ok("flsm-max1") => {
            o.layout = screedb::Layout::Flsm;
            o.flsm.max_sstables_per_guard = 1;
        }
        _ => {}
    }
}

/// The key with index `i`.
pub fn key(i: u64) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

/// A value of exactly `len` bytes for `key` written by batch `tag`. Values of 12 bytes or more
/// start with the tag (`"{tag:010}:"`), so [`tag_of`] can read it back.
pub fn value(tag: u64, key: &[u8], len: usize) -> Vec<u8> {
    let mut v = format!("{tag:010}:").into_bytes();
    let mut x = tag
        ^ key
            .iter()
            .fold(0u64, |h, &b| h.rotate_left(5) ^ u64::from(b));
    while v.len() < len {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        v.push(b'a' + (x >> 59) as u8);
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

/// Everything in `db`, read forward; also checks that reading backward and point reads agree.
pub fn read_back(db: &Db) -> State {
    let mut state = State::new();
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
