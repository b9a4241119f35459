//! Databases and a table written by an earlier ScreeDB (checked in under `tests/fixtures/`, see
//! `fixtures_gen.rs`) still open, read back every key and check clean with today's code. A
//! format change that breaks this test is a format change: bump the version and keep the old
//! reader; never regenerate the fixtures to make it pass.
#![allow(clippy::unwrap_used, reason = "test code")]

mod fixtures_common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fixtures_common::{DB_FIXTURES, DbFixture, TABLE_FIXTURE};
use screedb::check::{check_database, stored_layout};
use screedb::comparator::{InternalKeyComparator, default_comparator};
use screedb::fs::{Fs, OsFs};
use screedb::iter::InternalIterator;
use screedb::key::user_key;
use screedb::table::{Table, TableOptions};
use screedb::{Db, ReadOptions};

fn fixture_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A copy of fixture `name` (a directory or a file) in a fresh temporary directory: opening a
/// database writes to it, and the checked-in files must never change.
fn copy_fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let from = fixture_path(name);
    assert!(from.exists(), "fixture {} is missing", from.display());
    let tmp = tempfile::tempdir().unwrap();
    let to = tmp.path().join(name);
    if from.is_dir() {
        std::fs::create_dir(&to).unwrap();
        for entry in std::fs::read_dir(&from).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    } else {
        std::fs::copy(&from, &to).unwrap();
    }
    (tmp, to)
}

/// Every key the fixture's rounds touched reads back as the model says, and a full scan both
/// ways yields exactly the model, in order.
fn assert_contents(db: &Db, fixture: &DbFixture) {
    let expected = fixtures_common::expected(fixture);
    assert!(
        expected.len() > 200,
        "the model holds {} keys",
        expected.len()
    );
    for k in fixtures_common::every_key() {
        assert_eq!(
            db.get(&k).unwrap(),
            expected.get(&k).cloned(),
            "{}: key {}",
            fixture.dir,
            String::from_utf8_lossy(&k)
        );
    }
    if !fixture.layout.keeps_key_order() {
        // The trie keeps no key order: the gets above are the whole check.
        return;
    }
    let want: Vec<(Vec<u8>, Vec<u8>)> = expected.into_iter().collect();
    let mut it = db.iter(&ReadOptions::default()).unwrap();
    let mut forward = Vec::new();
    it.seek_to_first();
    while it.valid() {
        forward.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    assert!(forward == want, "{}: forward scan differs", fixture.dir);
    let mut backward = Vec::new();
    it.seek_to_last();
    while it.valid() {
        backward.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    backward.reverse();
    assert!(backward == want, "{}: backward scan differs", fixture.dir);
}

fn read_db_fixture(fixture: &DbFixture) {
    let (_tmp, dir) = copy_fixture(fixture.dir);
    let options = fixtures_common::options(fixture);
    assert_eq!(stored_layout(&dir, &options).unwrap(), fixture.layout);

    // The files as written: every table and log record checks, nothing is torn or stray.
    let report = check_database(&dir, &options).unwrap();
    assert!(report.torn_tails.is_empty(), "{report:?}");
    assert!(report.unreferenced_tables.is_empty(), "{report:?}");
    assert_eq!(
        report.tables_per_level[0] >= 1,
        fixture.level0,
        "{report:?}"
    );
    assert!(
        report.tables_per_level[1..].iter().sum::<usize>() >= 2,
        "{report:?}"
    );
    assert_eq!(report.wal_records > 0, fixture.wal_round, "{report:?}");

    let db = Db::open(&dir, options.clone()).unwrap();
    assert_contents(&db, fixture);
    db.close().unwrap();

    // What today's code wrote on top (a new WAL, MANIFEST records) checks clean and reads the
    // same after a second open.
    let again = check_database(&dir, &options).unwrap();
    assert!(again.torn_tails.is_empty(), "{again:?}");
    let db = Db::open(&dir, options).unwrap();
    assert_contents(&db, fixture);
    db.close().unwrap();
}

#[test]
fn the_flsm_fixture_reads_back_every_key() {
    read_db_fixture(&DB_FIXTURES[0]);
}

#[test]
fn the_leveled_fixture_reads_back_every_key() {
    read_db_fixture(&DB_FIXTURES[1]);
}

#[test]
fn the_trie_fixture_reads_back_every_key() {
    read_db_fixture(&DB_FIXTURES[2]);
}

/// The trie fixture of 2026-11-29 keeps its last level's Bloom filters in BloomClusters of
/// format version 1 (pages without box offsets): `check` reads every page and today's gets
/// are answered through them.
#[test]
fn the_trie_fixture_with_version_1_clusters_reads_back_every_key() {
    let fixture = &DB_FIXTURES[3];
    read_db_fixture(fixture);
    let (_tmp, dir) = copy_fixture(fixture.dir);
    let clusters: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bfc"))
        .collect();
    assert!(clusters.len() > 4, "{clusters:?}");
    for path in &clusters {
        let bytes = std::fs::read(path).unwrap();
        // The footer's format_version: 28 bytes into the 44-byte footer.
        let at = bytes.len() - 44 + 28;
        let version = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        assert_eq!(version, 1, "{}", path.display());
    }
    let options = fixtures_common::options(fixture);
    let report = check_database(&dir, &options).unwrap();
    // The clusters of each container's highest-numbered table; the others wait for their
    // holders to go.
    assert!(report.clusters >= 8, "{report:?}");
    let db = Db::open(&dir, options).unwrap();
    assert_contents(&db, fixture);
    let reads = db.stats().hashed_reads;
    assert!(reads.cluster_reads > 0, "{reads:?}");
    db.close().unwrap();
}

#[test]
fn the_jungle_fixture_reads_back_every_key() {
    read_db_fixture(&DB_FIXTURES[4]);
}

#[test]
fn the_table_fixture_reads_back_every_entry() {
    let (_tmp, path) = copy_fixture(TABLE_FIXTURE);
    let icmp = InternalKeyComparator::new(default_comparator());
    let table = Arc::new(
        Table::open(
            OsFs.open(&path).unwrap(),
            path.clone(),
            1,
            TableOptions::default(),
            icmp,
            None,
        )
        .unwrap(),
    );
    table.verify_all_blocks().unwrap();
    let want = fixtures_common::table_entries();
    assert_eq!(table.properties().num_entries, want.len() as u64);
    assert!(table.properties().num_data_blocks > 1);

    let mut it = table.table_iter();
    let mut got = Vec::new();
    it.seek_to_first();
    while it.valid() {
        got.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    assert!(
        got == want,
        "the table's entries differ from table_entries()"
    );

    for (k, v) in &want {
        assert!(table.may_contain(user_key(k)));
        assert_eq!(table.get(k).unwrap(), Some((k.clone(), v.clone())));
    }
}

#[test]
fn a_flipped_byte_in_a_fixture_table_is_corruption() {
    let fixture = &DB_FIXTURES[1];
    let (_tmp, dir) = copy_fixture(fixture.dir);
    let mut tables: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .collect();
    tables.sort();
    let victim = tables.first().unwrap();
    let mut bytes = std::fs::read(victim).unwrap();
    // Inside the first data block, which starts the file.
    bytes[20] ^= 0x40;
    std::fs::write(victim, bytes).unwrap();

    let err = check_database(&dir, &fixtures_common::options(fixture)).unwrap_err();
    assert!(err.is_corruption(), "not a corruption error: {err}");
    let name = victim.file_name().unwrap().to_str().unwrap();
    assert!(err.to_string().contains(name), "{err} does not name {name}");
}
