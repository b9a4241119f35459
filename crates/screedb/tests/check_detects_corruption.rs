//! `check_database` finds damaged tables, a damaged MANIFEST and missing tables, naming the file.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::{Path, PathBuf};

use screedb::check::check_database;
use screedb::{Db, Error, Options};

fn options() -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        ..Options::default()
    }
}

/// A closed database with a few tables and some writes left in the WAL.
fn build(dir: &Path) {
    let db = Db::open(dir, options()).unwrap();
    for round in 0..3u32 {
        for i in 0..2000u32 {
            db.put(
                format!("key{i:06}"),
                format!("value-{round}-{i}-{}", "x".repeat(40)),
            )
            .unwrap();
        }
        db.flush().unwrap();
    }
    db.wait_for_idle().unwrap();
    db.put(b"in-the-wal", b"yes").unwrap();
    db.close().unwrap();
}

fn files_with(dir: &Path, suffix_or_prefix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name.ends_with(suffix_or_prefix) || name.starts_with(suffix_or_prefix)
        })
        .collect();
    out.sort();
    out
}

fn flip_byte(path: &Path, at: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at] ^= 0x40;
    std::fs::write(path, bytes).unwrap();
}

/// Asserts `err` is a corruption error whose message names `file`.
fn assert_names(err: &Error, file: &Path) {
    assert!(err.is_corruption(), "not a corruption error: {err}");
    let name = file.file_name().unwrap().to_str().unwrap();
    assert!(err.to_string().contains(name), "{err} does not name {name}");
}

#[test]
fn a_clean_database_checks_ok() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let report = check_database(dir.path(), &Options::default()).unwrap();
    assert!(report.tables >= 1, "{report:?}");
    assert!(report.entries >= 2000, "{report:?}");
    assert_eq!(report.wal_records, 1, "{report:?}");
    assert!(report.torn_tails.is_empty(), "{report:?}");
    assert!(report.unreferenced_tables.is_empty(), "{report:?}");
    // Checking changed nothing: the database still opens and checks the same.
    let again = check_database(dir.path(), &Options::default()).unwrap();
    assert_eq!(report, again);
}

#[test]
fn a_flipped_byte_in_a_table_is_corruption_naming_the_table() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let tables = files_with(dir.path(), ".sst");
    assert!(!tables.is_empty());
    let victim = &tables[0];
    let len = std::fs::metadata(victim).unwrap().len() as usize;
    flip_byte(victim, len / 2);
    eprintln!(
        "{tables:?} {len} {:?}",
        check_database(dir.path(), &Options::default())
    );
    let err = check_database(dir.path(), &Options::default()).unwrap_err();
    assert_names(&err, victim);
}

#[test]
fn a_flipped_byte_in_the_manifest_is_corruption_naming_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let manifests = files_with(dir.path(), "MANIFEST-");
    assert_eq!(manifests.len(), 1, "{manifests:?}");
    let manifest = &manifests[0];
    let len = std::fs::metadata(manifest).unwrap().len() as usize;
    flip_byte(manifest, len / 2);
    let err = check_database(dir.path(), &Options::default()).unwrap_err();
    assert_names(&err, manifest);
}

#[test]
fn a_missing_table_is_corruption_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let tables = files_with(dir.path(), ".sst");
    let victim = tables.last().unwrap();
    std::fs::remove_file(victim).unwrap();
    let err = check_database(dir.path(), &Options::default()).unwrap_err();
    assert_names(&err, victim);
    assert!(err.to_string().contains("missing"), "{err}");
}
