//! Writers and readers do not wait for a MANIFEST sync (issue 15: the database mutex was held
//! over the edit's append and sync, so every write behind a flush or compaction waited for the
//! disk; the README job's write latency maxima of 45-52 ms were those syncs).
//!
//! The file system here holds a MANIFEST sync until the test lets it go: while a flush's edit
//! is stuck in its sync, a hundred writes and reads must complete. It also records which files
//! are synced: a memtable switch syncs no log (it did, under the mutex: the maxima of 136-162 ms
//! in 10M fillrandom were those syncs), and a synced write syncs every older log first.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use screedb::fs::{FileLock, Fs, MemFs, RandomAccessFile, WritableFile};
use screedb::{Db, InfoLog, Options, Result, WriteBatch, WriteOptions};

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
    /// The names of the files synced, in order.
    syncs: Arc<Mutex<Vec<String>>>,
}

struct GatedFile {
    inner: Box<dyn WritableFile>,
    name: String,
    /// `None` except for a MANIFEST.
    gate: Option<Arc<Gate>>,
    syncs: Arc<Mutex<Vec<String>>>,
}

impl WritableFile for GatedFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.inner.append(data)
    }
    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }
    fn sync(&mut self) -> Result<()> {
        if let Some(gate) = &self.gate
            && gate.armed.swap(false, Ordering::SeqCst)
        {
            gate.entered.lock().unwrap().send(()).unwrap();
            gate.release.lock().unwrap().recv().unwrap();
        }
        self.syncs.lock().unwrap().push(self.name.clone());
        self.inner.sync()
    }
    fn size(&self) -> u64 {
        self.inner.size()
    }
}

impl Fs for GatedFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        Ok(Box::new(GatedFile {
            inner: self.inner.create(path)?,
            gate: name
                .starts_with("MANIFEST-")
                .then(|| Arc::clone(&self.gate)),
            name,
            syncs: Arc::clone(&self.syncs),
        }))
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

/// Options over a fresh gated file system, the gate, its two ends and the list of synced files.
#[allow(clippy::type_complexity)]
fn gated(
    write_buffer_size: usize,
) -> (
    Options,
    Arc<Gate>,
    Receiver<()>,
    Sender<()>,
    Arc<Mutex<Vec<String>>>,
) {
    let (entered_tx, entered) = channel();
    let (release, release_rx) = channel();
    let gate = Arc::new(Gate {
        armed: AtomicBool::new(false),
        entered: Mutex::new(entered_tx),
        release: Mutex::new(release_rx),
    });
    let syncs = Arc::default();
    let options = Options {
        create_if_missing: true,
        fs: Arc::new(GatedFs {
            inner: MemFs::new(),
            gate: Arc::clone(&gate),
            syncs: Arc::clone(&syncs),
        }),
        write_buffer_size,
        info_log: InfoLog::Off,
        ..Options::default()
    };
    (options, gate, entered, release, syncs)
}

fn logs(options: &Options) -> Vec<String> {
    let mut names: Vec<String> = options
        .fs
        .list(Path::new("/db"))
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".log"))
        .collect();
    names.sort();
    names
}

#[test]
fn writes_and_reads_go_on_while_a_manifest_sync_is_stuck() {
    let (options, gate, entered, release, _) = gated(4 << 20);
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

#[test]
fn a_switch_syncs_no_log_and_a_synced_write_syncs_the_older_logs_first() {
    let (options, gate, entered, release, syncs) = gated(4 << 20);
    let db = Db::open("/db", options.clone()).unwrap();
    for i in 0..100u32 {
        db.put(format!("before{i}"), "v").unwrap();
    }
    let [old_log] = logs(&options).try_into().unwrap();
    syncs.lock().unwrap().clear();
    gate.armed.store(true, Ordering::SeqCst);
    std::thread::scope(|s| {
        // The flush switches to a new log, then sticks in its MANIFEST sync: the old log stays
        // needed (its memtable is not retired) and unsynced.
        let flusher = s.spawn(|| db.flush());
        entered
            .recv_timeout(Duration::from_secs(20))
            .expect("the flush reached its MANIFEST sync");
        let new_log = logs(&options)
            .into_iter()
            .find(|n| *n != old_log)
            .expect("the switch created a new log");
        for i in 0..100u32 {
            db.put(format!("during{i}"), "v").unwrap();
        }
        let synced_logs = |syncs: &Mutex<Vec<String>>| -> Vec<String> {
            let v = syncs.lock().unwrap();
            v.iter().filter(|n| n.ends_with(".log")).cloned().collect()
        };
        assert_eq!(
            synced_logs(&syncs),
            Vec::<String>::new(),
            "unsynced writes and the memtable switch synced a log"
        );
        let mut batch = WriteBatch::new();
        batch.put("synced", "v");
        db.write(batch, &WriteOptions::synced()).unwrap();
        assert_eq!(
            synced_logs(&syncs),
            vec![old_log.clone(), new_log.clone()],
            "a synced write makes the older log durable before its own"
        );
        // A second synced write finds the older log finished.
        let mut batch = WriteBatch::new();
        batch.put("synced2", "v");
        db.write(batch, &WriteOptions::synced()).unwrap();
        assert_eq!(synced_logs(&syncs), vec![old_log, new_log.clone(), new_log]);
        release.send(()).unwrap();
        flusher.join().unwrap().unwrap();
    });
    db.close().unwrap();
    let db = Db::open("/db", options).unwrap();
    for key in ["before99", "during99", "synced", "synced2"] {
        assert_eq!(db.get(key).unwrap(), Some(b"v".to_vec()), "{key}");
    }
}
