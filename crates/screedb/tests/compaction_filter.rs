//! A compaction filter drops the newest values it is asked about (written as tombstones), in
//! every layout, but never a value a live snapshot can see.
#![allow(clippy::unwrap_used, reason = "test code")]

mod crash_common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use screedb::compaction::CompactionFilter;
use screedb::fs::MemFs;
use screedb::{Db, Layout, Options, ReadOptions};

/// Drops every value that starts with `x`, counting what it was asked.
#[derive(Debug, Default)]
struct DropX {
    asked: AtomicU64,
}

impl CompactionFilter for DropX {
    fn name(&self) -> &str {
        "test.drop-x"
    }
    fn drop_value(&self, _level: usize, _user_key: &[u8], value: &[u8]) -> bool {
        self.asked.fetch_add(1, Ordering::Relaxed);
        value.first() == Some(&b'x')
    }
}

fn options(layout: &Layout, filter: Arc<DropX>) -> Options {
    Options {
        compaction_filter: Some(filter),
        ..crash_common::tiny_options(Arc::new(MemFs::new()), layout)
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

#[test]
fn filtered_values_vanish_at_compaction_but_not_from_a_snapshot() {
    crash_common::for_each_layout(|name, layout| {
        let filter = Arc::new(DropX::default());
        let db = Db::open("/db", options(layout, Arc::clone(&filter))).unwrap();
        // Old values, then newer ones: every third key's newest value is doomed.
        for i in 0..300 {
            db.put(key(i), format!("old{i}")).unwrap();
        }
        let snapshot = db.snapshot();
        for i in 0..300 {
            let v = if i % 3 == 0 {
                format!("x{i}")
            } else {
                format!("new{i}")
            };
            db.put(key(i), v).unwrap();
        }
        // Written after the snapshot, the doomed values are newer than every live snapshot.
        db.compact_range(None, None).unwrap();
        assert!(
            filter.asked.load(Ordering::Relaxed) > 0,
            "{name}: the filter was asked"
        );
        for i in 0..300 {
            let want = if i % 3 == 0 {
                None
            } else {
                Some(format!("new{i}").into_bytes())
            };
            assert_eq!(db.get(key(i)).unwrap(), want, "{name}: key {i}");
            // The snapshot still sees the value it was taken over.
            assert_eq!(
                db.get_with(key(i), &ReadOptions::at(&snapshot)).unwrap(),
                Some(format!("old{i}").into_bytes()),
                "{name}: key {i} at the snapshot"
            );
        }
        drop(snapshot);
        // A doomed value a live snapshot can see is kept until the snapshot goes.
        db.put(key(1000), b"x-later").unwrap();
        let held = db.snapshot();
        db.compact_range(None, None).unwrap();
        assert_eq!(
            db.get(key(1000)).unwrap(),
            Some(b"x-later".to_vec()),
            "{name}: kept for the snapshot"
        );
        drop(held);
        db.compact_range(None, None).unwrap();
        assert_eq!(db.get(key(1000)).unwrap(), None, "{name}");
        db.close().unwrap();
    });
}
