//! ScreeDB: an embedded, crash-safe key-value store on a fragmented LSM tree.
//!
//! This crate holds the engine. The modules below are the building blocks every layer shares:
//! - [`fs`]: the file-system seam (real, in-memory and fault-injecting implementations);
//! - [`wal`]: the write-ahead log format (LevelDB-compatible framing);
//! - [`table`]: sorted tables (blocks, Bloom filter, properties, footer) and their caches;
//! - [`manifest`]: the version-edit records of the MANIFEST;
//! - [`iter`]: internal iterators, merging and concatenating;
//! - [`key`] and [`comparator`]: internal keys and their order;
//! - [`check`]: the read-only database checker behind `screedb check`;
//! - [`repair`]: rebuilding a database from its tables and logs.
//!
//! On-disk formats are described in `docs/format.md`.

#![warn(missing_docs)]

pub mod check;
pub mod checksum;
pub mod coding;
pub mod compaction;
pub mod comparator;
mod db;
pub mod error;
pub mod filename;
pub mod foreign;
pub mod fs;
pub mod info_log;
pub mod iter;
pub mod key;
pub mod layout;
pub mod manifest;
pub mod memtable;
pub mod options;
pub mod repair;
pub mod sketch;
mod sync;
pub mod table;
pub mod version;
pub mod wal;
pub mod write_batch;

pub use comparator::{BytewiseComparator, Comparator};
pub use db::{Db, DbIterator, RangeIter, Snapshot, Stats, UnorderedScan};
pub use error::{Error, Result};
pub use foreign::{ForeignFormat, ImportReport, import_leveldb};
pub use info_log::{InfoLog, Logger};
pub use options::{
    FlsmOptions, GuardBits, JungleOptions, Layout, LayoutKind, Memory, Options, ReadOptions,
    TrieOptions, WriteOptions,
};
pub use repair::{RepairReport, SalvagedTable, repair_db};
pub use write_batch::WriteBatch;
