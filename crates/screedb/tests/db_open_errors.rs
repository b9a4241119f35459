//! Opening a database the wrong way gives an error that says what was wrong.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::sync::Arc;

use screedb::{Comparator, Db, Error, Options};

fn create() -> Options {
    Options::default().create_if_missing(true)
}

#[test]
fn missing_database_without_create_if_missing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope");
    let err = Db::open(&path, Options::default()).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err}");
    assert!(
        err.to_string()
            .contains("does not exist (create_if_missing is false)"),
        "{err}"
    );
    // An existing but empty directory is not a database either.
    let err = Db::open(dir.path(), Options::default()).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err}");
}

#[test]
fn existing_database_with_error_if_exists() {
    let dir = tempfile::tempdir().unwrap();
    Db::open(dir.path(), create()).unwrap().close().unwrap();
    let opts = Options {
        error_if_exists: true,
        ..create()
    };
    let err = Db::open(dir.path(), opts).unwrap_err();
    assert!(
        err.to_string()
            .contains("already exists (error_if_exists is true)"),
        "{err}"
    );
}

#[test]
fn second_open_is_refused_as_locked() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), create()).unwrap();
    let err = Db::open(dir.path(), create()).unwrap_err();
    assert!(matches!(err, Error::Locked(_)), "{err}");
    assert!(
        err.to_string()
            .contains("database is locked by another process"),
        "{err}"
    );
    drop(db);
    Db::open(dir.path(), create()).unwrap();
}

#[derive(Debug)]
struct Reverse;

impl Comparator for Reverse {
    fn name(&self) -> &str {
        "test.Reverse"
    }
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        b.cmp(a)
    }
}

#[test]
fn other_comparator_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), create()).unwrap();
    db.put("a", "1").unwrap();
    db.close().unwrap();
    let opts = Options {
        comparator: Arc::new(Reverse),
        ..create()
    };
    let err = Db::open(dir.path(), opts).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::ComparatorMismatch { .. }), "{msg}");
    assert!(
        msg.contains("leveldb.BytewiseComparator") && msg.contains("test.Reverse"),
        "{msg}"
    );
}

#[test]
fn custom_comparator_orders_iteration() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        comparator: Arc::new(Reverse),
        ..create()
    };
    let db = Db::open(dir.path(), opts.clone()).unwrap();
    for k in ["a", "c", "b"] {
        db.put(k, k).unwrap();
    }
    db.flush().unwrap();
    let keys: Vec<Vec<u8>> = db
        .range::<&[u8]>(..)
        .unwrap()
        .map(|kv| kv.unwrap().0)
        .collect();
    assert_eq!(keys, vec![b"c".to_vec(), b"b".to_vec(), b"a".to_vec()]);
    db.close().unwrap();
    let db = Db::open(dir.path(), opts).unwrap();
    assert_eq!(db.get("b").unwrap(), Some(b"b".to_vec()));
}

#[test]
fn bad_options_name_the_option() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        max_write_buffers: 1,
        ..create()
    };
    let err = Db::open(dir.path(), opts).unwrap_err();
    assert!(err.to_string().contains("max_write_buffers"), "{err}");
    for nice in [-1, 20] {
        let opts = Options {
            background_nice: nice,
            ..create()
        };
        let err = Db::open(dir.path(), opts).unwrap_err();
        assert!(err.to_string().contains("background_nice"), "{err}");
    }
    let opts = Options {
        memtable_run_size: 100,
        ..create()
    };
    let err = Db::open(dir.path(), opts).unwrap_err();
    assert!(err.to_string().contains("memtable_run_size"), "{err}");
}

#[test]
fn oversized_key_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), create()).unwrap();
    let key = vec![b'k'; screedb::key::MAX_KEY_LEN + 1];
    let err = db.put(&key, "v").unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(err.to_string().contains("over the limit"), "{err}");
    // The database is still writable: a bad argument is not a sticky failure.
    db.put("ok", "v").unwrap();
    assert_eq!(db.get("ok").unwrap(), Some(b"v".to_vec()));
}

#[test]
fn destroy_removes_the_database_and_refuses_an_open_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let db = Db::open(&path, create()).unwrap();
    db.put("a", "1").unwrap();
    let err = Db::destroy(&path, &Options::default()).unwrap_err();
    assert!(matches!(err, Error::Locked(_)), "{err}");
    db.close().unwrap();
    Db::destroy(&path, &Options::default()).unwrap();
    assert!(!path.exists());
}
