//! A tree job's file syncs, issued together.
//!
//! A merge into Jungle trees appends a segment to every tree its keys reach (489 per level-0
//! merge in setup J, docs/jungle.md) and synced each as it was written: one `fdatasync` after
//! another, each waiting for its own journal commit (about half a millisecond on the 2-core VM
//! the benchmarks ran on). The job now hands each file over once written and syncs those files
//! together, from a few threads, so the file system can commit them in fewer rounds. Durability
//! is unchanged: the job syncs every file it wrote before it returns the edit that names them,
//! and a job that fails returns no edit (its unsynced tails lie past the MANIFEST's extents,
//! which the next open cuts away).

use std::sync::{Arc, Mutex, PoisonError};

use crate::error::Result;
use crate::fs::WritableFile;

/// Threads that sync one batch.
const SYNC_THREADS: usize = 8;

/// Files a batch holds unsynced at most (each an open descriptor): past this, the job syncs
/// them before writing more.
pub const MAX_PENDING: usize = 64;

type Pending = Arc<Mutex<Vec<Box<dyn WritableFile>>>>;

/// The files of one job written but not yet synced.
#[derive(Default)]
pub struct SyncBatch {
    pending: Pending,
}

impl SyncBatch {
    /// `file`, whose `sync` hands its bytes to the operating system without waiting for them
    /// to be durable; dropping it hands the file to this batch, whose [`SyncBatch::sync_all`]
    /// makes them durable.
    pub fn defer(&self, file: Box<dyn WritableFile>) -> Box<dyn WritableFile> {
        Box::new(Deferred {
            inner: Some(file),
            pending: Arc::clone(&self.pending),
        })
    }

    /// Files handed over and not synced yet.
    pub fn pending(&self) -> usize {
        lock(&self.pending).len()
    }

    /// Syncs every file handed over so far, from up to [`SYNC_THREADS`] threads, and returns
    /// the first error (each file is still tried).
    pub fn sync_all(&self) -> Result<()> {
        let mut files = std::mem::take(&mut *lock(&self.pending));
        if files.len() <= 1 {
            return files.iter_mut().try_for_each(|f| f.sync());
        }
        let per_thread = files.len().div_ceil(SYNC_THREADS);
        let results: Vec<Result<()>> = std::thread::scope(|s| {
            let handles: Vec<_> = files
                .chunks_mut(per_thread)
                .map(|chunk| {
                    s.spawn(move || {
                        let mut first = Ok(());
                        for f in chunk {
                            if let Err(e) = f.sync()
                                && first.is_ok()
                            {
                                first = Err(e);
                            }
                        }
                        first
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        results.into_iter().collect()
    }
}

fn lock(p: &Pending) -> std::sync::MutexGuard<'_, Vec<Box<dyn WritableFile>>> {
    p.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A file whose sync is left to its [`SyncBatch`].
struct Deferred {
    /// Always `Some` until dropped.
    inner: Option<Box<dyn WritableFile>>,
    pending: Pending,
}

impl Deferred {
    fn file(&mut self) -> &mut Box<dyn WritableFile> {
        self.inner
            .as_mut()
            .expect("a deferred file is present until dropped")
    }
}

impl WritableFile for Deferred {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.file().append(data)
    }

    fn flush(&mut self) -> Result<()> {
        self.file().flush()
    }

    /// Hands the bytes to the operating system; the batch syncs them.
    fn sync(&mut self) -> Result<()> {
        self.file().flush()
    }

    fn size(&self) -> u64 {
        self.inner.as_ref().map_or(0, |f| f.size())
    }
}

impl Drop for Deferred {
    fn drop(&mut self) {
        if let Some(f) = self.inner.take() {
            lock(&self.pending).push(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::fs::{FaultFs, FaultKind, Fs, MemFs, read_all};

    const FILES: usize = 20;

    fn path(i: usize) -> PathBuf {
        PathBuf::from(format!("/db/t{i}"))
    }

    /// `FILES` synced empty files, then a segment appended to each through `batch`.
    fn append_all(fs: &FaultFs, batch: &SyncBatch) {
        fs.create_dir_all(Path::new("/db")).unwrap();
        for i in 0..FILES {
            fs.create(&path(i)).unwrap().sync().unwrap();
        }
        fs.sync_dir(Path::new("/db")).unwrap();
        for i in 0..FILES {
            let mut f = batch.defer(fs.open_appendable(&path(i), 0).unwrap());
            f.append(b"segment").unwrap();
            f.sync().unwrap();
            assert_eq!(f.size(), 7);
        }
        assert_eq!(batch.pending(), FILES);
    }

    #[test]
    fn appends_are_durable_once_the_batch_syncs_them_and_not_before() {
        let fs = FaultFs::new(Arc::new(MemFs::new()));
        let batch = SyncBatch::default();
        append_all(&fs, &batch);
        fs.crash();
        for i in 0..FILES {
            assert_eq!(
                read_all(&fs, &path(i)).unwrap(),
                b"",
                "file {i} before the batch"
            );
        }

        let fs = FaultFs::new(Arc::new(MemFs::new()));
        let batch = SyncBatch::default();
        append_all(&fs, &batch);
        batch.sync_all().unwrap();
        assert_eq!(batch.pending(), 0);
        fs.crash();
        for i in 0..FILES {
            assert_eq!(read_all(&fs, &path(i)).unwrap(), b"segment", "file {i}");
        }
    }

    #[test]
    fn a_failed_sync_fails_the_batch() {
        let fs = FaultFs::new(Arc::new(MemFs::new()));
        let batch = SyncBatch::default();
        append_all(&fs, &batch);
        fs.fail_nth(FaultKind::Sync, 7);
        let err = batch.sync_all().unwrap_err();
        assert!(err.to_string().contains("sync"), "{err}");
    }
}
