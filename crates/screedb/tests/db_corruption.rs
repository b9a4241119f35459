//! Damaged files are reported with errors naming the file; nothing wrong is returned silently.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::{Path, PathBuf};

use screedb::{Db, Error, Options};

fn options() -> Options {
    Options {
        write_buffer_size: 64 << 10,
        block_cache_bytes: 0,
        compression: screedb::table::CompressionType::None,
        ..Options::default().create_if_missing(true)
    }
}

fn files_ending(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().ends_with(suffix))
        .collect();
    v.sort();
    v
}

fn flip(path: &Path, offset: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[offset as usize] ^= 0x40;
    std::fs::write(path, bytes).unwrap();
}

fn fill(dir: &Path) {
    let db = Db::open(dir, options()).unwrap();
    for i in 0..2000u32 {
        db.put(format!("key{i:05}"), format!("value{i:05}"))
            .unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
}

#[test]
fn flipped_table_byte_is_reported_by_reads_with_the_file_name() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    let tables = files_ending(dir.path(), ".sst");
    assert!(!tables.is_empty());
    flip(&tables[0], 100); // inside the first data block
    let db = Db::open(dir.path(), options()).unwrap();
    let name = tables[0].file_name().unwrap().to_str().unwrap().to_owned();
    let err = db.get("key00000").unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains(&name), "{err}");
    let scan: Vec<_> = db.range::<&[u8]>(..).unwrap().collect();
    let last = scan.last().unwrap();
    let err = last.as_ref().unwrap_err();
    assert!(
        err.is_corruption() && err.to_string().contains(&name),
        "{err}"
    );
    // Untouched blocks still read.
    assert_eq!(db.get("key01999").unwrap(), Some(b"value01999".to_vec()));
}

#[test]
fn flipped_manifest_byte_fails_open_naming_the_manifest() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    let manifests = files_ending(dir.path(), "");
    let manifest = manifests
        .iter()
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("MANIFEST-")
        })
        .unwrap();
    flip(manifest, 20);
    let err = Db::open(dir.path(), options()).unwrap_err();
    assert!(matches!(err, Error::Corruption { .. }), "{err}");
    assert!(err.to_string().contains("MANIFEST-"), "{err}");
}

#[test]
fn damaged_wal_record_before_the_tail_fails_open_naming_the_log() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), options()).unwrap();
        for i in 0..50u32 {
            db.put(format!("key{i:05}"), "v").unwrap();
        }
        // Dropped without flush: the writes live only in the WAL.
    }
    let logs = files_ending(dir.path(), ".log");
    let log = logs.last().unwrap();
    flip(log, 10); // inside the first record, with valid records after it
    let err = Db::open(dir.path(), options()).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    assert!(err.to_string().contains(".log"), "{err}");
}

#[test]
fn torn_wal_tail_is_dropped_and_the_rest_recovered() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path(), options()).unwrap();
        for i in 0..50u32 {
            db.put(format!("key{i:05}"), "v").unwrap();
        }
    }
    let logs = files_ending(dir.path(), ".log");
    let log = logs.last().unwrap();
    let len = std::fs::metadata(log).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(log).unwrap();
    f.set_len(len - 3).unwrap(); // tear the last record
    drop(f);
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(db.get("key00048").unwrap(), Some(b"v".to_vec()));
    assert_eq!(
        db.get("key00049").unwrap(),
        None,
        "a torn record must never be replayed"
    );
    // The database goes on from a fresh log: new writes and a reopen work.
    db.put("after", "x").unwrap();
    db.close().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    assert_eq!(db.get("after").unwrap(), Some(b"x".to_vec()));
    assert_eq!(db.get("key00049").unwrap(), None);
}

#[test]
fn missing_table_fails_open_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    let tables = files_ending(dir.path(), ".sst");
    std::fs::remove_file(&tables[0]).unwrap();
    let err = Db::open(dir.path(), options()).unwrap_err();
    let name = tables[0].file_name().unwrap().to_str().unwrap().to_owned();
    assert!(
        err.to_string().contains(&name) && err.to_string().contains("missing"),
        "{err}"
    );
}

#[test]
fn garbage_current_fails_open() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path());
    std::fs::write(dir.path().join("CURRENT"), b"nonsense").unwrap();
    let err = Db::open(dir.path(), options()).unwrap_err();
    assert!(err.to_string().contains("CURRENT"), "{err}");
}
