//! `screedb-bench-rocksdb`: the `screedb-bench` command with the RocksDB bundled by the
//! `rocksdb` crate 0.25 (RocksDB 11.8.1) as engine `rocksdb`, e.g.
//! `screedb-bench-rocksdb compare --engines screedb,rocksdb`. Everything else (flags,
//! workloads, the other engines) is screedb-bench's.
//!
//! The adapter is screedb-bench's own `engine/rocksdb.rs`, compiled here against crate 0.25:
//! one source for both RocksDB builds. It reaches its neighbours through `super::`, which here
//! is this crate's root, hence the imports below.

use std::path::Path;
use std::process::ExitCode;

use screedb::Result;
use screedb_bench::engine::{
    Compression, Engine, EngineConfig, ExternalEngine, Op, peer_error, peer_stats,
};

#[path = "../../screedb-bench/src/engine/rocksdb.rs"]
mod rocksdb_engine;

fn open(dir: &Path, config: &EngineConfig) -> Result<Box<dyn Engine>> {
    Ok(Box::new(rocksdb_engine::RocksDbEngine::open(dir, config)?))
}

/// The bundled RocksDB, named `rocksdb`: a binary links one RocksDB only, so the name is
/// unambiguous within a run (screedb-bench's own `rocksdb` is Debian's 7.8.3).
const ROCKSDB: ExternalEngine = ExternalEngine {
    name: "rocksdb",
    marker: "CURRENT",
    open,
};

fn main() -> ExitCode {
    screedb_bench::cli::main_with_engines(vec![ROCKSDB])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn bundled_rocksdb_behaves_like_screedb_and_reports_wa() {
        let dir = tempfile::tempdir().unwrap();
        let config = EngineConfig::with_buffers(1 << 20, 1 << 20);
        let e = open(dir.path(), &config).unwrap();
        screedb_bench::engine::check_conformance(&*e).unwrap();
        screedb_bench::engine::check_reported_wa(&*e).unwrap();
        e.close().unwrap();
        let log = std::fs::read_to_string(dir.path().join("LOG")).unwrap();
        assert!(log.contains("RocksDB version: 11."), "the bundled RocksDB");
    }
}
