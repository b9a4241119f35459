//! Repair: rebuild a database from the tables and logs found in its directory, whatever state
//! CURRENT and the MANIFEST are in (LevelDB's `RepairDB`, behind the C API's `leveldb_repair_db`).
//!
//! Steps, under the database's LOCK:
//! 1. every table (`*.sst`) is opened and read in full (every block checksum-verified); a table
//!    that cannot be read is salvaged unit by unit (`table::salvage`: each data block, bucket or
//!    overflow group whose checksum holds is kept) and moved to `lost/`; the report names every
//!    unit lost, with its key range where the table records one. A sorted table whose index or
//!    footer is damaged, or that was cut short, is walked from its start, block by block, up to
//!    the damage (LevelDB loses such a table whole); an HTable whose footer or metadata is
//!    damaged, and a tree file, cannot be located and are lost whole;
//! 2. every log (`*.log`), oldest first, is replayed into a memtable; a damaged region is skipped
//!    up to the next valid fragment (`RecoveryMode::SkipDamage`) and a record that does not
//!    decode is dropped whole, and the replay goes on: every intact record is kept;
//! 3. the newest entry of every user key in the readable tables and logs is written to new tables
//!    in the last level (tombstones and older versions are dropped: nothing lies below them), cut
//!    at `target_file_size`;
//! 4. a new MANIFEST naming only those tables is written and synced, then CURRENT is switched to
//!    it atomically;
//! 5. only then are the old tables removed and the old logs and manifests moved to `lost/`.
//!
//! Rewriting the entries (rather than listing the old tables at level 0, as LevelDB does) keeps
//! every version invariant: the old tables came from different levels, and a level-0 lookup,
//! which trusts file numbers to order tables, could otherwise return an older version of a key.
//! A crash before step 4 leaves the old state; after it, leftovers are swept at the next open.

use std::collections::HashSet;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::compaction::job::finish_table;
use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::{self, Fs};
use crate::info_log::{InfoLogger, info};
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::{self, ValueKind};
use crate::manifest::{FileMeta, VersionEdit};
use crate::memtable::MemTable;
use crate::options::Options;
use crate::table::salvage::{LostBlock, salvage};
use crate::table::{
    FORMAT_TAIL_LEN, TableCache, TableFormat, TableOptions, TableReader, TableWriter,
    create_writer, find_last_commit, format_of_tail,
};
use crate::wal::{LogReader, LogWriter, RecoveryMode};
use crate::write_batch::WriteBatch;

/// Name of the directory (inside the database directory) that receives what repair set aside.
pub const LOST_DIR: &str = "lost";

/// What a repair found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepairReport {
    /// Tables read in full and merged.
    pub tables_read: usize,
    /// Tables that could not be read at all, moved to `lost/`, each with the reason.
    pub tables_lost: Vec<(u64, String)>,
    /// Damaged tables whose intact blocks were kept (each moved to `lost/`).
    pub tables_salvaged: Vec<SalvagedTable>,
    /// Logs replayed.
    pub logs_read: usize,
    /// Write batches recovered from the logs.
    pub log_batches: u64,
    /// Damage found in the logs, by log: each skipped region or record (the replay went on
    /// after it), a torn tail, or the I/O error that ended a replay.
    pub log_errors: Vec<(u64, String)>,
    /// Live keys written to the new tables.
    pub keys_written: u64,
    /// New tables written.
    pub tables_written: usize,
}

/// A damaged table repair kept part of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SalvagedTable {
    /// The table's file number.
    pub table: u64,
    /// What reading it in full reported.
    pub damage: String,
    /// Entries kept from its intact blocks.
    pub entries_kept: u64,
    /// Entries of intact blocks dropped because their key was malformed.
    pub entries_dropped: u64,
    /// The blocks (buckets, overflow groups) it lost.
    pub lost: Vec<LostBlock>,
}

impl fmt::Display for RepairReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "repair: {} tables read, {} salvaged, {} lost; {} logs read ({} batches); \
             {} keys written to {} tables",
            self.tables_read,
            self.tables_salvaged.len(),
            self.tables_lost.len(),
            self.logs_read,
            self.log_batches,
            self.keys_written,
            self.tables_written
        )?;
        for s in &self.tables_salvaged {
            writeln!(
                f,
                "table {:06}: damaged ({}); kept {} entries, lost {} blocks:",
                s.table,
                s.damage,
                s.entries_kept,
                s.lost.len()
            )?;
            for block in &s.lost {
                writeln!(f, "  {block}")?;
            }
            if s.entries_dropped > 0 {
                writeln!(f, "  {} entries with malformed keys", s.entries_dropped)?;
            }
        }
        for (n, reason) in &self.tables_lost {
            writeln!(f, "table {n:06}: lost whole: {reason}")?;
        }
        for (n, reason) in &self.log_errors {
            writeln!(f, "log {n:06}: {reason}")?;
        }
        Ok(())
    }
}

/// Rebuilds the database in `path` from the tables and logs it holds (see the module comment).
/// Fails with [`Error::Locked`] if the database is open, and with an I/O error if `path` does
/// not exist.
pub fn repair_db(path: impl AsRef<Path>, options: &Options) -> Result<RepairReport> {
    let dir = path.as_ref();
    options.validate()?;
    let fs = Arc::clone(&options.fs);
    if !fs.exists(dir) {
        return Err(Error::io(
            "repair",
            dir,
            io::Error::new(io::ErrorKind::NotFound, "no such directory"),
        ));
    }
    // Another engine's files are not ours to rewrite or set aside.
    if let Some((format, evidence)) = crate::foreign::detect(fs.as_ref(), dir)? {
        return Err(Error::ForeignFormat {
            dir: dir.to_path_buf(),
            format,
            evidence,
        });
    }
    let _lock = fs.lock(&filename::lock_file(dir))?;
    let icmp = InternalKeyComparator::new(Arc::clone(&options.comparator));
    let kind = options.layout.kind();
    // A hashed layout's data is all rewritten, so the repaired database gets a new seed.
    let hash_seed = kind.is_hashed().then(crate::layout::trie::new_hash_seed);
    let mut topts = options.table_options();
    topts.htable.hash_seed = hash_seed.unwrap_or(0);
    let reader_cache = TableCache::new(
        Arc::clone(&fs),
        dir.to_path_buf(),
        TableOptions {
            verify_checksums: true,
            ..topts.clone()
        },
        icmp.clone(),
        1,
        None,
    );
    let mut report = RepairReport::default();

    let (mut tables, mut logs, mut manifests) = (Vec::new(), Vec::new(), Vec::new());
    let mut max_number = 1u64;
    for name in fs.list(dir)? {
        let n = match filename::parse(&name) {
            Some(FileKind::Table(n)) => {
                tables.push(n);
                n
            }
            Some(FileKind::Log(n)) => {
                logs.push(n);
                n
            }
            Some(FileKind::Manifest(n)) => {
                manifests.push(n);
                n
            }
            // Clusters are rebuilt by compaction; the next open removes those of tables repair
            // replaced.
            Some(FileKind::Temp(n) | FileKind::Cluster(n)) => n,
            _ => continue,
        };
        max_number = max_number.max(n);
    }
    tables.sort_unstable();
    logs.sort_unstable();

    let mut max_seq = 0u64;
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    let mut bad_tables = HashSet::new();
    let salvaged = Arc::new(MemTable::new(icmp.clone()));
    for &n in &tables {
        let read = read_table(fs.as_ref(), &reader_cache, dir, n)
            .and_then(|table| Ok((table.properties().largest_seq, table.iter()?)));
        match read {
            Ok((largest_seq, entries)) => {
                max_seq = max_seq.max(largest_seq);
                children.push(entries);
                report.tables_read += 1;
            }
            Err(damage) => {
                bad_tables.insert(n);
                let path = filename::table_file(dir, n);
                match salvage_table(fs.as_ref(), &path, &icmp, &topts, &salvaged, &mut max_seq) {
                    Ok((kept, dropped, lost)) => report.tables_salvaged.push(SalvagedTable {
                        table: n,
                        damage: damage.to_string(),
                        entries_kept: kept,
                        entries_dropped: dropped,
                        lost,
                    }),
                    Err(e) => report
                        .tables_lost
                        .push((n, format!("{damage}; salvage: {e}"))),
                }
            }
        }
    }
    children.push(Box::new(salvaged.iter()));
    let mem = Arc::new(MemTable::new(icmp.clone()));
    for &n in &logs {
        report.logs_read += 1;
        if let Err(e) = replay_log(fs.as_ref(), dir, n, &mem, &mut max_seq, &mut report) {
            report.log_errors.push((n, e.to_string()));
        }
    }
    children.push(Box::new(mem.iter()));

    let mut next_number = max_number + 1;
    let mut input = MergingIterator::new(icmp.clone(), children);
    let outputs = write_newest(
        fs.as_ref(),
        dir,
        &mut input,
        options.target_file_size,
        kind.table_format(),
        &topts,
        &icmp,
        &mut next_number,
        &mut report,
    )?;

    let manifest_number = next_number;
    let log_number = next_number + 1;
    // Sorted tables of disjoint ranges go to the last level where the layout lets them; a
    // layout that routes by hash or keeps trees below level 0 starts them at level 0 (route 0)
    // and compaction places them.
    let output_level = u32::try_from(kind.repair_level(options.num_levels)).unwrap_or(0);
    let edit = VersionEdit {
        comparator: Some(options.comparator.name().to_owned()),
        layout: Some(options.layout.kind()),
        log_number: Some(log_number),
        prev_log_number: Some(0),
        next_file_number: Some(log_number + 1),
        last_sequence: Some(max_seq),
        new_files: outputs.into_iter().map(|f| (output_level, f)).collect(),
        hash_seed,
        ..VersionEdit::default()
    };
    write_manifest(fs.as_ref(), dir, manifest_number, &edit)?;

    // The new state is durable: set the old files aside.
    let lost = dir.join(LOST_DIR);
    let keep_aside = !bad_tables.is_empty() || !logs.is_empty() || !manifests.is_empty();
    if keep_aside {
        fs.create_dir_all(&lost)?;
    }
    for &n in &tables {
        let path = filename::table_file(dir, n);
        if bad_tables.contains(&n) {
            move_to(fs.as_ref(), &path, &lost)?;
        } else {
            fs.remove(&path)?;
        }
    }
    for &n in &logs {
        move_to(fs.as_ref(), &filename::log_file(dir, n), &lost)?;
    }
    for &n in &manifests {
        move_to(fs.as_ref(), &filename::manifest_file(dir, n), &lost)?;
    }
    fs.sync_dir(dir)?;
    let log = InfoLogger::open(&options.info_log, &fs, dir);
    for line in report.to_string().lines() {
        info!(log, "{line}");
    }
    Ok(report)
}

/// Opens table `n` and reads every entry, so a damaged data block is found now.
fn read_table(
    fs: &dyn Fs,
    tables: &TableCache,
    dir: &Path,
    n: u64,
) -> Result<Arc<dyn TableReader>> {
    let path = filename::table_file(dir, n);
    let table = tables.open_uncached(n, salvage_extent(fs, &path)?)?;
    table.verify()?;
    let mut it = Arc::clone(&table).iter()?;
    it.seek_to_first();
    while it.valid() {
        if key::parse_internal_key(it.key()).is_none() {
            return Err(Error::corruption(&path, 0, "entry with a malformed key"));
        }
        it.next();
    }
    it.status()?;
    Ok(table)
}

/// Salvages the damaged table `path` into `mem` (see `table::salvage`): returns the entries
/// kept, the entries of intact blocks dropped for a malformed key, and the blocks lost.
fn salvage_table(
    fs: &dyn Fs,
    path: &Path,
    icmp: &InternalKeyComparator,
    topts: &TableOptions,
    mem: &MemTable,
    max_seq: &mut u64,
) -> Result<(u64, u64, Vec<LostBlock>)> {
    let file = fs.open(path)?;
    let size = file.size();
    let tail_len = (FORMAT_TAIL_LEN as u64).min(size);
    let tail = file.read_vec(size - tail_len, tail_len as usize)?;
    // A sorted table cut short has no footer to name its format: its data blocks may still be
    // found from the start of the file. If none is, the table is lost for the reason its tail
    // gives.
    let (format, unknown_tail) = match format_of_tail(&tail, path, size - tail_len) {
        Ok(format) => (format, None),
        Err(e) => (TableFormat::Sorted, Some(e)),
    };
    let (mut kept, mut dropped) = (0u64, 0u64);
    let lost = salvage(
        format,
        file,
        path,
        icmp,
        &topts.htable,
        &mut |ikey, value| match key::parse_internal_key(ikey) {
            Some(p) => {
                mem.add(p.seq, p.kind, p.user_key, value);
                *max_seq = (*max_seq).max(p.seq);
                kept += 1;
            }
            None => dropped += 1,
        },
    )?;
    if let Some(e) = unknown_tail
        && kept == 0
    {
        return Err(e);
    }
    Ok((kept, dropped, lost))
}

/// The bytes of table file `path` to read: the whole file, unless it ends in no known footer
/// and holds a tree commit below its end (a tree whose last append was torn or never
/// acknowledged): then up to its last valid commit.
fn salvage_extent(fs: &dyn Fs, path: &Path) -> Result<u64> {
    let file = fs.open(path)?;
    let size = file.size();
    let tail_len = (FORMAT_TAIL_LEN as u64).min(size);
    let tail = file.read_vec(size - tail_len, tail_len as usize)?;
    if format_of_tail(&tail, path, size - tail_len).is_ok() {
        return Ok(size);
    }
    Ok(find_last_commit(&*file, path, size)?.map_or(size, |c| c.len))
}

/// Replays log `n` into `mem`, keeping every intact record: damaged regions of the log and
/// records that do not decode are skipped and reported in `report.log_errors`; an I/O error
/// ends the replay.
fn replay_log(
    fs: &dyn Fs,
    dir: &Path,
    n: u64,
    mem: &MemTable,
    max_seq: &mut u64,
    report: &mut RepairReport,
) -> Result<()> {
    let path = filename::log_file(dir, n);
    let mut reader = LogReader::new(fs.open(&path)?, path.clone(), RecoveryMode::SkipDamage);
    while let Some(record) = reader.read_record()? {
        let offset = reader.last_record_offset();
        // A record is applied whole or not at all.
        let batch = WriteBatch::from_record(record, &path, offset)
            .and_then(|batch| batch.validate().map(|()| batch));
        match batch {
            Ok(batch) => {
                mem.add_write_batch(&batch);
                if batch.count() > 0 {
                    *max_seq = (*max_seq).max(batch.sequence() + u64::from(batch.count()) - 1);
                }
                report.log_batches += 1;
            }
            Err(e) => report.log_errors.push((n, format!("record skipped: {e}"))),
        }
    }
    for s in reader.skipped() {
        report.log_errors.push((
            n,
            format!("bytes {}..{} skipped: {}", s.offset, s.resumed_at, s.reason),
        ));
    }
    if let Some(tail) = reader.torn_tail() {
        report.log_errors.push((n, tail.reason.clone()));
    }
    Ok(())
}

/// Writes the newest entry of every user key of `input` (skipping keys whose newest entry is a
/// tombstone) into tables cut at `target_size`, and syncs the directory.
#[allow(clippy::too_many_arguments, reason = "one private step of repair")]
fn write_newest(
    fs: &dyn Fs,
    dir: &Path,
    input: &mut dyn InternalIterator,
    target_size: u64,
    format: TableFormat,
    topts: &TableOptions,
    icmp: &InternalKeyComparator,
    next_number: &mut u64,
    report: &mut RepairReport,
) -> Result<Vec<FileMeta>> {
    let mut outputs = Vec::new();
    let mut builder: Option<(u64, Box<dyn TableWriter>)> = None;
    let mut last_user_key: Option<Vec<u8>> = None;
    input.seek_to_first();
    while input.valid() {
        let ikey = input.key();
        let parsed = key::parse_internal_key(ikey).ok_or_else(|| {
            Error::corruption("repair input", 0, "internal key with a bad trailer")
        })?;
        let newest = last_user_key
            .as_deref()
            .is_none_or(|k| icmp.user().compare(k, parsed.user_key).is_ne());
        if newest {
            last_user_key = Some(parsed.user_key.to_vec());
            if parsed.kind == ValueKind::Value {
                if builder
                    .as_ref()
                    .is_some_and(|(_, b)| b.is_full(target_size))
                    && let Some((n, b)) = builder.take()
                {
                    outputs.push(finish_table(b, n)?);
                }
                let (_, b) = match &mut builder {
                    Some(b) => b,
                    None => {
                        let n = *next_number;
                        *next_number += 1;
                        let path = filename::table_file(dir, n);
                        let b = create_writer(fs, &path, format, topts, icmp)?;
                        builder.insert((n, b))
                    }
                };
                b.add(ikey, input.value())?;
                report.keys_written += 1;
            }
        }
        input.next();
    }
    input.status()?;
    if let Some((n, b)) = builder.take() {
        outputs.push(finish_table(b, n)?);
    }
    report.tables_written = outputs.len();
    fs.sync_dir(dir)?;
    Ok(outputs)
}

/// Writes `edit` as the only record of MANIFEST-`number` (synced), then points CURRENT at it.
fn write_manifest(fs: &dyn Fs, dir: &Path, number: u64, edit: &VersionEdit) -> Result<()> {
    let path = filename::manifest_file(dir, number);
    let mut writer = LogWriter::new(fs.create(&path)?);
    let mut record = Vec::new();
    edit.encode(&mut record);
    writer.add_record(&record)?;
    writer.sync()?;
    drop(writer);
    let tmp = filename::temp_file(dir, number);
    let contents = format!("{}\n", filename::manifest_name(number));
    fs::write_all_synced(fs, &tmp, contents.as_bytes())?;
    fs.rename(&tmp, &filename::current_file(dir))?;
    fs.sync_dir(dir)
}

fn move_to(fs: &dyn Fs, path: &Path, dir: &Path) -> Result<()> {
    let name = path.file_name().map(PathBuf::from).unwrap_or_default();
    fs.rename(path, &dir.join(name))
}
