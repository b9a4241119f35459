//! A full compaction of thousands of small tables holds about `max_open_tables` files open, not
//! one per input table (issue 15: dense FLSM guards and `compact_range(None, None)` reached the
//! process's file limit and the database turned read-only on EMFILE).
//!
//! One test in this file: it counts the process's descriptors (`/proc/self/fd`), which other
//! tests running in parallel would disturb.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use screedb::{Db, GuardBits, Options, WriteOptions};

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

fn tables(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "sst")
        })
        .count()
}

#[test]
fn a_full_compaction_of_dense_guards_stays_within_max_open_tables() {
    let dir = tempfile::tempdir().unwrap();
    let max_open_tables = 16;
    let mut options = Options {
        create_if_missing: true,
        max_open_tables,
        num_levels: 4,
        write_buffer_size: 256 << 10,
        target_file_size: 16 << 10,
        block_cache_bytes: 0,
        max_background_jobs: 1,
        ..Options::default()
    };
    // A guard every ~64 keys at level 1, every ~8 at level 3: thousands of fragments.
    options.layout.flsm_mut().unwrap().guard_bits = GuardBits::Fixed {
        top_level_bits: 6,
        bit_decrement: 1,
    };
    let db = Db::open(dir.path(), options).unwrap();
    let value = vec![b'v'; 100];
    for i in 0..60_000u32 {
        db.put(format!("key{i:06}"), &value).unwrap();
    }
    db.flush().unwrap();
    let baseline = open_descriptors();
    let tables_before = tables(dir.path());

    let peak = AtomicUsize::new(baseline);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                peak.fetch_max(open_descriptors(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(500));
            }
        });
        db.compact_range(None, None).unwrap();
        done.store(true, Ordering::Relaxed);
    });
    let tables_after = tables(dir.path());
    let peak = peak.load(Ordering::Relaxed);
    eprintln!(
        "{peak} descriptors at most (baseline {baseline}); {tables_before} -> {tables_after} tables"
    );
    // The table cache's bound, plus a few runs of inputs, a writer, the WAL, the MANIFEST and
    // the directory being synced.
    let allowed = baseline + max_open_tables + 24;
    assert!(
        tables_after > 4 * max_open_tables,
        "the compaction must write many more tables than max_open_tables to mean anything \
         ({tables_before} tables before, {tables_after} after)"
    );
    assert!(
        peak <= allowed,
        "{peak} descriptors open during the compaction (baseline {baseline}, \
         max_open_tables {max_open_tables}, {tables_after} tables)"
    );
    // Still writable: no descriptor ran out.
    db.write(screedb::WriteBatch::new(), &WriteOptions::synced())
        .unwrap();
    db.put("after", "compaction").unwrap();
    assert_eq!(db.get("key000123").unwrap(), Some(value));
}
