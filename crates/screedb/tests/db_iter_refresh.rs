//! `DbIterator::refresh` (RocksDB's `Iterator::Refresh`): an iterator of the latest state moves
//! to the state after the writes made since, with either memory component, whether or not a
//! flush or compaction replaced its sources; an iterator at a snapshot, or of a closed
//! database, refuses.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::collections::BTreeMap;
use std::sync::Arc;

use screedb::fs::MemFs;
use screedb::{Db, DbIterator, Error, Memory, Options, ReadOptions};

fn options(memory: Memory) -> Options {
    Options {
        create_if_missing: true,
        fs: Arc::new(MemFs::new()),
        memory,
        write_buffer_size: 16 << 10,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// Everything from the first key on.
fn all(it: &mut DbIterator) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut got = BTreeMap::new();
    it.seek_to_first();
    while it.valid() {
        got.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    got
}

#[test]
fn a_refreshed_iterator_sees_the_writes_made_since() {
    for memory in [Memory::Skiplist, Memory::Flodb] {
        let db = Db::open("/refresh", options(memory)).unwrap();
        let mut model = BTreeMap::new();
        for i in 0..200 {
            db.put(key(i), b"first").unwrap();
            model.insert(key(i), b"first".to_vec());
        }
        let mut it = db.iter(&ReadOptions::default()).unwrap();
        assert_eq!(all(&mut it), model, "{memory:?}");
        for round in 0..4u32 {
            let then = model.clone();
            for i in (round..400).step_by(3) {
                let v = format!("round {round}").into_bytes();
                db.put(key(i), &v).unwrap();
                model.insert(key(i), v);
            }
            db.delete(key(round * 7)).unwrap();
            model.remove(&key(round * 7));
            match round {
                // The same memtable: refreshed in place.
                0 => {}
                // A flush, then a compaction: new sources.
                1 => db.flush().unwrap(),
                _ => db.compact_range(None, None).unwrap(),
            }
            assert_eq!(
                all(&mut it),
                then,
                "{memory:?}, round {round}: before refresh"
            );
            it.refresh().unwrap();
            assert!(!it.valid(), "a refreshed iterator is unpositioned");
            assert_eq!(
                all(&mut it),
                model,
                "{memory:?}, round {round}: after refresh"
            );
            it.seek(&key(100));
            assert_eq!(
                it.key(),
                model.range(key(100)..).next().unwrap().0.as_slice()
            );
        }
        drop(it);
        db.close().unwrap();
    }
}

#[test]
fn snapshots_and_closed_databases_are_not_refreshed() {
    let db = Db::open("/refresh", options(Memory::Skiplist)).unwrap();
    db.put(b"a", b"1").unwrap();
    let snapshot = db.snapshot();
    let mut at = db.iter(&ReadOptions::at(&snapshot)).unwrap();
    db.put(b"b", b"2").unwrap();
    let err = at.refresh().unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
    assert!(err.to_string().contains("snapshot"), "{err}");
    assert_eq!(all(&mut at).len(), 1);
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    drop((at, snapshot));
    db.close().unwrap();
    assert!(it.refresh().is_err());
}
