//! The memory-mapped WAL (`Options::mmap_wal`, `Fs::create_mapped_log`): a log the process left
//! without finishing (its reserved space still zeros, as after a kill) gives back every record
//! when read tolerating a torn tail (the zeros are one), as recovery reads every log, and is
//! refused by a strict read; a finished log is exact and reads strictly; a database leaves only
//! exact logs behind once closed, and every log but the live one after a synced write. Real process kills are in `db_crash_kill.rs`.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::Path;

use screedb::fs::{Fs, OsFs};
use screedb::wal::{LogReader, LogWriter, RecoveryMode};
use screedb::{Db, Options, WriteBatch, WriteOptions};

/// A log's records and its torn tail's (offset, dropped bytes), if any.
type Read = (Vec<Vec<u8>>, Option<(u64, u64)>);

/// Reads the log at `path` to its end.
fn read(path: &Path, mode: RecoveryMode) -> screedb::Result<Read> {
    let mut r = LogReader::new(OsFs.open(path)?, path.to_path_buf(), mode);
    let mut out = Vec::new();
    while let Some(rec) = r.read_record()? {
        out.push(rec);
    }
    Ok((out, r.torn_tail().map(|t| (t.offset, t.dropped_bytes))))
}

fn records() -> Vec<Vec<u8>> {
    // Enough to cross the 1 MiB reservation step twice, in records of many sizes.
    (0..3000u32)
        .map(|i| vec![(i % 251) as u8; (i as usize * 37) % 2000 + 1])
        .collect()
}

#[test]
fn an_unfinished_mapped_log_recovers_every_record_and_a_finished_one_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000005.log");
    let records = records();
    let mut w = LogWriter::new(OsFs.create_mapped_log(&path).unwrap());
    for r in &records {
        w.add_record(r).unwrap();
    }
    w.flush().unwrap();
    let logical = w.size();
    // Dropped without finish: the file keeps the zeros reserved past the last record.
    drop(w);
    let on_disk = std::fs::metadata(&path).unwrap().len();
    assert!(
        on_disk > logical,
        "{on_disk} bytes on disk, {logical} written"
    );

    let (got, tail) = read(&path, RecoveryMode::TolerateTornTail).unwrap();
    assert!(
        got == records,
        "{} of {} records back",
        got.len(),
        records.len()
    );
    assert_eq!(tail, Some((logical, on_disk - logical)));
    let err = read(&path, RecoveryMode::Strict).unwrap_err();
    assert!(err.to_string().contains("000005.log"), "{err}");

    // Finished: exactly the records, readable strictly.
    let mut w = LogWriter::new(OsFs.create_mapped_log(&path).unwrap());
    for r in &records {
        w.add_record(r).unwrap();
    }
    w.finish().unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), w.size());
    let (got, tail) = read(&path, RecoveryMode::Strict).unwrap();
    assert!(got == records && tail.is_none());
}

#[test]
fn a_database_leaves_exact_logs_after_synced_writes_and_at_close() {
    let dir = tempfile::tempdir().unwrap();
    let options = Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    assert!(options.mmap_wal, "the mapped WAL is the default");
    let db = Db::open(dir.path(), options.clone()).unwrap();
    let logs = |dir: &Path| -> Vec<std::path::PathBuf> {
        let mut logs: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .collect();
        logs.sort();
        logs
    };
    let value = vec![7u8; 300];
    let mut older_logs_seen = 0;
    for i in 0..4000u32 {
        let sync = i % 10 == 0;
        let mut batch = WriteBatch::new();
        batch.put(format!("key{i:06}"), &value);
        db.write(batch, &WriteOptions { sync }).unwrap();
        if !sync {
            // A switched-out log is finished by the next synced write (or removed by its
            // memtable's flush before that), not at the switch.
            continue;
        }
        // A synced write finished every log but the live one; one may be caught here before
        // its flush removes it.
        let now = logs(dir.path());
        for old in now.iter().rev().skip(1) {
            if let Ok((_, None)) = read(old, RecoveryMode::Strict) {
                older_logs_seen += 1;
            } else if old.exists() {
                panic!("{} is not an exact log", old.display());
            }
        }
    }
    assert!(older_logs_seen > 0, "no switched-out log was ever caught");
    db.close().unwrap();
    for log in logs(dir.path()) {
        let (_, tail) = read(&log, RecoveryMode::Strict).unwrap();
        assert!(tail.is_none());
    }
    let db = Db::open(dir.path(), options).unwrap();
    for i in (0..4000u32).step_by(97) {
        assert_eq!(db.get(format!("key{i:06}")).unwrap(), Some(value.clone()));
    }
}
