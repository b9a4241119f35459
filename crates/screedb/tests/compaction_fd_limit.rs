//! Under a low descriptor limit (`ulimit -n 96`), a 100,000-operation batch over dense FLSM
//! guards (`Fixed { 3, 1 }`: a guard about every 8 keys at level 1, so some 12,000 tables) is
//! flushed, compacted in full and read back, and the database stays writable (issue 15: such a batch turned the database read-only
//! on EMFILE, a compaction holding one descriptor per output table).
//!
//! The test runs itself again in a child process whose limit `sh -c 'ulimit -n ...'` lowered,
//! so the limit binds nothing else.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::process::Command;

use screedb::{Db, GuardBits, Options, WriteBatch, WriteOptions};

const CHILD: &str = "SCREEDB_FD_LIMIT_CHILD";
const LIMIT: u32 = 96;
const OPS: u32 = 100_000;

fn key(i: u32) -> String {
    format!("key{i:07}")
}

fn options() -> Options {
    let mut options = Options {
        create_if_missing: true,
        max_open_tables: 16,
        num_levels: 2,
        write_buffer_size: 1 << 20,
        target_file_size: 16 << 10,
        block_cache_bytes: 0,
        max_background_jobs: 1,
        ..Options::default()
    };
    options.layout.flsm_mut().unwrap().guard_bits = GuardBits::Fixed {
        top_level_bits: 3,
        bit_decrement: 1,
    };
    options
}

/// What the child runs under the low limit.
fn batch_compact_and_read(dir: &std::path::Path) {
    let db = Db::open(dir, options()).unwrap();
    let mut batch = WriteBatch::new();
    for i in 0..OPS {
        batch.put(key(i), format!("value {i}"));
    }
    db.write(batch, &WriteOptions::default()).unwrap();
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
    let tables = std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "sst")
        })
        .count();
    assert!(
        tables > 2 * LIMIT as usize,
        "the compaction must write many more tables than the descriptor limit to mean anything \
         ({tables} tables)"
    );
    for i in (0..OPS).step_by(97) {
        assert_eq!(
            db.get(key(i)).unwrap(),
            Some(format!("value {i}").into_bytes())
        );
    }
    db.put("after", "compaction").unwrap();
    db.close().unwrap();
    let db = Db::open(dir, options()).unwrap();
    assert_eq!(db.get("after").unwrap(), Some(b"compaction".to_vec()));
    assert!(db.get(key(OPS - 1)).unwrap().is_some());
}

#[test]
fn a_large_batch_over_dense_guards_runs_under_a_low_descriptor_limit() {
    if let Some(dir) = std::env::var_os(CHILD) {
        batch_compact_and_read(std::path::Path::new(&dir));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -n {LIMIT} && exec \"$0\" --exact \
             a_large_batch_over_dense_guards_runs_under_a_low_descriptor_limit --nocapture"
        ))
        .arg(&exe)
        .env(CHILD, dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the child under `ulimit -n {LIMIT}` failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The child really ran the scenario (not an empty filter match).
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
