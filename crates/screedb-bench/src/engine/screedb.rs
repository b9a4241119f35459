//! ScreeDB behind [`Engine`].

use std::path::Path;

use screedb::table::CompressionType;
use screedb::{Db, Options, ReadOptions, Result, WriteBatch, WriteOptions};

use super::{Compression, Engine, EngineConfig, Op};

/// ScreeDB behind [`Engine`].
#[derive(Debug)]
pub struct ScreeDbEngine {
    db: Db,
}

impl ScreeDbEngine {
    /// Opens the database in `dir` with `config` applied over the default options.
    pub fn open(dir: &Path, config: &EngineConfig) -> Result<Self> {
        let mut options = Options::default().create_if_missing(config.create_if_missing);
        options.write_buffer_size = config.write_buffer_size;
        options.block_cache_bytes = config.cache_size;
        options.bloom_bits_per_key = config.bloom_bits;
        options.prefix_bloom_len = config.prefix_bloom_len;
        if let Some(layout) = config.layout {
            options.layout = ::screedb::Layout::with_defaults(layout);
        }
        if let Some(bytes) = config.target_file_size {
            options.target_file_size = bytes;
        }
        if let Some(bytes) = config.max_bytes_for_level_base {
            options.max_bytes_for_level_base = bytes;
        }
        if let Some(n) = config.l0_compaction_trigger {
            options.l0_compaction_trigger = n;
        }
        if let Some(bytes) = config.soft_pending_compaction_bytes {
            options.soft_pending_compaction_bytes = bytes;
        }
        if let Some(bytes) = config.hard_pending_compaction_bytes {
            options.hard_pending_compaction_bytes = bytes;
        }
        if let Some(rate) = config.delayed_write_rate {
            options.delayed_write_rate = rate;
        }
        if let (Some(c), ::screedb::Layout::Jungle(jungle)) =
            (config.compaction_factor, &mut options.layout)
        {
            jungle.compaction_factor = c;
        }
        if let (Some(bytes), ::screedb::Layout::Jungle(jungle)) =
            (config.jungle_node_bytes, &mut options.layout)
        {
            jungle.node_bytes = bytes;
        }
        if let (Some(prune), ::screedb::Layout::Jungle(jungle)) =
            (config.jungle_prune_guards, &mut options.layout)
        {
            jungle.prune_guards = prune;
        }
        if let (Some(percent), ::screedb::Layout::Trie(trie)) =
            (config.gc_garbage_percent, &mut options.layout)
        {
            trie.gc_garbage_percent = percent;
        }
        if let (Some(scale), Some(flsm)) =
            (config.flsm_level_target_scale, options.layout.flsm_mut())
        {
            flsm.level_target_scale = scale;
        }
        options.background_nice = config.background_nice;
        if let Some(mmap) = config.mmap_reads {
            options.mmap_reads = mmap;
        }
        if let Some(populate) = config.populate_new_tables {
            options.populate_new_tables = populate;
        }
        if let Some(bytes) = config.bytes_per_sync {
            options.bytes_per_sync = bytes;
        }
        if let Some(memory) = config.memory {
            options.memory = memory;
        }
        if let Some(bytes) = config.memtable_run_size {
            options.memtable_run_size = bytes;
        }
        if let Some(lz4) = config.wal_compression {
            options.wal_compression = if lz4 {
                CompressionType::Lz4
            } else {
                CompressionType::None
            };
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

    /// Through the cursor (`Db::iter`), whose key and value are borrowed until it moves, as
    /// the peers' adapters read theirs (LevelDB's and RocksDB's raw iterators): `Db::range`
    /// would hand out an owned copy of every entry.
    fn scan(
        &self,
        start: Option<&[u8]>,
        reverse: bool,
        limit: u64,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<u64> {
        let mut it = self.db.iter(&ReadOptions::default())?;
        match (start, reverse) {
            (None, false) => it.seek_to_first(),
            (None, true) => it.seek_to_last(),
            (Some(k), false) => it.seek(k),
            (Some(k), true) => {
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
            let more = visit(it.key(), it.value());
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
        it.status()?;
        Ok(n)
    }

    /// Through `Db::prefix`, which skips tables by their prefix filters
    /// (`--prefix_bloom_len`).
    fn prefix_scan(
        &self,
        prefix: &[u8],
        limit: u64,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> Result<u64> {
        let mut n = 0;
        let mut it = self.db.prefix(prefix)?;
        while n < limit {
            let Some(item) = it.next_ref() else { break };
            let (k, v) = item?;
            visit(k, v);
            n += 1;
        }
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
        if s.tree_appended_value_bytes + s.tree_new_bytes > 0 {
            out.push_str(&format!(
                "jungle trees: appended values {}, appended nodes {}, new trees {}, \
                 replacements {}\n",
                s.tree_appended_value_bytes,
                s.tree_appended_node_bytes,
                s.tree_new_bytes,
                s.tree_replacements
            ));
        }
        let h = &s.hashed_reads;
        if h.probes > 0 || h.cluster_reads > 0 {
            out.push_str(&format!("htable reads: {h}\n"));
        }
        let metadata = self
            .db
            .property("screedb.table-metadata-bytes")
            .unwrap_or_default();
        out.push_str(&format!("table metadata in memory {metadata} bytes\n"));
        let memory = self.db.property("screedb.memory").unwrap_or_default();
        out.push_str(&format!("memory component {memory}\n"));
        out.push_str(&self.db.property("screedb.levels").unwrap_or_default());
        out
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.db.close()
    }
}
