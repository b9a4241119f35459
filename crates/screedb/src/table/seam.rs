//! The table-format seam: what the rest of the engine asks of any table file.
//!
//! Versions, iterators, compaction, `screedb check`, repair and the CLI see tables only through
//! [`TableReader`] (opened by [`super::TableCache`], the one place that opens a table) and write
//! them only through [`TableWriter`]. A format is recognised by the magic number in the last 8
//! bytes of its file, and the MANIFEST records each table's [`TableFormat`] code.
//!
//! Formats today: [`TableFormat::Sorted`], the block-based sorted table of this module
//! (`reader.rs`, `builder.rs`), and [`TableFormat::HTable`], LSM-trie's hashed table
//! (`htable/`). Every table file is named `<number>.sst`, as RocksDB names its
//! block-based, plain and cuckoo tables alike: the footer, not the name, says what is inside.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::fs::{Fs, write_back_every};
use crate::iter::InternalIterator;
use crate::key::SequenceNumber;
use crate::table::htable::KeyHash;

use super::TableOptions;
use super::builder::TableBuilder;
use super::htable::{HTableBuilder, HTableWriter};
use super::properties::TableProperties;

/// The format of a table file. The codes are written to the MANIFEST: never change or reuse one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TableFormat {
    /// The block-based sorted table (`table/mod.rs`): data blocks, filter, index, properties.
    #[default]
    Sorted,
    /// LSM-trie's HTable (`table/htable/`): fixed-size buckets placed by the key's hash, one
    /// bucket read per lookup, no key order.
    HTable,
    /// Jungle's tree file (`table/jungle/`): an append-only copy-on-write B+-tree that grows by
    /// segments; the MANIFEST pins each version at one commit (its extent).
    Tree,
}

impl TableFormat {
    /// Every format, in code order (the conformance suite runs over all of them).
    pub const ALL: [TableFormat; 3] = [TableFormat::Sorted, TableFormat::HTable, TableFormat::Tree];

    /// True when the file stores entries in key order, so offsets grow with keys.
    pub fn keeps_key_order(self) -> bool {
        match self {
            TableFormat::Sorted | TableFormat::Tree => true,
            TableFormat::HTable => false,
        }
    }

    /// True when the file grows by appends, so a version reads it only up to its extent and
    /// the file may be longer.
    pub fn grows(self) -> bool {
        match self {
            TableFormat::Sorted | TableFormat::HTable => false,
            TableFormat::Tree => true,
        }
    }

    /// The frozen on-disk code.
    pub fn code(self) -> u8 {
        match self {
            TableFormat::Sorted => 0,
            TableFormat::HTable => 1,
            TableFormat::Tree => 2,
        }
    }

    /// The format of an on-disk code, if it is one this build knows.
    pub fn from_code(code: u8) -> Option<TableFormat> {
        TableFormat::ALL.into_iter().find(|f| f.code() == code)
    }

    /// The format whose footer ends with `magic` (the last 8 bytes of a sorted table or an
    /// HTable; a tree's commit record ends with `magic | crc: u32`).
    pub fn from_magic(magic: u64) -> Option<TableFormat> {
        match magic {
            super::TABLE_MAGIC => Some(TableFormat::Sorted),
            super::htable::HTABLE_MAGIC => Some(TableFormat::HTable),
            super::jungle::TREE_MAGIC => Some(TableFormat::Tree),
            _ => None,
        }
    }

    /// A short name for messages and `screedb dump-table`.
    pub fn name(self) -> &'static str {
        match self {
            TableFormat::Sorted => "sorted",
            TableFormat::HTable => "hashed",
            TableFormat::Tree => "tree",
        }
    }
}

impl fmt::Display for TableFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a point lookup found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lookup {
    /// The newest visible entry is a value.
    Found(Vec<u8>),
    /// The newest visible entry is a tombstone.
    Deleted,
    /// No visible entry.
    NotFound,
}

/// What probing one table for a key found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// The table's filter ruled the key out: no data was read.
    Filtered,
    /// Data was read but held no entry for the key (a filter false positive, or no filter).
    Missed,
    /// The newest entry for the key in the table visible at the probe's sequence, and its
    /// sequence.
    Hit(Lookup, SequenceNumber),
}

/// A table's entries cut by route: one iterator per route, with its route
/// ([`TableReader::iter_by_route`]).
pub type RoutedIters = Vec<(u64, Box<dyn InternalIterator>)>;

/// An open table of any format. Shared as `Arc<dyn TableReader>`; every method may be called
/// from many threads at once.
pub trait TableReader: Send + Sync + fmt::Debug {
    /// The table's format.
    fn format(&self) -> TableFormat;
    /// The table's file number.
    fn file_number(&self) -> u64;
    /// The table's path, as named in errors.
    fn path(&self) -> &Path;
    /// Bytes of the file this reader reads: its extent (the whole file for a table that never
    /// grows). Nothing at or past it is ever read.
    fn extent(&self) -> u64;
    /// The properties every format records (entries, deletions, key and sequence ranges; the
    /// sorted format's block statistics).
    fn properties(&self) -> &TableProperties;
    /// The newest entry of `user_key` visible at the sequence of `target`, the internal key
    /// `user_key | (sequence, FOR_SEEK)`; asks the table's filter first.
    fn probe(&self, user_key: &[u8], target: &[u8]) -> Result<Probe>;
    /// [`TableReader::probe`] of a key the trie layout hashed once per lookup: `hash` is
    /// `KeyHash::of(seed, user_key)`. With `use_filter` false the table's own filter is not
    /// asked (a BloomCluster already let the key through). Formats that do not place keys by
    /// hash ignore `seed`, `hash` and `use_filter`.
    fn probe_hashed(
        &self,
        user_key: &[u8],
        target: &[u8],
        seed: u64,
        hash: &KeyHash,
        use_filter: bool,
    ) -> Result<Probe> {
        let _ = (seed, hash, use_filter);
        self.probe(user_key, target)
    }
    /// Every entry in internal-key order, keeping the table open. A format that must read
    /// the whole table to order it (HTable) reports a failed read here.
    fn iter(self: Arc<Self>) -> Result<Box<dyn InternalIterator>>;
    /// [`TableReader::iter`] cut by `route` of each user key (a hash split's child
    /// container): one iterator per route the table's keys take, in ascending route order.
    /// `None` where the format has nothing cheaper than a whole-table iterator per route (the
    /// sorted format); the HTable format, which sorts a copy of its entries anyway, cuts it.
    fn iter_by_route(self: Arc<Self>, route: &dyn Fn(&[u8]) -> u64) -> Option<Result<RoutedIters>> {
        let _ = route;
        None
    }
    /// Approximate file offset where `ikey`'s entry is or would be (for size estimates).
    fn approximate_offset_of(&self, ikey: &[u8]) -> u64;
    /// Reads and checks every byte of the table again, whatever the read options say. Errors
    /// name the file and the offset of the damage.
    fn verify(&self) -> Result<()>;
    /// Bytes of this table's metadata held in memory while it is open (index, filter, ...).
    fn metadata_bytes(&self) -> u64;
    /// The seed of the key hash the table was built with, for a format that places keys by
    /// hash (`None` otherwise). `screedb check` compares it with the database's.
    fn hash_seed(&self) -> Option<u64> {
        None
    }
    /// False only if no user key of this table starts with `prefix`: a prefix filter
    /// (`TableOptions::prefix_bloom_len`) written with the table says so. True for formats
    /// and tables without one, and for prefixes shorter than the filter's.
    fn may_contain_prefix(&self, _prefix: &[u8]) -> bool {
        true
    }
}

/// Writes one table file of some format from entries in internal-key order.
pub trait TableWriter: Send + fmt::Debug {
    /// The format being written.
    fn format(&self) -> TableFormat;
    /// Adds an entry; internal keys must increase (a format that places entries by hash
    /// takes them in any order).
    fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()>;
    /// The size the file would have if finished now (for cutting outputs by size).
    fn estimated_file_size(&self) -> u64;
    /// True when the table should be finished before the next user key: by default once
    /// [`TableWriter::estimated_file_size`] reaches `target_file_size`.
    fn is_full(&self, target_file_size: u64) -> bool {
        self.estimated_file_size() >= target_file_size
    }
    /// Writes the rest of the file and syncs it; returns its size and properties.
    fn finish(self: Box<Self>) -> Result<(u64, TableProperties)>;
}

/// Bytes at the end of a table file that name its format: [`format_of_tail`] reads them.
pub const FORMAT_TAIL_LEN: usize = 16;

/// The format named by the last [`FORMAT_TAIL_LEN`] bytes of a table file (`tail`; fewer for a
/// shorter file): the magic in its last 8 bytes (sorted table, HTable) or in the 8 before a
/// tree commit's checksum. A corruption error names `path` and `offset` (where `tail` starts).
pub fn format_of_tail(tail: &[u8], path: &Path, offset: u64) -> Result<TableFormat> {
    let at = |from: usize| {
        tail.len()
            .checked_sub(from)
            .and_then(|i| <[u8; 8]>::try_from(&tail[i..i + 8]).ok())
            .map(u64::from_le_bytes)
    };
    let last = at(8);
    let found = last
        .and_then(TableFormat::from_magic)
        .filter(|f| *f != TableFormat::Tree)
        .or_else(|| {
            at(12)
                .filter(|m| *m == super::jungle::TREE_MAGIC)
                .map(|_| TableFormat::Tree)
        });
    found.ok_or_else(|| {
        Error::corruption(
            path,
            offset,
            format!(
                "not a table this build can read: unknown magic {}",
                last.map_or_else(|| "(short file)".to_string(), |m| format!("{m:#018x}"))
            ),
        )
    })
}

/// Creates `path` and starts a table of `format` in it: the one place that starts a table file
/// (flushes, compactions and repair all come here).
pub fn create_writer(
    fs: &dyn Fs,
    path: &Path,
    format: TableFormat,
    opts: &TableOptions,
    icmp: &InternalKeyComparator,
) -> Result<Box<dyn TableWriter>> {
    let create = || Ok::<_, Error>(write_back_every(fs.create(path)?, opts.bytes_per_sync));
    match format {
        TableFormat::Sorted => Ok(Box::new(TableBuilder::new(
            opts.clone(),
            icmp.clone(),
            create()?,
            path.to_path_buf(),
        ))),
        TableFormat::HTable => Ok(Box::new(HTableWriter(HTableBuilder::new(
            opts.htable.clone(),
            create()?,
            path.to_path_buf(),
        )))),
        TableFormat::Tree => Err(Error::invalid(format!(
            "{}: tree files grow by segments and are written by the Jungle job, not as tables",
            path.display()
        ))),
    }
}
