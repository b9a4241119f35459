//! Other engines' databases: recognising a LevelDB or RocksDB directory (so that open, check and
//! repair name the format instead of misreading it) and importing a LevelDB one
//! ([`import_leveldb`]).
//!
//! What gives a directory away, cheapest first:
//! - RocksDB writes `IDENTITY` and `OPTIONS-NNNNNN` files;
//! - LevelDB (since 1.14) names its tables `NNNNNN.ldb`;
//! - a table file ending in LevelDB's table magic `0xdb4775248b80fb57` (LevelDB's `.sst` tables,
//!   and RocksDB's legacy format) or RocksDB's block-based table magic `0x88e241b785f4cff7`;
//! - a MANIFEST whose first record starts as LevelDB's and RocksDB's do: tag 1 (comparator) as a
//!   varint, then the name's length as a varint and the name (ScreeDB writes the length as a
//!   4-byte integer, so the byte after the length is 0 in ScreeDB's and a letter in theirs).

mod import;
mod leveldb;

use std::fmt;
use std::path::Path;

use crate::error::Result;
use crate::filename::{self, FileKind};
use crate::fs::Fs;
use crate::wal::{LogReader, RecoveryMode};

pub use import::{ImportReport, import_leveldb};

/// LevelDB's table magic (`kTableMagicNumber`), also RocksDB's legacy block-based one.
pub const LEVELDB_TABLE_MAGIC: u64 = 0xdb47_7524_8b80_fb57;
/// RocksDB's block-based table magic (`kBlockBasedTableMagicNumber`).
pub const ROCKSDB_TABLE_MAGIC: u64 = 0x88e2_41b7_85f4_cff7;

/// Another engine's database format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForeignFormat {
    /// LevelDB's (Google's LevelDB, any version since 1.0).
    LevelDb,
    /// RocksDB's.
    RocksDb,
}

impl ForeignFormat {
    /// What a user holding such a database can do.
    pub fn advice(self) -> &'static str {
        match self {
            ForeignFormat::LevelDb => {
                "ScreeDB does not open LevelDB's files in place; copy the data into a new ScreeDB \
                 database with `screedb import --from-leveldb <this dir> --db <new dir>` \
                 (docs/c-api.md, \"Migrating from LevelDB\")"
            }
            ForeignFormat::RocksDb => {
                "ScreeDB cannot read RocksDB's files; export the data with RocksDB's tools \
                 (`ldb dump`) and load it through ScreeDB's API"
            }
        }
    }
}

impl fmt::Display for ForeignFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ForeignFormat::LevelDb => "LevelDB",
            ForeignFormat::RocksDb => "RocksDB",
        })
    }
}

/// The format of another engine's database in `dir`, with what gave it away, or `None` when
/// nothing there is another engine's (see the module comment). Reads at most one table footer
/// and the first MANIFEST record.
pub fn detect(fs: &dyn Fs, dir: &Path) -> Result<Option<(ForeignFormat, String)>> {
    if !fs.exists(dir) {
        return Ok(None);
    }
    let names = fs.list(dir)?;
    if let Some(n) = names
        .iter()
        .find(|n| *n == "IDENTITY" || n.starts_with("OPTIONS-"))
    {
        return Ok(Some((ForeignFormat::RocksDb, format!("its file {n}"))));
    }
    if let Some(n) = names.iter().find(|n| n.ends_with(".ldb")) {
        return Ok(Some((ForeignFormat::LevelDb, format!("its table {n}"))));
    }
    // One `.sst` says whose they are.
    if let Some(n) = names
        .iter()
        .find(|n| matches!(filename::parse(n), Some(FileKind::Table(_))))
    {
        let file = fs.open(&dir.join(n))?;
        let size = file.size();
        if size >= 8 {
            let tail = file.read_vec(size - 8, 8)?;
            let magic = crate::coding::get_u64(&tail).unwrap_or_default();
            let found = match magic {
                LEVELDB_TABLE_MAGIC => Some(ForeignFormat::LevelDb),
                ROCKSDB_TABLE_MAGIC => Some(ForeignFormat::RocksDb),
                _ => None,
            };
            if let Some(format) = found {
                return Ok(Some((
                    format,
                    format!("table {n} ends in {format}'s table magic"),
                )));
            }
        }
    }
    Ok(manifest_looks_foreign(fs, dir)?.map(|name| {
        (
            ForeignFormat::LevelDb,
            format!("its MANIFEST {name} is LevelDB's"),
        )
    }))
}

/// `err`, the failure to recover the database in `dir`, or, when `dir` holds another engine's
/// database, an [`crate::Error::ForeignFormat`] naming it (the MANIFEST was not ScreeDB's).
pub(crate) fn explain(fs: &dyn Fs, dir: &Path, err: crate::Error) -> crate::Error {
    match detect(fs, dir) {
        Ok(Some((format, evidence))) => crate::Error::ForeignFormat {
            dir: dir.to_path_buf(),
            format,
            evidence,
        },
        Ok(None) | Err(_) => err,
    }
}

/// The name of the MANIFEST `dir`'s CURRENT names, if CURRENT names one (the same file names
/// in ScreeDB, LevelDB and RocksDB).
pub(super) fn current_manifest(fs: &dyn Fs, dir: &Path) -> Result<Option<String>> {
    let current = filename::current_file(dir);
    if !fs.exists(&current) {
        return Ok(None);
    }
    let contents = crate::fs::read_all(fs, &current)?;
    let name = String::from_utf8_lossy(&contents).trim().to_owned();
    Ok(matches!(filename::parse(&name), Some(FileKind::Manifest(_))).then_some(name))
}

/// The name of the MANIFEST CURRENT names, if its first record is encoded as LevelDB's.
fn manifest_looks_foreign(fs: &dyn Fs, dir: &Path) -> Result<Option<String>> {
    let Some(name) = current_manifest(fs, dir)? else {
        return Ok(None);
    };
    let path = dir.join(&name);
    if !fs.exists(&path) {
        return Ok(None);
    }
    let mut reader = LogReader::new(fs.open(&path)?, path, RecoveryMode::TolerateTornTail);
    let Ok(Some(record)) = reader.read_record() else {
        return Ok(None);
    };
    Ok(leveldb::starts_like_a_leveldb_edit(&record).then_some(name))
}
