//! The storage engines a benchmark can drive, behind one small trait.
//!
//! [`Engine`] is what every workload uses: point writes and reads, batches, ordered scans, and
//! `settle` (wait for background work). ScreeDB is always built in; the peers are behind cargo
//! features (`fjall`, `leveldb`, `rocksdb`, `rocksdb-system`), and `leveldb-c:PATH` loads any
//! library exporting LevelDB's C API at run time. Every engine gets the same [`EngineConfig`]:
//! write buffer, block cache, bloom bits, compression; WAL on; sync only when asked.

mod leveldb;
mod leveldb_api;
mod screedb;

#[cfg(feature = "fjall")]
mod fjall;
#[cfg(any(feature = "rocksdb", feature = "rocksdb-system"))]
mod rocksdb;

use std::path::{Path, PathBuf};

use ::screedb::{Db, Error, Options, Result};

pub use self::screedb::ScreeDbEngine;

/// One update of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op<'a> {
    /// Set a key to a value.
    Put(&'a [u8], &'a [u8]),
    /// Remove a key.
    Delete(&'a [u8]),
}

/// Block compression, as `--compression` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Compression {
    /// No compression.
    None,
    /// LZ4.
    Lz4,
}

/// The engine settings a benchmark run controls, applied alike to every engine.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Bytes buffered in memory before a flush.
    pub write_buffer_size: usize,
    /// Bytes of block cache.
    pub cache_size: usize,
    /// Bloom filter bits per key (0: no filter).
    pub bloom_bits: u32,
    /// Block compression.
    pub compression: Compression,
    /// Layout of levels >= 1 (`None`: the engine's default).
    pub layout: Option<::screedb::Layout>,
    /// ScreeDB's memory component (`None`: the engine's default); the peers ignore it.
    pub memory: Option<::screedb::Memory>,
}

/// A key-value engine driven by the workloads. Methods take `&self`: engines are shared.
pub trait Engine: Send + Sync + std::fmt::Debug {
    /// Short name for reports ("screedb").
    fn name(&self) -> &'static str;
    /// Sets `key` to `value`; durable before returning iff `sync`.
    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()>;
    /// Removes `key`; durable before returning iff `sync`.
    fn delete(&self, key: &[u8], sync: bool) -> Result<()>;
    /// Applies `ops` atomically; durable before returning iff `sync`.
    fn write_batch(&self, ops: &[Op<'_>], sync: bool) -> Result<()>;
    /// The value of `key`, if any.
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Visits up to `limit` entries in key order (descending if `reverse`), starting at the
    /// first key >= `start` (<= `start` if `reverse`; the first/last key if `None`). Returns the
    /// number visited.
    fn scan(
        &self,
        start: Option<&[u8]>,
        reverse: bool,
        limit: u64,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<u64>;
    /// Waits until background work (flushes, compactions) is done.
    fn settle(&self) -> Result<()>;
    /// The engine's own count of bytes written to disk per user byte, since the database was
    /// created, if it keeps one.
    fn write_amplification(&self) -> Option<f64>;
    /// The engine's statistics as text, for the `stats` benchmark.
    fn stats_text(&self) -> String;
    /// Closes the engine, reporting a failure to make writes durable.
    fn close(self: Box<Self>) -> Result<()>;
}

/// Which engine to run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum EngineKind {
    /// ScreeDB.
    #[default]
    ScreeDb,
    /// fjall (feature `fjall`).
    Fjall,
    /// LevelDB linked at build time (feature `leveldb`).
    LevelDb,
    /// A library exporting LevelDB's C API, loaded from this path at run time.
    LevelDbC(PathBuf),
    /// RocksDB (feature `rocksdb` or `rocksdb-system`).
    RocksDb,
}

/// The engine names `--engine` accepts (besides `leveldb-c:PATH`).
pub const ENGINE_NAMES: [&str; 4] = ["screedb", "fjall", "leveldb", "rocksdb"];

#[cfg(not(all(
    feature = "fjall",
    feature = "leveldb",
    any(feature = "rocksdb", feature = "rocksdb-system")
)))]
fn not_built(name: &str, features: &str) -> Error {
    Error::invalid(format!(
        "engine {name} is not built in: rebuild screedb-bench with --features {features} (see \
         docs/benchmarks.md)"
    ))
}

impl EngineKind {
    /// The engine called `name`: one of [`ENGINE_NAMES`] or `leveldb-c:PATH`.
    pub fn parse(name: &str) -> Result<EngineKind> {
        Ok(match name {
            "screedb" => EngineKind::ScreeDb,
            "fjall" => EngineKind::Fjall,
            "leveldb" => EngineKind::LevelDb,
            "rocksdb" => EngineKind::RocksDb,
            _ => match name.strip_prefix("leveldb-c:") {
                Some(path) if !path.is_empty() => EngineKind::LevelDbC(PathBuf::from(path)),
                _ => {
                    return Err(Error::invalid(format!(
                        "unknown engine {name:?}; known ones are {} and leveldb-c:PATH",
                        ENGINE_NAMES.join(", ")
                    )));
                }
            },
        })
    }

    /// The name as `--engine` takes it.
    pub fn label(&self) -> String {
        match self {
            EngineKind::ScreeDb => "screedb".into(),
            EngineKind::Fjall => "fjall".into(),
            EngineKind::LevelDb => "leveldb".into(),
            EngineKind::LevelDbC(p) => format!("leveldb-c:{}", p.display()),
            EngineKind::RocksDb => "rocksdb".into(),
        }
    }

    /// Opens (creating if missing) the database in `dir`.
    pub fn open(&self, dir: &Path, config: &EngineConfig) -> Result<Box<dyn Engine>> {
        match self {
            EngineKind::ScreeDb => Ok(Box::new(ScreeDbEngine::open(dir, config)?)),
            #[cfg(feature = "fjall")]
            EngineKind::Fjall => Ok(Box::new(fjall::FjallEngine::open(dir, config)?)),
            #[cfg(not(feature = "fjall"))]
            EngineKind::Fjall => Err(not_built("fjall", "fjall")),
            #[cfg(feature = "leveldb")]
            EngineKind::LevelDb => Ok(Box::new(leveldb::LevelDbEngine::open(
                leveldb_api::Api::linked(),
                "leveldb",
                dir,
                config,
            )?)),
            #[cfg(not(feature = "leveldb"))]
            EngineKind::LevelDb => Err(not_built("leveldb", "leveldb")),
            EngineKind::LevelDbC(lib) => Ok(Box::new(leveldb::LevelDbEngine::open(
                leveldb_api::Api::load(lib)?,
                "leveldb-c",
                dir,
                config,
            )?)),
            #[cfg(any(feature = "rocksdb", feature = "rocksdb-system"))]
            EngineKind::RocksDb => Ok(Box::new(rocksdb::RocksDbEngine::open(dir, config)?)),
            #[cfg(not(any(feature = "rocksdb", feature = "rocksdb-system")))]
            EngineKind::RocksDb => Err(not_built("rocksdb", "rocksdb or rocksdb-system")),
        }
    }

    /// Deletes the database in `dir`. ScreeDB removes its own files only; the peers' whole
    /// directory is removed, and only if it is empty or holds that engine's files (LevelDB and
    /// RocksDB: a `CURRENT` file; fjall: its `version` marker).
    pub fn destroy(&self, dir: &Path) -> Result<()> {
        if *self == EngineKind::ScreeDb {
            return Db::destroy(dir, &Options::default());
        }
        let Ok(mut entries) = std::fs::read_dir(dir) else {
            return Ok(());
        };
        let empty = entries.next().is_none();
        let marker = match self {
            EngineKind::Fjall => "version",
            _ => "CURRENT",
        };
        if !empty && !dir.join(marker).exists() {
            return Err(Error::invalid(format!(
                "refusing to delete {}: it is not empty and does not look like a {} database \
                 (no {marker} file)",
                dir.display(),
                self.label()
            )));
        }
        std::fs::remove_dir_all(dir).map_err(|e| Error::io("remove", dir, e))
    }
}

/// An engine's error as a ScreeDB error naming the operation and the directory.
#[cfg(any(feature = "fjall", feature = "rocksdb", feature = "rocksdb-system"))]
pub(crate) fn peer_error(op: &'static str, dir: &Path, e: impl std::fmt::Display) -> Error {
    Error::io(op, dir, std::io::Error::other(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(dir: &Path) -> Box<dyn Engine> {
        let config = EngineConfig {
            write_buffer_size: 4 << 20,
            cache_size: 8 << 20,
            bloom_bits: 10,
            compression: Compression::Lz4,
            layout: None,
            memory: None,
        };
        EngineKind::ScreeDb.open(dir, &config).unwrap()
    }

    fn keys(e: &dyn Engine, start: Option<&[u8]>, reverse: bool, limit: u64) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let n = e
            .scan(start, reverse, limit, &mut |k, _| out.push(k.to_vec()))
            .unwrap();
        assert_eq!(n as usize, out.len());
        out
    }

    #[test]
    fn engine_names_parse_and_missing_features_are_named() {
        assert_eq!(EngineKind::parse("screedb").unwrap(), EngineKind::ScreeDb);
        assert_eq!(
            EngineKind::parse("leveldb-c:/x/lib.so").unwrap(),
            EngineKind::LevelDbC(PathBuf::from("/x/lib.so"))
        );
        assert_eq!(
            EngineKind::parse("leveldb-c:/x/lib.so").unwrap().label(),
            "leveldb-c:/x/lib.so"
        );
        let err = EngineKind::parse("sqlite").unwrap_err().to_string();
        assert!(err.contains("screedb, fjall"), "{err}");
        assert!(EngineKind::parse("leveldb-c:").is_err());
        let dir = tempfile::tempdir().unwrap();
        let config = EngineConfig {
            write_buffer_size: 1 << 20,
            cache_size: 1 << 20,
            bloom_bits: 10,
            compression: Compression::None,
            layout: None,
            memory: None,
        };
        let missing = EngineKind::LevelDbC(dir.path().join("nope.so"));
        let err = missing.open(dir.path(), &config).err().unwrap().to_string();
        assert!(err.contains("nope.so"), "{err}");
    }

    #[test]
    fn peers_refuse_to_delete_a_foreign_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("precious.txt"), "x").unwrap();
        let err = EngineKind::Fjall
            .destroy(dir.path())
            .unwrap_err()
            .to_string();
        assert!(err.contains("refusing"), "{err}");
        assert!(dir.path().join("precious.txt").exists());
        std::fs::write(dir.path().join("CURRENT"), "x").unwrap();
        EngineKind::RocksDb.destroy(dir.path()).unwrap();
        assert!(!dir.path().exists());
    }

    #[test]
    fn screedb_engine_writes_reads_and_scans_both_ways() {
        let dir = tempfile::tempdir().unwrap();
        let e = engine(dir.path());
        conformance(&*e);
        assert!(e.write_amplification().unwrap() > 0.0);
        assert!(e.stats_text().contains("L0"));
        e.close().unwrap();
    }

    #[cfg(feature = "fjall")]
    #[test]
    fn fjall_engine_behaves_like_screedb() {
        let dir = tempfile::tempdir().unwrap();
        let config = EngineConfig {
            write_buffer_size: 1 << 20,
            cache_size: 1 << 20,
            bloom_bits: 10,
            compression: Compression::None,
            layout: None,
            memory: None,
        };
        let e = EngineKind::Fjall.open(dir.path(), &config).unwrap();
        conformance(&*e);
        e.close().unwrap();
        EngineKind::Fjall.destroy(dir.path()).unwrap();
    }

    #[cfg(any(feature = "rocksdb", feature = "rocksdb-system"))]
    #[test]
    fn rocksdb_engine_behaves_like_screedb() {
        let dir = tempfile::tempdir().unwrap();
        let config = EngineConfig {
            write_buffer_size: 1 << 20,
            cache_size: 1 << 20,
            bloom_bits: 10,
            compression: Compression::None,
            layout: None,
            memory: None,
        };
        let e = EngineKind::RocksDb.open(dir.path(), &config).unwrap();
        conformance(&*e);
        e.close().unwrap();
    }

    /// The behaviour every engine must share for the workloads to mean the same thing.
    fn conformance(e: &dyn Engine) {
        e.write_batch(
            &[
                Op::Put(b"b", b"2"),
                Op::Put(b"d", b"4"),
                Op::Put(b"x", b"-"),
            ],
            false,
        )
        .unwrap();
        e.put(b"a", b"1", true).unwrap();
        e.delete(b"x", false).unwrap();
        assert_eq!(e.get(b"b").unwrap(), Some(b"2".to_vec()));
        assert_eq!(e.get(b"x").unwrap(), None);
        let v = |s: &[&str]| s.iter().map(|k| k.as_bytes().to_vec()).collect::<Vec<_>>();
        assert_eq!(keys(e, None, false, 10), v(&["a", "b", "d"]));
        assert_eq!(keys(e, Some(b"c"), false, 1), v(&["d"]));
        assert_eq!(keys(e, None, true, 10), v(&["d", "b", "a"]));
        assert_eq!(keys(e, Some(b"c"), true, 10), v(&["b", "a"]));
        assert_eq!(keys(e, Some(b"b"), true, 1), v(&["b"]));
        assert_eq!(keys(e, Some(b"z"), true, 1), v(&["d"]));
        e.settle().unwrap();
    }
}
