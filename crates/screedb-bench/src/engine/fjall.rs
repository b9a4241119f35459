//! fjall (pure Rust LSM-tree) behind [`Engine`].
//!
//! One database with one keyspace (`bench`). Settings: memtable of `write_buffer_size` bytes,
//! block cache of `cache_size` bytes, bloom filter of `bloom_bits` bits per key on every level
//! (fjall's default is a 0.01% false-positive rate on the last level), no compression unless
//! `--compression=lz4`, journal (WAL) on and written to the OS on every write (fjall's default),
//! fsynced (`PersistMode::SyncAll`) after each write only with `--sync`.
//!
//! [`Engine::settle`] polls fjall's outstanding-work counters (queued flushes, sealed memtables,
//! running compactions) until all are zero and stay zero for 200 ms (a compaction is scheduled
//! a moment after the flush that triggers it).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fjall::config::{BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use screedb::Result;

use super::{Compression, Engine, EngineConfig, Op, peer_error};

/// A fjall database behind [`Engine`].
pub struct FjallEngine {
    db: Database,
    ks: Keyspace,
    dir: PathBuf,
}

impl std::fmt::Debug for FjallEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FjallEngine")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl FjallEngine {
    /// Opens (creating if missing) the database in `dir`.
    pub fn open(dir: &Path, config: &EngineConfig) -> Result<Self> {
        let err = |e| peer_error("open fjall", dir, e);
        let db = Database::builder(dir)
            .cache_size(config.cache_size as u64)
            .open()
            .map_err(err)?;
        let filter = if config.bloom_bits == 0 {
            FilterPolicy::disabled()
        } else {
            FilterPolicy::all(FilterPolicyEntry::Bloom(
                BloomConstructionPolicy::BitsPerKey(config.bloom_bits as f32),
            ))
        };
        let compression = match config.compression {
            Compression::None => CompressionPolicy::disabled(),
            Compression::Lz4 => CompressionPolicy::all(fjall::CompressionType::Lz4),
        };
        let memtable = config.write_buffer_size as u64;
        let ks = db
            .keyspace("bench", || {
                KeyspaceCreateOptions::default()
                    .max_memtable_size(memtable)
                    .filter_policy(filter)
                    .data_block_compression_policy(compression)
            })
            .map_err(err)?;
        Ok(FjallEngine {
            db,
            ks,
            dir: dir.to_path_buf(),
        })
    }

    fn err(&self, op: &'static str) -> impl Fn(fjall::Error) -> screedb::Error + '_ {
        move |e| peer_error(op, &self.dir, e)
    }

    fn persist(&self, sync: bool) -> Result<()> {
        if sync {
            self.db
                .persist(PersistMode::SyncAll)
                .map_err(self.err("sync"))?;
        }
        Ok(())
    }

    fn busy(&self) -> bool {
        self.db.outstanding_flushes() > 0
            || self.db.active_compactions() > 0
            || self.ks.sealed_memtable_count() > 0
    }
}

impl Engine for FjallEngine {
    fn name(&self) -> &'static str {
        "fjall"
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        self.ks.insert(key, value).map_err(self.err("insert"))?;
        self.persist(sync)
    }

    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        self.ks.remove(key).map_err(self.err("remove"))?;
        self.persist(sync)
    }

    fn write_batch(&self, ops: &[Op<'_>], sync: bool) -> Result<()> {
        let mut batch = self.db.batch();
        if sync {
            batch = batch.durability(Some(PersistMode::SyncAll));
        }
        for op in ops {
            match *op {
                Op::Put(k, v) => batch.insert(&self.ks, k, v),
                Op::Delete(k) => batch.remove(&self.ks, k),
            }
        }
        batch.commit().map_err(self.err("commit"))
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self
            .ks
            .get(key)
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
        let iter: Box<dyn Iterator<Item = fjall::Guard>> = match (start, reverse) {
            (None, false) => Box::new(self.ks.iter()),
            (None, true) => Box::new(self.ks.iter().rev()),
            (Some(k), false) => Box::new(self.ks.range(k..)),
            (Some(k), true) => Box::new(self.ks.range(..=k).rev()),
        };
        let mut n = 0;
        for guard in iter {
            if n == limit {
                break;
            }
            let (k, v) = guard.into_inner().map_err(self.err("iterate"))?;
            n += 1;
            if !visit(&k, &v) {
                break;
            }
        }
        Ok(n)
    }

    fn settle(&self) -> Result<()> {
        let mut idle_since: Option<Instant> = None;
        loop {
            if self.busy() {
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
        None
    }

    fn stats_text(&self) -> String {
        format!(
            "tables {} (L0 {}), compactions completed {}, time compacting {:.2} s, disk {} B, \
             journal {} files\n",
            self.ks.table_count(),
            self.ks.l0_table_count(),
            self.db.compactions_completed(),
            self.db.time_compacting().as_secs_f64(),
            self.ks.disk_space(),
            self.db.journal_count(),
        )
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db
            .persist(PersistMode::SyncAll)
            .map_err(self.err("sync"))?;
        Ok(())
    }
}
