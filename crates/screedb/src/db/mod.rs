//! The database: the public [`Db`] handle and the state its threads share.
//!
//! Lock order (never take them in the other order):
//! 1. `DbInner::state` (the database mutex) — guards everything in [`DbState`];
//! 2. short-lived leaf locks: the snapshot list, the obsolete-file set, the caches, the pool
//!    of iterator sources (`iter_pool.rs`).
//!
//! Readers take no lock on the hot path: they load the current [`SuperVersion`] (memtable,
//! immutable memtables, version) from an `ArcSwap` and the last visible sequence number from an
//! atomic.

mod background;
mod drain;
mod edit;
mod iter;
mod iter_pool;
mod open;
mod physical_memory;
mod read;
mod snapshot;
mod stats;
mod thread_priority;
mod unordered;
mod write;
mod write_queue;
mod write_rate;

use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use arc_swap::ArcSwap;

pub use iter::{DbIterator, RangeIter};
pub use snapshot::Snapshot;
pub use stats::Stats;
pub use unordered::UnorderedScan;

use crate::compaction::{self, CompactionStrategy};
use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::{FileLock, Fs};
use crate::info_log::{self, InfoLogger, info};
use crate::iter::{ConcatIterator, InternalIterator, MergingIterator, OpenTable};
use crate::key;
use crate::layout::flsm::seeks::ReadCost;
use crate::manifest::FileMeta;
use crate::memtable::MemTable;
use crate::options::{Layout, Memory, Options, ReadOptions, WriteOptions};
use crate::sync::lock;
use crate::table::{BlockCache, TableCache, TableOptions};
use crate::version::obsolete::{ObsoleteFiles, PurgeOnDrop};
use crate::version::{Version, VersionSet};
use crate::wal::LogWriter;
use crate::write_batch::WriteBatch;
use snapshot::SnapshotList;
use stats::Counters;
use write_queue::Writer;

/// What readers pin: the memtables and the version, replaced as a whole on every change.
pub(crate) struct SuperVersion {
    mem: Arc<MemTable>,
    /// Immutable memtables, newest first.
    imms: Vec<Arc<MemTable>>,
    version: Arc<Version>,
}

impl SuperVersion {
    /// The live memtable, then the immutable ones, newest first.
    fn memtables(&self) -> impl Iterator<Item = &Arc<MemTable>> {
        std::iter::once(&self.mem).chain(&self.imms)
    }
}

/// The sequence and super version a new iterator of the latest state reads with the FloDB
/// memory component, after moving every buffered version it can see into the skiplists (it
/// iterates those only). Each membuffer is paused for scans first
/// ([`MemTable::drain_for_scan`]). When all are empty, no version at or below the visible
/// sequence is buffered (their puts happened before it was published, and a drain inserts into
/// the skiplist before it lowers the count), so nothing the iterator can see can be overwritten
/// in place and no registration is needed. Else the sequence is registered as a snapshot while
/// the iterator drains, so no buffered version it can see is overwritten in place before the
/// drain moves it. See `docs/memory.md`.
fn latest_for_scan(inner: &DbInner) -> (key::SequenceNumber, Arc<SuperVersion>) {
    let seq = inner.visible_sequence.load(Ordering::Acquire);
    let sv = inner.super_version.load_full();
    if sv.memtables().all(|m| m.pause_for_scan()) {
        return (seq, sv);
    }
    let pin = inner.snapshots.acquire_current(&inner.visible_sequence);
    let sv = inner.super_version.load_full();
    for mem in sv.memtables() {
        mem.drain_for_scan(pin.sequence());
    }
    (pin.sequence(), sv)
}

/// The sequence and super version a scan of `snapshot` (`None`: now) reads. Scans read the
/// skiplists only: buffered versions they can see move there first.
fn pin_for_scan(
    inner: &DbInner,
    snapshot: Option<key::SequenceNumber>,
) -> (key::SequenceNumber, Arc<SuperVersion>) {
    match snapshot {
        None if inner.options.memory == Memory::Flodb => latest_for_scan(inner),
        _ => {
            let seq = snapshot.unwrap_or_else(|| inner.visible_sequence.load(Ordering::Acquire));
            let sv = inner.super_version.load_full();
            // A snapshot keeps what it can see from in-place overwrites; without a membuffer
            // there is nothing to drain.
            for mem in sv.memtables() {
                mem.drain_for_scan(seq);
            }
            (seq, sv)
        }
    }
}

/// The internal iterator a [`DbIterator`] over `sv` reads and the [`iter_pool::stamp`] of the
/// sources it was built from: one kept in the pool if it reads the same sources (never for a
/// `prefix`, whose tables are chosen for it), else a new one ([`merged_iter`]).
fn sources(
    inner: &DbInner,
    sv: &Arc<SuperVersion>,
    prefix: Option<&[u8]>,
) -> Result<(Box<dyn InternalIterator>, usize)> {
    // Counted before the cursors are made: a run started in between makes the entry look
    // stale when it comes back, never current.
    let stamp = iter_pool::stamp(sv);
    if prefix.is_none()
        && let Some(merged) = inner.iter_pool.take(sv, stamp)
    {
        return Ok((merged, stamp));
    }
    Ok((merged_iter(inner, sv, prefix)?, stamp))
}

/// The internal iterator a [`DbIterator`] over `sv` reads: the memtables, level 0's tables and
/// one concatenating iterator per sorted run, merged. With `prefix`, tables that cannot hold a
/// key starting with it are left out.
fn merged_iter(
    inner: &DbInner,
    sv: &SuperVersion,
    prefix: Option<&[u8]>,
) -> Result<Box<dyn InternalIterator>> {
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    children.push(Box::new(sv.mem.iter()));
    for imm in &sv.imms {
        children.push(Box::new(imm.iter()));
    }
    let skips = std::cell::Cell::new(0u64);
    let end = prefix.and_then(crate::comparator::bytewise_prefix_successor);
    let wanted = |f: &FileMeta| -> Result<bool> {
        let Some(p) = prefix else { return Ok(true) };
        let ucmp = inner.icmp.user();
        let in_range = ucmp.compare(f.largest_user_key(), p).is_ge()
            && end
                .as_deref()
                .is_none_or(|e| ucmp.compare(f.smallest_user_key(), e).is_lt());
        let keep = in_range && inner.tables.get(f)?.may_contain_prefix(p);
        if in_range && !keep {
            skips.set(skips.get() + 1);
        }
        Ok(keep)
    };
    for file in sv.version.files(0) {
        if wanted(file)? {
            children.push(inner.tables.get(file)?.iter()?);
        }
    }
    // One concatenating iterator per sorted run: one per level in the leveled layout, one
    // per overlapping fragment depth in FLSM (fragments of a guard are merged this way).
    let tables = Arc::clone(&inner.tables);
    let open: OpenTable = Arc::new(move |f: &FileMeta| -> Result<Box<dyn InternalIterator>> {
        tables.get(f)?.iter()
    });
    // Lazy seeks: a run whose tables leave a gap at the target (FLSM guards with fewer
    // fragments than the deepest one) opens its next table only if the scan reaches it.
    for level in 1..sv.version.num_levels() {
        for run in crate::layout::iteration_runs(&sv.version, level)? {
            let run = match prefix {
                None => Arc::clone(run),
                Some(_) => {
                    let mut kept = Vec::new();
                    for f in run.iter() {
                        if wanted(f)? {
                            kept.push(Arc::clone(f));
                        }
                    }
                    if kept.is_empty() {
                        continue;
                    }
                    Arc::from(kept)
                }
            };
            children.push(Box::new(
                ConcatIterator::new(inner.icmp.clone(), run, Arc::clone(&open)).lazy_seeks(),
            ));
        }
    }
    if skips.get() > 0 {
        Counters::add(&inner.counters.prefix_filter_skips, skips.get());
    }
    Ok(Box::new(MergingIterator::new(inner.icmp.clone(), children)))
}

/// An immutable memtable waiting for its flush, with the WAL that holds its writes.
struct Immutable {
    mem: Arc<MemTable>,
    log_number: u64,
    /// The last sequence number written to it: the next log starts right after.
    last_sequence: u64,
}

/// A WAL replaced by a newer one while its memtable waits for its flush. It is not synced when
/// replaced (`write.rs`): the first synced write after that finishes it, the flush retires it.
struct OldWal {
    number: u64,
    log: Arc<Mutex<LogWriter>>,
}

/// Everything guarded by the database mutex.
struct DbState {
    versions: VersionSet,
    mem: Arc<MemTable>,
    /// Oldest first.
    imms: VecDeque<Immutable>,
    /// `None` while the write leader appends to it outside the mutex.
    wal: Option<LogWriter>,
    wal_number: u64,
    /// Replaced WALs whose memtables are not flushed yet, oldest first.
    old_wals: VecDeque<OldWal>,
    /// Whether the current WAL's directory entry is durable: the first synced write to a new
    /// WAL syncs the directory.
    wal_dir_synced: bool,
    writers: VecDeque<Arc<Writer>>,
    /// Sticky: set by the first failed WAL write/sync or manifest write.
    bg_error: Option<Error>,
    compaction: compaction::State,
    flush_running: bool,
    jobs_running: usize,
    /// Set while `compact_range` works, so background compactions stay out of its way.
    manual_running: bool,
    /// Set while an edit is written to the MANIFEST with the mutex released (`edit.rs`).
    manifest_busy: bool,
    /// The pace of writes while compaction is behind.
    write_rate: write_rate::WriteRate,
}

pub(crate) struct DbInner {
    dir: PathBuf,
    options: Options,
    fs: Arc<dyn Fs>,
    icmp: InternalKeyComparator,
    table_options: TableOptions,
    tables: Arc<TableCache>,
    block_cache: Option<Arc<BlockCache>>,
    strategy: Box<dyn CompactionStrategy>,
    /// Tables no version holds, deleted by the background threads outside the mutex.
    obsolete: Arc<ObsoleteFiles>,
    state: Mutex<DbState>,
    /// Signalled when background work finishes or is needed.
    bg_cv: Condvar,
    super_version: ArcSwap<SuperVersion>,
    /// Merged iterators of dropped [`DbIterator`]s, for the next iterator over the same
    /// sources.
    iter_pool: iter_pool::SourcePool,
    /// Last sequence number visible to readers.
    visible_sequence: AtomicU64,
    snapshots: Arc<SnapshotList>,
    counters: Counters,
    shutting_down: AtomicBool,
    /// Wakes the drain thread (`Memory::Flodb`) parked while the database is idle.
    drain_bell: drain::DrainBell,
    /// The epoch of the write pacing clock (`write_rate.rs`).
    opened_at: std::time::Instant,
    /// Jobs populate their new tables while the store's tables hold at most this many bytes
    /// (half the memory the process may use, `physical_memory.rs`, with
    /// `Options::populate_new_tables`; 0: never).
    populate_limit: u64,
    info_log: InfoLogger,
    _lock: Box<dyn FileLock>,
}

/// An open database. `Send + Sync`: share it between threads by reference or in an `Arc`.
pub struct Db {
    inner: Arc<DbInner>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("dir", &self.inner.dir)
            .finish_non_exhaustive()
    }
}

/// Lowers the calling background thread's CPU priority by `by` (`Options::background_nice`
/// for flushes and compactions, [`drain::NICE`] for FloDB's drain); a failure only costs the
/// priority, so it is logged and the thread goes on.
fn lower_priority(inner: &DbInner, by: i32) {
    if let Err(e) = thread_priority::lower_this_thread(by) {
        info!(
            inner.info_log,
            "could not lower the background thread's priority by {by}: {e}"
        );
    }
}

impl Db {
    /// Opens (or creates, with `create_if_missing`) the database in directory `path`.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        let inner = Arc::new(open::open(path.as_ref(), options)?);
        let mut threads = Vec::new();
        for i in 0..inner.options.max_background_jobs {
            let worker = Arc::clone(&inner);
            let handle = std::thread::Builder::new()
                .name(format!("screedb-bg-{i}"))
                .spawn(move || {
                    lower_priority(&worker, worker.options.background_nice);
                    background::run(&worker)
                })
                .map_err(|e| Error::io("spawn background thread", &inner.dir, e))?;
            threads.push(handle);
        }
        if inner.options.memory == Memory::Flodb {
            let worker = Arc::clone(&inner);
            let handle = std::thread::Builder::new()
                .name("screedb-drain".to_string())
                .spawn(move || {
                    lower_priority(&worker, drain::NICE);
                    drain::run(&worker)
                })
                .map_err(|e| Error::io("spawn drain thread", &inner.dir, e))?;
            threads.push(handle);
        }
        Ok(Db {
            inner,
            threads: Mutex::new(threads),
        })
    }

    /// Deletes the database in `path` (all its files, then the directory if empty).
    /// Fails with [`Error::Locked`] if it is open.
    pub fn destroy(path: impl AsRef<Path>, options: &Options) -> Result<()> {
        let dir = path.as_ref();
        let fs = &options.fs;
        if !fs.exists(dir) {
            return Ok(());
        }
        let lock_path = filename::lock_file(dir);
        let guard = fs.lock(&lock_path)?;
        for name in fs.list(dir)? {
            match filename::parse(&name) {
                Some(FileKind::Lock) | None => {}
                Some(_) => fs.remove(&dir.join(&name))?,
            }
        }
        for log in [info_log::log_file(dir), info_log::old_log_file(dir)] {
            if fs.exists(&log) {
                fs.remove(&log)?;
            }
        }
        drop(guard);
        let _ = fs.remove(&lock_path);
        let _ = fs.remove_dir(dir);
        Ok(())
    }

    /// Sets `key` to `value` (not synced; see [`Db::write`]).
    pub fn put(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        let (key, value) = (key.as_ref(), value.as_ref());
        // Sized for the put: one allocation, not the header's and then the put's.
        let mut batch = WriteBatch::with_capacity(WriteBatch::put_bytes(key, value));
        batch.put(key, value);
        self.write(batch, &WriteOptions::default())
    }

    /// Removes `key` (not synced; see [`Db::write`]).
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<()> {
        let key = key.as_ref();
        // A delete takes no more than a put of an empty value.
        let mut batch = WriteBatch::with_capacity(WriteBatch::put_bytes(key, b""));
        batch.delete(key);
        self.write(batch, &WriteOptions::default())
    }

    /// Applies `batch` atomically. With `options.sync`, returns only after the WAL is fsynced.
    pub fn write(&self, batch: WriteBatch, options: &WriteOptions) -> Result<()> {
        batch.validate()?;
        write::write(&self.inner, batch, options.sync)
    }

    /// The value of `key`, if any.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>> {
        self.get_with(key, &ReadOptions::default())
    }

    /// The value of `key` as of `options.snapshot` (or now). A snapshot of another database is
    /// [`Error::InvalidArgument`].
    pub fn get_with(
        &self,
        key: impl AsRef<[u8]>,
        options: &ReadOptions<'_>,
    ) -> Result<Option<Vec<u8>>> {
        let inner = &self.inner;
        inner.check_open()?;
        let snapshot = inner.snapshot_sequence(options)?;
        let seq = read::read_sequence(inner, snapshot);
        // Dropped after `sv`: if this read held the last reference to a replaced table, it
        // deletes it.
        let _purge = PurgeOnDrop(&*inner.obsolete);
        let sv = inner.super_version.load_full();
        read::get_in(inner, &sv, snapshot, seq, key.as_ref())
    }

    /// The values of `keys`, in order, all as of the same point: now, or `options.snapshot`.
    /// Faster than a `get` per key when the memtables hold many of them (their lookups overlap
    /// their cache misses). RocksDB: `MultiGet`.
    pub fn multi_get<K: AsRef<[u8]>>(&self, keys: &[K]) -> Result<Vec<Option<Vec<u8>>>> {
        self.multi_get_with(keys, &ReadOptions::default())
    }

    /// [`Db::multi_get`] as of `options.snapshot` (or now). A snapshot of another database is
    /// [`Error::InvalidArgument`].
    pub fn multi_get_with<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        options: &ReadOptions<'_>,
    ) -> Result<Vec<Option<Vec<u8>>>> {
        let inner = &self.inner;
        inner.check_open()?;
        // With a membuffer, a read of the latest state takes the newest version of its key when
        // it reaches it (docs/memory.md), so reads of many keys at one point pin a snapshot.
        let pinned;
        let mut options = *options;
        if options.snapshot.is_none() && keys.len() > 1 && inner.options.memory == Memory::Flodb {
            pinned = self.snapshot();
            options.snapshot = Some(&pinned);
        }
        let snapshot = inner.snapshot_sequence(&options)?;
        let seq = read::read_sequence(inner, snapshot);
        let _purge = PurgeOnDrop(&*inner.obsolete);
        let sv = inner.super_version.load_full();
        read::prefetch(&sv, keys);
        keys.iter()
            .map(|key| read::get_in(inner, &sv, snapshot, seq, key.as_ref()))
            .collect()
    }

    /// A snapshot of the current state, released when dropped.
    pub fn snapshot(&self) -> Snapshot {
        self.inner
            .snapshots
            .acquire_current(&self.inner.visible_sequence)
    }

    /// A cursor over the database as of `options.snapshot` (or now). It starts unpositioned:
    /// call a seek method first. It pins what it reads, so it may outlive the snapshot. A
    /// snapshot of another database is [`Error::InvalidArgument`].
    pub fn iter(&self, options: &ReadOptions<'_>) -> Result<DbIterator> {
        self.iter_tables(options, None)
    }

    /// [`Db::iter`] over the tables that may hold a key starting with `prefix`, when given: a
    /// table whose key range misses `[prefix, successor)` or whose prefix filter
    /// (`Options::prefix_bloom_len`) rules the prefix out is left out. Only for iteration
    /// bounded to the prefix.
    fn iter_tables(&self, options: &ReadOptions<'_>, prefix: Option<&[u8]>) -> Result<DbIterator> {
        let inner = &self.inner;
        inner.check_open()?;
        inner.options.layout.kind().require_key_order("iterators")?;
        let (seq, sv) = pin_for_scan(inner, inner.snapshot_sequence(options)?);
        let (merged, stamp) = sources(inner, &sv, prefix)?;
        let mut it = DbIterator::new(
            merged,
            Arc::clone(inner.icmp.user()),
            seq,
            (sv, stamp),
            Arc::clone(&inner.obsolete),
        );
        if prefix.is_none() {
            it.return_sources_to(Arc::downgrade(inner));
        }
        if options.snapshot.is_none() {
            it.refresh_from(Arc::downgrade(inner), prefix.map(<[u8]>::to_vec));
        }
        if inner.seek_threshold() > 0 {
            it.count_seeks(Arc::downgrade(inner));
        }
        Ok(it)
    }

    /// Every live `(key, value)` pair as of `options.snapshot` (or now), once each, in no
    /// particular order: the one full scan a layout without key order (the trie) offers, where
    /// [`Db::iter`] is [`Error::NotSupported`]. It reads one source at a time (each memtable,
    /// then each table through its sorted view) and does a point lookup per entry to keep only
    /// the newest visible version of each key, so it costs about a get per stored entry. With
    /// a layout that keeps key order it is [`Db::iter`] from the first key, in key order. A
    /// snapshot of another database is [`Error::InvalidArgument`].
    pub fn scan_unordered(&self, options: &ReadOptions<'_>) -> Result<UnorderedScan> {
        let inner = &self.inner;
        inner.check_open()?;
        if inner.options.layout.kind().keeps_key_order() {
            let it = self.iter(options)?;
            return Ok(UnorderedScan::ordered(
                it.into_range(Bound::Unbounded, Bound::Unbounded),
            ));
        }
        let (seq, sv) = pin_for_scan(inner, inner.snapshot_sequence(options)?);
        Ok(UnorderedScan::by_source(
            sv,
            seq,
            Arc::clone(&inner.tables),
            Arc::clone(&inner.obsolete),
        ))
    }

    /// `(key, value)` pairs whose keys lie in `range`, ascending, as of now.
    pub fn range<K: AsRef<[u8]>>(&self, range: impl RangeBounds<K>) -> Result<RangeIter> {
        let own = |b: Bound<&K>| match b {
            Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
            Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
            Bound::Unbounded => Bound::Unbounded,
        };
        let it = self.iter(&ReadOptions::default())?;
        Ok(it.into_range(own(range.start_bound()), own(range.end_bound())))
    }

    /// `(key, value)` pairs whose keys start with `prefix`, ascending (bytewise comparator).
    /// Tables whose key range misses the prefix are not read; with `Options::prefix_bloom_len`
    /// `n` and a prefix of at least `n` bytes, neither are tables whose prefix filter rules
    /// its first `n` bytes out (RocksDB's prefix seek with a fixed prefix extractor).
    pub fn prefix(&self, prefix: impl AsRef<[u8]>) -> Result<RangeIter> {
        let prefix = prefix.as_ref().to_vec();
        let end = crate::comparator::bytewise_prefix_successor(&prefix)
            .map_or(Bound::Unbounded, Bound::Excluded);
        // Key ranges are compared under the comparator, the prefix's end bytewise: tables are
        // left out only when the two agree.
        let hint = self
            .inner
            .icmp
            .user()
            .is_bytewise()
            .then_some(prefix.as_slice());
        let it = self.iter_tables(&ReadOptions::default(), hint)?;
        Ok(it.into_range(Bound::Included(prefix), end))
    }

    /// Writes the memtable to a level-0 table and waits until it is done.
    pub fn flush(&self) -> Result<()> {
        background::flush_and_wait(&self.inner)
    }

    /// Compacts every table overlapping `[start, end]` (`None` = unbounded) down the levels and
    /// rewrites the last level's, dropping every version no snapshot can see; waits until done.
    pub fn compact_range(&self, start: Option<&[u8]>, end: Option<&[u8]>) -> Result<()> {
        self.flush()?;
        background::compact_range(&self.inner, start, end)
    }

    /// Waits until no flush or compaction is pending or running.
    pub fn wait_for_idle(&self) -> Result<()> {
        background::wait_for_idle(&self.inner)
    }

    /// A property by name: `screedb.stats`, `screedb.levels` (FLSM: also guards per level,
    /// fragments and bytes per guard min/median/max, the most seeks counted in one guard),
    /// `screedb.guards-at-level<N>` (one guard key per
    /// line, escaped), `screedb.num-files-at-level<N>`,
    /// `screedb.table-metadata-bytes` (index, filter and other table metadata held in memory by
    /// the live tables, every layout), `screedb.approximate-memory-usage`,
    /// `screedb.write-amplification`, `screedb.memory`
    /// (the memory component: `skiplist`, or `flodb`, the entries waiting in the membuffers and
    /// the puts the current memtables sent past them while iterators paused them),
    /// `screedb.delayed-write-rate` (bytes per second writes are paced to while compaction is
    /// behind; 0 when they are not slowed; RocksDB: `rocksdb.actual-delayed-write-rate`).
    pub fn property(&self, name: &str) -> Option<String> {
        let inner = &self.inner;
        let sv = inner.super_version.load_full();
        if let Some(level) = name.strip_prefix("screedb.guards-at-level") {
            let level: usize = level.parse().ok()?;
            return (level < sv.version.num_levels()).then(|| {
                sv.version
                    .guards(level)
                    .iter()
                    .map(|g| format!("{}\n", String::from_utf8_lossy(g).escape_debug()))
                    .collect()
            });
        }
        if let Some(level) = name.strip_prefix("screedb.num-files-at-level") {
            let level: usize = level.parse().ok()?;
            return (level < sv.version.num_levels())
                .then(|| sv.version.files(level).len().to_string());
        }
        match name {
            "screedb.levels" => Some(sv.version.describe_levels()),
            "screedb.table-metadata-bytes" => {
                // Opens every live table (through the table cache) to ask it, and, in the trie
                // layout, the BloomCluster each table of a level >= 1 may hold.
                let mut bytes = 0u64;
                let trie = sv.version.layout() == crate::LayoutKind::Trie;
                for level in 0..sv.version.num_levels() {
                    for f in sv.version.files(level) {
                        bytes += inner.tables.get(f).ok()?.metadata_bytes();
                        if trie && level > 0 {
                            let cluster = inner.tables.cluster(f.number).ok()?;
                            bytes += cluster.map_or(0, |c| c.metadata_bytes());
                        }
                    }
                }
                Some(bytes.to_string())
            }
            "screedb.approximate-memory-usage" => {
                let mem: usize = sv.memtables().map(|m| m.approximate_memory_usage()).sum();
                Some(mem.to_string())
            }
            "screedb.write-amplification" => {
                Some(format!("{:.3}", self.stats().write_amplification()))
            }
            "screedb.stats" => Some(self.stats().to_string()),
            "screedb.delayed-write-rate" => Some(lock(&inner.state).write_rate.rate().to_string()),
            "screedb.memory" => Some(match inner.options.memory {
                Memory::Skiplist => "skiplist".to_string(),
                Memory::Flodb => {
                    let buffered: usize = sv.memtables().map(|m| m.buffered_len()).sum();
                    let admitted: usize = sv.memtables().map(|m| m.membuffer_admitted()).sum();
                    let paused: u64 = sv.memtables().map(|m| m.membuffer_paused_puts()).sum();
                    let appended: u64 = sv.memtables().map(|m| m.membuffer_appended_puts()).sum();
                    let hoods = if sv.mem.membuffer_by_range() {
                        "key range"
                    } else {
                        "hash"
                    };
                    format!(
                        "flodb, {buffered} entries in membuffers, {admitted} admitted to them, \
                         {paused} puts past them while scans paused them, \
                         {appended} puts past them in ascending key order, \
                         live neighbourhoods by {hoods}"
                    )
                }
            }),
            _ => None,
        }
    }

    /// Counters and the shape of the tree.
    pub fn stats(&self) -> Stats {
        let inner = &self.inner;
        let sv = inner.super_version.load_full();
        let mut s = inner.counters.snapshot();
        s.files_per_level = (0..sv.version.num_levels())
            .map(|l| sv.version.files(l).len())
            .collect();
        s.bytes_per_level = (0..sv.version.num_levels())
            .map(|l| sv.version.level_bytes(l))
            .collect();
        if let Some(cache) = &inner.block_cache {
            s.block_cache_hits = cache.hits();
            s.block_cache_misses = cache.misses();
        }
        s.hashed_reads = inner.tables.hashed_read_stats();
        s
    }

    /// Approximate bytes on disk of the keys in each `[start, end)` range.
    pub fn approximate_sizes(&self, ranges: &[(&[u8], &[u8])]) -> Result<Vec<u64>> {
        let inner = &self.inner;
        let sv = inner.super_version.load_full();
        sv.version.layout().require_key_order("approximate sizes")?;
        let mut out = Vec::with_capacity(ranges.len());
        for (start, end) in ranges {
            let (s, e) = (
                key::make_internal_key(start, key::MAX_SEQUENCE, key::ValueKind::FOR_SEEK),
                key::make_internal_key(end, key::MAX_SEQUENCE, key::ValueKind::FOR_SEEK),
            );
            let mut total = 0u64;
            for level in 0..sv.version.num_levels() {
                for f in sv.version.overlapping(level, Some(start), Some(end)) {
                    let table = inner.tables.get(&f)?;
                    total += table
                        .approximate_offset_of(&e)
                        .saturating_sub(table.approximate_offset_of(&s));
                }
            }
            out.push(total);
        }
        Ok(out)
    }

    /// Stops background work and closes the database. Writes made without `sync` are in the
    /// WAL (handed to the OS); they are recovered at the next open. Returns the first background
    /// failure (a flush or compaction that could not write) if one made the database read-only.
    pub fn close(self) -> Result<()> {
        self.shutdown()
    }

    fn shutdown(&self) -> Result<()> {
        let inner = &self.inner;
        if inner.shutting_down.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        {
            let _st = lock(&inner.state);
            inner.bg_cv.notify_all();
        }
        inner.drain_bell.wake();
        for t in lock(&self.threads).drain(..) {
            let _ = t.join();
        }
        inner.iter_pool.release_all();
        inner.obsolete.purge();
        let mut st = lock(&inner.state);
        // A manual compaction on another thread may be installing its edit.
        while st.manifest_busy {
            st = crate::sync::wait(&inner.bg_cv, st);
        }
        // Every WAL is finished, oldest first: a clean close leaves no write unsynced.
        let mut result = st
            .old_wals
            .iter()
            .try_for_each(|old| lock(&old.log).finish());
        if result.is_ok()
            && let Some(wal) = st.wal.as_mut()
        {
            result = wal.finish();
        }
        if result.is_ok() && !st.wal_dir_synced {
            result = inner.fs.sync_dir(&inner.dir);
        }
        // A background failure made the database read-only: close reports it (the first one),
        // as the writes refused since did.
        if let Some(e) = &st.bg_error {
            info!(inner.info_log, "closing after a background error: {e}");
            return Err(e.clone());
        }
        info!(inner.info_log, "closing");
        // Record the counters so write amplification survives the restart.
        let edit = crate::manifest::VersionEdit {
            stats: inner.counters.persisted(),
            ..Default::default()
        };
        let r = st.versions.log_and_apply(edit);
        result.and(r)
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// How much more the reads must have paid for overlapping tables (`overlap_read_bytes`) before
/// the background threads look again for a hot guard the seek budget could not afford.
const OVERLAP_WAKE_BYTES: u64 = 64 << 20;

impl DbInner {
    /// The seek count at which a guard is due for seek-based compaction; 0 when reads are not
    /// counted (leveled layout, or seek compaction disabled).
    pub(super) fn seek_threshold(&self) -> u32 {
        match &self.options.layout {
            Layout::Flsm(flsm) if flsm.seek_compaction_budget_percent > 0 => {
                flsm.seek_compaction_threshold
            }
            Layout::Flsm(_) | Layout::Leveled | Layout::Trie(_) | Layout::Jungle(_) => 0,
        }
    }

    /// Adds what a read paid for overlapping tables to `overlap_read_bytes` (seek-based
    /// compaction's budget grows with it) and wakes the background threads when the read made
    /// a guard hot, or when the reads earned another [`OVERLAP_WAKE_BYTES`]: a hot guard that
    /// did not fit the budget may fit now.
    pub(super) fn count_read_cost(&self, cost: ReadCost) {
        let mut wake = cost.crossed;
        if cost.extra_tables > 0 {
            let bytes = cost.extra_tables * self.options.block_size as u64;
            let before = self
                .counters
                .overlap_read_bytes
                .fetch_add(bytes, Ordering::Relaxed);
            wake |= before / OVERLAP_WAKE_BYTES != (before + bytes) / OVERLAP_WAKE_BYTES;
        }
        if wake {
            background::seek_threshold_crossed(self);
        }
    }

    /// The sequence `options` reads at when it names a snapshot. A snapshot of another
    /// database is refused: its number means nothing here (it may lie past this database's
    /// last sequence, or pin nothing against compaction).
    fn snapshot_sequence(&self, options: &ReadOptions<'_>) -> Result<Option<key::SequenceNumber>> {
        match options.snapshot {
            None => Ok(None),
            Some(s) if s.is_of(&self.snapshots) => Ok(Some(s.sequence())),
            Some(_) => Err(Error::invalid(format!(
                "ReadOptions::snapshot was taken from another database, not from {}; take it \
                 with the Db being read",
                self.dir.display()
            ))),
        }
    }

    fn check_open(&self) -> Result<()> {
        if self.shutting_down.load(Ordering::Acquire) {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    /// Publishes a new super version from the state. REQUIRES: state locked.
    fn install_super_version(&self, st: &DbState) {
        self.super_version.store(Arc::new(SuperVersion {
            mem: Arc::clone(&st.mem),
            imms: st.imms.iter().rev().map(|i| Arc::clone(&i.mem)).collect(),
            version: st.versions.current(),
        }));
    }
}
