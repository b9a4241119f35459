//! Opening a database: lock, recover the manifest, replay the WALs, start a new WAL.
//!
//! Replayed writes are flushed to level-0 tables before the database accepts writes, and a fresh
//! WAL is started: a torn tail dropped from an old log is never appended to. Every log is read
//! tolerating a torn tail, and replay stops where sequence numbers jump (an older log lost its
//! unsynced tail), so the recovered state is a prefix of the writes.

use std::collections::{HashSet, VecDeque};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use arc_swap::ArcSwap;

use super::snapshot::SnapshotList;
use super::stats::Counters;
use super::write::create_wal;
use super::{DbInner, DbState, SuperVersion};
use crate::compaction::{self, job};
use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::Fs;
use crate::info_log::{InfoLogger, info};
use crate::manifest::{FileMeta, VersionEdit, end_checksum};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::table::{BlockCache, TableCache};
use crate::version::{Version, VersionSet};
use crate::wal::{LogReader, RecoveryMode};
use crate::write_batch::WriteBatch;

pub(super) fn open(dir: &Path, options: Options) -> Result<DbInner> {
    options.validate()?;
    let fs = Arc::clone(&options.fs);
    if !fs.exists(dir) {
        if !options.create_if_missing {
            return Err(Error::NotFound(dir.to_path_buf()));
        }
        fs.create_dir_all(dir)?;
        fs.sync_dir(&crate::fs::parent_dir(dir))?;
    }
    let lock = fs.lock(&filename::lock_file(dir))?;
    let exists = fs.exists(&filename::current_file(dir));
    if exists && options.error_if_exists {
        return Err(Error::AlreadyExists(dir.to_path_buf()));
    }
    if !exists && !options.create_if_missing {
        return Err(Error::NotFound(dir.to_path_buf()));
    }

    let icmp = InternalKeyComparator::new(Arc::clone(&options.comparator));
    let mut table_options = options.table_options();
    let block_cache = (options.block_cache_bytes > 0)
        .then(|| Arc::new(BlockCache::new(options.block_cache_bytes)));
    let tables = Arc::new(TableCache::new(
        Arc::clone(&fs),
        dir.to_path_buf(),
        table_options.clone(),
        icmp.clone(),
        options.max_open_tables,
        block_cache.clone(),
    ));
    let mut versions = VersionSet::new(
        Arc::clone(&fs),
        dir.to_path_buf(),
        icmp.clone(),
        Arc::clone(&tables),
        &options,
        Some(options.layout.kind()),
    );
    let (log_number, prev_log, log_start) = if exists {
        let r = versions
            .recover()
            .map_err(|e| crate::foreign::explain(fs.as_ref(), dir, e))?;
        (r.log_number, r.prev_log_number, r.log_start)
    } else {
        (0, 0, None)
    };
    // The directory is a ScreeDB database (recovered, or about to be created): its info log
    // starts here. (Not earlier: another engine's directory keeps its own LOG untouched.)
    let info_log = InfoLogger::open(&options.info_log, &fs, dir);
    info!(
        info_log,
        "{} {} ({} layout, {} memory)",
        if exists { "opening" } else { "creating" },
        dir.display(),
        options.layout.kind(),
        format!("{:?}", options.memory).to_lowercase()
    );
    info!(info_log, "options: {options:?}");
    // Tables of a hashed layout are written with the database's seed (readers take each
    // table's own).
    table_options.htable.hash_seed = versions.current().hash_seed();

    // What is on disk.
    let names = fs.list(dir)?;
    let mut logs = Vec::new();
    let mut on_disk_tables = HashSet::new();
    for name in &names {
        match filename::parse(name) {
            Some(FileKind::Log(n)) => {
                versions.mark_file_number_used(n);
                if n >= log_number || n == prev_log {
                    logs.push(n);
                }
            }
            Some(FileKind::Table(n)) => {
                versions.mark_file_number_used(n);
                on_disk_tables.insert(n);
            }
            Some(FileKind::Manifest(n) | FileKind::Temp(n) | FileKind::Cluster(n)) => {
                versions.mark_file_number_used(n);
            }
            _ => {}
        }
    }
    logs.sort_unstable();
    let current = versions.current();
    for n in current.all_file_numbers() {
        if !on_disk_tables.contains(&n) {
            return Err(Error::corruption(
                filename::table_file(dir, n),
                0,
                "table listed in the manifest is missing",
            ));
        }
    }
    cut_back_grown_tables(fs.as_ref(), dir, &current)?;
    drop(current);

    // Replay the logs into memtables, flushing each full one to level 0.
    let counters = Counters::default();
    counters.restore(versions.persisted_stats());
    let next_number = AtomicU64::new(0);
    versions.mark_file_number_used(0);
    next_number.store(versions.new_file_number(), Ordering::Relaxed);
    let alloc = || next_number.fetch_add(1, Ordering::Relaxed);
    let ctx = job::JobContext {
        fs: fs.as_ref(),
        dir,
        icmp: &icmp,
        table_options: &table_options,
        format: options.layout.kind().table_format(),
        compaction_filter: None,
        tables: &tables,
        snapshots: &[],
        new_file_number: &alloc,
        cancel: None,
        populate_new_tables: false,
    };
    let mut mem = Arc::new(MemTable::new(icmp.clone()));
    let mut new_files: Vec<FileMeta> = Vec::new();
    let mut max_seq = versions.last_sequence();
    let mut replayed_batches = 0u64;
    // Every log is read tolerating a torn tail: an older log is not synced when it is replaced
    // (`write.rs`), so a power loss may cut any of them, or lose one whose directory entry was
    // never synced. Sequence numbers run on from the MANIFEST's log start (every write below it
    // is in a table) through one log to the next; a log that starts past where the writes
    // before it end means an older log lost writes, and it is dropped with every later one, so
    // what is recovered is a prefix of the writes. (None of the dropped writes was acknowledged
    // as synced: a synced write finishes every older log first.)
    let mut next_seq: Option<u64> = log_start;
    'logs: for (i, &n) in logs.iter().enumerate() {
        let path = filename::log_file(dir, n);
        let mut reader = LogReader::new(
            fs.open(&path)?,
            path.clone(),
            RecoveryMode::TolerateTornTail,
        );
        let mut first_in_log = true;
        let mut pending = WriteBatch::new();
        while let Some(record) = reader.read_record()? {
            let batch = WriteBatch::from_record(record, &path, reader.last_record_offset())?;
            replayed_batches += 1;
            if batch.count() > 0 {
                if first_in_log
                    && let Some(expected) = next_seq
                    && batch.sequence() > expected
                {
                    info!(
                        info_log,
                        "log {n:06} starts at sequence {} but the writes before it end at {}: an \
                         older log lost unsynced writes; this log and {} later ones are dropped",
                        batch.sequence(),
                        expected - 1,
                        logs.len() - i - 1
                    );
                    break 'logs;
                }
                first_in_log = false;
                next_seq = Some(batch.sequence() + u64::from(batch.count()));
                max_seq = max_seq.max(batch.sequence() + u64::from(batch.count()) - 1);
                if pending.count() > 0
                    && pending.sequence() + u64::from(pending.count()) != batch.sequence()
                {
                    // Not the next sequence: what is gathered goes in first.
                    replay(&mut pending, &mut mem, &ctx, &options, &mut new_files)?;
                }
                if pending.count() == 0 {
                    pending = batch;
                } else {
                    pending.append(&batch);
                }
            }
            if pending.count() >= REPLAY_CHUNK {
                replay(&mut pending, &mut mem, &ctx, &options, &mut new_files)?;
            }
        }
        replay(&mut pending, &mut mem, &ctx, &options, &mut new_files)?;
        if let Some(tail) = reader.torn_tail() {
            info!(info_log, "log {n:06}: {}", tail.reason);
        }
    }
    if !mem.is_empty() {
        new_files.extend(job::flush(&ctx, &mut mem.iter())?.0);
    }
    versions.mark_file_number_used(next_number.load(Ordering::Relaxed));

    // A fresh manifest that makes the replayed tables current and retires the old WALs (those
    // dropped after a gap too), then the fresh WAL it names, created once the edit is durable.
    // An open interrupted before that finds the same logs, and the same gap, next time.
    let wal_number = versions.new_file_number();
    versions.set_last_sequence(max_seq);
    versions.write_new_manifest()?;
    let mut edit = VersionEdit {
        log_number: Some(wal_number),
        log_start: Some(max_seq + 1),
        prev_log_number: Some(0),
        ..VersionEdit::default()
    };
    for f in &new_files {
        counters
            .flush_bytes_written
            .fetch_add(f.file_size, Ordering::Relaxed);
    }
    edit.new_files = new_files.into_iter().map(|f| (0, f)).collect();
    edit.stats = counters.persisted();
    let tables_written = edit.new_files.len();
    versions.log_and_apply(edit)?;
    let current = versions.current();
    let levels: Vec<String> = (0..current.num_levels())
        .filter(|&l| !current.files(l).is_empty())
        .map(|l| {
            format!(
                "L{l} {} tables {} bytes",
                current.files(l).len(),
                current.level_bytes(l)
            )
        })
        .collect();
    info!(
        info_log,
        "recovered: {} logs replayed ({replayed_batches} batches), {tables_written} tables \
         written to level 0, last sequence {max_seq}; levels: {}",
        logs.len(),
        if levels.is_empty() {
            "empty".to_owned()
        } else {
            levels.join(", ")
        }
    );
    drop(current);
    let wal = create_wal(fs.as_ref(), &options, dir, wal_number)?;
    fs.sync_dir(dir)?;

    // Sweep: everything not referenced by the new state.
    let live: HashSet<u64> = versions.current().all_file_numbers().collect();
    let holders = crate::layout::trie::cluster_holders(&versions.current());
    for name in &names {
        let remove = match filename::parse(name) {
            Some(FileKind::Log(n)) => n < wal_number,
            Some(FileKind::Table(n)) => !live.contains(&n),
            // A cluster is a side file of its holder table and goes with it, or before it
            // when a newer table of its container holds the container's cluster.
            Some(FileKind::Cluster(n)) => !holders.contains(&n),
            Some(FileKind::Manifest(n)) => n != versions.manifest_number(),
            Some(FileKind::Temp(_)) => true,
            _ => false,
        };
        if remove {
            let _ = fs.remove(&dir.join(name));
        }
    }

    let mem = Arc::new(options.new_memtable(icmp.clone(), None));
    let super_version = ArcSwap::from_pointee(SuperVersion {
        mem: Arc::clone(&mem),
        imms: Vec::new(),
        version: versions.current(),
    });
    let state = DbState {
        versions,
        mem,
        imms: VecDeque::new(),
        wal: Some(wal),
        wal_number,
        old_wals: VecDeque::new(),
        wal_dir_synced: true,
        write_rate: Default::default(),
        writers: VecDeque::new(),
        bg_error: None,
        compaction: compaction::State::default(),
        flush_running: false,
        jobs_running: 0,
        manual_running: false,
        manifest_busy: false,
    };
    Ok(DbInner {
        obsolete: Arc::clone(state.versions.obsolete_files()),
        dir: dir.to_path_buf(),
        fs,
        icmp,
        table_options,
        tables,
        block_cache,
        strategy: options.layout.strategy(),
        state: Mutex::new(state),
        bg_cv: Condvar::new(),
        super_version,
        iter_pool: super::iter_pool::SourcePool::default(),
        visible_sequence: AtomicU64::new(max_seq),
        snapshots: Arc::new(SnapshotList::default()),
        counters,
        shutting_down: AtomicBool::new(false),
        drain_bell: super::drain::DrainBell::default(),
        opened_at: std::time::Instant::now(),
        populate_limit: if options.populate_new_tables && options.mmap_reads {
            super::physical_memory::physical_memory_bytes() / 2
        } else {
            0
        },
        info_log,
        _lock: lock,
        options,
    })
}

/// Operations of consecutive log records replayed together: records are gathered until they
/// hold this many (or the next does not follow on in sequence) and go into the memtable as one
/// sorted multi-insert, which finds their places together; inserted one record at a time,
/// replaying a 57 MB log was 43% of an open in `SkipList::find_ge`. A memtable may pass
/// `write_buffer_size` by up to one chunk before the replay flushes it.
const REPLAY_CHUNK: u32 = 4096;

/// Inserts the gathered records of `pending` into `mem` (emptying it), then flushes `mem` to
/// a level-0 table and starts a new one if it outgrew `write_buffer_size`.
fn replay(
    pending: &mut WriteBatch,
    mem: &mut Arc<MemTable>,
    ctx: &job::JobContext<'_>,
    options: &Options,
    new_files: &mut Vec<FileMeta>,
) -> Result<()> {
    if pending.count() > 0 {
        mem.add_write_batch(pending);
        *pending = WriteBatch::new();
    }
    if mem.approximate_memory_usage() > options.write_buffer_size {
        new_files.extend(job::flush(ctx, &mut mem.iter())?.0);
        *mem = Arc::new(MemTable::new(ctx.icmp.clone()));
    }
    Ok(())
}

/// Cuts every table that grows (Jungle trees) back to its extent in the MANIFEST: bytes past it
/// are an append whose edit was never logged (a crash between the segment's sync and the
/// edit), which no reader may see and the next append would overwrite. A file shorter than its
/// extent, or whose committed end no longer matches the MANIFEST's checksum of it, lost synced
/// bytes: that is corruption, named with the file.
fn cut_back_grown_tables(fs: &dyn Fs, dir: &Path, current: &Version) -> Result<()> {
    for level in 0..current.num_levels() {
        for meta in current.files(level) {
            if !meta.format.grows() {
                continue;
            }
            let path = filename::table_file(dir, meta.number);
            let size = fs.file_size(&path)?;
            if size < meta.file_size {
                return Err(Error::corruption(
                    &path,
                    size,
                    format!(
                        "tree file is {size} bytes; the manifest says {} (synced bytes are lost)",
                        meta.file_size
                    ),
                ));
            }
            if let Some(expected) = meta.end_checksum {
                let actual = end_checksum(&*fs.open(&path)?, meta.file_size)?;
                if actual != expected {
                    return Err(Error::corruption(
                        &path,
                        meta.file_size,
                        "the tree's committed end does not match the manifest's checksum of it",
                    ));
                }
            }
            if size > meta.file_size {
                let mut file = fs.open_appendable(&path, meta.file_size)?;
                file.sync()?;
            }
        }
    }
    Ok(())
}
