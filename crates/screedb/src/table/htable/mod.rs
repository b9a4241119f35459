//! HTables: LSM-trie's hashed table format (Wu et al., USENIX ATC'15, section 2.4.2).
//!
//! An HTable gives up key order for one bucket read per lookup: every user key is hashed once
//! ([`KeyHash`]) and its entries live in the fixed-size bucket the hash picks (its home), or,
//! when that bucket was overloaded at build time, in the bucket its migration records lead to.
//! There is no index. All fixed-width integers are little-endian; every number here is on disk
//! and frozen (a new layout gets a new `format_version`). `docs/format.md` has the same tables.
//!
//! ```text
//! htable   := bucket * num_buckets        num_buckets x bucket_bytes (B) from offset 0, so each
//!                                         bucket is B-aligned (B = 4 KiB by default;
//!                                         per table: 8 or 16 KiB for large items)
//!             overflow area               overflow groups back to back (usually empty)
//!             overflow index  | trailer   records of 24 bytes
//!             filter block    | trailer   per-bucket Bloom filters
//!             migration block | trailer   records of 12 bytes
//!             properties      | trailer
//!             footer                      104 bytes
//! trailer  := type: u8 (= 0) | crc: u32   as after every sorted-table block (table/format.rs)
//!
//! entry    := klen: varint32 | user key | trailer: u64 (seq << 8 | kind) | vlen: varint32 | value
//! group    := the entries of one user key, newest (highest trailer) first
//!
//! bucket   := group* in user-key order (bytes [0, used)) | zeros up to B-16
//!             | dst: u32   at B-16   where groups leaving this bucket went; u32::MAX: none
//!             | mark: u32  at B-12   HashMark: a group that reaches this bucket and whose rank
//!                                    here (rank_at, below) is >= mark went on to dst; 0 if none
//!             | used: u16  at B-8    bytes of entries
//!             | count: u16 at B-6    entries
//!             | crc: u32   at B-4    mask(crc32c(bucket bytes [0, B-4) ++ bucket id: u32 LE))
//! rank_at(rank, b) := rank.rotate_left(b % 32)       (the paper's per-bucket rotation)
//!
//! overflow index record := bucket: u32 | rank: u32 | offset: u64 | len: u32 | crc: u32
//!     one per overflow group, keyed by its home bucket and (unrotated) rank, sorted by
//!     (bucket, rank, offset); the records tile the overflow area in order; the group is the
//!     `len` bytes at file `offset`; crc = mask(crc32c(group bytes))
//! filter block := probes: u32 | offsets: u32 * (num_buckets + 1) | bits
//!     bucket b's filter is bits[offsets[b]..offsets[b+1]] (offsets[0] = 0, non-decreasing, the
//!     last = bits length) over the distinct user keys homed in b, wherever they are stored;
//!     probes = 0: no filters (every key may be present)
//! migration record := bucket: u32 | dst: u32 | mark: u32   sorted by bucket, strictly; the
//!     same (dst, mark) as that bucket's tail
//! properties := num_entries | num_deletions | raw_key_bytes | raw_value_bytes | smallest_seq
//!               | largest_seq | item_bytes | distinct_keys | overflow_entries
//!               | migrated_entries | hash_seed                 (11 x u64)
//!               | smallest internal key: varint32 length + bytes | largest: the same
//!               | distinct-key sketch: 256 one-byte registers (`crate::sketch`; absent in
//!                 tables written before it)
//!               (bytes after these are ignored: room for later fields)
//! footer   := num_buckets: u32 | bucket_bytes: u32
//!             | 5 x (offset: u64, size: u64): overflow area, overflow index, filter, migration,
//!               properties (sizes without trailers; the regions must tile the file in order)
//!             | format_version: u32 (= 1) | crc: u32 = mask(crc32c(footer bytes [0, 92)))
//!             | magic: u64 = HTABLE_MAGIC
//! ```
//!
//! Placement (builder, `migration.rs`): a group goes to its home bucket `hash.bucket(n)`, or to
//! the overflow area when it encodes to more than `B / 8` bytes. Buckets over capacity (`B - 16`)
//! are balanced by the paper's migration, most loaded first: the source keeps its groups of
//! lowest rank that fit, and every group of rank >= the first one left out (the HashMark) moves
//! to one destination (the fullest bucket that takes them all, else the emptiest, which may then
//! pass groups on in its own turn). Because *every* group at or above the mark moves, the rank
//! alone says where a group is: the paper's tie case (read two buckets) cannot arise.
//!
//! Lookup (`reader.rs`): bucket filter (in memory) -> overflow index (in memory) -> migration
//! records, followed from the home bucket while the key's rank there is >= the mark (in memory)
//! -> exactly one bucket read. Entries keep sequence numbers and kinds, so snapshots and
//! deletions work.

use std::sync::atomic::{AtomicU64, Ordering};

mod builder;
mod cluster;
mod engine;
mod format;
mod hash;
mod iter;
mod migration;
mod reader;
mod salvage;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_corruption;
mod verify;

pub use builder::HTableBuilder;
pub use cluster::{CLUSTER_MAGIC, Cluster, SlotFilters, write_cluster};
pub use engine::{HTableWriter, HashedTable};
pub use hash::{KeyHash, MAX_TRIE_DEPTH, bucket_count_for};
pub use iter::HTableIterator;
pub use reader::HTable;

use crate::key::ValueKind;

/// Magic number closing every HTable: the first 8 bytes of SHA-1("screedb.htable")
/// (`96ef4aedaa6960ac...`) read as a big-endian integer; stored little-endian like every field.
pub const HTABLE_MAGIC: u64 = 0x96ef_4aed_aa69_60ac;
/// The only HTable format version this code reads and writes.
pub const HTABLE_FORMAT_VERSION: u32 = 1;
/// Length of the footer at the end of every HTable.
pub const HTABLE_FOOTER_LEN: usize = 104;
/// Bytes at the end of every bucket: dst, mark, used, count, crc.
pub const BUCKET_TAIL_LEN: usize = 16;
/// `dst` of a bucket tail that has no migration.
pub const NO_MIGRATION: u32 = u32::MAX;

/// True if `footer_tail` (at least the last 8 bytes of a file) ends with [`HTABLE_MAGIC`].
pub fn is_htable(footer_tail: &[u8]) -> bool {
    footer_tail
        .len()
        .checked_sub(8)
        .and_then(|at| footer_tail.get(at..))
        .and_then(crate::coding::get_u64)
        == Some(HTABLE_MAGIC)
}

/// How HTables are built and read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HTableOptions {
    /// Bytes of one bucket: a power of two in 512..=65536. The builder doubles it for a table
    /// of large items, up to 16 KiB, keeping about `num_buckets * bucket_bytes` of buckets;
    /// readers use the file's own value. Default: 4096.
    pub bucket_bytes: usize,
    /// Buckets in a table built with these options; a prime (see [`bucket_count_for`]).
    /// Default: 8191 (32 MiB tables, as in the paper).
    pub num_buckets: u32,
    /// The caller cuts a new table once [`HTableBuilder::estimated_bytes`] passes this percentage
    /// of [`HTableBuilder::capacity_bytes`] ([`HTableBuilder::is_full`]); a smaller table is
    /// given as many buckets as its items need at this percentage. Default: 95 (the paper's).
    pub fill_percent: u32,
    /// Bloom filter bits per distinct user key, per bucket; 0 writes no filters. Default: 16
    /// (the paper's Table 1: about 0.05% false positives per table probed).
    pub filter_bits_per_key: u32,
    /// Seed of the key hash; must be the same for building and reading. Default: 0.
    pub hash_seed: u64,
    /// Verify the CRC32C of every bucket and overflow group read. The blocks read at open are
    /// always verified. Default: true.
    pub verify_checksums: bool,
}

impl Default for HTableOptions {
    fn default() -> Self {
        HTableOptions {
            bucket_bytes: 4096,
            num_buckets: 8191,
            fill_percent: 95,
            filter_bits_per_key: 16,
            hash_seed: 0,
            verify_checksums: true,
        }
    }
}

/// Statistics of one HTable: the stored properties plus what the footer and blocks say.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HTableProperties {
    /// Entries in the table (every version and tombstone).
    pub num_entries: u64,
    /// Entries of kind Deletion.
    pub num_deletions: u64,
    /// Sum of internal key lengths.
    pub raw_key_bytes: u64,
    /// Sum of value lengths.
    pub raw_value_bytes: u64,
    /// Smallest sequence number (0 if no entries).
    pub smallest_seq: u64,
    /// Largest sequence number (0 if no entries).
    pub largest_seq: u64,
    /// Encoded bytes of all entries (what the builder's `estimated_bytes` counted).
    pub item_bytes: u64,
    /// Distinct user keys.
    pub distinct_keys: u64,
    /// Entries stored in the overflow area.
    pub overflow_entries: u64,
    /// Entries stored in a bucket other than their home bucket.
    pub migrated_entries: u64,
    /// Seed of the key hash the table was built with.
    pub hash_seed: u64,
    /// Smallest internal key (user key bytewise, then newest first); empty if no entries.
    pub smallest_key: Vec<u8>,
    /// Largest internal key; empty if no entries.
    pub largest_key: Vec<u8>,
    /// A sketch of the distinct user keys (`crate::sketch`), by their
    /// [`KeyHash::sketch_bits`]; `None` in a table written before sketches were stored.
    pub sketch: Option<std::sync::Arc<crate::sketch::DistinctSketch>>,
    /// Derived: buckets in the table.
    pub num_buckets: u32,
    /// Derived: bytes of one bucket.
    pub bucket_bytes: u32,
    /// Derived: migration records (overloaded buckets that moved groups).
    pub num_migrations: u64,
    /// Derived: overflow groups (records of the overflow index).
    pub overflow_groups: u64,
    /// Derived: bytes of the overflow area.
    pub overflow_bytes: u64,
    /// Derived: bytes of the filter block with its trailer.
    pub filter_bytes: u64,
    /// Derived: length of the file.
    pub file_size: u64,
}

/// What a point probe of one HTable found (the lead maps it to `version::Probe`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HProbe {
    /// The key's bucket filter says the key is not in the table (no read).
    Filtered,
    /// The table holds no version of the key visible at the snapshot.
    Missed,
    /// The newest visible version.
    Hit {
        /// Value or tombstone.
        kind: ValueKind,
        /// The value (empty for a tombstone).
        value: Vec<u8>,
        /// Its sequence number.
        seq: u64,
    },
}

/// Read counters of HTables: of one table opened on its own, or of every table of a
/// [`crate::table::TableCache`] (which shares one set), with the BloomCluster reads of the gets
/// that asked them. A snapshot of [`ReadCounters`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HTableStats {
    /// Calls to [`HTable::probe`].
    pub probes: u64,
    /// Probes answered `Filtered` by a bucket filter.
    pub filter_rejections: u64,
    /// Buckets read by probes (from the block cache or the file).
    pub bucket_reads: u64,
    /// Overflow groups read by probes.
    pub overflow_reads: u64,
    /// BloomCluster pages read by gets (from the block cache or the file).
    pub cluster_reads: u64,
    /// Tables a cluster ruled out (probes it saved).
    pub cluster_rejections: u64,
}

impl std::fmt::Display for HTableStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} probes, {} filtered, {} buckets, {} overflow groups read; {} cluster pages read, \
             {} tables ruled out by them",
            self.probes,
            self.filter_rejections,
            self.bucket_reads,
            self.overflow_reads,
            self.cluster_reads,
            self.cluster_rejections
        )
    }
}

/// The live counters behind [`HTableStats`] (relaxed atomics).
#[derive(Debug, Default)]
pub struct ReadCounters {
    pub(crate) probes: AtomicU64,
    pub(crate) filter_rejections: AtomicU64,
    pub(crate) bucket_reads: AtomicU64,
    pub(crate) overflow_reads: AtomicU64,
    pub(crate) cluster_reads: AtomicU64,
    pub(crate) cluster_rejections: AtomicU64,
}

impl ReadCounters {
    /// The counters now.
    pub fn snapshot(&self) -> HTableStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        HTableStats {
            probes: get(&self.probes),
            filter_rejections: get(&self.filter_rejections),
            bucket_reads: get(&self.bucket_reads),
            overflow_reads: get(&self.overflow_reads),
            cluster_reads: get(&self.cluster_reads),
            cluster_rejections: get(&self.cluster_rejections),
        }
    }

    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}
