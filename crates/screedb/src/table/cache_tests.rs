//! `TableCache` when the process is out of file descriptors: an EMFILE on open lets go of the
//! cached tables and retries once, instead of failing the read (or the compaction, which would
//! make the database read-only).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::comparator::{InternalKeyComparator, default_comparator};
use crate::error::{Error, Result};
use crate::fs::{FileLock, Fs, OsFs, RandomAccessFile, WritableFile};
use crate::manifest::FileMeta;

use super::{TableBuilder, TableCache, TableOptions, table_file_name};

/// `OsFs`, whose next `open` fails with EMFILE once armed.
#[derive(Debug, Default)]
struct OutOfDescriptors {
    armed: AtomicBool,
}

impl Fs for OutOfDescriptors {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        OsFs.create(path)
    }
    fn open_appendable(&self, path: &Path, committed_len: u64) -> Result<Box<dyn WritableFile>> {
        OsFs.open_appendable(path, committed_len)
    }
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        if self.armed.swap(false, Ordering::SeqCst) {
            return Err(Error::io(
                "open",
                path,
                std::io::Error::from_raw_os_error(24), // EMFILE
            ));
        }
        OsFs.open(path)
    }
    fn exists(&self, path: &Path) -> bool {
        OsFs.exists(path)
    }
    fn file_size(&self, path: &Path) -> Result<u64> {
        OsFs.file_size(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        OsFs.rename(from, to)
    }
    fn remove(&self, path: &Path) -> Result<()> {
        OsFs.remove(path)
    }
    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        OsFs.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        OsFs.create_dir_all(dir)
    }
    fn remove_dir(&self, dir: &Path) -> Result<()> {
        OsFs.remove_dir(dir)
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        OsFs.sync_dir(dir)
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        OsFs.lock(path)
    }
}

#[test]
fn out_of_descriptors_the_cache_lets_go_of_its_tables_and_retries() {
    let dir = tempfile::tempdir().unwrap();
    let icmp = InternalKeyComparator::new(default_comparator());
    let opts = TableOptions::default();
    let metas: Vec<FileMeta> = (1..=2u64)
        .map(|n| {
            let path = table_file_name(dir.path(), n);
            let file = OsFs.create(&path).unwrap();
            let mut b = TableBuilder::new(opts.clone(), icmp.clone(), file, path);
            let key = crate::key::make_internal_key(b"k", n, crate::key::ValueKind::Value);
            b.add(&key, b"v").unwrap();
            let (file_size, _) = b.finish().unwrap();
            FileMeta {
                number: n,
                file_size,
                ..FileMeta::default()
            }
        })
        .collect();
    let fs = Arc::new(OutOfDescriptors::default());
    let tc = TableCache::new(fs.clone(), dir.path().to_path_buf(), opts, icmp, 8, None);
    let first = tc.get(&metas[0]).unwrap();
    drop(first);
    fs.armed.store(true, Ordering::SeqCst);
    let second = tc.get(&metas[1]).unwrap();
    assert_eq!(second.file_number(), 2);
    assert!(
        !fs.armed.load(Ordering::SeqCst),
        "the failing open was tried"
    );
    // The cache let go of table 1: getting it opens it again (no failure armed now).
    let again = tc.get(&metas[0]).unwrap();
    assert_eq!(again.file_number(), 1);
    // Any other error is not retried.
    let missing = FileMeta {
        number: 9,
        ..FileMeta::default()
    };
    assert!(tc.get(&missing).is_err());
    assert!(
        Error::io("open", "x", std::io::Error::from_raw_os_error(24)).is_out_of_file_descriptors()
    );
    assert!(
        !Error::io("open", "x", std::io::Error::from_raw_os_error(2)).is_out_of_file_descriptors()
    );
}
