//! Names of the files in a database directory.
//!
//! ```text
//! CURRENT            name of the live MANIFEST, one line
//! LOCK               held (flock) by the process that has the database open
//! MANIFEST-NNNNNN    version edits, in the log format
//! NNNNNN.log         write-ahead log
//! NNNNNN.sst         table (sorted table, HTable or tree)
//! NNNNNN.bfc         BloomCluster of the trie layout, a side file of table NNNNNN.sst
//! NNNNNN.dbtmp       temporary file (CURRENT being replaced)
//! ```
//! All numbers come from one counter (the manifest's next file number).

use std::path::{Path, PathBuf};

/// What a file in the database directory is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// `CURRENT`.
    Current,
    /// `LOCK`.
    Lock,
    /// `MANIFEST-NNNNNN`.
    Manifest(u64),
    /// `NNNNNN.log`.
    Log(u64),
    /// `NNNNNN.sst`.
    Table(u64),
    /// `NNNNNN.bfc`: the BloomCluster held by table `NNNNNN` (the trie layout).
    Cluster(u64),
    /// `NNNNNN.dbtmp`.
    Temp(u64),
}

/// `dir/CURRENT`.
pub fn current_file(dir: &Path) -> PathBuf {
    dir.join("CURRENT")
}

/// `dir/LOCK`.
pub fn lock_file(dir: &Path) -> PathBuf {
    dir.join("LOCK")
}

/// `MANIFEST-NNNNNN` (the name CURRENT holds).
pub fn manifest_name(number: u64) -> String {
    format!("MANIFEST-{number:06}")
}

/// `dir/MANIFEST-NNNNNN`.
pub fn manifest_file(dir: &Path, number: u64) -> PathBuf {
    dir.join(manifest_name(number))
}

/// `dir/NNNNNN.log`.
pub fn log_file(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.log"))
}

/// `dir/NNNNNN.sst`.
pub fn table_file(dir: &Path, number: u64) -> PathBuf {
    crate::table::table_file_name(dir, number)
}

/// `dir/NNNNNN.bfc`, the BloomCluster of table `number` (docs/lsm-trie.md).
pub fn cluster_file(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.bfc"))
}

/// `dir/NNNNNN.dbtmp`.
pub fn temp_file(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("{number:06}.dbtmp"))
}

/// Classifies a directory entry name; `None` for files that are not the database's.
pub fn parse(name: &str) -> Option<FileKind> {
    match name {
        "CURRENT" => return Some(FileKind::Current),
        "LOCK" => return Some(FileKind::Lock),
        _ => {}
    }
    if let Some(n) = name.strip_prefix("MANIFEST-") {
        return parse_number(n).map(FileKind::Manifest);
    }
    let (stem, ext) = name.split_once('.')?;
    let n = parse_number(stem)?;
    match ext {
        "log" => Some(FileKind::Log(n)),
        "sst" => Some(FileKind::Table(n)),
        "bfc" => Some(FileKind::Cluster(n)),
        "dbtmp" => Some(FileKind::Temp(n)),
        _ => None,
    }
}

fn parse_number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let dir = Path::new("/db");
        for (path, kind) in [
            (log_file(dir, 7), FileKind::Log(7)),
            (table_file(dir, 1234567), FileKind::Table(1234567)),
            (cluster_file(dir, 12), FileKind::Cluster(12)),
            (manifest_file(dir, 3), FileKind::Manifest(3)),
            (temp_file(dir, 9), FileKind::Temp(9)),
            (current_file(dir), FileKind::Current),
            (lock_file(dir), FileKind::Lock),
        ] {
            let name = path.file_name().unwrap().to_str().unwrap();
            assert_eq!(parse(name), Some(kind), "{name}");
        }
        for bad in [
            "",
            "x.log",
            "12.txt",
            "MANIFEST-",
            "MANIFEST-1a",
            ".sst",
            "-1.log",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
