//! Caches: decoded data blocks (bounded in bytes) and open tables (bounded in count).
//!
//! Both are `quick_cache::sync::Cache`s: sharded, concurrent, with CLOCK-Pro-style eviction.
//! The block cache is keyed by `(file number, block offset)`; file numbers are never reused, so
//! a deleted table's blocks simply age out.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use bytes::Bytes;
use quick_cache::Weighter;
use quick_cache::sync::Cache;

use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::fs::{Fs, RandomAccessFile};
use crate::iter::InternalIterator;
use crate::manifest::FileMeta;

use super::block::Block;
use super::block_builder::BlockBuilder;
use super::htable::{Cluster, HTable, HTableStats, HashedTable, ReadCounters};
use super::jungle::{NodeCache, TreeReader, TreeTable};
use super::reader::Table;
use super::seam::{FORMAT_TAIL_LEN, TableFormat, TableReader, format_of_tail};
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

    /// Bytes cached at `key` by [`BlockCache::insert_bytes`], shared with the cache (not
    /// copied), counting a hit or a miss. `icmp` orders the one-entry block they are kept in.
    pub(crate) fn get_bytes(&self, key: (u64, u64), icmp: &InternalKeyComparator) -> Option<Bytes> {
        let block = self.get(key)?;
        let mut it = block.iter(icmp.clone());
        it.seek_to_first();
        it.valid().then(|| block.bytes().slice_ref(it.value()))
    }

    /// Caches `bytes` that have no block format of their own (an HTable bucket, a cluster page;
    /// read from `file` at `offset`, checked) as a one-entry block whose value they are.
    pub(crate) fn insert_bytes(
        &self,
        key: (u64, u64),
        bytes: &[u8],
        file: Arc<Path>,
        offset: u64,
    ) -> Result<()> {
        let mut b = BlockBuilder::new(1);
        b.add(&[0u8; 8], bytes);
        let block = Block::new(b.finish().to_vec(), file, offset)?;
        self.insert(key, Arc::new(block));
        Ok(())
    }
}

/// A bounded set of open tables, keyed by file number: the one place that opens a table file
/// (versions and compaction through [`TableCache::get`], `screedb check` and repair through
/// [`TableCache::open_uncached`], the CLI through [`TableCache::open_path`]). Opening is
/// single-flight: concurrent `get`s of one missing table open it once.
pub struct TableCache {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    opts: TableOptions,
    icmp: InternalKeyComparator,
    block_cache: Option<Arc<BlockCache>>,
    /// Decoded tree nodes (Jungle), as large as the block cache, present when it is.
    node_cache: Option<Arc<NodeCache>>,
    tables: Cache<u64, Arc<dyn TableReader>>,
    /// The BloomClusters of open holder tables (the trie layout), `None` for a table that holds
    /// none; keyed by the holder's number.
    clusters: Cache<u64, Option<Arc<Cluster>>>,
    /// The read counters every HTable opened here shares, with the gets' cluster reads.
    hashed_reads: Arc<ReadCounters>,
    /// Readers pinned now by live versions' tables ([`TableCache::pin`]), and how many may be.
    pinned: Arc<AtomicUsize>,
    max_pinned: usize,
}

/// An open table held by a version's table ([`crate::version::TableFile::reader`]), so that
/// its point reads skip the cache's lookup (a hash, a shard lock and a reference count shared
/// by every reading thread; RocksDB's `FileDescriptor::table_reader` does the same). Counts
/// against [`TableCache::pin`]'s budget while it lives.
pub struct PinnedReader {
    reader: Arc<dyn TableReader>,
    pinned: Arc<AtomicUsize>,
}

impl PinnedReader {
    /// The pinned table.
    pub fn reader(&self) -> &Arc<dyn TableReader> {
        &self.reader
    }
}

impl fmt::Debug for PinnedReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedReader")
            .field("file_number", &self.reader.file_number())
            .finish()
    }
}

impl Drop for PinnedReader {
    fn drop(&mut self) {
        self.pinned.fetch_sub(1, Ordering::Relaxed);
    }
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
        let node_cache = block_cache
            .as_ref()
            .map(|b| Arc::new(NodeCache::new(b.cache.capacity())));
        TableCache {
            fs,
            dir,
            opts,
            icmp,
            block_cache,
            node_cache,
            tables: Cache::new(max),
            clusters: Cache::new(max),
            hashed_reads: Arc::default(),
            pinned: Arc::default(),
            max_pinned: max,
        }
    }

    /// Pins `reader` for its holder, or `None` when `max_open_tables` readers are pinned
    /// already: tables pinned this way stay open while their versions live, on top of the
    /// cache's own bound, so at most twice `max_open_tables` tables are open at once.
    pub fn pin(&self, reader: Arc<dyn TableReader>) -> Option<PinnedReader> {
        let taken = self
            .pinned
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.max_pinned).then_some(n + 1)
            });
        taken.is_ok().then(|| PinnedReader {
            reader,
            pinned: Arc::clone(&self.pinned),
        })
    }

    /// Readers pinned now by live versions' tables.
    pub fn pinned(&self) -> usize {
        self.pinned.load(Ordering::Relaxed)
    }

    /// The open table `meta` describes, opening `dir/{number:06}.sst` on a miss. A table that
    /// grew since it was cached (its extent is larger now) is opened again at its new extent; a
    /// caller holding an older version with a shorter extent gets a reader of that extent.
    pub fn get(&self, meta: &FileMeta) -> Result<Arc<dyn TableReader>> {
        self.get_or_open(meta, false)
    }

    /// [`TableCache::get`] for a table this process has just written: with `populate` (and
    /// `mmap_reads`), a table not open yet is mapped with every page mapped in at once
    /// ([`Fs::open_mapped_populated`]), while the page cache still holds what was written, so
    /// the reads that follow take no page fault in it.
    pub fn get_written(&self, meta: &FileMeta, populate: bool) -> Result<Arc<dyn TableReader>> {
        self.get_or_open(meta, populate)
    }

    fn get_or_open(&self, meta: &FileMeta, populate: bool) -> Result<Arc<dyn TableReader>> {
        let number = meta.number;
        let table = self
            .tables
            .get_or_insert_with(&number, || self.open_file(number, meta.file_size, populate))?;
        match table.extent().cmp(&meta.file_size) {
            std::cmp::Ordering::Equal => Ok(table),
            std::cmp::Ordering::Less => {
                let grown = self.open_uncached(number, meta.file_size)?;
                self.tables.insert(number, Arc::clone(&grown));
                Ok(grown)
            }
            std::cmp::Ordering::Greater => self.open_uncached(number, meta.file_size),
        }
    }

    /// Opens table `number` of the directory, reading its first `extent` bytes, without
    /// caching it (for `screedb check` and repair, which read each table once).
    pub fn open_uncached(&self, number: u64, extent: u64) -> Result<Arc<dyn TableReader>> {
        self.open_file(number, extent, false)
    }

    fn open_file(&self, number: u64, extent: u64, populate: bool) -> Result<Arc<dyn TableReader>> {
        let path = table_file_name(&self.dir, number);
        let open = || self.open_for_reads(&path, populate);
        // Out of descriptors: let go of the cached tables (those no reader holds close) and try
        // once more, rather than fail a read or a compaction (which would make the database
        // read-only) while the cache holds hundreds of idle files.
        let file = match open() {
            Err(e) if e.is_out_of_file_descriptors() => {
                self.tables.clear();
                self.clusters.clear();
                open()?
            }
            other => other?,
        };
        open_reader(
            file,
            path,
            number,
            Some(extent),
            &self.opts,
            &self.icmp,
            Caches {
                blocks: self.block_cache.clone(),
                nodes: self.node_cache.clone(),
                hashed_reads: Some(Arc::clone(&self.hashed_reads)),
            },
        )
    }

    /// Opens the table file at `path` (numbered `number` in errors and caches), whatever its
    /// format, reading the whole file: for tools that look at one file.
    pub fn open_path(
        fs: &dyn Fs,
        path: &Path,
        number: u64,
        opts: &TableOptions,
        icmp: &InternalKeyComparator,
    ) -> Result<Arc<dyn TableReader>> {
        open_reader(
            fs.open(path)?,
            path.to_path_buf(),
            number,
            None,
            opts,
            icmp,
            Caches::default(),
        )
    }

    /// Forgets table `file_number` (call before deleting its file). Iterators holding it keep
    /// it open until they are dropped.
    pub fn evict(&self, file_number: u64) {
        self.tables.remove(&file_number);
        self.forget_cluster(file_number);
    }

    /// Forgets the BloomCluster table `holder` holds (call before deleting the cluster's file,
    /// when the table stays). Gets holding it keep it open until they finish.
    pub fn forget_cluster(&self, holder: u64) {
        self.clusters.remove(&holder);
    }

    /// The read counters of every HTable opened here (and of the gets' cluster reads).
    pub fn hashed_reads(&self) -> &ReadCounters {
        &self.hashed_reads
    }

    /// A snapshot of [`TableCache::hashed_reads`].
    pub fn hashed_read_stats(&self) -> HTableStats {
        self.hashed_reads.snapshot()
    }

    /// Opens `path`, a file that never changes once written, for reads: mapped with
    /// `mmap_reads` (every page mapped in at once with `populate`), else for `pread`.
    fn open_for_reads(&self, path: &Path, populate: bool) -> Result<Arc<dyn RandomAccessFile>> {
        match (self.opts.mmap_reads, populate) {
            (true, true) => self.fs.open_mapped_populated(path),
            (true, false) => self.fs.open_mapped(path),
            (false, _) => self.fs.open(path),
        }
    }

    /// The BloomCluster table `holder` holds (`dir/{holder:06}.bfc`), or `None` when it holds
    /// none. Both answers are cached until the holder is evicted.
    pub fn cluster(&self, holder: u64) -> Result<Option<Arc<Cluster>>> {
        self.clusters.get_or_insert_with(&holder, || {
            let path = crate::filename::cluster_file(&self.dir, holder);
            if !self.fs.exists(&path) {
                return Ok(None);
            }
            // Mapped like the tables (`mmap_reads`): a cluster never changes once written.
            let file = match self.open_for_reads(&path, false) {
                Ok(file) => file,
                // Superseded and deleted by a purge since `exists` (obsolete.rs): as absent,
                // the tables' own filters answer. (The crash suite's trie get failed here.)
                Err(e) if e.io_kind() == Some(std::io::ErrorKind::NotFound) => return Ok(None),
                Err(e) => return Err(e),
            };
            let cluster = Cluster::open(file, path, holder, self.block_cache.clone())?;
            Ok(Some(Arc::new(cluster)))
        })
    }
}

/// The caches an opened table reads through.
#[derive(Default)]
struct Caches {
    blocks: Option<Arc<BlockCache>>,
    nodes: Option<Arc<NodeCache>>,
    hashed_reads: Option<Arc<ReadCounters>>,
}

/// Opens a table of any format: the magic in the last 8 bytes of its first `extent` bytes (the
/// whole file when `None`) picks the reader.
fn open_reader(
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    number: u64,
    extent: Option<u64>,
    opts: &TableOptions,
    icmp: &InternalKeyComparator,
    caches: Caches,
) -> Result<Arc<dyn TableReader>> {
    let size = file.size();
    let extent = extent.unwrap_or(size);
    let tail_len = (FORMAT_TAIL_LEN as u64).min(extent);
    let tail_at = extent - tail_len;
    if extent > size {
        return Err(Error::corruption(
            &path,
            0,
            format!("table is {size} bytes; the manifest says {extent}"),
        ));
    }
    let length_error = || {
        Error::corruption(
            &path,
            0,
            format!("table is {size} bytes; the manifest says {extent}"),
        )
    };
    let tail = file.read_vec(tail_at, tail_len as usize)?;
    let format = match format_of_tail(&tail, &path, tail_at) {
        Ok(format) => format,
        Err(_) if extent != size => return Err(length_error()),
        Err(e) => return Err(e),
    };
    // A table that never grows must be exactly its extent; a tree may be longer (segments
    // appended since this version, or an unacknowledged tail the next open cuts away).
    if extent != size && !format.grows() {
        return Err(length_error());
    }
    match format {
        TableFormat::Sorted => Ok(Arc::new(Table::open(
            file,
            path,
            number,
            opts.clone(),
            icmp.clone(),
            caches.blocks,
        )?)),
        TableFormat::HTable => Ok(Arc::new(HashedTable::new(
            match caches.hashed_reads {
                Some(counters) => {
                    HTable::open(file, path, number, opts.htable.clone(), caches.blocks)?
                        .sharing_counters(counters)
                }
                None => HTable::open(file, path, number, opts.htable.clone(), caches.blocks)?,
            },
            number,
        ))),
        TableFormat::Tree => Ok(Arc::new(TreeTable::new(
            TreeReader::open(file, path, number, extent, opts.tree.clone(), icmp.clone())?
                .with_node_cache(caches.nodes),
        ))),
    }
}
