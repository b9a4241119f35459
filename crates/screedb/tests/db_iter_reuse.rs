//! Iterators made one after another reuse the sources of the one dropped before (`db/iter_pool.rs`):
//! each still reads the database as of its own creation, whatever was written, flushed or
//! compacted between them, and at a snapshot reads the snapshot.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::collections::BTreeMap;

use screedb::{Db, Memory, ReadOptions};

mod iter_common;
use iter_common::{all, key, options, put_range, runs_options};

/// Everything a new iterator at `read` sees, from the first key on; the iterator is dropped.
fn scan(db: &Db, read: &ReadOptions<'_>) -> BTreeMap<Vec<u8>, Vec<u8>> {
    all(&mut db.iter(read).unwrap())
}

#[test]
fn each_new_iterator_reads_the_state_of_its_creation() {
    for memory in [Memory::Skiplist, Memory::Flodb] {
        let db = Db::open("/reuse", options(memory)).unwrap();
        let mut model = BTreeMap::new();
        for round in 0..12u32 {
            for i in (round..300).step_by(4) {
                let v = format!("round {round}").into_bytes();
                db.put(key(i), &v).unwrap();
                model.insert(key(i), v);
            }
            db.delete(key(round * 11)).unwrap();
            model.remove(&key(round * 11));
            // Mostly the same memtable between two iterators (its sources are reused), now and
            // then a flush or a compaction (new sources).
            match round % 6 {
                4 => db.flush().unwrap(),
                5 => db.compact_range(None, None).unwrap(),
                _ => {}
            }
            let snapshot = db.snapshot();
            let at_snapshot = model.clone();
            assert_eq!(
                scan(&db, &ReadOptions::default()),
                model,
                "{memory:?}, round {round}"
            );
            // Written after the snapshot: seen by a new iterator, not by one at the snapshot.
            db.put(key(1000 + round), b"later").unwrap();
            model.insert(key(1000 + round), b"later".to_vec());
            assert_eq!(
                scan(&db, &ReadOptions::at(&snapshot)),
                at_snapshot,
                "{memory:?}, round {round}: at the snapshot"
            );
            assert_eq!(
                scan(&db, &ReadOptions::default()),
                model,
                "{memory:?}, round {round}: after the snapshot"
            );
            // A seek on a reused iterator starts from its target, not from where the last
            // iterator stopped.
            let mut it = db.iter(&ReadOptions::default()).unwrap();
            it.seek(&key(150));
            let want = model.range(key(150)..).next().unwrap();
            assert_eq!(
                (it.key(), it.value()),
                (want.0.as_slice(), want.1.as_slice())
            );
            it.seek_to_last();
            let last = model.iter().next_back().unwrap();
            assert_eq!(it.key(), last.0.as_slice(), "{memory:?}, round {round}");
        }
        db.close().unwrap();
    }
}

/// A memtable that started a new run (`memtable_run_size`) since an iterator was dropped holds
/// more than that iterator's sources read: the next iterator reads the new run too.
#[test]
fn an_iterator_after_new_memtable_runs_reads_them() {
    for memory in [Memory::Skiplist, Memory::Flodb] {
        let db = Db::open("/reuse-runs", runs_options(memory)).unwrap();
        let mut model = BTreeMap::new();
        put_range(&db, &mut model, 0..100);
        assert_eq!(scan(&db, &ReadOptions::default()), model, "{memory:?}");
        put_range(&db, &mut model, 100..3000);
        assert_eq!(
            db.stats().flushes,
            0,
            "{memory:?}: the writes stay in the memtable"
        );
        assert_eq!(scan(&db, &ReadOptions::default()), model, "{memory:?}");
        db.close().unwrap();
    }
}
