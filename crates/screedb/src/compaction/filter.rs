//! Compaction filters: an application's say over what a compaction keeps (RocksDB's
//! `CompactionFilter`), for data the application already treats as gone — expired keys, say.
//!
//! A merge asks the filter about the newest value of each user key it writes, when that value
//! is newer than every live snapshot (so no snapshot can tell). A value the filter drops is
//! written as a tombstone with the same sequence number: it hides every older version from
//! later reads, and is itself dropped once no level below holds the key, as any tombstone.
//! Flushes do not ask (a memtable's newest data stays as written until its first compaction).

use std::fmt;

/// Decides which values compactions drop. Must be cheap, must not block and must not call back
/// into the database.
pub trait CompactionFilter: Send + Sync + fmt::Debug {
    /// A short name for stats and logs.
    fn name(&self) -> &str;
    /// True when the newest `value` of `user_key`, being written into `level`, is to be
    /// dropped (written as a tombstone).
    fn drop_value(&self, level: usize, user_key: &[u8], value: &[u8]) -> bool;
}
