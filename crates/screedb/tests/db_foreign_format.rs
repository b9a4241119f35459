//! Another engine's database directory is named as such by open and refused by repair, which
//! leaves it untouched (foreign::detect; the real LevelDB case, written by libleveldb itself,
//! is in screedb-cli's tests/import_leveldb.rs).

#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::Path;

use screedb::{Db, Error, ForeignFormat, Options, checksum, repair_db};

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(dir.join(name), bytes).unwrap();
}

/// A LevelDB-style log record holding `payload` (one FULL fragment).
fn log_record(payload: &[u8]) -> Vec<u8> {
    let masked = checksum::mask(checksum::crc32c_extend(checksum::crc32c(&[1]), payload));
    let mut out = masked.to_le_bytes().to_vec();
    out.extend_from_slice(&(payload.len() as u16).to_le_bytes());
    out.push(1);
    out.extend_from_slice(payload);
    out
}

/// The directory's files but LOCK (which every open takes, as LevelDB's and RocksDB's do).
fn listing(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.ends_with("LOCK"))
        .collect();
    v.sort();
    v
}

fn refused(dir: &Path, format: ForeignFormat, evidence: &str) {
    let before = listing(dir);
    let err = Db::open(dir, Options::default().create_if_missing(true)).unwrap_err();
    match &err {
        Error::ForeignFormat {
            format: f,
            evidence: e,
            ..
        } => {
            assert_eq!(*f, format, "{err}");
            assert!(e.contains(evidence), "{err}");
        }
        other => panic!("not a foreign-format error: {other}"),
    }
    let err = repair_db(dir, &Options::default()).unwrap_err();
    assert!(matches!(err, Error::ForeignFormat { .. }), "{err}");
    assert_eq!(before, listing(dir), "open or repair changed the directory");
    assert!(!dir.join("lost").exists());
}

#[test]
fn a_rocksdb_directory_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "CURRENT", b"MANIFEST-000005\n");
    write(
        tmp.path(),
        "MANIFEST-000005",
        &log_record(b"\x01\x1aleveldb.BytewiseComparator"),
    );
    write(tmp.path(), "IDENTITY", b"4f5e\n");
    write(tmp.path(), "OPTIONS-000007", b"[Version]\n");
    refused(tmp.path(), ForeignFormat::RocksDb, "IDENTITY");
    let err = Db::open(tmp.path(), Options::default()).unwrap_err();
    assert!(err.to_string().contains("RocksDB"), "{err}");
}

#[test]
fn a_leveldb_manifest_is_named_even_without_tables() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "CURRENT", b"MANIFEST-000002\n");
    // LevelDB's first edit: comparator (tag 1, varint length 26), log number 0, next file 3.
    let mut edit = b"\x01\x1aleveldb.BytewiseComparator".to_vec();
    edit.extend_from_slice(b"\x02\x00\x03\x03\x04\x00");
    write(tmp.path(), "MANIFEST-000002", &log_record(&edit));
    refused(tmp.path(), ForeignFormat::LevelDb, "MANIFEST-000002");
}

#[test]
fn leveldb_tables_are_named_by_extension_or_magic() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "CURRENT", b"MANIFEST-000002\n");
    write(tmp.path(), "MANIFEST-000002", b"not read");
    write(tmp.path(), "000005.ldb", b"any");
    refused(tmp.path(), ForeignFormat::LevelDb, "000005.ldb");

    // A LevelDB table from before 1.14 is named .sst: its magic tells.
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "CURRENT", b"MANIFEST-000002\n");
    write(tmp.path(), "MANIFEST-000002", b"not read");
    let mut table = vec![0u8; 40];
    table.extend_from_slice(&0xdb47_7524_8b80_fb57u64.to_le_bytes());
    write(tmp.path(), "000005.sst", &table);
    refused(tmp.path(), ForeignFormat::LevelDb, "LevelDB's table magic");
}
