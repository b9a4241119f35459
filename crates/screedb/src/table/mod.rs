//! Sorted tables (sstables): immutable files of internal keys and values, their reader and caches.
//!
//! ```text
//! table := data block*          each followed by its 5-byte trailer
//!          filter block?        whole-table filter over user keys: the built-in Bloom filter
//!                               ("screedb.filter.bloom") or a custom policy's
//!                               ("screedb.filter.custom.<policy name>", see filter_policy.rs)
//!          prefix filter block? built-in Bloom filter over the distinct first N bytes of the user
//!                               keys at least N long ("screedb.filter.prefix.fixed.<N>",
//!                               `TableOptions::prefix_bloom_len`)
//!          index block          one entry per data block: separator key -> BlockHandle
//!          properties block     sorted names -> values ("screedb.properties")
//!          meta-index block     block name -> BlockHandle
//!          footer               48 bytes: metaindex handle | index handle | version | pad | magic
//! ```
//!
//! Every block is written in the entry format of [`BlockBuilder`] and followed by the trailer of
//! `format.rs` (compression type + masked CRC32C). The full byte tables are in
//! `docs/format.md`.
//!
//! `htable/` holds the other table format, LSM-trie's hashed tables ([`HTable`]): buckets placed by
//! a hash of the user key instead of key order, told apart by their footer magic ([`is_htable`]).

mod block;
mod block_builder;
mod block_search;
mod builder;
mod cache;
#[cfg(test)]
mod cache_tests;
mod checked_once;
pub(crate) mod compression;
#[cfg(test)]
mod conformance_tests;
#[cfg(test)]
mod error_tests;
mod filter;
mod filter_policy;
mod format;
pub mod htable;
mod jungle;
mod properties;
mod reader;
pub mod salvage;
mod seam;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use block::{Block, BlockIter};
pub use block_builder::BlockBuilder;
pub use builder::TableBuilder;
pub use cache::{BlockCache, PinnedReader, TableCache};
pub use compression::CompressionType;
pub use filter::{BloomFilter, BloomFilterBuilder};
pub use filter_policy::{
    CUSTOM_FILTER_PREFIX, CustomFilterBuilder, FilterPolicy, custom_filter_block_name,
};
pub use format::{BLOCK_TRAILER_LEN, BlockHandle, FOOTER_LEN, FORMAT_VERSION, Footer, TABLE_MAGIC};
pub use htable::{
    BUCKET_TAIL_LEN, HProbe, HTABLE_FOOTER_LEN, HTABLE_FORMAT_VERSION, HTABLE_MAGIC, HTable,
    HTableBuilder, HTableIterator, HTableOptions, HTableProperties, HTableStats, KeyHash,
    MAX_TRIE_DEPTH, NO_MIGRATION, bucket_count_for, is_htable,
};
pub use jungle::{
    Commit, KeepFn, SegmentStats, TREE_MAGIC, TreeHandle, TreeIterator, TreeOptions, TreeReader,
    TreeTable, append_segment, find_last_commit, write_tree,
};
pub use properties::TableProperties;
pub use reader::{Table, TableIterator};
pub use seam::{
    FORMAT_TAIL_LEN, Lookup, Probe, RoutedIters, TableFormat, TableReader, TableWriter,
    create_writer, format_of_tail,
};

/// Name of the Bloom filter block in the meta-index. Written to disk: never change it.
pub const FILTER_BLOCK_NAME: &[u8] = b"screedb.filter.bloom";
/// Name of the properties block in the meta-index. Written to disk: never change it.
pub const PROPERTIES_BLOCK_NAME: &[u8] = b"screedb.properties";
/// Prefix of the meta-index name of a prefix Bloom filter block; the prefix length follows in
/// decimal (`screedb.filter.prefix.fixed.8`). Written to disk: never change it.
pub const PREFIX_FILTER_PREFIX: &[u8] = b"screedb.filter.prefix.fixed.";

/// The meta-index name of the prefix filter block of fixed prefixes of `len` bytes.
pub fn prefix_filter_block_name(len: usize) -> Vec<u8> {
    let mut name = PREFIX_FILTER_PREFIX.to_vec();
    name.extend_from_slice(len.to_string().as_bytes());
    name
}

/// How tables are built and read.
#[derive(Debug, Clone)]
pub struct TableOptions {
    /// Uncompressed size at which a data block is closed. Default: 4096.
    pub block_size: usize,
    /// Entries between restart points inside a data block (0 is treated as 1). Default: 16.
    pub block_restart_interval: usize,
    /// Bloom filter bits per distinct user key; 0 writes no filter. Default: 10 (about 1% false
    /// positives). Ignored when `filter_policy` is set.
    pub bloom_bits_per_key: u32,
    /// A custom filter policy: tables are written with its filter instead of the Bloom filter,
    /// and tables written by a policy of the same name are probed with it. Default: `None`.
    pub filter_policy: Option<Arc<dyn FilterPolicy>>,
    /// Compression tried on every block; a block that does not shrink by at least 1/8 is stored
    /// uncompressed. Default: [`CompressionType::Lz4`].
    pub compression: CompressionType,
    /// Verify the CRC32C of every data block read. Blocks read by [`Table::open`] (index,
    /// filter, properties, meta-index) are always verified. Default: true.
    pub verify_checksums: bool,
    /// Open tables through [`crate::fs::Fs::open_mapped`] (a read-only memory map on the real
    /// file system) instead of [`crate::fs::Fs::open`]. Default: true.
    pub mmap_reads: bool,
    /// Start the write-back of a table file being written every `bytes_per_sync` bytes
    /// ([`crate::fs::write_back_every`]); 0: only at its sync. Default: 0 (the database's
    /// `Options::bytes_per_sync`, 1 MiB, is passed down).
    pub bytes_per_sync: u64,
    /// How HTables (the trie layout's tables) are written; set from the trie layout's options,
    /// `target_file_size` and the database's hash seed. Readers take every value from the file.
    pub htable: HTableOptions,
    /// How Jungle trees are written and read; set from the Jungle layout's options.
    pub tree: TreeOptions,
    /// Also write a Bloom filter over the first `prefix_bloom_len` bytes of every user key at
    /// least that long (`bloom_bits_per_key` bits per distinct prefix), and probe it, in tables
    /// written with the same length, before a prefix scan reads the table. 0: none. Default: 0.
    pub prefix_bloom_len: usize,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: 10,
            filter_policy: None,
            compression: CompressionType::Lz4,
            verify_checksums: true,
            mmap_reads: true,
            bytes_per_sync: 0,
            htable: HTableOptions::default(),
            tree: TreeOptions::default(),
            prefix_bloom_len: 0,
        }
    }
}

/// The path of table number `number` in `dir`: `dir/{number:06}.sst`.
pub fn table_file_name(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.sst"))
}
