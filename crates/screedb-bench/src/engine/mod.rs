//! The storage engines a benchmark can drive, behind one small trait.
//!
//! [`Engine`] is what every workload uses: point writes and reads, batches, ordered scans, and
//! `settle` (wait for background work). ScreeDB is always built in; the peers are behind cargo
//! features (`fjall`, `leveldb`, `rocksdb-system`), `leveldb-c:PATH` loads any library
//! exporting LevelDB's C API at run time, and a binary linking this crate can add engines
//! ([`ExternalEngine`]: screedb-bench-rocksdb adds the bundled RocksDB). Every engine gets the
//! same [`EngineConfig`]: write buffer, block cache, bloom bits, compression; WAL on; sync only
//! when asked. [`check_conformance`] is the behaviour they must share.

mod conformance;
mod kind;
mod leveldb;
mod leveldb_api;
pub mod peer_stats;
mod screedb;

#[cfg(feature = "fjall")]
mod fjall;
#[cfg(feature = "rocksdb-system")]
mod rocksdb;

use std::path::Path;

use ::screedb::{Error, Result};

pub use self::conformance::{check_conformance, check_reported_wa};
pub use self::kind::{ENGINE_NAMES, EngineKind, ExternalEngine, ScreeDbSpec, register};
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
    pub layout: Option<::screedb::LayoutKind>,
    /// ScreeDB's memory component (`None`: the engine's default); the peers ignore it.
    pub memory: Option<::screedb::Memory>,
    /// Table size (`None`: the engine's default): ScreeDB's `target_file_size`, RocksDB's
    /// `target_file_size_base`; LevelDB and fjall ignore it.
    pub target_file_size: Option<u64>,
    /// Level 1's size target (`None`: the engine's default): ScreeDB's and RocksDB's
    /// `max_bytes_for_level_base`; LevelDB and fjall ignore it.
    pub max_bytes_for_level_base: Option<u64>,
    /// Level-0 tables that start a compaction (`None`: the engine's default); ScreeDB and
    /// RocksDB only.
    pub l0_compaction_trigger: Option<usize>,
    /// Jungle's compaction factor C (`None`: the layout's default); other layouts ignore it.
    pub compaction_factor: Option<f64>,
    /// Pending compaction bytes that slow writes (`None`: the engine's default); ScreeDB and
    /// RocksDB.
    pub soft_pending_compaction_bytes: Option<u64>,
    /// Pending compaction bytes that stop writes (`None`: the engine's default); ScreeDB and
    /// RocksDB.
    pub hard_pending_compaction_bytes: Option<u64>,
    /// The pace of slowed writes in bytes per second (`None`: the engine's default); ScreeDB.
    pub delayed_write_rate: Option<u64>,
    /// Create the database if the directory holds none (false under `--use_existing_db`, as
    /// db_bench's `create_if_missing = !use_existing_db`: a mistyped path is an error, not an
    /// empty database read at millions of misses a second). fjall always creates.
    pub create_if_missing: bool,
    /// Jungle's node size (`None`: the layout's default); other layouts ignore it.
    pub jungle_node_bytes: Option<usize>,
    /// Jungle's `prune_guards` (`None`: the layout's default); other layouts ignore it.
    pub jungle_prune_guards: Option<bool>,
    /// Read tables through memory maps (`None`: the engine's default); ScreeDB and RocksDB.
    pub mmap_reads: Option<bool>,
    /// ScreeDB: `Options::populate_new_tables` (`None`: the engine's default).
    pub populate_new_tables: Option<bool>,
    /// Table write-back step in bytes (`None`: the engine's default); ScreeDB and RocksDB.
    pub bytes_per_sync: Option<u64>,
    /// RocksDB: index and filter blocks in the block cache rather than the heap.
    pub cache_index_and_filter_blocks: bool,
    /// ScreeDB: `Options::prefix_bloom_len` (0: none). Other engines ignore it.
    pub prefix_bloom_len: usize,
    /// The trie's `gc_garbage_percent` (`None`: the layout's default); other layouts ignore it.
    pub gc_garbage_percent: Option<u32>,
    /// FLSM's `level_target_scale` (`None`: the layout's default); other layouts ignore it.
    pub flsm_level_target_scale: Option<u64>,
    /// ScreeDB's `background_nice` (0: background threads at the opener's priority).
    pub background_nice: i32,
    /// ScreeDB's `memtable_run_size` (`None`: its default). Other engines ignore it.
    pub memtable_run_size: Option<usize>,
    /// ScreeDB's `wal_compression` (true: lz4, false: none; `None`: its default, lz4). The
    /// other engines write their logs uncompressed (RocksDB's `wal_compression` takes only
    /// zstd, which the bundled build leaves out).
    pub wal_compression: Option<bool>,
}

impl EngineConfig {
    /// The given buffer and cache sizes with the run's other defaults: bloom filters of 10 bits
    /// per key, no compression, each engine's own layout and memory component.
    pub fn with_buffers(write_buffer_size: usize, cache_size: usize) -> EngineConfig {
        EngineConfig {
            write_buffer_size,
            cache_size,
            bloom_bits: 10,
            compression: Compression::None,
            layout: None,
            memory: None,
            target_file_size: None,
            max_bytes_for_level_base: None,
            l0_compaction_trigger: None,
            compaction_factor: None,
            soft_pending_compaction_bytes: None,
            hard_pending_compaction_bytes: None,
            delayed_write_rate: None,
            create_if_missing: true,
            jungle_node_bytes: None,
            jungle_prune_guards: None,
            mmap_reads: None,
            populate_new_tables: None,
            bytes_per_sync: None,
            cache_index_and_filter_blocks: false,
            prefix_bloom_len: 0,
            gc_garbage_percent: None,
            flsm_level_target_scale: None,
            background_nice: 0,
            memtable_run_size: None,
            wal_compression: None,
        }
    }
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
    /// first key >= `start` (<= `start` if `reverse`; the first/last key if `None`), until
    /// `visit` returns false. Returns the number visited.
    fn scan(
        &self,
        start: Option<&[u8]>,
        reverse: bool,
        limit: u64,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<u64>;
    /// Visits up to `limit` entries whose keys start with `prefix`, in key order; returns the
    /// number visited. Default: a [`Engine::scan`] from `prefix` that stops at the first key
    /// past it (an engine with prefix filters overrides it to use them).
    fn prefix_scan(
        &self,
        prefix: &[u8],
        limit: u64,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<u64> {
        let mut n = 0;
        self.scan(Some(prefix), false, limit, &mut |k, v| {
            if !k.starts_with(prefix) {
                return false;
            }
            visit(k, v);
            n += 1;
            true
        })?;
        Ok(n)
    }
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

/// An engine's error as a ScreeDB error naming the operation and the directory.
pub fn peer_error(op: &'static str, dir: &Path, e: impl std::fmt::Display) -> Error {
    Error::io(op, dir, std::io::Error::other(e.to_string()))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn engine(dir: &Path) -> Box<dyn Engine> {
        let config = EngineConfig {
            compression: Compression::Lz4,
            ..EngineConfig::with_buffers(4 << 20, 8 << 20)
        };
        EngineKind::default().open(dir, &config).unwrap()
    }

    #[test]
    fn engine_names_parse_and_missing_features_are_named() {
        assert_eq!(EngineKind::parse("screedb").unwrap(), EngineKind::default());
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
        let config = EngineConfig::with_buffers(1 << 20, 1 << 20);
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
        check_conformance(&*e).unwrap();
        assert!(e.write_amplification().unwrap() > 0.0);
        assert!(e.stats_text().contains("L0"));
        e.close().unwrap();
    }

    #[cfg(feature = "fjall")]
    #[test]
    fn fjall_engine_behaves_like_screedb() {
        let dir = tempfile::tempdir().unwrap();
        let config = EngineConfig::with_buffers(1 << 20, 1 << 20);
        let e = EngineKind::Fjall.open(dir.path(), &config).unwrap();
        check_conformance(&*e).unwrap();
        e.close().unwrap();
        EngineKind::Fjall.destroy(dir.path()).unwrap();
    }

    #[cfg(feature = "rocksdb-system")]
    #[test]
    fn rocksdb_engine_behaves_like_screedb() {
        let dir = tempfile::tempdir().unwrap();
        let config = EngineConfig::with_buffers(1 << 20, 1 << 20);
        let e = EngineKind::RocksDb.open(dir.path(), &config).unwrap();
        check_conformance(&*e).unwrap();
        check_reported_wa(&*e).unwrap();
        e.close().unwrap();
        EngineKind::RocksDb.destroy(dir.path()).unwrap();
    }

    #[cfg(feature = "leveldb")]
    #[test]
    fn leveldb_engine_behaves_like_screedb() {
        let dir = tempfile::tempdir().unwrap();
        let config = EngineConfig::with_buffers(1 << 20, 1 << 20);
        let e = EngineKind::LevelDb.open(dir.path(), &config).unwrap();
        check_conformance(&*e).unwrap();
        check_reported_wa(&*e).unwrap();
        e.close().unwrap();
    }
}
