//! Caches: decoded data blocks (bounded in bytes) and open tables (bounded in count).
//!
//! Both are `quick_cache::sync::Cache`s: sharded, concurrent, with CLOCK-Pro-style eviction.
//! The block cache is keyed by `(file number, block offset)`; file numbers are never reused, so
//! a deleted table's blocks simply age out.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use quick_cache::Weighter;
use quick_cache::sync::Cache;

use crate::comparator::InternalKeyComparator;
use crate::error::Result;
use crate::fs::Fs;

use super::block::Block;
use super::reader::Table;
use super::{TableOptions, table_file_name};

/// Weighs a cached block by the bytes it holds.
#[derive(Debug, Clone, Copy)]
struct BlockWeighter;

impl Weighter<(u64, u64), Arc<Block>> for BlockWeighter {
    fn weight(&self, _key: &(u64, u64), block: &Arc<Block>) -> u64 {
        block.charge() as u64
    }
}

/// Typical block size assumed to size the cache's tables.
const TYPICAL_BLOCK: usize = 4096;

/// A shared cache of decoded data blocks, bounded in bytes.
pub struct BlockCache {
    cache: Cache<(u64, u64), Arc<Block>, BlockWeighter>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity_bytes", &self.cache.capacity())
            .field("usage_bytes", &self.usage_bytes())
            .field("hits", &self.hits())
            .field("misses", &self.misses())
            .finish()
    }
}

impl BlockCache {
    /// A cache holding at most about `capacity_bytes` of blocks.
    pub fn new(capacity_bytes: usize) -> Self {
        let items = (capacity_bytes / TYPICAL_BLOCK).max(16);
        BlockCache {
            cache: Cache::with_weighter(items, capacity_bytes as u64, BlockWeighter),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// Lookups that found their block.
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Lookups that did not.
    pub fn misses(&self) -> u64 {
        self.misses.load(Ordering::Relaxed)
    }

    /// Bytes of blocks held now.
    pub fn usage_bytes(&self) -> u64 {
        self.cache.weight()
    }

    /// The block at `(file number, offset)`, counting a hit or a miss.
    pub(crate) fn get(&self, key: (u64, u64)) -> Option<Arc<Block>> {
        let found = self.cache.get(&key);
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Caches a block (a block larger than the whole cache is not kept).
    pub(crate) fn insert(&self, key: (u64, u64), block: Arc<Block>) {
        self.cache.insert(key, block);
    }
}

/// A bounded set of open tables, keyed by file number. Opening is single-flight: concurrent
/// `get`s of one missing table open it once.
pub struct TableCache {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    opts: TableOptions,
    icmp: InternalKeyComparator,
    block_cache: Option<Arc<BlockCache>>,
    tables: Cache<u64, Arc<Table>>,
}

impl fmt::Debug for TableCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableCache")
            .field("dir", &self.dir)
            .field("open_tables", &self.tables.len())
            .finish()
    }
}

impl TableCache {
    /// A cache of at most `max_open_tables` (at least 1) open tables of `dir`.
    pub fn new(
        fs: Arc<dyn Fs>,
        dir: PathBuf,
        opts: TableOptions,
        icmp: InternalKeyComparator,
        max_open_tables: usize,
        block_cache: Option<Arc<BlockCache>>,
    ) -> Self {
        let max = max_open_tables.max(1);
        TableCache {
            fs,
            dir,
            opts,
            icmp,
            block_cache,
            tables: Cache::new(max),
        }
    }

    /// The open table `file_number`, opening `dir/{file_number:06}.sst` on a miss.
    pub fn get(&self, file_number: u64) -> Result<Arc<Table>> {
        self.tables.get_or_insert_with(&file_number, || {
            let path = table_file_name(&self.dir, file_number);
            let file = if self.opts.mmap_reads {
                self.fs.open_mapped(&path)?
            } else {
                self.fs.open(&path)?
            };
            let table = Table::open(
                file,
                path,
                file_number,
                self.opts.clone(),
                self.icmp.clone(),
                self.block_cache.clone(),
            )?;
            Ok(Arc::new(table))
        })
    }

    /// Forgets table `file_number` (call before deleting its file). Iterators holding it keep
    /// it open until they are dropped.
    pub fn evict(&self, file_number: u64) {
        self.tables.remove(&file_number);
    }
}
