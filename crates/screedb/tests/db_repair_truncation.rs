//! Repair of files cut short or damaged where LevelDB's repair gives up on them (issue 15): a
//! table cut at any offset keeps every whole data block before the cut, a log every record
//! before the cut, and a damaged or cut MANIFEST loses nothing (repair rebuilds from the tables
//! and logs). Newer versions of keys in other tables still win over the salvaged ones.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::{Path, PathBuf};

use screedb::fs::{Fs, OsFs};
use screedb::wal::{LogReader, RecoveryMode};
use screedb::{Db, Options, repair_db};

fn options() -> Options {
    Options {
        create_if_missing: true,
        // One flush per call of `Db::flush`: every round of keys in one table.
        write_buffer_size: 64 << 20,
        target_file_size: 64 << 20,
        // Logs hold exactly their records (a mapped log is zero-filled up to 1 MiB steps).
        mmap_wal: false,
        ..Options::default()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(round: u32, i: u32) -> Vec<u8> {
    format!("round{round}-value-{i}-{}", "v".repeat(40)).into_bytes()
}

fn files(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    found.sort();
    found
}

fn cut(path: &Path, len: usize) {
    let bytes = std::fs::read(path).unwrap();
    std::fs::write(path, &bytes[..len]).unwrap();
}

/// Copies the files of database `from` into a new directory.
fn copy_db(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), to.path().join(e.file_name())).unwrap();
        }
    }
    to
}

const KEYS: u32 = 20_000;

/// Every key in one table (round 0), then every tenth key again in a newer table (round 1).
/// Returns the older table's file name.
fn two_tables(dir: &Path) -> std::ffi::OsString {
    let db = Db::open(dir, options()).unwrap();
    for i in 0..KEYS {
        db.put(key(i), value(0, i)).unwrap();
    }
    db.flush().unwrap();
    let older = files(dir, "sst");
    assert_eq!(older.len(), 1, "{older:?}");
    for i in (0..KEYS).step_by(10) {
        db.put(key(i), value(1, i)).unwrap();
    }
    db.flush().unwrap();
    db.close().unwrap();
    assert_eq!(files(dir, "sst").len(), 2);
    older[0].file_name().unwrap().to_owned()
}

#[test]
fn a_table_cut_anywhere_keeps_every_block_before_the_cut() {
    let template = tempfile::tempdir().unwrap();
    let older = two_tables(template.path());
    let size = std::fs::metadata(template.path().join(&older))
        .unwrap()
        .len() as usize;
    // Cuts through the data, and through the metadata and the footer at the end.
    let cuts = (1..8)
        .map(|k| size * k / 8 + 7)
        .chain([size - 60, size - 20, size - 1]);
    for len in cuts {
        let dir = copy_db(template.path());
        cut(&dir.path().join(&older), len);
        let report = repair_db(dir.path(), &options()).unwrap();
        assert!(report.tables_lost.is_empty(), "cut at {len}: {report}");
        assert_eq!(report.tables_salvaged.len(), 1, "cut at {len}: {report}");
        assert!(
            !report.tables_salvaged[0].lost.is_empty(),
            "cut at {len}: the report names no loss\n{report}"
        );

        let db = Db::open(dir.path(), options()).unwrap();
        let mut kept = 0u32;
        let mut first_missing = None;
        for i in 0..KEYS {
            let got = db.get(key(i)).unwrap();
            if i % 10 == 0 {
                // The newer table is intact: its version wins over any salvaged one.
                assert_eq!(got, Some(value(1, i)), "cut at {len}: key {i}");
                continue;
            }
            match got {
                Some(v) => {
                    assert_eq!(v, value(0, i), "cut at {len}: key {i}");
                    assert!(
                        first_missing.is_none(),
                        "cut at {len}: key {i} survived after key {first_missing:?} was lost"
                    );
                    kept += 1;
                }
                None => {
                    first_missing.get_or_insert(i);
                }
            }
        }
        // Every whole block before the cut is kept: the keys lost are those of the blocks at
        // and after it (a 4 KiB block holds about 60 of these entries).
        let older_keys = KEYS - KEYS / 10;
        let before_cut = (u64::from(older_keys) * len as u64 / size as u64) as u32;
        assert!(
            kept + 130 >= before_cut,
            "cut at {len} of {size}: kept {kept} keys, about {before_cut} lay before the cut\n\
             {report}"
        );
        if len >= size - 60 {
            // Only metadata or the footer was cut: no data is lost.
            assert_eq!(kept, older_keys, "cut at {len}: {report}");
        }
    }
}

#[test]
fn a_log_cut_anywhere_keeps_every_record_before_the_cut() {
    const PUTS: u32 = 2000;
    let template = tempfile::tempdir().unwrap();
    let db = Db::open(template.path(), options()).unwrap();
    for i in 0..PUTS {
        db.put(key(i), value(0, i)).unwrap();
    }
    drop(db); // no close: every write is only in the log
    let logs = files(template.path(), "log");
    assert_eq!(logs.len(), 1, "{logs:?}");
    let log_name = logs[0].file_name().unwrap().to_owned();
    let size = std::fs::metadata(&logs[0]).unwrap().len() as usize;
    // Where each record starts, and the end of the log after the last.
    let mut reader = LogReader::new(
        OsFs.open(&logs[0]).unwrap(),
        logs[0].clone(),
        RecoveryMode::Strict,
    );
    let mut starts = Vec::new();
    while reader.read_record().unwrap().is_some() {
        starts.push(reader.last_record_offset());
    }
    assert_eq!(starts.len(), PUTS as usize);
    starts.push(size as u64);
    for k in 1..8 {
        let len = size * k / 8 + 3;
        let dir = copy_db(template.path());
        cut(&dir.path().join(&log_name), len);
        let report = repair_db(dir.path(), &options()).unwrap();
        let db = Db::open(dir.path(), options()).unwrap();
        let present: Vec<bool> = (0..PUTS)
            .map(|i| {
                db.get(key(i))
                    .unwrap()
                    .inspect(|v| assert_eq!(v, &value(0, i)))
                    .is_some()
            })
            .collect();
        let kept = present.iter().take_while(|&&p| p).count();
        assert!(
            present[kept..].iter().all(|&p| !p),
            "cut at {len}: a record after the cut came back\n{report}"
        );
        // One put per record: every record that ends before the cut is kept (one that ends in
        // the padding of a log block, before the next record starts, may be counted one short).
        let whole_before_cut = starts[1..].iter().filter(|&&s| s <= len as u64).count();
        assert!(
            kept == whole_before_cut || kept == whole_before_cut + 1,
            "cut at {len} of {size}: kept {kept} records, {whole_before_cut} lay before the cut\n\
             {report}"
        );
    }
}

/// Three rounds over overlapping keys, each flushed to its own table, then a fourth only in
/// the log; returns the newest value of every key.
fn layered(dir: &Path) -> Vec<Vec<u8>> {
    let db = Db::open(dir, options()).unwrap();
    let mut newest = vec![Vec::new(); 4000];
    for round in 0..4u32 {
        for i in (round * 500)..(round * 500 + 2500) {
            db.put(key(i), value(round, i)).unwrap();
            newest[i as usize] = value(round, i);
        }
        if round < 3 {
            db.flush().unwrap();
        }
    }
    drop(db);
    newest
}

#[test]
fn a_damaged_or_cut_manifest_loses_nothing() {
    let template = tempfile::tempdir().unwrap();
    let newest = layered(template.path());
    let manifest = std::fs::read_dir(template.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .find(|n| n.to_string_lossy().starts_with("MANIFEST-"))
        .unwrap();
    let size = std::fs::metadata(template.path().join(&manifest))
        .unwrap()
        .len() as usize;
    for step in 0..10 {
        let dir = copy_db(template.path());
        let path = dir.path().join(&manifest);
        if step < 5 {
            let len = size * step / 5 + 3;
            cut(&path, len);
        } else {
            let mut bytes = std::fs::read(&path).unwrap();
            let at = (size * (step - 5) / 5 + 11).min(size - 1);
            bytes[at] ^= 0x5a;
            std::fs::write(&path, bytes).unwrap();
        }
        let report = repair_db(dir.path(), &options()).unwrap();
        assert!(
            report.tables_lost.is_empty() && report.tables_salvaged.is_empty(),
            "step {step}: the tables are intact\n{report}"
        );
        let db = Db::open(dir.path(), options()).unwrap();
        for (i, want) in newest.iter().enumerate() {
            let got = db.get(key(i as u32)).unwrap();
            let want = (!want.is_empty()).then(|| want.clone());
            assert_eq!(got, want, "step {step}: key {i}\n{report}");
        }
    }
}
