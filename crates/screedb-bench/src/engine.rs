//! The storage engines a benchmark can drive, behind one small trait.
//!
//! [`Engine`] is what every workload uses: point writes and reads, batches, ordered scans, and
//! `settle` (wait for background work). ScreeDB is the first implementation; peer engines (RocksDB,
//! LevelDB, fjall, ...) plug in as further [`EngineKind`]s.

use std::ops::Bound;
use std::path::Path;

use screedb::table::CompressionType;
use screedb::{Db, Options, ReadOptions, Result, WriteBatch, WriteOptions};

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

/// The engine settings a benchmark run controls; `None` keeps the engine's default.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Bytes buffered in memory before a flush.
    pub write_buffer_size: Option<usize>,
    /// Bytes of block cache.
    pub cache_size: Option<usize>,
    /// Bloom filter bits per key (0: no filter).
    pub bloom_bits: u32,
    /// Block compression.
    pub compression: Compression,
    /// Layout of levels >= 1 (`None`: the engine's default).
    pub layout: Option<screedb::Layout>,
}

/// A key-value engine driven by the workloads. Methods take `&self`: engines are shared.
pub trait Engine: Send + Sync {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineKind {
    /// ScreeDB.
    #[default]
    ScreeDb,
}

impl EngineKind {
    /// Opens (creating if missing) the database in `dir`.
    pub fn open(self, dir: &Path, config: &EngineConfig) -> Result<Box<dyn Engine>> {
        match self {
            EngineKind::ScreeDb => Ok(Box::new(ScreeDbEngine::open(dir, config)?)),
        }
    }

    /// Deletes the database in `dir` (its files only).
    pub fn destroy(self, dir: &Path) -> Result<()> {
        match self {
            EngineKind::ScreeDb => Db::destroy(dir, &Options::default()),
        }
    }
}

/// ScreeDB behind [`Engine`].
#[derive(Debug)]
pub struct ScreeDbEngine {
    db: Db,
}

impl ScreeDbEngine {
    /// Opens the database in `dir` with `config` applied over the default options.
    pub fn open(dir: &Path, config: &EngineConfig) -> Result<Self> {
        let mut options = Options::default().create_if_missing(true);
        if let Some(n) = config.write_buffer_size {
            options.write_buffer_size = n;
        }
        if let Some(n) = config.cache_size {
            options.block_cache_bytes = n;
        }
        options.bloom_bits_per_key = config.bloom_bits;
        if let Some(layout) = config.layout {
            options.layout = layout;
        }
        options.compression = match config.compression {
            Compression::None => CompressionType::None,
            Compression::Lz4 => CompressionType::Lz4,
        };
        Ok(ScreeDbEngine {
            db: Db::open(dir, options)?,
        })
    }
}

fn write_options(sync: bool) -> WriteOptions {
    WriteOptions { sync }
}

impl Engine for ScreeDbEngine {
    fn name(&self) -> &'static str {
        "screedb"
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.put(key, value);
        self.db.write(batch, &write_options(sync))
    }

    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        let mut batch = WriteBatch::new();
        batch.delete(key);
        self.db.write(batch, &write_options(sync))
    }

    fn write_batch(&self, ops: &[Op<'_>], sync: bool) -> Result<()> {
        let mut batch = WriteBatch::new();
        for op in ops {
            match *op {
                Op::Put(k, v) => batch.put(k, v),
                Op::Delete(k) => batch.delete(k),
            };
        }
        self.db.write(batch, &write_options(sync))
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.db.get(key)
    }

    fn scan(
        &self,
        start: Option<&[u8]>,
        reverse: bool,
        limit: u64,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<u64> {
        if !reverse {
            let from = start.map_or(Bound::Unbounded, |k| Bound::Included(k.to_vec()));
            let mut n = 0;
            for item in self.db.range((from, Bound::<Vec<u8>>::Unbounded))? {
                if n == limit {
                    break;
                }
                let (k, v) = item?;
                visit(&k, &v);
                n += 1;
            }
            return Ok(n);
        }
        let mut it = self.db.iter(&ReadOptions::default())?;
        match start {
            None => it.seek_to_last(),
            Some(k) => {
                it.seek(k);
                if !it.valid() {
                    it.seek_to_last();
                } else if it.key() > k {
                    it.prev();
                }
            }
        }
        let mut n = 0;
        while n < limit && it.valid() {
            visit(it.key(), it.value());
            n += 1;
            it.prev();
        }
        it.status()?;
        Ok(n)
    }

    fn settle(&self) -> Result<()> {
        self.db.wait_for_idle()
    }

    fn write_amplification(&self) -> Option<f64> {
        Some(self.db.stats().write_amplification())
    }

    fn stats_text(&self) -> String {
        let s = self.db.stats();
        let mut out = format!(
            "user bytes written {}, WAL {}, flush {}, compaction {} (read {})\n\
             flushes {}, compactions {}, trivial moves {}, write stalls {} slowdowns / {} stops \
             ({} µs)\nblock cache hits {}, misses {}; write amplification {:.3}\n",
            s.user_bytes_written,
            s.wal_bytes_written,
            s.flush_bytes_written,
            s.compaction_bytes_written,
            s.compaction_bytes_read,
            s.flushes,
            s.compactions,
            s.trivial_moves,
            s.stall_slowdowns,
            s.stall_stops,
            s.stall_micros,
            s.block_cache_hits,
            s.block_cache_misses,
            s.write_amplification()
        );
        out.push_str(&self.db.property("screedb.levels").unwrap_or_default());
        out
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(dir: &Path) -> Box<dyn Engine> {
        let config = EngineConfig {
            write_buffer_size: None,
            cache_size: None,
            bloom_bits: 10,
            compression: Compression::Lz4,
            layout: None,
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
    fn screedb_engine_writes_reads_and_scans_both_ways() {
        let dir = tempfile::tempdir().unwrap();
        let e = engine(dir.path());
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
        assert_eq!(keys(&*e, None, false, 10), v(&["a", "b", "d"]));
        assert_eq!(keys(&*e, Some(b"c"), false, 1), v(&["d"]));
        assert_eq!(keys(&*e, None, true, 10), v(&["d", "b", "a"]));
        assert_eq!(keys(&*e, Some(b"c"), true, 10), v(&["b", "a"]));
        assert_eq!(keys(&*e, Some(b"b"), true, 1), v(&["b"]));
        assert_eq!(keys(&*e, Some(b"z"), true, 1), v(&["d"]));
        e.settle().unwrap();
        assert!(e.write_amplification().unwrap() > 0.0);
        assert!(e.stats_text().contains("L0"));
        e.close().unwrap();
    }
}
