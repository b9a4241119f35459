//! Writes the checked-in format fixtures in `tests/fixtures/` (see `fixtures_common` for what
//! they hold and `format_fixtures.rs` for the test that reads them).
//!
//! The fixtures were written once by the code of their day, so that every later version proves
//! it still reads that day's files. A fixture is never regenerated to make a test pass: a format
//! change that breaks `format_fixtures.rs` is a format change (bump the version and keep the old
//! reader). To add a fixture, add it to `fixtures_common` under a new name and run
//!
//! ```text
//! cargo test -p screedb --test fixtures_gen -- --ignored
//! ```
//!
//! which writes only the fixtures that do not exist yet and leaves the others alone.
#![allow(clippy::unwrap_used, reason = "test code")]

mod fixtures_common;

use std::path::{Path, PathBuf};

use fixtures_common::{DB_FIXTURES, DbFixture, Op, TABLE_BLOCK_SIZE, TABLE_FIXTURE};
use screedb::check::check_database;
use screedb::comparator::{InternalKeyComparator, default_comparator};
use screedb::fs::{Fs, OsFs};
use screedb::table::{TableBuilder, TableOptions};
use screedb::{Db, Options, WriteBatch, WriteOptions};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn options(fixture: &DbFixture) -> Options {
    Options {
        create_if_missing: true,
        error_if_exists: true,
        ..fixtures_common::options(fixture)
    }
}

fn apply(db: &Db, ops: &[Op]) {
    for op in ops {
        let mut batch = WriteBatch::new();
        match *op {
            Op::Put { i, round } => {
                batch.put(fixtures_common::key(i), fixtures_common::value(i, round));
            }
            Op::Delete { i } => {
                batch.delete(fixtures_common::key(i));
            }
        }
        db.write(batch, &WriteOptions::default()).unwrap();
    }
}

fn write_db(fixture: &DbFixture, dir: &Path) {
    let db = Db::open(dir, options(fixture)).unwrap();
    // Round 0: level-0 tables, then everything compacted to the last level.
    for chunk in fixtures_common::round(0).chunks(100) {
        apply(&db, chunk);
        db.flush().unwrap();
        db.wait_for_idle().unwrap();
    }
    db.compact_range(None, None).unwrap();
    // Round 1: overwrites and tombstones in three tables: the first two compacted into level 1,
    // the third left in level 0.
    let round1 = fixtures_common::round(1);
    for chunk in round1.chunks(round1.len().div_ceil(3)) {
        apply(&db, chunk);
        db.flush().unwrap();
        db.wait_for_idle().unwrap();
    }
    // Round 2: only in the WAL, replayed at open.
    if fixture.wal_round {
        apply(&db, &fixtures_common::round(2));
    }
    db.close().unwrap();
}

#[test]
#[ignore = "writes the checked-in fixtures; run by hand only to add a new one"]
fn write_missing_fixtures() {
    let root = fixtures_dir();
    std::fs::create_dir_all(&root).unwrap();
    for fixture in &DB_FIXTURES {
        let dir = root.join(fixture.dir);
        if dir.exists() {
            eprintln!("{} exists, left alone", dir.display());
            continue;
        }
        write_db(fixture, &dir);
        let report = check_database(&dir, &options(fixture)).unwrap();
        eprintln!("{}: {report:?}", dir.display());
        assert_eq!(
            report.tables_per_level[0] >= 1,
            fixture.level0,
            "{report:?}"
        );
        assert!(
            report.tables_per_level[1..].iter().any(|&n| n > 0),
            "{report:?}"
        );
    }

    let path = root.join(TABLE_FIXTURE);
    if path.exists() {
        eprintln!("{} exists, left alone", path.display());
        return;
    }
    let opts = TableOptions {
        block_size: TABLE_BLOCK_SIZE,
        ..TableOptions::default()
    };
    let icmp = InternalKeyComparator::new(default_comparator());
    let file = OsFs.create(&path).unwrap();
    let mut builder = TableBuilder::new(opts, icmp, file, path.clone());
    for (k, v) in fixtures_common::table_entries() {
        builder.add(&k, &v).unwrap();
    }
    let (size, props) = builder.finish().unwrap();
    eprintln!("{}: {size} bytes, {props:?}", path.display());
}
