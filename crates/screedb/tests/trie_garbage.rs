//! Garbage collection of the trie's last level (docs/lsm-trie.md, "Garbage"): overwriting the
//! same keys again and again piles versions into the last level's containers; once a
//! container's tables (by their distinct-key sketches) hold mostly keys another of its tables
//! holds too, it is merged in place, so the files stay a small multiple of the live data and
//! the trie does not grow a level for garbage. With collection left to the pile limit
//! (`gc_garbage_percent = 100`) the same writes deepen the trie and keep every version.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::Path;
use std::sync::Arc;

use screedb::fs::{Fs, MemFs};
use screedb::{Db, Layout, Options, TrieOptions};

const KEYS: u64 = 1500;
const PASSES: u64 = 8;

fn options(fs: Arc<MemFs>, gc_garbage_percent: u32) -> Options {
    Options {
        create_if_missing: true,
        fs,
        layout: Layout::Trie(TrieOptions {
            bucket_bytes: 512,
            split_tables: 2,
            max_tables_per_container: 6,
            gc_garbage_percent,
            ..TrieOptions::default()
        }),
        write_buffer_size: 32 << 10,
        target_file_size: 64 << 10,
        l0_compaction_trigger: 2,
        num_levels: 4,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u64, pass: u64) -> Vec<u8> {
    format!("value-{i}-{pass}-{}", "v".repeat(60)).into_bytes()
}

fn table_bytes(fs: &MemFs, dir: &Path) -> u64 {
    fs.list(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".sst"))
        .map(|n| fs.file_size(&dir.join(n)).unwrap())
        .sum()
}

/// Tables below level 1: the trie grew a level.
fn files_below_level_1(db: &Db) -> usize {
    (2..4)
        .map(|level| {
            let files = db.property(&format!("screedb.num-files-at-level{level}"));
            files.unwrap().parse::<usize>().unwrap()
        })
        .sum()
}

/// Writes every key `PASSES` times, then waits for compaction; returns the database, its
/// table bytes after the first pass and at the end.
fn overwrite(fs: &Arc<MemFs>, dir: &Path, gc_garbage_percent: u32) -> (Db, u64, u64) {
    let db = Db::open(dir, options(fs.clone(), gc_garbage_percent)).unwrap();
    let mut first = 0;
    for pass in 0..PASSES {
        for i in 0..KEYS {
            db.put(key(i), value(i, pass)).unwrap();
        }
        db.flush().unwrap();
        db.wait_for_idle().unwrap();
        if pass == 0 {
            first = table_bytes(fs, dir);
        }
    }
    let last = table_bytes(fs, dir);
    (db, first, last)
}

#[test]
fn a_last_level_of_garbage_is_merged_in_place() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/gc");
    let (db, first, last) = overwrite(&fs, dir, 50);
    assert_eq!(
        files_below_level_1(&db),
        0,
        "{}",
        db.property("screedb.levels").unwrap()
    );
    assert!(
        last < 3 * first,
        "{PASSES} passes kept {last} table bytes against {first} after the first"
    );
    for i in 0..KEYS {
        assert_eq!(
            db.get(key(i)).unwrap(),
            Some(value(i, PASSES - 1)),
            "key {i}"
        );
    }
    drop(db);
    // The sketches outlive a reopen (they are in the MANIFEST): collection goes on.
    let db = Db::open(dir, options(fs.clone(), 50)).unwrap();
    for i in 0..KEYS {
        db.put(key(i), value(i, PASSES)).unwrap();
    }
    db.flush().unwrap();
    db.wait_for_idle().unwrap();
    assert!(table_bytes(&fs, dir) < 3 * first);
    assert_eq!(files_below_level_1(&db), 0);
    drop(db);
    screedb::check::check_database(dir, &options(fs.clone(), 50)).unwrap();
}

#[test]
fn without_collection_the_same_writes_keep_their_garbage() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/nogc");
    let (db, first, last) = overwrite(&fs, dir, 100);
    assert!(files_below_level_1(&db) > 0, "the trie grew a level");
    assert!(last > 4 * first, "{last} table bytes against {first}");
    for i in 0..KEYS {
        assert_eq!(
            db.get(key(i)).unwrap(),
            Some(value(i, PASSES - 1)),
            "key {i}"
        );
    }
}

#[test]
fn versions_a_snapshot_needs_are_kept_and_do_not_keep_the_container_due() {
    // A snapshot taken after the first pass pins its versions through every merge in place;
    // they stay in the merged tables, where the estimate does not count them, so compaction
    // comes to rest instead of merging the same container again and again (counting them made
    // `wait_for_idle` spin forever: checked).
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/snap");
    // Small tables, so a merged container holds several (a container of one table is never
    // merged in place for garbage).
    let small_tables = Options {
        target_file_size: 8 << 10,
        ..options(fs.clone(), 35)
    };
    let db = Arc::new(Db::open(dir, small_tables).unwrap());
    for i in 0..KEYS {
        db.put(key(i), value(i, 0)).unwrap();
    }
    let snapshot = db.snapshot();
    let (done, rested) = std::sync::mpsc::channel();
    let writer = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            for pass in 1..PASSES {
                for i in 0..KEYS {
                    db.put(key(i), value(i, pass)).unwrap();
                }
                db.flush().unwrap();
                db.wait_for_idle().unwrap();
            }
            done.send(()).unwrap();
        })
    };
    rested
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("compaction never came to rest");
    writer.join().unwrap();
    let at = screedb::ReadOptions::at(&snapshot);
    for i in 0..KEYS {
        assert_eq!(
            db.get_with(key(i), &at).unwrap(),
            Some(value(i, 0)),
            "key {i}"
        );
        assert_eq!(
            db.get(key(i)).unwrap(),
            Some(value(i, PASSES - 1)),
            "key {i}"
        );
    }
}
