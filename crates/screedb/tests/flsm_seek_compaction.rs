//! FLSM seek-based compaction: reads alone (no writes) make hot guards with overlapping
//! fragments compact, and level 0 too once seeks keep paying for several of its tables; the
//! bytes those compactions write stay within `seek_compaction_budget_percent` of the user bytes
//! written plus the block reads overlapping tables cost.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::sync::Arc;

use screedb::fs::MemFs;
use screedb::{Db, GuardBits, Layout, Options, ReadOptions};

const KEYS: u64 = 4000;

fn options(budget_percent: u64) -> Options {
    let mut o = Options {
        create_if_missing: true,
        layout: Layout::default(),
        write_buffer_size: 16 << 10,
        target_file_size: 8 << 10,
        l0_compaction_trigger: 2,
        max_bytes_for_level_base: 64 << 10,
        level_size_multiplier: 4,
        num_levels: 4,
        max_background_jobs: 1,
        block_cache_bytes: 0,
        // No filters: every get that probes an older fragment then reads a block of it, so the
        // gets as well as the seeks ask for seek compactions (plenty, for the budget to bound).
        bloom_bits_per_key: 0,
        fs: Arc::new(MemFs::new()),
        ..Options::default()
    };
    o.layout.flsm_mut().unwrap().guard_bits = GuardBits::Fixed {
        top_level_bits: 6,
        bit_decrement: 1,
    };
    o.layout.flsm_mut().unwrap().seek_compaction_threshold = 8;
    o.layout.flsm_mut().unwrap().seek_compaction_budget_percent = budget_percent;
    o
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// Opens a database with `o` and loads every key three times in a scattered order, so guards
/// collect overlapping fragments; returns once compactions are done. Waiting for the background
/// work every 64 puts makes the tree it leaves the same on every run: left to race the writer,
/// compactions sometimes left no guard that 12,000 gets would push past a threshold of 64.
fn load(o: Options) -> Db {
    let db = Db::open("/db", o).unwrap();
    for round in 0..3u64 {
        for i in 0..KEYS {
            let k = (i * 7919 + round * 13) % KEYS;
            db.put(key(k), format!("value-{round}-{k:0>40}")).unwrap();
            if i % 64 == 63 {
                db.wait_for_idle().unwrap();
            }
        }
    }
    db.flush().unwrap();
    db.wait_for_idle().unwrap();
    db
}

/// Loads keys in a scattered order (several rounds, so guards collect overlapping fragments),
/// waits for compactions, then only reads: every key by `get`, and a seek to every 7th key.
/// Returns the stats before and after the read-only phase, and whether a seek compaction ran
/// before anything but the reads woke the background threads.
fn run(budget_percent: u64) -> (screedb::Stats, screedb::Stats, Db, bool) {
    let db = load(options(budget_percent));
    let before = db.stats();
    for _ in 0..3 {
        for k in 0..KEYS {
            let v = db.get(key(k)).unwrap().unwrap();
            assert!(v.starts_with(b"value-"), "{k}");
        }
        let mut it = db.iter(&ReadOptions::default()).unwrap();
        for k in (0..KEYS).step_by(7) {
            it.seek(&key(k));
            assert_eq!(it.key(), key(k).as_slice());
        }
    }
    // Reads alone must wake the background threads (wait_for_idle would find the work itself,
    // so wait without it; the bound only turns a missed wake-up into a failure, not a hang).
    let mut woken = false;
    if budget_percent > 0 {
        for _ in 0..6000 {
            woken = db.stats().seek_compactions > before.seek_compactions;
            if woken {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    db.wait_for_idle().unwrap();
    (before, db.stats(), db, woken)
}

#[test]
fn reads_alone_trigger_seek_compaction_within_the_budget() {
    let (before, after, db, woken) = run(100);
    assert!(woken, "reads did not wake the background threads");
    assert_eq!(
        before.user_bytes_written, after.user_bytes_written,
        "read-only"
    );
    assert_eq!(before.flushes, after.flushes, "read-only");
    assert!(
        after.seek_compactions > before.seek_compactions,
        "no seek compaction fired in the read-only phase: {after}\n{}",
        db.property("screedb.levels").unwrap_or_default()
    );
    assert!(
        after.seek_compaction_bytes_written <= after.user_bytes_written + after.overlap_read_bytes
    );
    assert!(after.overlap_read_bytes > before.overlap_read_bytes);
    // Reads still see every key, with its last value.
    for k in 0..KEYS {
        let v = db.get(key(k)).unwrap().unwrap();
        assert_eq!(v, format!("value-2-{k:0>40}").into_bytes());
    }
    db.close().unwrap();
}

/// Whatever the reads ask for, seek compactions write at most `percent` of the user bytes
/// written plus the block reads overlapping tables cost (`overlap_read_bytes`), which grow with
/// the reads; 0 disables them. (That the budget refuses a compaction which does not fit is the
/// strategy's unit test `seek_compaction_stays_within_its_budget`.)
#[test]
fn seek_compaction_stays_within_what_writes_and_reads_earned() {
    let earned = |s: &screedb::Stats| s.user_bytes_written + s.overlap_read_bytes;
    for percent in [1, 3] {
        let (_, bounded, db, _) = run(percent);
        assert!(bounded.overlap_read_bytes > 0);
        assert!(
            bounded.seek_compaction_bytes_written <= earned(&bounded) * percent / 100,
            "{percent}%: {} written, {} earned",
            bounded.seek_compaction_bytes_written,
            earned(&bounded)
        );
        // More reads earn only their share of what they paid.
        for _ in 0..3 {
            for k in 0..KEYS {
                db.get(key(k)).unwrap();
            }
        }
        db.wait_for_idle().unwrap();
        let more = db.stats();
        assert!(more.seek_compaction_bytes_written <= earned(&more) * percent / 100);
    }
    let (_, off, _, _) = run(0);
    assert_eq!(off.seek_compactions, 0);
}

/// Seek compactions the gets alone cause, reading every key three times after a load, with
/// `bloom_bits` Bloom filter bits per key.
fn seek_compactions_from_gets(bloom_bits: u32) -> u64 {
    let mut o = options(100);
    o.bloom_bits_per_key = bloom_bits;
    o.layout.flsm_mut().unwrap().seek_compaction_threshold = 64;
    let db = load(o);
    let before = db.stats().seek_compactions;
    for _ in 0..3 {
        for k in 0..KEYS {
            assert!(db.get(key(k)).unwrap().is_some(), "{k}");
        }
    }
    db.wait_for_idle().unwrap();
    db.stats().seek_compactions - before
}

/// A get counts a guard only when it read a data block of a fragment that did not hold the
/// key: without filters every probe of an older fragment is such a read, and the gets alone
/// compact the guards; with Bloom filters the older fragments rule the key out without a read
/// (but for ~1% false positives), and the same gets compact nothing.
#[test]
fn gets_count_only_the_block_reads_fragments_cost() {
    let unfiltered = seek_compactions_from_gets(0);
    assert!(unfiltered > 0, "gets without filters never seek-compacted");
    assert_eq!(
        seek_compactions_from_gets(10),
        0,
        "filtered probes were counted"
    );
}

/// A store whose last writes left several level-0 tables (under the compaction trigger) and
/// then only serves seeks: the seeks pay for every level-0 table, and level 0 is compacted
/// into level 1 without another write.
#[test]
fn seeks_alone_compact_a_level0_left_under_its_trigger() {
    let mut o = options(10);
    o.l0_compaction_trigger = 8;
    o.l0_slowdown_trigger = 16;
    o.l0_stop_trigger = 24;
    let db = Db::open("/db", o).unwrap();
    for round in 0..4u64 {
        for k in 0..500 {
            db.put(key(k * 8 + round), "v").unwrap();
        }
        db.flush().unwrap();
    }
    db.wait_for_idle().unwrap();
    let before = db.stats();
    assert!(before.files_per_level[0] >= 2, "{before}");
    // Each round's iterator counts its seeks on the version it was made on, and the
    // compaction they ask for runs once it is dropped (the tables overlap, so all four are
    // merged into one run of level 1, never the oldest moved alone); waiting after each round
    // lets the next iterator start on the version it made.
    for _ in 0..4 {
        let mut it = db.iter(&ReadOptions::default()).unwrap();
        for k in 0..500 {
            it.seek(&key(k * 8));
            assert!(it.valid());
        }
        drop(it);
        db.wait_for_idle().unwrap();
    }
    let after = db.stats();
    assert_eq!(after.user_bytes_written, before.user_bytes_written);
    assert_eq!(after.files_per_level[0], 0, "{after}");
    assert!(after.seek_compactions > before.seek_compactions, "{after}");
    for k in (0..500).flat_map(|k| (0..4).map(move |r| k * 8 + r)) {
        assert_eq!(db.get(key(k)).unwrap().as_deref(), Some(&b"v"[..]), "{k}");
    }
}
