//! Jungle tree files: an append-only copy-on-write B+-tree of internal keys (issue 18).
//!
//! ```text
//! tree file := segment+                      bytes below a commit never change
//! segment   := value* leaf* internal* filter? commit
//! record    := payload | type: u8 | masked crc32c: u32 (of payload and type)
//!   type 1 value     the value bytes
//!   type 2 leaf      count: u32 | (key_len: u32 | internal key | tag: u8 | ref)*
//!                      tag 0: value_len: u32 | value (inline, <= inline_value_max)
//!                      tag 1: offset: u64 | len: u32 (a value record's payload)
//!   type 3 internal  count: u32 | (first_len: u32 | first | last_len: u32 | last
//!                                  | offset: u64 | size: u32)*   (a child's key range, node)
//!   type 4 filter    the Bloom filter of filter.rs (blocked layout) over every user key of the
//!                    tree as of this commit
//!   type 5 leaf      (compact, written on 2026-11-27 before type 6; still read)
//!                    count: varint32 | stored_end: u64 | (key_len: varint32 | internal key
//!                    | tag: u8 | ref)*   stored_end: end of the furthest value record referred to
//!                      tag 0: value_len: varint32 | value (inline)
//!                      tag 1 | ow - 1 << 2 | sw - 1 << 5: offset (ow bytes) | size (sw bytes)
//!   type 6 leaf      (prefix, written on 2026-11-27 before type 8; still read)
//!                    count: varint32 | stored_end: u64 | prefix_len: varint32 | prefix
//!                    | (rest_len: varint32 | internal key past the prefix | tag: u8 | ref)*
//!                    prefix: the bytes every entry's user key starts with; ref as in type 5,
//!                    or tag 2 | ow - 1 << 2 | sw - 1 << 5 for a type 7 record (since 2026-11-27)
//!   type 7 value     LZ4-compressed (since 2026-11-27): uncompressed_len: u32 | LZ4 block, as
//!                    a table block of compression type 1; written where it saves an eighth
//!   type 8 leaf      (indexed, written since 2026-11-27; types 2, 5 and 6 still read)
//!                    a type 6 leaf's payload | offset: uW per entry (where it starts) | W: u8
//!                    W = 2 when the entries end within 64 KiB, else 4
//! commit    := body | body_len: u32 | magic: u64 | masked crc32c: u32 (of everything before)
//!   body    := root: u64 | root_size: u32 | height: u32 | live_bytes: u64 | total_bytes: u64
//!              | entries: u64 | smallest_seq: u64 | largest_seq: u64 | prev: u64 (MAX: none)
//!              | filter offset: u64 | filter size: u32 (0: none) | segment value bytes: u64
//!              | segment node bytes: u64 | smallest_len: u32 | largest_len: u32
//!              | smallest key | largest key
//! ```
//!
//! All integers are little-endian and fixed-width except in compact and prefix leaves;
//! handles name a record's payload (offset, size), the trailer follows it. A reader is pinned
//! to one commit by its extent: the file length at that commit, whose last 16 bytes are the
//! commit's tail. Invariants the writer keeps and [`TreeReader::verify`] checks: every leaf is at depth `height`; an internal node's children
//! have ascending, disjoint key ranges, each the exact first and last key of the child's subtree;
//! all versions of one user key are in one leaf (leaves are cut only between user keys), so an
//! append merges every version of each key it touches and the caller's survivor rule (see
//! [`KeepFn`]) sees them all; nodes are about `node_bytes` (a leaf holding one user key's versions
//! may be larger).
//!
//! The filter is whole-tree, so a lookup costs one filter probe per tree version: it is sized for
//! twice the distinct keys when the tree is written or rewritten, an append ORs the batch's keys
//! into a copy of the previous one, and it is rebuilt at twice the count (from the base tree's
//! keys plus the batch's) once the keys pass its capacity. Keys dropped since stay in it (false
//! positives) until a rewrite.
//!
//! Accounting: `live_bytes` is the sum of the key lengths and stored value lengths (a value
//! record's payload, compressed where it is) of the entries the tree holds, what a fresh copy
//! of them takes; `total_bytes` is the file length at the commit; `total_bytes / live_bytes`
//! is the space ratio a layout compares with its factor C. The sequence range covers every
//! entry (it may be wider than needed after entries are dropped).

mod append;
mod commit;
#[cfg(test)]
mod damage_tests;
mod engine;
mod fences;
mod iter;
mod leaf;
#[cfg(test)]
mod mapped_tests;
#[cfg(test)]
mod model_tests;
mod node;
mod reader;
#[cfg(test)]
mod tests;
mod writer;

pub use append::append_segment;
pub use commit::find_last_commit;
pub use engine::TreeTable;
pub use iter::TreeIterator;
pub use node::Handle as TreeHandle;
pub use reader::{NodeCache, TreeReader};
pub use writer::{KeepFn, write_tree};

use crate::table::CompressionType;

/// Magic number near the end of every commit record: the first 8 bytes of SHA-256("screedb
/// jungle tree") (`ca332c41b1a9b53e...`) read as a big-endian integer; stored little-endian like
/// every field. Distinct from the sorted table's `TABLE_MAGIC`. Written to disk: never change it.
pub const TREE_MAGIC: u64 = 0xca33_2c41_b1a9_b53e;

/// How tree files are written and read.
#[derive(Debug, Clone)]
pub struct TreeOptions {
    /// Bytes at which a node is closed. Default: 4096.
    pub node_bytes: usize,
    /// Values up to this length are stored in their leaf; longer ones in value records.
    /// Default: 64.
    pub inline_value_max: usize,
    /// How value records are compressed (`Options::compression`): a value is stored compressed
    /// when that saves at least an eighth of it, as a table block is. Default: LZ4.
    pub compression: CompressionType,
    /// Bloom filter bits per distinct user key; 0 writes no filter. Default: 10.
    pub bloom_bits_per_key: u32,
    /// Verify the checksum of every node and value read. The commit and the filter are always
    /// verified. Default: true.
    pub verify_checksums: bool,
}

impl Default for TreeOptions {
    fn default() -> Self {
        TreeOptions {
            node_bytes: 4096,
            inline_value_max: 64,
            compression: CompressionType::Lz4,
            bloom_bits_per_key: 10,
            verify_checksums: true,
        }
    }
}

/// Bytes one segment wrote, split for the engine's statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SegmentStats {
    /// Value records (payload and trailer).
    pub value_bytes: u64,
    /// Leaf and internal nodes (payload and trailer).
    pub node_bytes: u64,
}

/// One commit of a tree: the state of the tree as of a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// Where the commit record starts.
    pub offset: u64,
    /// File length at this commit (the extent a reader pinned here may read below).
    pub len: u64,
    /// Offset of the root node (0 when the tree is empty).
    pub root: u64,
    /// Bytes of the root node's payload (0 when the tree is empty).
    pub root_size: u32,
    /// Levels of nodes: 0 for an empty tree, 1 when the root is a leaf.
    pub height: u32,
    /// Key + value bytes of the entries in the tree.
    pub live_bytes: u64,
    /// File bytes at this commit (equal to `len`).
    pub total_bytes: u64,
    /// Entries (every version of every key) in the tree.
    pub entries: u64,
    /// Smallest sequence number of an entry (`u64::MAX` when empty).
    pub smallest_seq: u64,
    /// Largest sequence number of an entry (0 when empty).
    pub largest_seq: u64,
    /// Smallest internal key (empty when the tree is).
    pub smallest: Vec<u8>,
    /// Largest internal key (empty when the tree is).
    pub largest: Vec<u8>,
    /// Offset of the previous commit record, if any.
    pub prev: Option<u64>,
    /// The filter record, if any.
    pub filter: Option<node::Handle>,
    /// Bytes this commit's segment wrote.
    pub segment: SegmentStats,
}

impl Commit {
    /// `total_bytes / live_bytes`: the space ratio compared with the compaction factor C
    /// (infinite for an empty tree with bytes).
    pub fn space_ratio(&self) -> f64 {
        self.total_bytes as f64 / self.live_bytes as f64
    }
}
