//! The info log (docs/info-log.md): a scripted run leaves each event in `LOG`, the previous run's
//! lines move to `LOG.old`, a custom logger receives the same lines, `Off` writes nothing, and a
//! disk too full for `LOG` fails no write.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::Path;
use std::sync::{Arc, Mutex};

use screedb::fs::{FileLock, Fs, MemFs, RandomAccessFile, WritableFile};
use screedb::{Db, Error, InfoLog, Logger, Options, Result, WriteOptions};

fn options(info_log: InfoLog) -> Options {
    Options {
        create_if_missing: true,
        write_buffer_size: 64 << 10,
        info_log,
        ..Options::default()
    }
}

/// Enough writes for several flushes and a compaction, then a manual compaction.
fn scripted_run(db: &Db) {
    let value = vec![b'x'; 200];
    for i in 0..3000u32 {
        db.put(format!("key{i:06}"), &value).unwrap();
    }
    db.flush().unwrap();
    db.compact_range(None, None).unwrap();
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn a_scripted_run_leaves_each_event_in_log_and_the_previous_run_in_log_old() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(InfoLog::default())).unwrap();
    scripted_run(&db);
    db.close().unwrap();
    let first = read(&dir.path().join("LOG"));
    for event in [
        "creating ",
        "options: Options {",
        "recovered: 0 logs replayed",
        "flush: ",
        "-> level 0 [#",
        "compaction: L0 [#",
        "read ",
        "closing",
    ] {
        assert!(first.contains(event), "no {event:?} in LOG:\n{first}");
    }
    // Every line starts with its UTC timestamp.
    for line in first.lines() {
        assert!(
            line.len() > 28 && line.as_bytes()[4] == b'-' && line[..28].ends_with("Z "),
            "{line}"
        );
    }

    let db = Db::open(dir.path(), options(InfoLog::default())).unwrap();
    db.close().unwrap();
    assert_eq!(read(&dir.path().join("LOG.old")), first);
    assert!(read(&dir.path().join("LOG")).contains("opening "));
    Db::destroy(dir.path(), &Options::default()).unwrap();
    assert!(!dir.path().exists(), "destroy leaves no LOG behind");
}

#[test]
fn log_rotates_at_its_size_limit() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(InfoLog::File { max_bytes: 1000 })).unwrap();
    scripted_run(&db);
    db.close().unwrap();
    let (log, old) = (
        read(&dir.path().join("LOG")),
        read(&dir.path().join("LOG.old")),
    );
    assert!(
        !old.is_empty() && log.contains("closing"),
        "{old}\n--\n{log}"
    );
    assert!(log.len() < 1000 + 4096, "LOG holds {} bytes", log.len());
}

#[derive(Debug, Default)]
struct Lines(Mutex<Vec<String>>);

impl Logger for Lines {
    fn log(&self, line: &str) {
        self.0.lock().unwrap().push(line.to_owned());
    }
}

#[test]
fn a_custom_logger_gets_the_lines_and_off_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let lines = Arc::new(Lines::default());
    let db = Db::open(dir.path(), options(InfoLog::Custom(lines.clone()))).unwrap();
    scripted_run(&db);
    db.close().unwrap();
    let got = lines.0.lock().unwrap().clone();
    assert!(got.iter().any(|l| l.starts_with("flush: ")), "{got:?}");
    assert!(got.iter().any(|l| l.starts_with("compaction: ")), "{got:?}");
    assert!(!dir.path().join("LOG").exists());

    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(InfoLog::Off)).unwrap();
    scripted_run(&db);
    db.close().unwrap();
    assert!(!dir.path().join("LOG").exists());
}

/// `MemFs`, where every append to `LOG` fails as on a full disk.
#[derive(Debug, Default)]
struct FullForLog(MemFs);

#[derive(Debug)]
struct FailingAppends;

impl WritableFile for FailingAppends {
    fn append(&mut self, _: &[u8]) -> Result<()> {
        Err(Error::io(
            "write",
            "LOG",
            std::io::Error::from_raw_os_error(28), // ENOSPC
        ))
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn size(&self) -> u64 {
        0
    }
}

impl Fs for FullForLog {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        if path.ends_with("LOG") {
            return Ok(Box::new(FailingAppends));
        }
        self.0.create(path)
    }
    fn open_appendable(&self, path: &Path, committed_len: u64) -> Result<Box<dyn WritableFile>> {
        self.0.open_appendable(path, committed_len)
    }
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.0.open(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.0.exists(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.0.file_size(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.0.rename(from, to)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        self.0.remove(path)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.0.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.0.create_dir_all(dir)
    }
    fn remove_dir(&self, dir: &Path) -> Result<()> {
        self.0.remove_dir(dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.0.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.0.lock(path)
    }
}

#[test]
fn a_disk_too_full_for_log_fails_no_write() {
    let o = Options {
        fs: Arc::new(FullForLog::default()),
        ..options(InfoLog::default())
    };
    let db = Db::open("/db", o.clone()).unwrap();
    scripted_run(&db);
    db.write(screedb::WriteBatch::new(), &WriteOptions::synced())
        .unwrap();
    db.close().unwrap();
    let db = Db::open("/db", o).unwrap();
    assert_eq!(db.get("key000042").unwrap(), Some(vec![b'x'; 200]));
}
