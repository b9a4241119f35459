//! `Options::bytes_per_sync`: tables are handed to the write-back as they are written, every so
//! many bytes, on every layout; and a write-back is no sync.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::sync::Arc;

use screedb::fs::{FaultFs, Fs, MemFs, write_back_every};
use screedb::table::CompressionType;
use screedb::{Db, InfoLog, Layout, LayoutKind, Options};

const DIR: &str = "/db";

fn options(fault: &FaultFs, layout: LayoutKind, bytes_per_sync: u64) -> Options {
    Options {
        create_if_missing: true,
        fs: Arc::new(fault.clone()),
        layout: Layout::with_defaults(layout),
        bytes_per_sync,
        write_buffer_size: 256 << 10,
        // Uncompressed, so the tables' size is the data's.
        compression: CompressionType::None,
        info_log: InfoLog::Off,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:08}").into_bytes()
}

fn value(i: u32) -> Vec<u8> {
    format!("value{i:08}-").repeat(8).into_bytes()
}

/// Writes 3,000 keys (about 330 KB) and flushes them into tables; returns the write-backs
/// started and the bytes the tables took.
fn fill(layout: LayoutKind, bytes_per_sync: u64) -> (u64, u64) {
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let db = Db::open(DIR, options(&fault, layout, bytes_per_sync)).unwrap();
    for i in 0..3000 {
        db.put(key(i), value(i)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_idle().unwrap();
    let table_bytes = db.stats().bytes_per_level.iter().sum::<u64>();
    for i in (0..3000).step_by(97) {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i)));
    }
    db.close().unwrap();
    (fault.stats().write_backs, table_bytes)
}

#[test]
fn tables_are_written_back_every_bytes_per_sync() {
    for layout in [
        LayoutKind::Flsm,
        LayoutKind::Leveled,
        LayoutKind::Trie,
        LayoutKind::Jungle,
    ] {
        let (none, _) = fill(layout, 0);
        assert_eq!(none, 0, "{layout:?}: bytes_per_sync 0 starts no write-back");
        let (every_4k, table_bytes) = fill(layout, 4096);
        assert!(table_bytes > 200_000, "{layout:?}: {table_bytes}");
        // A write-back per 4 KiB of the tables that hold the data, less a file's last partial
        // step, which its sync covers (compactions write more).
        assert!(
            every_4k >= table_bytes / 4096 * 3 / 4,
            "{layout:?}: {every_4k} write-backs for {table_bytes} table bytes"
        );
    }
}

/// A write-back is no sync: after a power loss a file keeps only what was synced, however
/// many write-backs its later bytes went through. (The crash suites run with write-backs every
/// 4 KiB, `crash_common::tiny_options`.)
#[test]
fn a_write_back_makes_nothing_durable() {
    let fault = FaultFs::new(Arc::new(MemFs::new()));
    let path = std::path::Path::new("/f");
    let mut f = write_back_every(fault.create(path).unwrap(), 4096);
    f.append(&[1u8; 5000]).unwrap();
    f.sync().unwrap();
    for _ in 0..10 {
        f.append(&[2u8; 3000]).unwrap();
    }
    // At 4,096 bytes, then (counting again from the sync) at each 4,096 of the 30,000 more.
    assert_eq!(fault.stats().write_backs, 1 + 7, "{:?}", fault.stats());
    drop(f);
    fault.sync_dir(std::path::Path::new("/")).unwrap();
    fault.crash();
    assert_eq!(
        screedb::fs::read_all(&fault, path).unwrap(),
        vec![1u8; 5000],
        "only the synced bytes survive"
    );
}
