//! `import_leveldb`: copies the live contents of a LevelDB database into a new ScreeDB one.
//!
//! The source is read, never written: its MANIFEST names the live tables, the logs at or after
//! its log number hold the writes not yet in a table (replayed as LevelDB's own recovery would,
//! a torn tail dropped), and the newest entry of every user key among them is the value
//! imported (a key whose newest entry is a deletion is not). The tables are read block by block
//! and merged, so memory stays bounded by the logs' contents. The destination is created (it
//! must not exist), filled with unsynced batches, then flushed and closed: it is durable once
//! the import returns.

use std::path::Path;
use std::sync::Arc;

use crate::comparator::InternalKeyComparator;
use crate::db::Db;
use crate::error::{Error, Result};
use crate::filename;
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::{self, ValueKind};
use crate::memtable::MemTable;
use crate::options::{Options, WriteOptions};
use crate::wal::{LogReader, RecoveryMode};
use crate::write_batch::WriteBatch;

use super::leveldb;

/// The comparator name LevelDB's default (bytewise) comparator records.
const LEVELDB_BYTEWISE: &str = "leveldb.BytewiseComparator";
/// Keys written per batch.
const BATCH_KEYS: usize = 1000;

/// What [`import_leveldb`] read and wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// LevelDB tables read.
    pub tables: usize,
    /// Log records (write batches) replayed from LevelDB's logs.
    pub log_records: u64,
    /// Keys written to the new database.
    pub keys: u64,
    /// Bytes of those keys and their values.
    pub bytes: u64,
    /// Keys whose newest entry was a deletion (not imported).
    pub deleted: u64,
}

/// Copies the LevelDB database in `src` into a new ScreeDB database at `dst`, opened with
/// `options` (`create_if_missing` and `error_if_exists` are forced on). `src` must not be open
/// in LevelDB (its LOCK is taken) and must use LevelDB's default comparator.
pub fn import_leveldb(
    src: impl AsRef<Path>,
    dst: impl AsRef<Path>,
    options: &Options,
) -> Result<ImportReport> {
    let (src, dst) = (src.as_ref(), dst.as_ref());
    let fs = Arc::clone(&options.fs);
    match super::detect(fs.as_ref(), src)? {
        Some((super::ForeignFormat::LevelDb, _)) => {}
        Some((other, why)) => {
            return Err(Error::invalid(format!(
                "{} holds a {other} database ({why}), not a LevelDB one",
                src.display()
            )));
        }
        None => {
            return Err(Error::invalid(format!(
                "{} is not a LevelDB database (no .ldb table, LevelDB table magic or LevelDB \
                 MANIFEST found)",
                src.display()
            )));
        }
    }
    let _lock = fs.lock(&filename::lock_file(src))?;
    let manifest = leveldb::read_manifest(fs.as_ref(), src)?;
    if let Some(name) = manifest.comparator.as_deref()
        && name != LEVELDB_BYTEWISE
    {
        return Err(Error::invalid(format!(
            "{} was written with the comparator {name:?}; only {LEVELDB_BYTEWISE:?} databases \
             can be imported",
            src.display()
        )));
    }
    let icmp = InternalKeyComparator::new(crate::comparator::default_comparator());
    let mut report = ImportReport::default();
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    for &n in &manifest.tables {
        let path = leveldb::table_path(fs.as_ref(), src, n);
        children.push(leveldb::table_iter(fs.as_ref(), &path, &icmp)?);
        report.tables += 1;
    }
    let mem = Arc::new(MemTable::new(icmp.clone()));
    for n in log_numbers(fs.as_ref(), src, &manifest)? {
        let path = filename::log_file(src, n);
        let mut reader = LogReader::new(
            fs.open(&path)?,
            path.clone(),
            RecoveryMode::TolerateTornTail,
        );
        while let Some(record) = reader.read_record()? {
            let batch = WriteBatch::from_record(record, &path, reader.last_record_offset())?;
            batch.validate()?;
            mem.add_write_batch(&batch);
            report.log_records += 1;
        }
    }
    children.push(Box::new(mem.iter()));

    let db = Db::open(
        dst,
        Options {
            create_if_missing: true,
            error_if_exists: true,
            ..options.clone()
        },
    )?;
    let mut input = MergingIterator::new(icmp, children);
    copy_newest(&db, &mut input, &mut report)?;
    db.flush()?;
    db.close()?;
    Ok(report)
}

/// The logs LevelDB would replay: at or after the log number, or the previous log number.
fn log_numbers(
    fs: &dyn crate::fs::Fs,
    dir: &Path,
    manifest: &leveldb::Manifest,
) -> Result<Vec<u64>> {
    let mut logs: Vec<u64> = fs
        .list(dir)?
        .iter()
        .filter_map(|name| match filename::parse(name) {
            Some(filename::FileKind::Log(n))
                if n >= manifest.log_number || n == manifest.prev_log_number =>
            {
                Some(n)
            }
            _ => None,
        })
        .collect();
    logs.sort_unstable();
    Ok(logs)
}

/// Writes the newest entry of every user key of `input` that is a value into `db`.
fn copy_newest(db: &Db, input: &mut dyn InternalIterator, report: &mut ImportReport) -> Result<()> {
    let mut batch = WriteBatch::new();
    let mut in_batch = 0;
    let mut last: Option<Vec<u8>> = None;
    input.seek_to_first();
    while input.valid() {
        let parsed = key::parse_internal_key(input.key()).ok_or_else(|| {
            Error::corruption("LevelDB table", 0, "internal key with a bad trailer")
        })?;
        if last.as_deref() != Some(parsed.user_key) {
            last = Some(parsed.user_key.to_vec());
            match parsed.kind {
                ValueKind::Value => {
                    batch.put(parsed.user_key, input.value());
                    report.keys += 1;
                    report.bytes += (parsed.user_key.len() + input.value().len()) as u64;
                    in_batch += 1;
                    if in_batch == BATCH_KEYS {
                        db.write(std::mem::take(&mut batch), &WriteOptions::default())?;
                        in_batch = 0;
                    }
                }
                ValueKind::Deletion => report.deleted += 1,
            }
        }
        input.next();
    }
    input.status()?;
    if in_batch > 0 {
        db.write(batch, &WriteOptions::default())?;
    }
    Ok(())
}
