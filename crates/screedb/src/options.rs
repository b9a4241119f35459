//! Options of a database, of reads and of writes.
//!
//! Each option lists its default and the RocksDB option it corresponds to. Options that change
//! behaviour come first, those that only change performance after.

use std::fmt;
use std::sync::Arc;

use crate::Snapshot;
use crate::comparator::{Comparator, default_comparator};
use crate::error::{Error, Result};
use crate::fs::{Fs, OsFs};
use crate::table::{
    CompressionType, FilterPolicy, HTableOptions, TableOptions, TreeOptions, bucket_count_for,
};

pub use crate::layout::flsm::{FlsmOptions, GuardBits};
pub use crate::layout::jungle::JungleOptions;
pub use crate::layout::trie::TrieOptions;
pub use crate::layout::{Layout, LayoutKind};

/// The memory component (see `docs/memory.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Memory {
    /// A skiplist memtable alone; every write is inserted into it by the write-group leader.
    Skiplist,
    /// FloDB: a membuffer hash table in front of the skiplist, drained into it by a background
    /// thread with multi-insert; hot keys are overwritten in place when no snapshot needs the
    /// older version. The default.
    #[default]
    Flodb,
}

impl std::str::FromStr for Memory {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "skiplist" => Ok(Memory::Skiplist),
            "flodb" => Ok(Memory::Flodb),
            other => Err(Error::invalid(format!(
                "memory component {other:?} is unknown; expected skiplist or flodb"
            ))),
        }
    }
}

/// `Ok` when `ok`, else [`Error::InvalidArgument`] saying "option `what`" (what names the
/// option and its range).
pub(crate) fn require(ok: bool, what: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!("option {what}")))
    }
}

/// Options given to [`crate::Db::open`].
#[derive(Clone)]
pub struct Options {
    // ---- behaviour ----
    /// Create the database if it does not exist. Default: false. RocksDB: `create_if_missing`.
    pub create_if_missing: bool,
    /// Fail if the database already exists. Default: false. RocksDB: `error_if_exists`.
    pub error_if_exists: bool,
    /// Verify the CRC32C of every data block read from a table. The index, filter and
    /// properties blocks are always verified. A block read through a memory map and used in
    /// place (`mmap_reads`, stored uncompressed) is verified the first time it is read after
    /// its table was opened, not on every use, as a cached block is verified once when cached.
    /// Default: true. RocksDB: `ReadOptions::verify_checksums` (here one setting for the whole
    /// database).
    pub verify_checksums: bool,
    /// Order of user keys; its name is persisted. Default: bytewise.
    /// RocksDB: `comparator`.
    pub comparator: Arc<dyn Comparator>,
    /// The file system. Default: [`OsFs`]. RocksDB: `env`.
    pub fs: Arc<dyn Fs>,
    /// How levels >= 1 are organised; persisted, so a database is always reopened with the
    /// layout it was created with (see docs/flsm.md). Default: [`Layout::Flsm`].
    /// RocksDB: `compaction_style` (leveled); PebblesDB: always FLSM.
    pub layout: Layout,

    // ---- performance ----
    /// The memory component: FloDB's membuffer (a small hash table, drained by a background
    /// thread) in front of the skiplist memtable, or the skiplist alone. `Flodb` fills random
    /// keys 1.6-1.9x as fast (10M-100M keys, 128-byte values); reads match the skiplist's
    /// within this project's measurement noise once writes stop (the buffer is then drained),
    /// while reads during writes search the membuffer first. The skiplist alone saves the drain
    /// thread and the membuffer's memory. Default: [`Memory::Flodb`].
    /// RocksDB: none (`memtable_factory` comes closest). See `docs/memory.md`.
    pub memory: Memory,
    /// With [`Memory::Flodb`], bytes of keys and values the membuffer holds at most, part of
    /// `write_buffer_size`. Default: `None`, meaning a quarter of `write_buffer_size`.
    pub membuffer_size: Option<usize>,
    /// Bytes of a Bloom filter over each memtable's keys, as a fraction of
    /// `write_buffer_size`: a point read (get) skips the skiplist search of a memtable the
    /// filter rules its key out of (for 64 MiB memtables of 16-byte keys and 128-byte values,
    /// 1/16 is about 80 bits per key). It costs a hash and one atomic OR per write. With a
    /// point index (`memtable_index_ratio`), which rules absent keys out itself while it has
    /// room, the filter records only the keys a full index could not take. 0 disables; at most
    /// 0.25. Default: 1/16. RocksDB: `memtable_prefix_bloom_size_ratio` with
    /// `memtable_whole_key_filtering` (default off).
    pub memtable_filter_ratio: f64,
    /// Largest hash index from each user key to its newest entry in a memtable's skiplist, as a
    /// fraction of `write_buffer_size`: a point read (get) of a key the memtable holds finds it
    /// with one probe instead of a skiplist search. Each memtable's index is sized for the
    /// entries of the one before it (the first for 128-byte entries): 8-byte slots filled to
    /// 80% at most, 12 bytes per entry (7% of a 64 MiB memtable of 16-byte keys and
    /// 128-byte values); keys past a full index are found by searching. It costs a hash and a
    /// probe per write and is not counted against `write_buffer_size`. 0 disables; at most
    /// 0.25. Default: 1/4. RocksDB: none (a hash-linked-list memtable comes closest). See
    /// `docs/memtable.md`.
    pub memtable_index_ratio: f64,
    /// Bytes of each sorted run of a memtable larger than this (0: one skiplist whatever its
    /// size). Once the skiplist that takes the writes has allocated this much, the writer
    /// starts another, so an insert searches a list of at most this size however large
    /// `write_buffer_size` is (a skiplist insert costs a cache miss per step: with a 1 GiB
    /// write buffer, runs of 64 MiB fill random keys 2.1 times as fast). Reads pay for it while
    /// the data is in the memtable: a get looks at the runs newest first (0.66x gets) and an
    /// iterator merges them (0.09x seeks at 14 runs); a flush merges them into one table. Each
    /// run gets its share of the key filter and point index. Raised to `write_buffer_size /
    /// 64` where that is larger (at most 128 runs). Default: 0. RocksDB: none. See
    /// `docs/memtable.md`, "Runs".
    pub memtable_run_size: usize,
    /// With [`Memory::Flodb`], entries per membuffer bucket; a write whose bucket is full goes
    /// to the skiplist. Default: 8.
    pub membuffer_bucket_entries: usize,
    /// Bytes of writes collected in a memtable before it is flushed to a level-0 table.
    /// Default: 64 MiB. RocksDB: `write_buffer_size`.
    pub write_buffer_size: usize,
    /// Memtables kept in memory at most (the mutable one plus immutables awaiting flush); writes
    /// stop while all are full. Default: 2. RocksDB: `max_write_buffer_number`.
    pub max_write_buffers: usize,
    /// Uncompressed bytes per data block. Default: 4 KiB. RocksDB: `block_size`.
    pub block_size: usize,
    /// Keys between restart points in a data block. Default: 16.
    /// RocksDB: `block_restart_interval`.
    pub block_restart_interval: usize,
    /// Bytes of uncompressed blocks cached in memory (0 disables the cache). Default: 32 MiB.
    /// RocksDB: `block_cache` (an LRU cache of that capacity).
    pub block_cache_bytes: usize,
    /// Read table files through read-only memory maps (on the real file system) instead of
    /// `pread`: a block stored uncompressed is then used in place, a view of the page cache
    /// with no system call, no copy and no block cache entry (as LevelDB's mmap reads), and a
    /// compressed one is decompressed from the map into the block cache (20M-key store, before
    /// blocks were used in place: readrandom +30%, seekrandom +26%; in place, on a 10M-key
    /// store: seekrandom 1.32x, readrandom 1.21x the copying reads). Tables are immutable
    /// once written, so the mapping never changes under a reader; but a table file truncated
    /// by another program while the database is open makes the process fail with SIGBUS
    /// instead of an error, and mapped pages count in the process's resident size. A map that fails falls back to
    /// `pread`. Default: true. RocksDB: `allow_mmap_reads` (default false); LevelDB maps up to
    /// 1000 tables by default on 64-bit systems.
    pub mmap_reads: bool,
    /// With `mmap_reads`, open each table (sorted or HTable; not Jungle's trees, which are
    /// opened again after every append) a flush or compaction writes with all its pages
    /// mapped into the process at once (Linux `MADV_POPULATE_READ`), while the page cache still
    /// holds what was just written: the first read of each page then takes no page fault, and
    /// mapped pages stay cached ahead of unmapped ones. Only while the store's tables hold at
    /// most half the memory the process may use (the machine's, or its control group's limit
    /// where that is lower, as in a container; a larger store could not stay mapped, and
    /// populating pages already evicted would read them back). Right after a 100M-key load
    /// (9.5 GB of tables, 24 GiB machine) a get took 0.77x the reader's CPU of one that faults
    /// its pages in, and the load no more CPU (docs/benchmarks.md, "100M with tables populated
    /// as written"). Linux only (elsewhere tables fault in as they are read). Default: true.
    /// RocksDB: none (it reads with `pread`); LevelDB: none (its maps fault page by page).
    pub populate_new_tables: bool,
    /// Append to the write-ahead log through a shared writable memory map (Linux, on the real
    /// file system) instead of one `write(2)` per write group: an append is then a copy into the
    /// page cache with no system call. What an acknowledged write survives is unchanged: a
    /// process crash (the bytes are in the page cache at once) and, after a synced write, a
    /// machine crash (`fdatasync`). Space is reserved 1 MiB ahead with `fallocate`, so a full
    /// disk is an error from the write, never a SIGBUS; a log left by a crash ends in zeros,
    /// which recovery drops as the newest log's torn tail. Another program truncating a live
    /// log would make the process fail with SIGBUS. Where the file system cannot reserve space,
    /// the log falls back to `write(2)`. Default: true. RocksDB: none (its `allow_mmap_writes`,
    /// default false, maps table files); LevelDB's early releases wrote their logs
    /// through maps.
    pub mmap_wal: bool,
    /// Compression of write-ahead log records: a write batch of at least
    /// [`crate::wal::COMPRESS_RECORDS_FROM`] bytes is LZ4-compressed by its writer's thread
    /// before it queues, and logged so when that saves an eighth of it (docs/format.md,
    /// "Compressed records"), so the log, which every write passes through, costs fewer
    /// device bytes; smaller batches are logged as they are. Only
    /// `None` and `Lz4` exist. A log holding compressed records cannot be replayed by a
    /// ScreeDB build older than this option (it reports an unknown fragment type) nor by
    /// LevelDB. May change between opens. Default: lz4. RocksDB: `wal_compression` (default
    /// none; zstd only).
    pub wal_compression: CompressionType,
    /// Start writing a table file's bytes to the device every `bytes_per_sync` bytes as
    /// flushes and compactions write it (`sync_file_range`, which does not wait), instead of
    /// leaving it all to the sync at its end: a 64 MiB table then goes out in steady steps,
    /// not one burst that every read needing the device waits behind. Durability is unchanged
    /// (a table counts only once synced). 0 turns it off. On a trie store of 20M keys with 16
    /// readers and a writer (docs/benchmarks.md, "Steady write-back"): readwhilewriting p99
    /// 0.81x, its gets 1.20x, fillrandom unchanged within noise. Default: 1 MiB. RocksDB:
    /// `bytes_per_sync` (default 0; its tuning guide suggests 1 MiB).
    pub bytes_per_sync: u64,
    /// Table readers kept open (the table cache's bound; a table read through a map, see
    /// `mmap_reads`, holds no file descriptor once open). Beyond it, a compaction holds one
    /// table open per sorted run of its inputs (it opens a run's tables one at a time), and an
    /// iterator one per run it reads; when the process runs out of descriptors, the cache lets
    /// go of its tables and the open is tried again. As many tables again may be pinned by the
    /// live versions that hold them, so point reads skip the cache's lookup (RocksDB pins
    /// every table with `max_open_files = -1`). Default: 1000. RocksDB: `max_open_files`.
    pub max_open_tables: usize,
    /// Bloom filter bits per key (0 disables filters). Default: 10.
    /// RocksDB: `filter_policy = NewBloomFilterPolicy(10)`.
    pub bloom_bits_per_key: u32,
    /// A custom filter policy used instead of the Bloom filter (see
    /// [`crate::table::FilterPolicy`]). Default: `None`. RocksDB: `filter_policy`.
    pub filter_policy: Option<Arc<dyn FilterPolicy>>,
    /// Prefix Bloom filters: sorted tables also get a Bloom filter (`bloom_bits_per_key` bits
    /// per distinct prefix; none when that is 0) over the first `prefix_bloom_len` bytes of
    /// every key at least that long, and [`crate::Db::prefix`] with a prefix of at least that
    /// many bytes skips the tables whose filter rules its first `prefix_bloom_len` bytes out.
    /// Whole-key filters for gets are kept. Tables record the length they were written with
    /// (docs/format.md); a table written with another length, or before, is read without its
    /// prefix filter, so the option may change between opens. 0: off. Default: 0. At most
    /// 4096. RocksDB: `prefix_extractor = NewFixedPrefixTransform(n)` with
    /// `whole_key_filtering = true`, read with a prefix seek.
    pub prefix_bloom_len: usize,
    /// Compression of sorted tables' blocks and of Jungle trees' value records (each on its
    /// own, kept where it saves an eighth); HTables (the trie layout) are not compressed.
    /// Default: lz4. RocksDB: `compression`.
    pub compression: CompressionType,
    /// Number of level-0 tables that triggers a level-0 compaction; 0 takes the layout's own
    /// ([`Layout::default_l0_compaction_trigger`]: 6 for FLSM, 4 for the others; read it with
    /// [`Options::l0_trigger`]). Default: 0. RocksDB: `level0_file_num_compaction_trigger`
    /// (default 4).
    pub l0_compaction_trigger: usize,
    /// Number of level-0 tables at which writes are delayed. Default: 20.
    /// RocksDB: `level0_slowdown_writes_trigger`.
    pub l0_slowdown_trigger: usize,
    /// Number of level-0 tables at which writes stop until compaction catches up. Default: 36.
    /// RocksDB: `level0_stop_writes_trigger`.
    pub l0_stop_trigger: usize,
    /// Target size of level 1; level `n` targets `base * multiplier^(n-1)`, times FLSM's
    /// `level_target_scale` (4) in that layout. Default: 256 MiB.
    /// RocksDB: `max_bytes_for_level_base`.
    pub max_bytes_for_level_base: u64,
    /// Size ratio between adjacent levels. Default: 10.
    /// RocksDB: `max_bytes_for_level_multiplier`.
    pub level_size_multiplier: u64,
    /// Number of levels. Default: 7. RocksDB: `num_levels`.
    pub num_levels: usize,
    /// Size at which compaction cuts its output tables. Default: 64 MiB.
    /// RocksDB: `target_file_size_base`.
    pub target_file_size: u64,
    /// Background threads for flushes and compactions. Default: 2.
    /// RocksDB: `max_background_jobs`.
    pub max_background_jobs: usize,
    /// The nice value, 0..=19, that the database's background threads (flushes, compactions
    /// and their helpers) add to the one they start with: they then run at a lower CPU
    /// priority than the application's threads. (FloDB's drain thread always runs at the
    /// lowest priority, nice 19: docs/memory.md, "The drain thread's priority".) When the cores are oversubscribed,
    /// reads and writes run before background work, which a growing level 0 still paces
    /// through write stalls: a lower read tail while writing, for fewer writes per second
    /// (docs/design.md, "Background work and compaction"). Linux only; elsewhere it is
    /// accepted and has no effect. Default: 0 (the same priority).
    /// RocksDB: `Env::LowerThreadPoolCPUPriority`.
    pub background_nice: i32,
    /// Bytes of pending compaction at which writes are delayed, as the layout estimates them
    /// (`CompactionStrategy::pending_bytes`: what its levels hold past the bounds its
    /// compaction keeps them to). Default: 64 GiB.
    /// RocksDB: `soft_pending_compaction_bytes_limit`.
    pub soft_pending_compaction_bytes: u64,
    /// Bytes of pending compaction at which writes stop. Default: 256 GiB.
    /// RocksDB: `hard_pending_compaction_bytes_limit`.
    pub hard_pending_compaction_bytes: u64,
    /// The rate, in bytes per second, writes are paced to once compaction falls behind (level 0
    /// at `l0_slowdown_trigger` or pending bytes at `soft_pending_compaction_bytes`); the pace
    /// slows further while the debt grows and recovers as it shrinks (docs/design.md, "write
    /// stalls"). Default: 16 MiB/s. RocksDB: `delayed_write_rate` (16 MB/s when unset).
    pub delayed_write_rate: u64,
    /// A MANIFEST larger than this is rewritten as a snapshot into a new file. Default: 64 MiB.
    /// RocksDB: `max_manifest_file_size`.
    pub max_manifest_file_size: u64,
    /// Asked by compactions whether to drop the newest value of a key (see
    /// [`crate::compaction::CompactionFilter`]). Default: `None`. RocksDB: `compaction_filter`.
    pub compaction_filter: Option<Arc<dyn crate::compaction::CompactionFilter>>,
    /// Where the info log goes (docs/info-log.md): opens, recovery, options, flushes,
    /// compactions, write stalls and background errors, one line each. Default: the file `LOG`
    /// in the database directory, rotated to `LOG.old` at each open and at 4 MiB.
    /// [`crate::InfoLog::Off`] turns it off. RocksDB: `info_log`, `max_log_file_size`.
    pub info_log: crate::info_log::InfoLog,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: false,
            error_if_exists: false,
            verify_checksums: true,
            comparator: default_comparator(),
            fs: Arc::new(OsFs),
            memory: Memory::Flodb,
            membuffer_size: None,
            membuffer_bucket_entries: 8,
            memtable_filter_ratio: 1.0 / 16.0,
            memtable_index_ratio: 0.25,
            memtable_run_size: 0,
            layout: Layout::default(),
            write_buffer_size: 64 << 20,
            max_write_buffers: 2,
            block_size: 4 << 10,
            block_restart_interval: 16,
            block_cache_bytes: 32 << 20,
            mmap_reads: true,
            populate_new_tables: true,
            bytes_per_sync: 1 << 20,
            mmap_wal: true,
            wal_compression: CompressionType::Lz4,
            max_open_tables: 1000,
            bloom_bits_per_key: 10,
            filter_policy: None,
            prefix_bloom_len: 0,
            compression: CompressionType::Lz4,
            l0_compaction_trigger: 0,
            l0_slowdown_trigger: 20,
            l0_stop_trigger: 36,
            max_bytes_for_level_base: 256 << 20,
            level_size_multiplier: 10,
            num_levels: 7,
            target_file_size: 64 << 20,
            max_background_jobs: 2,
            background_nice: 0,
            soft_pending_compaction_bytes: 64 << 30,
            hard_pending_compaction_bytes: 256 << 30,
            delayed_write_rate: 16 << 20,
            max_manifest_file_size: 64 << 20,
            compaction_filter: None,
            info_log: crate::info_log::InfoLog::default(),
        }
    }
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("create_if_missing", &self.create_if_missing)
            .field("error_if_exists", &self.error_if_exists)
            .field("verify_checksums", &self.verify_checksums)
            .field("comparator", &self.comparator.name())
            .field("fs", &self.fs)
            .field("memory", &self.memory)
            .field("membuffer_size", &self.membuffer_size)
            .field("membuffer_bucket_entries", &self.membuffer_bucket_entries)
            .field("memtable_filter_ratio", &self.memtable_filter_ratio)
            .field("memtable_index_ratio", &self.memtable_index_ratio)
            .field("memtable_run_size", &self.memtable_run_size)
            .field("layout", &self.layout)
            .field("write_buffer_size", &self.write_buffer_size)
            .field("max_write_buffers", &self.max_write_buffers)
            .field("block_size", &self.block_size)
            .field("block_cache_bytes", &self.block_cache_bytes)
            .field("mmap_reads", &self.mmap_reads)
            .field("populate_new_tables", &self.populate_new_tables)
            .field("bytes_per_sync", &self.bytes_per_sync)
            .field("mmap_wal", &self.mmap_wal)
            .field("wal_compression", &self.wal_compression)
            .field("bloom_bits_per_key", &self.bloom_bits_per_key)
            .field("prefix_bloom_len", &self.prefix_bloom_len)
            .field("filter_policy", &self.filter_policy)
            .field("compression", &self.compression)
            .field(
                "l0_triggers",
                &(
                    self.l0_trigger(),
                    self.l0_slowdown_trigger,
                    self.l0_stop_trigger,
                ),
            )
            .field("max_bytes_for_level_base", &self.max_bytes_for_level_base)
            .field("level_size_multiplier", &self.level_size_multiplier)
            .field("num_levels", &self.num_levels)
            .field("target_file_size", &self.target_file_size)
            .field("max_background_jobs", &self.max_background_jobs)
            .field("background_nice", &self.background_nice)
            .field("delayed_write_rate", &self.delayed_write_rate)
            .field("info_log", &self.info_log)
            .finish_non_exhaustive()
    }
}

/// Point-index bytes per expected memtable entry: an 8-byte slot at the index's 80% load,
/// plus a quarter for a memtable holding more entries than the one before.
const INDEX_BYTES_PER_ENTRY: usize = 8 * 5 / 4 * 5 / 4;

impl Options {
    /// Sets `create_if_missing`.
    #[must_use]
    pub fn create_if_missing(mut self, yes: bool) -> Self {
        self.create_if_missing = yes;
        self
    }

    /// Sets the file system.
    #[must_use]
    pub fn with_fs(mut self, fs: Arc<dyn Fs>) -> Self {
        self.fs = fs;
        self
    }

    /// Checks that every option is in range; the error names the option.
    pub fn validate(&self) -> Result<()> {
        let check = require;
        check(
            self.write_buffer_size >= 4 << 10,
            "write_buffer_size must be at least 4 KiB",
        )?;
        check(
            (0.0..=0.25).contains(&self.memtable_filter_ratio),
            "memtable_filter_ratio must be between 0 and 0.25",
        )?;
        check(
            (0.0..=0.25).contains(&self.memtable_index_ratio),
            "memtable_index_ratio must be between 0 and 0.25",
        )?;
        check(
            self.memtable_run_size == 0 || self.memtable_run_size >= 4 << 10,
            "memtable_run_size must be 0 (one run) or at least 4 KiB",
        )?;
        check(
            self.prefix_bloom_len <= 4096,
            "prefix_bloom_len must be at most 4096",
        )?;
        check(
            self.membuffer_size
                .is_none_or(|m| m <= self.write_buffer_size),
            "membuffer_size must be at most write_buffer_size",
        )?;
        check(
            (1..=1024).contains(&self.membuffer_bucket_entries),
            "membuffer_bucket_entries must be between 1 and 1024",
        )?;
        check(
            self.max_write_buffers >= 2,
            "max_write_buffers must be at least 2",
        )?;
        check(
            (256..=(64 << 20)).contains(&self.block_size),
            "block_size must be between 256 bytes and 64 MiB",
        )?;
        check(
            self.block_restart_interval >= 1,
            "block_restart_interval must be at least 1",
        )?;
        check(
            self.max_open_tables >= 16,
            "max_open_tables must be at least 16",
        )?;
        check(
            self.bloom_bits_per_key <= 64,
            "bloom_bits_per_key must be at most 64",
        )?;
        check(
            self.l0_slowdown_trigger >= self.l0_trigger(),
            "l0_slowdown_trigger must be >= l0_compaction_trigger (the layout's when 0)",
        )?;
        check(
            self.l0_stop_trigger >= self.l0_slowdown_trigger,
            "l0_stop_trigger must be >= l0_slowdown_trigger",
        )?;
        check(
            self.delayed_write_rate >= 16 << 10,
            "delayed_write_rate must be at least 16 KiB/s",
        )?;
        check(
            self.max_bytes_for_level_base >= 1 << 10,
            "max_bytes_for_level_base must be >= 1 KiB",
        )?;
        check(
            self.level_size_multiplier >= 2,
            "level_size_multiplier must be at least 2",
        )?;
        check(
            (2..=64).contains(&self.num_levels),
            "num_levels must be between 2 and 64",
        )?;
        check(
            self.target_file_size >= 1 << 10,
            "target_file_size must be at least 1 KiB",
        )?;
        check(
            (1..=64).contains(&self.max_background_jobs),
            "max_background_jobs must be between 1 and 64",
        )?;
        check(
            (0..=19).contains(&self.background_nice),
            "background_nice must be between 0 and 19",
        )?;
        check(
            self.hard_pending_compaction_bytes >= self.soft_pending_compaction_bytes,
            "hard_pending_compaction_bytes must be >= soft_pending_compaction_bytes",
        )?;
        self.layout.validate()?;
        if let Layout::Trie(_) = &self.layout {
            check(
                self.comparator.is_bytewise(),
                "layout trie requires the bytewise comparator: it places keys by their bytes' hash",
            )?;
            check(
                self.num_levels <= crate::layout::trie::MAX_TRIE_LEVELS,
                "num_levels must be at most 11 with the trie layout (one level per 3 hash bits)",
            )?;
        }
        Ok(())
    }

    /// Bytes the membuffer may hold: `membuffer_size`, or a quarter of `write_buffer_size`.
    pub fn membuffer_bytes(&self) -> usize {
        self.membuffer_size.unwrap_or(self.write_buffer_size / 4)
    }

    /// Bytes of each run of a memtable (`memtable_run_size`, raised so that a write buffer
    /// needs at most half of [`crate::memtable::MAX_RUNS`]); 0 for one run, which is what a
    /// run as large as the write buffer amounts to.
    pub fn memtable_run_bytes(&self) -> usize {
        if self.memtable_run_size == 0 || self.memtable_run_size >= self.write_buffer_size {
            return 0;
        }
        let fewest = self
            .write_buffer_size
            .div_ceil(crate::memtable::MAX_RUNS / 2);
        self.memtable_run_size.max(fewest)
    }

    /// A new, empty memtable of the kind `memory` selects, replacing `previous` if there is one
    /// (a membuffer then takes its neighbourhoods from `previous`'s keys).
    pub fn new_memtable(
        &self,
        icmp: crate::comparator::InternalKeyComparator,
        previous: Option<&crate::memtable::MemTable>,
    ) -> crate::memtable::MemTable {
        let mem = match self.memory {
            Memory::Skiplist => crate::memtable::MemTable::new(icmp),
            Memory::Flodb => crate::memtable::MemTable::with_membuffer(
                icmp,
                self.membuffer_bytes(),
                self.membuffer_bucket_entries,
            ),
        };
        let mem = match previous {
            Some(previous) => mem
                .with_neighbourhoods_from(previous)
                .with_shared_prefix_from(previous),
            None => mem,
        };
        let index_bytes = self.memtable_index_bytes(previous.map(crate::memtable::MemTable::len));
        // Each run gets its share of the filter and index.
        let run_bytes = self.memtable_run_bytes();
        let share = |bytes: usize| match run_bytes {
            0 => bytes,
            run => (bytes as u128 * run as u128 / self.write_buffer_size as u128) as usize,
        };
        mem.with_runs_of(run_bytes)
            .with_key_filter(share(self.memtable_filter_bytes()))
            .with_point_index(share(index_bytes))
    }

    /// Bytes of each memtable's key filter (`memtable_filter_ratio` of the write buffer).
    pub fn memtable_filter_bytes(&self) -> usize {
        (self.write_buffer_size as f64 * self.memtable_filter_ratio) as usize
    }

    /// Bytes of the point index of a memtable following one of `previous_entries` (`None`:
    /// the first): `INDEX_BYTES_PER_ENTRY` per expected entry, at most `memtable_index_ratio`
    /// of the write buffer.
    pub fn memtable_index_bytes(&self, previous_entries: Option<usize>) -> usize {
        let cap = (self.write_buffer_size as f64 * self.memtable_index_ratio) as usize;
        let entries = previous_entries.unwrap_or(self.write_buffer_size / 128);
        entries.saturating_mul(INDEX_BYTES_PER_ENTRY).min(cap)
    }

    /// The table format options these options imply.
    pub fn table_options(&self) -> TableOptions {
        TableOptions {
            block_size: self.block_size,
            block_restart_interval: self.block_restart_interval,
            bloom_bits_per_key: self.bloom_bits_per_key,
            filter_policy: self.filter_policy.clone(),
            prefix_bloom_len: self.prefix_bloom_len,
            compression: self.compression,
            verify_checksums: self.verify_checksums,
            mmap_reads: self.mmap_reads,
            bytes_per_sync: self.bytes_per_sync,
            htable: match &self.layout {
                Layout::Trie(trie) => HTableOptions {
                    bucket_bytes: trie.bucket_bytes,
                    num_buckets: bucket_count_for(self.target_file_size, trie.bucket_bytes),
                    fill_percent: trie.fill_percent,
                    filter_bits_per_key: trie.filter_bits_per_key,
                    hash_seed: 0,
                    verify_checksums: self.verify_checksums,
                },
                Layout::Leveled | Layout::Flsm(_) | Layout::Jungle(_) => HTableOptions {
                    verify_checksums: self.verify_checksums,
                    ..HTableOptions::default()
                },
            },
            tree: match &self.layout {
                Layout::Jungle(jungle) => TreeOptions {
                    node_bytes: jungle.node_bytes,
                    inline_value_max: jungle.inline_value_max,
                    compression: self.compression,
                    bloom_bits_per_key: self.bloom_bits_per_key,
                    verify_checksums: self.verify_checksums,
                },
                Layout::Leveled | Layout::Flsm(_) | Layout::Trie(_) => TreeOptions {
                    bloom_bits_per_key: self.bloom_bits_per_key,
                    verify_checksums: self.verify_checksums,
                    ..TreeOptions::default()
                },
            },
        }
    }

    /// Level-0 tables that start a level-0 compaction: `l0_compaction_trigger`, or the layout's
    /// own when that is 0.
    pub fn l0_trigger(&self) -> usize {
        match self.l0_compaction_trigger {
            0 => self.layout.default_l0_compaction_trigger(),
            n => n,
        }
    }

    /// Target size in bytes of level `level` (>= 1): `max_bytes_for_level_base *
    /// level_size_multiplier^(level-1)`, times the layout's [`Layout::level_target_scale`].
    pub fn level_target_bytes(&self, level: usize) -> u64 {
        let mut target = self
            .max_bytes_for_level_base
            .saturating_mul(self.layout.level_target_scale());
        for _ in 1..level {
            target = target.saturating_mul(self.level_size_multiplier);
        }
        target
    }
}

/// Options of one write.
#[derive(Debug, Clone, Copy, Default)]
pub struct WriteOptions {
    /// Wait until the write is durable (WAL fsync) before returning. Default: false.
    /// RocksDB: `WriteOptions::sync`.
    pub sync: bool,
}

impl WriteOptions {
    /// Options with `sync = true`.
    pub fn synced() -> Self {
        WriteOptions { sync: true }
    }
}

/// Options of one read or iterator.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOptions<'a> {
    /// Read as of this snapshot (see [`crate::Db::snapshot`]); `None` reads the latest state.
    /// Borrowing it keeps it from being released while a read names it; a snapshot of
    /// another database is refused with [`crate::Error::InvalidArgument`].
    /// Default: `None`. RocksDB: `ReadOptions::snapshot`.
    pub snapshot: Option<&'a Snapshot>,
}

impl<'a> ReadOptions<'a> {
    /// Options that read as of `snapshot`.
    #[must_use]
    pub fn at(snapshot: &'a Snapshot) -> Self {
        ReadOptions {
            snapshot: Some(snapshot),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_bad_values_are_named() {
        Options::default().validate().unwrap();
        let o = Options {
            l0_stop_trigger: 1,
            ..Options::default()
        };
        let err = o.validate().unwrap_err().to_string();
        assert!(err.contains("l0_stop_trigger"), "{err}");
        let o = Options {
            num_levels: 1,
            ..Options::default()
        };
        assert!(o.validate().unwrap_err().to_string().contains("num_levels"));
    }

    #[test]
    fn level_targets_grow_by_the_multiplier() {
        let o = Options {
            layout: Layout::Leveled,
            ..Options::default()
        };
        assert_eq!(o.level_target_bytes(1), 256 << 20);
        assert_eq!(o.level_target_bytes(3), (256u64 << 20) * 100);
    }

    #[test]
    fn flsm_levels_target_a_multiple_of_the_leveled_sizes() {
        let mut o = Options::default();
        assert_eq!(o.level_target_bytes(1), 1 << 30);
        assert_eq!(o.level_target_bytes(2), 10 << 30);
        if let Some(flsm) = o.layout.flsm_mut() {
            flsm.level_target_scale = 1;
        }
        assert_eq!(o.level_target_bytes(1), 256 << 20);
        if let Some(flsm) = o.layout.flsm_mut() {
            flsm.level_target_scale = 0;
        }
        let err = o.validate().unwrap_err().to_string();
        assert!(err.contains("flsm.level_target_scale"), "{err}");
    }

    #[test]
    fn the_level0_trigger_is_the_layouts_unless_set() {
        let mut o = Options::default();
        assert_eq!(o.l0_compaction_trigger, 0);
        assert_eq!(o.l0_trigger(), crate::layout::flsm::L0_COMPACTION_TRIGGER);
        for kind in [LayoutKind::Leveled, LayoutKind::Trie, LayoutKind::Jungle] {
            o.layout = Layout::with_defaults(kind);
            assert_eq!(o.l0_trigger(), 4, "{kind:?}");
        }
        o.l0_compaction_trigger = 3;
        assert_eq!(o.l0_trigger(), 3);
        o.validate().unwrap();
        // The slowdown trigger is checked against the trigger in force, the layout's included.
        o.layout = Layout::default();
        o.l0_compaction_trigger = 0;
        o.l0_slowdown_trigger = 5;
        o.l0_stop_trigger = 5;
        let err = o.validate().unwrap_err().to_string();
        assert!(err.contains("l0_slowdown_trigger"), "{err}");
    }
}
