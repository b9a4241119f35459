//! The database checker behind `screedb check`: verifies a closed database without changing it.
//!
//! [`check_database`] takes the LOCK (so a database another process has open is reported as
//! locked), recovers the version from CURRENT and the MANIFEST exactly as open does, and then
//! checks, stopping at the first problem:
//!
//! - the version invariants (sorted, disjoint levels >= 1; no table listed twice; no table newer
//!   than the manifest's last sequence);
//! - every live table: it exists, its size is the one the manifest records, every block's
//!   checksum, every entry's order ([`crate::table::TableReader::verify`]), and its properties agree with
//!   its manifest entry (smallest/largest key, sequence range, entry and deletion counts);
//! - in the trie layout, the BloomCluster of every container that has one: every page's
//!   checksum, and no key of a table it covers that the cluster rules out;
//! - every live WAL: older logs are read strictly, the newest may end in a torn tail (as at open);
//!   every record must decode as a write batch and sequence numbers must increase.
//!
//! A torn tail (in the newest WAL or the MANIFEST) is what a crash leaves and what open drops: it
//! is reported in [`CheckReport::torn_tails`], not as an error. Nothing is written or deleted;
//! the only file that may be created is LOCK itself.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::filename::{self, FileKind};
use crate::fs::Fs;
use crate::manifest::{FileMeta, VersionEdit};
use crate::options::Options;
use crate::table::TableCache;
use crate::version::VersionSet;
use crate::wal::{LogReader, RecoveryMode};
use crate::write_batch::WriteBatch;

/// What [`check_database`] found in a database that passed every check.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// The MANIFEST named by CURRENT.
    pub manifest: PathBuf,
    /// Version edits read from the MANIFEST.
    pub manifest_edits: u64,
    /// Last sequence number recorded in the MANIFEST.
    pub last_sequence: u64,
    /// Live tables per level.
    pub tables_per_level: Vec<usize>,
    /// Live tables in all levels.
    pub tables: usize,
    /// Bytes of all live tables.
    pub table_bytes: u64,
    /// Entries (puts and tombstones) in all live tables.
    pub entries: u64,
    /// Tombstones in all live tables.
    pub deletions: u64,
    /// Data blocks verified.
    pub data_blocks: u64,
    /// Live WAL files read.
    pub wal_files: usize,
    /// Bytes of the live WAL files.
    pub wal_bytes: u64,
    /// Records (write batches) in the live WALs.
    pub wal_records: u64,
    /// Updates (puts and deletes) in those records.
    pub wal_updates: u64,
    /// BloomClusters (trie layout) verified: every page read, and every key of every table
    /// each covers in its container let through.
    pub clusters: usize,
    /// Tables in the directory that the MANIFEST does not list (removed at the next open).
    pub unreferenced_tables: Vec<u64>,
    /// Torn tails found where a crash may leave one: `(file, description)`. Open drops them.
    pub torn_tails: Vec<(PathBuf, String)>,
}

/// The layout the database in `dir` was created with, read from its manifest (the database
/// must not be open). [`Error::NotFound`] if there is no database.
pub fn stored_layout(dir: &Path, options: &Options) -> Result<crate::layout::LayoutKind> {
    let fs = Arc::clone(&options.fs);
    if !fs.exists(&filename::current_file(dir)) {
        return Err(Error::NotFound(dir.to_path_buf()));
    }
    let _lock = fs.lock(&filename::lock_file(dir))?;
    let icmp = InternalKeyComparator::new(Arc::clone(&options.comparator));
    let tables = Arc::new(TableCache::new(
        Arc::clone(&fs),
        dir.to_path_buf(),
        options.table_options(),
        icmp.clone(),
        16,
        None,
    ));
    let mut versions = VersionSet::new(fs, dir.to_path_buf(), icmp, tables, options, None);
    versions
        .recover()
        .map_err(|e| crate::foreign::explain(options.fs.as_ref(), dir, e))?;
    Ok(versions.current().layout())
}

/// Checks the database in `dir` (see the module documentation). `options` gives the file system,
/// the comparator and the number of levels; the database is never modified.
///
/// Returns the first problem as an error naming the damaged file: [`Error::Locked`] if another
/// process has the database open, [`Error::NotFound`] if there is no database, and otherwise
/// mostly [`Error::Corruption`].
pub fn check_database(dir: &Path, options: &Options) -> Result<CheckReport> {
    options.validate()?;
    let fs = Arc::clone(&options.fs);
    if !fs.exists(&filename::current_file(dir)) {
        return Err(Error::NotFound(dir.to_path_buf()));
    }
    let _lock = fs.lock(&filename::lock_file(dir))?;

    let icmp = InternalKeyComparator::new(Arc::clone(&options.comparator));
    let mut table_options = options.table_options();
    table_options.verify_checksums = true;
    let tables = Arc::new(TableCache::new(
        Arc::clone(&fs),
        dir.to_path_buf(),
        table_options,
        icmp.clone(),
        16,
        None,
    ));
    let mut versions = VersionSet::new(
        Arc::clone(&fs),
        dir.to_path_buf(),
        icmp.clone(),
        Arc::clone(&tables),
        options,
        None,
    );
    let recovered = versions
        .recover()
        .map_err(|e| crate::foreign::explain(options.fs.as_ref(), dir, e))?;
    let mut report = CheckReport {
        manifest: filename::manifest_file(dir, versions.manifest_number()),
        last_sequence: versions.last_sequence(),
        ..CheckReport::default()
    };
    check_manifest_records(fs.as_ref(), &mut report)?;

    // Version invariants.
    let version = versions.current();
    let manifest_error = |reason: String| Error::corruption(&report.manifest, 0, reason);
    version.check_invariants().map_err(manifest_error)?;
    let mut seen = std::collections::HashSet::new();
    for level in 0..version.num_levels() {
        for f in version.files(level) {
            if !seen.insert(f.number) {
                return Err(manifest_error(format!(
                    "table {} is listed twice (again in level {level})",
                    f.number
                )));
            }
            if f.largest_seq > report.last_sequence {
                return Err(manifest_error(format!(
                    "table {} holds sequence {}, past the last sequence {}",
                    f.number, f.largest_seq, report.last_sequence
                )));
            }
        }
    }

    // Tables.
    for level in 0..version.num_levels() {
        report.tables_per_level.push(version.files(level).len());
        for f in version.files(level) {
            check_table(
                fs.as_ref(),
                dir,
                f,
                &tables,
                version.hash_seed(),
                &mut report,
            )?;
        }
    }

    if version.layout() == crate::LayoutKind::Trie {
        check_clusters(&version, &tables, &mut report)?;
    }

    // WALs and stray tables.
    let mut logs = Vec::new();
    for name in fs.list(dir)? {
        match filename::parse(&name) {
            Some(FileKind::Log(n))
                if n >= recovered.log_number || n == recovered.prev_log_number =>
            {
                logs.push(n);
            }
            Some(FileKind::Table(n)) if !seen.contains(&n) => report.unreferenced_tables.push(n),
            _ => {}
        }
    }
    logs.sort_unstable();
    report.unreferenced_tables.sort_unstable();
    let mut last_seq = None;
    for (i, &n) in logs.iter().enumerate() {
        let mode = if i + 1 == logs.len() {
            RecoveryMode::TolerateTornTail
        } else {
            RecoveryMode::Strict
        };
        check_wal(fs.as_ref(), dir, n, mode, &mut last_seq, &mut report)?;
    }
    Ok(report)
}

/// Reads every MANIFEST record again, counting edits and noting a torn last edit.
fn check_manifest_records(fs: &dyn Fs, report: &mut CheckReport) -> Result<()> {
    let path = report.manifest.clone();
    let mut reader = LogReader::new(
        fs.open(&path)?,
        path.clone(),
        RecoveryMode::TolerateTornTail,
    );
    while let Some(record) = reader.read_record()? {
        VersionEdit::decode(&record, &path, reader.last_record_offset())?;
        report.manifest_edits += 1;
    }
    if let Some(tail) = reader.torn_tail() {
        report.torn_tails.push((path, tail.reason.clone()));
    }
    Ok(())
}

/// Opens and verifies one live table, comparing it with its manifest entry.
fn check_table(
    fs: &dyn Fs,
    dir: &Path,
    meta: &FileMeta,
    tables: &TableCache,
    hash_seed: u64,
    report: &mut CheckReport,
) -> Result<()> {
    let path = filename::table_file(dir, meta.number);
    if !fs.exists(&path) {
        return Err(Error::corruption(
            &path,
            0,
            "table listed in the manifest is missing",
        ));
    }
    // Opening at the manifest's extent checks the file's length against it, as its format
    // requires (a sorted table must be exactly that long).
    let table = tables.open_uncached(meta.number, meta.file_size)?;
    if table.format() != meta.format {
        return Err(Error::corruption(
            &path,
            0,
            format!(
                "the file is a {} table; the manifest says {}",
                table.format(),
                meta.format
            ),
        ));
    }
    table.verify()?;
    if let Some(seed) = table.hash_seed()
        && seed != hash_seed
    {
        return Err(Error::corruption(
            &path,
            0,
            format!(
                "the table was built with hash seed {seed:#x}; the manifest says {hash_seed:#x}"
            ),
        ));
    }
    let p = table.properties();
    let disagree = |what: &str| {
        Err(Error::corruption(
            &path,
            0,
            format!("the table's {what} disagrees with its manifest entry"),
        ))
    };
    if p.smallest_key != meta.smallest || p.largest_key != meta.largest {
        return disagree("key range");
    }
    if p.num_entries != meta.num_entries || p.num_deletions != meta.num_deletions {
        return disagree("entry count");
    }
    if p.smallest_seq != meta.smallest_seq || p.largest_seq != meta.largest_seq {
        return disagree("sequence range");
    }
    report.tables += 1;
    report.table_bytes += meta.file_size;
    report.entries += p.num_entries;
    report.deletions += p.num_deletions;
    report.data_blocks += p.num_data_blocks;
    Ok(())
}

/// Reads one live WAL; `last_seq` carries the last sequence number seen across logs.
fn check_wal(
    fs: &dyn Fs,
    dir: &Path,
    number: u64,
    mode: RecoveryMode,
    last_seq: &mut Option<u64>,
    report: &mut CheckReport,
) -> Result<()> {
    let path = filename::log_file(dir, number);
    let file = fs.open(&path)?;
    report.wal_files += 1;
    report.wal_bytes += file.size();
    let mut reader = LogReader::new(file, path.clone(), mode);
    while let Some(record) = reader.read_record()? {
        let offset = reader.last_record_offset();
        let batch = WriteBatch::from_record(record, &path, offset)?;
        report.wal_records += 1;
        report.wal_updates += u64::from(batch.count());
        if batch.count() == 0 {
            continue;
        }
        if let Some(prev) = *last_seq
            && batch.sequence() <= prev
        {
            return Err(Error::corruption(
                &path,
                offset,
                format!(
                    "write batch starts at sequence {}, not after the previous record's {prev}",
                    batch.sequence()
                ),
            ));
        }
        *last_seq = Some(batch.sequence() + u64::from(batch.count()) - 1);
    }
    if let Some(tail) = reader.torn_tail() {
        report.torn_tails.push((path, tail.reason.clone()));
    }
    Ok(())
}

/// Checks the BloomCluster of every container that has one (held by its highest-numbered
/// table; see the module documentation): a cluster that rules out a key its table holds would
/// hide that key.
fn check_clusters(
    version: &crate::version::Version,
    tables: &TableCache,
    report: &mut CheckReport,
) -> Result<()> {
    use crate::iter::InternalIterator;
    use crate::table::htable::KeyHash;
    let seed = version.hash_seed();
    let containers = (1..version.num_levels()).flat_map(|level| version.runs(level));
    for container in containers {
        let Some(holder) = container.iter().map(|f| f.number).max() else {
            continue;
        };
        let Some(cluster) = tables.cluster(holder)? else {
            continue;
        };
        cluster.verify()?;
        report.clusters += 1;
        for (i, &number) in cluster.tables().iter().enumerate() {
            let Some(f) = container.iter().find(|f| f.number == number) else {
                continue;
            };
            let mut it = tables.get(f)?.iter()?;
            it.seek_to_first();
            while it.valid() {
                let user_key = crate::key::user_key(it.key());
                if !cluster.may_hold(&KeyHash::of(seed, user_key))?[i] {
                    return Err(Error::corruption(
                        cluster.path(),
                        0,
                        format!(
                            "the cluster rules out key {:?} of table {number}, which holds it",
                            String::from_utf8_lossy(user_key)
                        ),
                    ));
                }
                it.next();
            }
            it.status()?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Db;
    use crate::fs::MemFs;

    fn mem_options() -> Options {
        Options {
            create_if_missing: true,
            ..Options::default()
        }
        .with_fs(Arc::new(MemFs::new()))
    }

    #[test]
    fn a_fresh_database_checks_clean_and_counts_what_it_holds() {
        let options = mem_options();
        let dir = Path::new("/db");
        let db = Db::open(dir, options.clone()).unwrap();
        for i in 0..100u32 {
            db.put(format!("k{i:03}"), b"v").unwrap();
        }
        db.flush().unwrap();
        db.delete(b"k000").unwrap();
        db.close().unwrap();
        let report = check_database(dir, &options).unwrap();
        assert_eq!(report.tables, 1, "{report:?}");
        assert_eq!(report.entries, 100);
        assert_eq!(report.wal_records, 1, "the delete is still in the WAL");
        assert_eq!(report.wal_updates, 1);
        assert!(report.manifest_edits >= 2);
        assert!(report.torn_tails.is_empty());
    }

    #[test]
    fn an_open_database_is_reported_as_locked() {
        let options = mem_options();
        let dir = Path::new("/db");
        let db = Db::open(dir, options.clone()).unwrap();
        let err = check_database(dir, &options).unwrap_err();
        assert!(matches!(err, Error::Locked(_)), "{err}");
        db.close().unwrap();
        check_database(dir, &options).unwrap();
    }

    #[test]
    fn no_database_is_not_found() {
        let options = mem_options();
        let err = check_database(Path::new("/nothing"), &options).unwrap_err();
        assert!(matches!(err, Error::NotFound(_)), "{err}");
    }
}
