//! Write amplification as the peers report it: parsers of their statistics text, and a count
//! of the user bytes handed to an engine (the denominator).
//!
//! - RocksDB (`rocksdb.stats`): the `Cumulative WAL: ... written: X GB` line of the DB stats plus
//!   the `Cumulative compaction: X GB write` line of the column family's compaction stats.
//!   RocksDB books each memtable flush as a compaction into L0 (the L0 row of its table, and the
//!   `Flush(GB)` line), so the second figure is flush + compaction output. Both are printed
//!   with two decimals of GB (10 MB steps), and count since the database was opened.
//! - LevelDB (`leveldb.stats`): the sum of the `Write(MB)` column of its compaction table. LevelDB
//!   adds a memtable flush to the row of the level the new table lands in, so this is flush +
//!   compaction output, since open, in whole MiB; LevelDB reports no WAL bytes, so its figure
//!   leaves the log out.
//!
//! The user bytes (keys + values put, keys deleted) are counted by the adapters as they hand
//! them over ([`UserBytes`]), also since open: the peers' own "ingest" figures are rounded to
//! 10 MB or include their batch encoding.

use std::sync::atomic::{AtomicU64, Ordering};

use super::Op;

const MIB: f64 = 1024.0 * 1024.0;

/// Bytes of keys and values handed to an engine since it was opened.
#[derive(Debug, Default)]
pub struct UserBytes(AtomicU64);

impl UserBytes {
    /// Counts one put.
    pub fn put(&self, key: &[u8], value: &[u8]) {
        self.add((key.len() + value.len()) as u64);
    }

    /// Counts one delete (its key).
    pub fn delete(&self, key: &[u8]) {
        self.add(key.len() as u64);
    }

    /// Counts every update of a batch.
    pub fn batch(&self, ops: &[Op<'_>]) {
        let n: usize = ops
            .iter()
            .map(|op| match *op {
                Op::Put(k, v) => k.len() + v.len(),
                Op::Delete(k) => k.len(),
            })
            .sum();
        self.add(n as u64);
    }

    fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// `disk_bytes` per user byte; `None` before any user byte or without a disk figure.
    pub fn amplification(&self, disk_bytes: Option<f64>) -> Option<f64> {
        let user = self.0.load(Ordering::Relaxed);
        (user > 0).then_some(disk_bytes? / user as f64)
    }
}

/// `"0.08 GB"`-style figures RocksDB prints, in bytes (its GB and MB are powers of 1024).
fn rocksdb_size(number: &str, unit: &str) -> Option<f64> {
    let scale = match unit {
        "KB" => 1024.0,
        "MB" => MIB,
        "GB" => MIB * 1024.0,
        "TB" => MIB * MIB,
        _ => return None,
    };
    Some(number.parse::<f64>().ok()? * scale)
}

/// The size after `marker` on the line starting with `prefix`: `<number> <unit>`.
fn size_after(text: &str, prefix: &str, marker: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.trim_start().starts_with(prefix))?;
    let rest = &line[line.find(marker)? + marker.len()..];
    let mut words = rest.split_whitespace();
    rocksdb_size(words.next()?, words.next()?.trim_end_matches(','))
}

/// Bytes RocksDB wrote to its WAL and to table files (flushes and compactions), from the text
/// of its `rocksdb.stats` property; `None` if either line is missing.
pub fn rocksdb_bytes_written(stats: &str) -> Option<f64> {
    let wal = size_after(stats, "Cumulative WAL:", "written:")?;
    let tables = size_after(stats, "Cumulative compaction:", "compaction:")?;
    Some(wal + tables)
}

/// Bytes LevelDB wrote to table files (flushes and compactions), from the text of its
/// `leveldb.stats` property: the sum of the `Write(MB)` column; `None` if there is no table.
pub fn leveldb_bytes_written(stats: &str) -> Option<f64> {
    let mut lines = stats.lines();
    let header = lines.find(|l| l.trim_start().starts_with("Level"))?;
    let column = header.split_whitespace().position(|w| w == "Write(MB)")?;
    let mut total = 0.0;
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first().is_some_and(|w| w.starts_with('-')) {
            continue;
        }
        if words.first().and_then(|w| w.parse::<u32>().ok()).is_none() {
            break;
        }
        total += words.get(column)?.parse::<f64>().ok()?;
    }
    Some(total * MIB)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rocksdb.stats` of Debian's RocksDB 7.8.3 after 200,000 random puts with a 1 MiB write
    /// buffer (rows shortened to the columns that matter here).
    const ROCKSDB_7_8: &str = "
** Compaction Stats [default] **
Level    Files   Size     Score Read(GB)  Rn(GB) Rnp1(GB) Write(GB) Wnew(GB) Moved(GB) W-Amp
  L0      0/0    0.00 KB   0.0      0.0     0.0      0.0       0.0      0.0       0.0   1.0
  L1      1/0   13.83 MB   0.1      0.1     0.0      0.0       0.1      0.0       0.0   2.9
 Sum      1/0   13.83 MB   0.0      0.1     0.0      0.0       0.1      0.0       0.0   3.9

Uptime(secs): 3.3 total, 3.3 interval
Flush(GB): cumulative 0.021, interval 0.021
Cumulative compaction: 0.08 GB write, 25.32 MB/s write, 0.07 GB read, 21.18 MB/s read, 1.4 seconds
Interval compaction: 0.08 GB write, 25.55 MB/s write, 0.07 GB read, 21.38 MB/s read, 1.4 seconds

** DB Stats **
Uptime(secs): 3.3 total, 3.3 interval
Cumulative writes: 200K writes, 200K keys, 200K commit groups, 1.0 writes per commit group, ingest: 0.02 GB, 7.48 MB/s
Cumulative WAL: 200K writes, 0 syncs, 200000.00 writes per sync, written: 0.02 GB, 7.48 MB/s
Cumulative stall: 00:00:0.000 H:M:S, 0.0 percent
Interval writes: 200K writes, 200K keys, 200K commit groups, 1.0 writes per commit group, ingest: 24.99 MB, 7.55 MB/s
Interval WAL: 200K writes, 0 syncs, 200000.00 writes per sync, written: 0.02 GB, 7.55 MB/s
";

    /// `leveldb.stats` of Debian's LevelDB 1.23 after the same workload.
    const LEVELDB: &str = "                               Compactions
Level  Files Size(MB) Time(sec) Read(MB) Write(MB)
--------------------------------------------------
  0        2        2         0        0        20
  1        3        5         0       38        34
  2        6       10         0       11        11
";

    const GIB: f64 = MIB * 1024.0;

    #[test]
    fn rocksdb_counts_the_cumulative_wal_and_compaction_lines() {
        let bytes = rocksdb_bytes_written(ROCKSDB_7_8).unwrap();
        assert!((bytes - 0.10 * GIB).abs() < 1.0, "{bytes}");
        // The interval lines are not taken for the cumulative ones.
        let only_interval = ROCKSDB_7_8.replace("Cumulative WAL", "Other WAL");
        assert_eq!(rocksdb_bytes_written(&only_interval), None);
        assert_eq!(rocksdb_bytes_written(""), None);
        let mb = ROCKSDB_7_8.replace("written: 0.02 GB", "written: 512.00 MB");
        let bytes = rocksdb_bytes_written(&mb).unwrap();
        assert!((bytes - (0.08 * GIB + 512.0 * MIB)).abs() < 1.0, "{bytes}");
    }

    #[test]
    fn leveldb_sums_the_write_column() {
        assert_eq!(leveldb_bytes_written(LEVELDB), Some(65.0 * MIB));
        let empty = "                               Compactions
Level  Files Size(MB) Time(sec) Read(MB) Write(MB)
--------------------------------------------------
";
        assert_eq!(leveldb_bytes_written(empty), Some(0.0));
        assert_eq!(leveldb_bytes_written("no table here"), None);
        let garbled = LEVELDB.replace("34", "x");
        assert_eq!(leveldb_bytes_written(&garbled), None);
    }

    #[test]
    fn user_bytes_are_the_denominator() {
        let u = UserBytes::default();
        assert_eq!(u.amplification(Some(10.0)), None);
        u.put(b"key", b"value");
        u.delete(b"k");
        u.batch(&[Op::Put(b"ab", b"c"), Op::Delete(b"d")]);
        assert_eq!(u.amplification(Some(26.0)), Some(2.0));
        assert_eq!(u.amplification(None), None);
    }
}
