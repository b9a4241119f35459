//! `DbIterator::refresh` (RocksDB's `Iterator::Refresh`): an iterator of the latest state moves
//! to the state after the writes made since, with either memory component, whether or not a
//! flush or compaction replaced its sources; an iterator at a snapshot, or of a closed
//! database, refuses.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::collections::BTreeMap;

use screedb::{Db, Error, Memory, ReadOptions};

mod iter_common;
use iter_common::{all, key, options, put_range, runs_options};

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

/// A memtable that starts a new run (`memtable_run_size`) between an iterator's creation and
/// its refresh is the same source with more in it: the refreshed iterator reads the new run.
#[test]
fn a_refresh_reads_the_runs_a_memtable_started_since() {
    for memory in [Memory::Skiplist, Memory::Flodb] {
        let db = Db::open("/refresh-runs", runs_options(memory)).unwrap();
        let mut model = BTreeMap::new();
        put_range(&db, &mut model, 0..100);
        let mut it = db.iter(&ReadOptions::default()).unwrap();
        assert_eq!(all(&mut it), model, "{memory:?}");
        put_range(&db, &mut model, 100..3000);
        assert_eq!(
            db.stats().flushes,
            0,
            "{memory:?}: the writes stay in the memtable"
        );
        it.refresh().unwrap();
        assert_eq!(all(&mut it), model, "{memory:?}");
        drop(it);
        db.close().unwrap();
    }
}
