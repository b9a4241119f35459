//! Writers and readers do not wait for a MANIFEST sync (issue 15: the database mutex was held
//! over the edit's append and sync, so every write behind a flush or compaction waited for the
//! disk; the README job's write latency maxima of 45-52 ms were those syncs).
//!
//! The file system here holds a MANIFEST sync until the test lets it go: while a flush's edit
//! is stuck in its sync, a hundred writes and reads must complete.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use screedb::fs::{FileLock, Fs, MemFs, RandomAccessFile, WritableFile};
use screedb::{Db, InfoLog, Options, Result};

/// Holds the next MANIFEST sync once armed: says so on `entered`, waits for `release`.
#[derive(Debug)]
struct Gate {
    armed: AtomicBool,
    entered: Mutex<Sender<()>>,
    release: Mutex<Receiver<()>>,
}

#[derive(Debug)]
struct GatedFs {
    inner: MemFs,
    gate: Arc<Gate>,
}

struct GatedManifest {
    inner: Box<dyn WritableFile>,
    gate: Arc<Gate>,
}

impl WritableFile for GatedManifest {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        if self.gate.armed.swap(false, Ordering::SeqCst) {
            self.gate.entered.lock().unwrap().send(()).unwrap();
            self.gate.release.lock().unwrap().recv().unwrap();
        }
        self.inner.sync()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

impl Fs for GatedFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = self.inner.create(path)?;
        let name = path.file_name().unwrap().to_string_lossy();
        Ok(if name.starts_with("MANIFEST-") {
            Box::new(GatedManifest {
                inner: file,
                gate: Arc::clone(&self.gate),
            })
        } else {
            file
        })
    }
    fn open_appendable(&self, path: &Path, committed_len: u64) -> Result<Box<dyn WritableFile>> {
        self.inner.open_appendable(path, committed_len)
    }
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.inner.open(path)
    }
    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        self.inner.file_size(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.inner.rename(from, to)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        self.inner.remove(path)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        self.inner.create_dir_all(dir)
    }
    fn remove_dir(&self, dir: &Path) -> Result<()> {
        self.inner.remove_dir(dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        self.inner.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.inner.lock(path)
    }
}

#[test]
fn writes_and_reads_go_on_while_a_manifest_sync_is_stuck() {
    let (entered_tx, entered) = channel();
    let (release, release_rx) = channel();
    let gate = Arc::new(Gate {
        armed: AtomicBool::new(false),
        entered: Mutex::new(entered_tx),
        release: Mutex::new(release_rx),
    });
    let options = Options {
        create_if_missing: true,
        fs: Arc::new(GatedFs {
            inner: MemFs::new(),
            gate: Arc::clone(&gate),
        }),
        write_buffer_size: 4 << 20,
        info_log: InfoLog::Off,
        ..Options::default()
    };
    let db = Db::open("/db", options.clone()).unwrap();
    for i in 0..100u32 {
        db.put(format!("before{i}"), "v").unwrap();
    }
    gate.armed.store(true, Ordering::SeqCst);
    std::thread::scope(|s| {
        let flusher = s.spawn(|| db.flush());
        entered
            .recv_timeout(Duration::from_secs(20))
            .expect("the flush reached its MANIFEST sync");
        // The flush's edit is stuck in its sync: writers and readers must not wait for it.
        let (done_tx, done) = channel();
        let db = &db;
        s.spawn(move || {
            for i in 0..100u32 {
                db.put(format!("during{i}"), "v").unwrap();
            }
            let read = db.get("before7").unwrap();
            done_tx.send(read).unwrap();
        });
        let during = done.recv_timeout(Duration::from_secs(20));
        release.send(()).unwrap();
        assert_eq!(
            during.expect("writes waited for the MANIFEST sync"),
            Some(b"v".to_vec())
        );
        flusher.join().unwrap().unwrap();
    });
    db.close().unwrap();
    let db = Db::open("/db", options).unwrap();
    assert_eq!(db.get("during99").unwrap(), Some(b"v".to_vec()));
    assert_eq!(db.get("before99").unwrap(), Some(b"v".to_vec()));
}
