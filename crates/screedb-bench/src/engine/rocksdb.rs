//! RocksDB behind [`Engine`], through the `rocksdb` crate.
//!
//! One source serves two builds: screedb-bench's `rocksdb-system` feature (crate 0.20.1, linking
//! Debian's RocksDB 7.8.3) and the screedb-bench-rocksdb crate (crate 0.25, bundled RocksDB
//! 11.8.1), which compiles this file as its own module (`#[path]`). It therefore names its
//! neighbours only through `super::` and uses no API that differs between the two crate
//! versions, except the LRU cache constructor, bridged by [`IntoCache`].
//!
//! Settings: `write_buffer_size` as configured, LRU block cache of `cache_size` bytes, full
//! bloom filters of `bloom_bits` bits per key (`set_bloom_filter(bits, false)`), no compression
//! unless `--compression=lz4`, WAL on, sync only with `--sync`, 2 background jobs (as ScreeDB);
//! everything else is RocksDB's default (leveled compaction, 64 MiB target files, 4 KiB blocks).
//!
//! [`Engine::settle`] polls RocksDB's own pending/running properties
//! (`rocksdb.mem-table-flush-pending`, `rocksdb.num-running-flushes`,
//! `rocksdb.compaction-pending`, `rocksdb.num-running-compactions`) until all are zero for
//! 200 ms; `wait_for_compact` appeared only in later crate versions than the one that links
//! Debian's RocksDB 7.8.
//!
//! [`Engine::write_amplification`]: RocksDB's cumulative WAL, flush and compaction bytes from
//! `rocksdb.stats` over the user bytes handed to it (see [`super::peer_stats`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rocksdb::{BlockBasedOptions, Cache, DB, DBCompressionType, Options, WriteBatch, WriteOptions};
use screedb::Result;

use super::peer_stats::{UserBytes, rocksdb_bytes_written};
use super::{Compression, Engine, EngineConfig, Op, peer_error};

/// `Cache::new_lru_cache` returns a `Result` in crate 0.20 and a `Cache` in later versions.
trait IntoCache {
    fn into_cache(self) -> std::result::Result<Cache, rocksdb::Error>;
}

impl IntoCache for Cache {
    fn into_cache(self) -> std::result::Result<Cache, rocksdb::Error> {
        Ok(self)
    }
}

impl IntoCache for std::result::Result<Cache, rocksdb::Error> {
    fn into_cache(self) -> std::result::Result<Cache, rocksdb::Error> {
        self
    }
}

/// A RocksDB database behind [`Engine`].
pub struct RocksDbEngine {
    db: DB,
    dir: PathBuf,
    write_async: WriteOptions,
    write_sync: WriteOptions,
    user: UserBytes,
}

impl std::fmt::Debug for RocksDbEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RocksDbEngine")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl RocksDbEngine {
    /// Opens (creating if missing) the database in `dir`.
    pub fn open(dir: &Path, config: &EngineConfig) -> Result<Self> {
        let err = |e: rocksdb::Error| peer_error("open rocksdb", dir, e);
        let mut table = BlockBasedOptions::default();
        let cache = Cache::new_lru_cache(config.cache_size)
            .into_cache()
            .map_err(err)?;
        table.set_block_cache(&cache);
        if config.bloom_bits > 0 {
            table.set_bloom_filter(f64::from(config.bloom_bits), false);
        }
        if config.cache_index_and_filter_blocks {
            table.set_cache_index_and_filter_blocks(true);
        }
        let mut opts = Options::default();
        opts.create_if_missing(config.create_if_missing);
        opts.set_write_buffer_size(config.write_buffer_size);
        // The level shape flags ScreeDB takes, so "the same flags" means the same tree shape.
        if let Some(bytes) = config.target_file_size {
            opts.set_target_file_size_base(bytes);
        }
        if let Some(bytes) = config.max_bytes_for_level_base {
            opts.set_max_bytes_for_level_base(bytes);
        }
        if let Some(n) = config.l0_compaction_trigger {
            opts.set_level_zero_file_num_compaction_trigger(i32::try_from(n).unwrap_or(i32::MAX));
        }
        if let Some(bytes) = config.soft_pending_compaction_bytes {
            opts.set_soft_pending_compaction_bytes_limit(
                usize::try_from(bytes).unwrap_or(usize::MAX),
            );
        }
        if let Some(bytes) = config.hard_pending_compaction_bytes {
            opts.set_hard_pending_compaction_bytes_limit(
                usize::try_from(bytes).unwrap_or(usize::MAX),
            );
        }
        opts.set_max_background_jobs(2);
        opts.set_compression_type(match config.compression {
            Compression::None => DBCompressionType::None,
            Compression::Lz4 => DBCompressionType::Lz4,
        });
        opts.set_block_based_table_factory(&table);
        if let Some(mmap) = config.mmap_reads {
            opts.set_allow_mmap_reads(mmap);
        }
        if let Some(bytes) = config.bytes_per_sync {
            opts.set_bytes_per_sync(bytes);
        }
        let db = DB::open(&opts, dir).map_err(err)?;
        let mut write_sync = WriteOptions::default();
        write_sync.set_sync(true);
        Ok(RocksDbEngine {
            db,
            dir: dir.to_path_buf(),
            write_async: WriteOptions::default(),
            write_sync,
            user: UserBytes::default(),
        })
    }

    fn err(&self, op: &'static str) -> impl Fn(rocksdb::Error) -> screedb::Error + '_ {
        move |e| peer_error(op, &self.dir, e)
    }

    fn wo(&self, sync: bool) -> &WriteOptions {
        if sync {
            &self.write_sync
        } else {
            &self.write_async
        }
    }

    fn busy(&self) -> Result<bool> {
        for p in [
            "rocksdb.mem-table-flush-pending",
            "rocksdb.num-running-flushes",
            "rocksdb.compaction-pending",
            "rocksdb.num-running-compactions",
        ] {
            if self
                .db
                .property_int_value(p)
                .map_err(self.err("property"))?
                .unwrap_or(0)
                > 0
            {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl Engine for RocksDbEngine {
    fn name(&self) -> &'static str {
        "rocksdb"
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        self.user.put(key, value);
        self.db
            .put_opt(key, value, self.wo(sync))
            .map_err(self.err("put"))
    }

    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        self.user.delete(key);
        self.db
            .delete_opt(key, self.wo(sync))
            .map_err(self.err("delete"))
    }

    fn write_batch(&self, ops: &[Op<'_>], sync: bool) -> Result<()> {
        self.user.batch(ops);
        let mut batch = WriteBatch::default();
        for op in ops {
            match *op {
                Op::Put(k, v) => batch.put(k, v),
                Op::Delete(k) => batch.delete(k),
            }
        }
        self.db
            .write_opt(batch, self.wo(sync))
            .map_err(self.err("write"))
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self
            .db
            .get_pinned(key)
            .map_err(self.err("get"))?
            .map(|v| v.to_vec()))
    }

    fn scan(
        &self,
        start: Option<&[u8]>,
        reverse: bool,
        limit: u64,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<u64> {
        let mut it = self.db.raw_iterator();
        match (start, reverse) {
            (None, false) => it.seek_to_first(),
            (None, true) => it.seek_to_last(),
            (Some(k), false) => it.seek(k),
            (Some(k), true) => it.seek_for_prev(k),
        }
        let mut n = 0;
        while n < limit && it.valid() {
            let more = match (it.key(), it.value()) {
                (Some(k), Some(v)) => visit(k, v),
                _ => true,
            };
            n += 1;
            if !more {
                break;
            }
            if reverse {
                it.prev();
            } else {
                it.next();
            }
        }
        it.status().map_err(self.err("iterate"))?;
        Ok(n)
    }

    fn settle(&self) -> Result<()> {
        let mut idle_since: Option<Instant> = None;
        loop {
            if self.busy()? {
                idle_since = None;
            } else if idle_since.get_or_insert_with(Instant::now).elapsed()
                >= Duration::from_millis(200)
            {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn write_amplification(&self) -> Option<f64> {
        self.user
            .amplification(rocksdb_bytes_written(&self.stats_text()))
    }

    fn stats_text(&self) -> String {
        self.db
            .property_value("rocksdb.stats")
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.flush_wal(true).map_err(self.err("sync"))?;
        Ok(())
    }
}
