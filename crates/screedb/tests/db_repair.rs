//! `repair_db` rebuilds a database whose MANIFEST and CURRENT are gone from its tables and logs,
//! keeping the newest version of every key, and sets unreadable tables aside.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::collections::BTreeMap;
use std::path::Path;

use screedb::{Db, Error, Options, repair_db};

fn options() -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        ..Options::default()
    }
}

fn files_with(dir: &Path, pred: impl Fn(&str) -> bool) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| pred(p.file_name().unwrap().to_str().unwrap()))
        .collect();
    v.sort();
    v
}

fn remove_manifests(dir: &Path) {
    for p in files_with(dir, |n| n == "CURRENT" || n.starts_with("MANIFEST-")) {
        std::fs::remove_file(p).unwrap();
    }
}

fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.range::<&[u8]>(..).unwrap().map(|r| r.unwrap()).collect()
}

/// Old versions of keys sit in deeper levels, newer ones in level 0 and the log, some keys are
/// deleted after being flushed: repair must keep exactly the newest state.
fn populate(dir: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut model = BTreeMap::new();
    let db = Db::open(dir, options()).unwrap();
    for round in 0..4u32 {
        for i in 0..300u32 {
            let (k, v) = (
                format!("key{i:04}"),
                format!("round{round}-{i}-{}", "x".repeat(40)),
            );
            db.put(&k, &v).unwrap();
            model.insert(k.into_bytes(), v.into_bytes());
        }
        for i in (round..300).step_by(7) {
            let k = format!("key{i:04}");
            db.delete(&k).unwrap();
            model.remove(k.as_bytes());
        }
        db.flush().unwrap();
        if round == 1 {
            db.compact_range(None, None).unwrap();
        }
    }
    // Unflushed writes stay in the log.
    db.put("key0001", "in the log").unwrap();
    model.insert(b"key0001".to_vec(), b"in the log".to_vec());
    db.delete("key0002").unwrap();
    model.remove(&b"key0002"[..]);
    assert_eq!(contents(&db), model);
    drop(db); // no close: the log keeps the last writes
    model
}

#[test]
fn repair_rebuilds_the_newest_state_from_tables_and_logs() {
    let dir = tempfile::tempdir().unwrap();
    let model = populate(dir.path());
    assert!(files_with(dir.path(), |n| n.ends_with(".sst")).len() >= 2);
    remove_manifests(dir.path());

    let report = repair_db(dir.path(), &options()).unwrap();
    assert!(report.tables_read >= 2, "{report:?}");
    assert!(
        report.logs_read >= 1 && report.log_batches >= 2,
        "{report:?}"
    );
    assert!(report.tables_lost.is_empty() && report.log_errors.is_empty());
    assert_eq!(report.keys_written, model.len() as u64);

    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(contents(&db), model);
    assert_eq!(db.get("key0001").unwrap(), Some(b"in the log".to_vec()));
    assert_eq!(db.get("key0002").unwrap(), None);
    // New writes get sequence numbers above every repaired entry.
    db.put("key0003", "after repair").unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    assert_eq!(db.get("key0003").unwrap(), Some(b"after repair".to_vec()));
    db.close().unwrap();
    assert!(
        dir.path().join("lost").is_dir(),
        "old logs and manifests are kept"
    );
}

#[test]
fn repair_of_a_healthy_database_changes_nothing_visible() {
    let dir = tempfile::tempdir().unwrap();
    let model = populate(dir.path());
    repair_db(dir.path(), &options()).unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(contents(&db), model);
}

#[test]
fn an_unreadable_table_is_moved_to_lost_and_the_rest_survives() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    db.put("a", "1").unwrap();
    db.flush().unwrap();
    let first = files_with(dir.path(), |n| n.ends_with(".sst"));
    db.put("b", "2").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    // Damage the first table's data block.
    let mut bytes = std::fs::read(&first[0]).unwrap();
    bytes[3] ^= 0xff;
    std::fs::write(&first[0], bytes).unwrap();

    let report = repair_db(dir.path(), &options()).unwrap();
    // Its one data block is lost; the table is salvaged around it (tests/db_repair_salvage.rs).
    assert_eq!(report.tables_salvaged.len(), 1, "{report}");
    assert_eq!(report.tables_salvaged[0].lost.len(), 1, "{report}");
    let name = first[0].file_name().unwrap();
    assert!(dir.path().join("lost").join(name).exists());
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert_eq!(db.get("a").unwrap(), None);
    assert_eq!(db.get("b").unwrap(), Some(b"2".to_vec()));
}

#[test]
fn repair_refuses_an_open_database_and_a_missing_directory() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options()).unwrap();
    assert!(matches!(
        repair_db(dir.path(), &options()),
        Err(Error::Locked(_))
    ));
    drop(db);
    let missing = dir.path().join("missing");
    let err = repair_db(&missing, &options()).unwrap_err();
    assert_eq!(err.io_kind(), Some(std::io::ErrorKind::NotFound), "{err}");
    assert!(!missing.exists());
}

#[test]
fn repair_of_an_empty_directory_makes_an_empty_database() {
    let dir = tempfile::tempdir().unwrap();
    repair_db(dir.path(), &options()).unwrap();
    let db = Db::open(dir.path(), Options::default()).unwrap();
    assert!(contents(&db).is_empty());
}
