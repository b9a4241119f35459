//! [`Fs`] wrapper that fails chosen writes or syncs and simulates power loss.
//!
//! [`FaultFs`] forwards every operation to an inner [`Fs`] and keeps a model of what the disk
//! would still hold after a power cut. Each `append` is flushed to the inner file at once (so a
//! crash can read the bytes back even over the buffering [`super::OsFs`]).
//!
//! # Crash model
//!
//! Only files created (or renamed) through the `FaultFs` are tracked; files that already existed
//! in the inner file system are taken as fully durable. On [`FaultFs::crash`]:
//! 1. **Renames** are undone, newest first, unless [`Fs::sync_dir`] ran on the target's parent
//!    after them: the file goes back to its old name and a file it replaced is restored with the
//!    bytes that were durable when it was replaced.
//! 2. **Created files** whose directory entry is not durable (no `sync_dir` of the parent since
//!    the create) and that were never synced themselves are removed. A file that was synced at
//!    least once keeps its entry even without `sync_dir` (as ext4 and XFS do in practice).
//! 3. **File contents** are cut back to the length covered by the last successful
//!    [`WritableFile::sync`] of that file (a re-created file starts with nothing durable).
//!    [`FaultFs::crash_tearing_last_write`] instead keeps, in the file that received the most
//!    recent unsynced append, everything before that append plus its first `keep` bytes (the
//!    disk wrote in order and the power failed in the middle of that write).
//!    [`FaultFs::crash_garbling_last_write`] keeps as many bytes of it, but as garbage (each
//!    byte inverted: the size reached the disk, the data did not).
//! 4. Removals and directory creation or removal are durable as soon as they return.
//! 5. **Reopened files** ([`Fs::open_appendable`]) are tracked like created files from then on
//!    (a file the wrapper did not track is taken as durable up to its length first): appends
//!    after the reopen survive up to the last successful sync, and may vanish or tear as in 3.
//!    The cut back to the committed length is a metadata change that becomes durable with the
//!    first successful sync of the reopened file; a crash before it restores the durable bytes
//!    past the committed length that the cut removed (and drops every unsynced append), while
//!    a torn write of such a file keeps the cut (the disk applied the cut, then the appends in
//!    order, and failed in the last one). Bytes below the committed length never change.
//!
//! Every handle (writable, readable, lock) opened before the crash is dead afterwards: its
//! operations fail with an error saying the file system crashed, and held locks are released.
//! Fault settings ([`FaultFs::fail_nth`], [`FaultFs::fail_always`]) survive a crash: a full
//! disk stays full. If the inner file system fails while a crash is simulated, every later
//! operation returns that error.

mod state;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use self::state::{FaultState, PendingRename, Tear, Tracked, durable_content, lock_state};
use super::mem::normalize;
use super::{FileLock, Fs, RandomAccessFile, WritableFile, parent_dir};
use crate::error::Result;

/// The operations a fault can be injected into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// [`WritableFile::append`], [`WritableFile::flush`] and [`WritableFile::start_write_back`].
    Write,
    /// [`WritableFile::sync`] and [`Fs::sync_dir`].
    Sync,
}

/// Counts of the operations that reached the inner file system.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultStats {
    /// Successful appends and flushes.
    pub writes: u64,
    /// Successful file syncs and directory syncs.
    pub syncs: u64,
    /// Bytes of the successful appends.
    pub bytes_written: u64,
    /// Successful [`WritableFile::start_write_back`] calls (no durability: a crash still
    /// drops the bytes they covered unless a sync followed).
    pub write_backs: u64,
}

/// A fault-injecting, crash-simulating wrapper around another [`Fs`]. Clones share state.
#[derive(Clone)]
pub struct FaultFs {
    inner: Arc<dyn Fs>,
    state: Arc<Mutex<FaultState>>,
}

/// The wrapped file system, not the tracked contents (an options dump must stay small).
impl fmt::Debug for FaultFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultFs")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl FaultFs {
    /// Wraps `inner`; no faults are armed.
    pub fn new(inner: Arc<dyn Fs>) -> FaultFs {
        FaultFs {
            inner,
            state: Arc::default(),
        }
    }

    fn state(&self) -> MutexGuard<'_, FaultState> {
        lock_state(&self.state)
    }

    /// The state, unless a crash simulation failed.
    fn live(&self) -> Result<MutexGuard<'_, FaultState>> {
        let state = self.state();
        match &state.broken {
            Some(e) => Err(e.clone()),
            None => Ok(state),
        }
    }

    /// Makes the `n`-th next operation of `kind` (1-based, counted from this call) fail once.
    /// `n == 0` is taken as 1. Replaces an earlier `fail_nth` of that kind.
    pub fn fail_nth(&self, kind: FaultKind, n: u64) {
        self.state().fail_in[kind as usize] = Some(n.max(1));
    }

    /// Makes every operation of `kind` fail until [`FaultFs::clear_faults`].
    pub fn fail_always(&self, kind: FaultKind) {
        self.state().fail_always[kind as usize] = true;
    }

    /// Disarms every fault.
    pub fn clear_faults(&self) {
        let mut state = self.state();
        state.fail_in = [None; 2];
        state.fail_always = [false; 2];
    }

    /// Counts of the operations that reached the inner file system.
    pub fn stats(&self) -> FaultStats {
        self.state().stats
    }

    /// Simulates a power loss (see the module doc for what survives).
    pub fn crash(&self) {
        self.crash_with(None);
    }

    /// Like [`FaultFs::crash`], but the first `keep` bytes (capped at its length) of the most
    /// recent append not covered by a sync survive, with everything before it in that file.
    pub fn crash_tearing_last_write(&self, keep: usize) {
        self.crash_with(Some(Tear {
            keep,
            garble: false,
        }));
    }

    /// Like [`FaultFs::crash_tearing_last_write`], but the `keep` surviving bytes of that
    /// append are garbage (each byte inverted) instead of what was written.
    pub fn crash_garbling_last_write(&self, keep: usize) {
        self.crash_with(Some(Tear { keep, garble: true }));
    }

    fn crash_with(&self, tear: Option<Tear>) {
        let mut state = self.state();
        state.epoch += 1;
        state.locks.clear();
        if state.broken.is_none()
            && let Err(e) = state.simulate_crash(&*self.inner, tear)
        {
            state.broken = Some(e);
        }
    }
}

struct FaultWritable {
    inner: Box<dyn WritableFile>,
    path: PathBuf,
    id: u64,
    epoch: u64,
    state: Arc<Mutex<FaultState>>,
}

impl WritableFile for FaultWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut state = lock_state(&self.state);
        state.check_epoch(self.epoch, "write", &self.path)?;
        state.inject(FaultKind::Write, "write", &self.path)?;
        let offset = self.inner.size();
        self.inner.append(data)?;
        self.inner.flush()?;
        let len = data.len() as u64;
        state.stats.writes += 1;
        state.stats.bytes_written += len;
        state.append_seq += 1;
        let seq = state.append_seq;
        if let Some(t) = state.files.get_mut(&self.id) {
            t.len = offset + len;
            t.last_append = Some((seq, offset, len));
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        let mut state = lock_state(&self.state);
        state.check_epoch(self.epoch, "write", &self.path)?;
        state.inject(FaultKind::Write, "write", &self.path)?;
        self.inner.flush()?;
        state.stats.writes += 1;
        Ok(())
    }

    fn start_write_back(&mut self) -> Result<()> {
        let mut state = lock_state(&self.state);
        state.check_epoch(self.epoch, "write back", &self.path)?;
        state.inject(FaultKind::Write, "write back", &self.path)?;
        self.inner.start_write_back()?;
        state.stats.write_backs += 1;
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        let mut state = lock_state(&self.state);
        state.check_epoch(self.epoch, "sync", &self.path)?;
        state.inject(FaultKind::Sync, "sync", &self.path)?;
        self.inner.sync()?;
        state.stats.syncs += 1;
        if let Some(t) = state.files.get_mut(&self.id) {
            t.durable_len = t.len;
            t.synced = true;
            t.cut = None;
        }
        Ok(())
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }
}

struct FaultRandomAccess {
    inner: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    epoch: u64,
    state: Arc<Mutex<FaultState>>,
}

impl RandomAccessFile for FaultRandomAccess {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        lock_state(&self.state).check_epoch(self.epoch, "read", &self.path)?;
        self.inner.read_exact_at(buf, offset)
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }
}

struct FaultLock {
    id: u64,
    state: Arc<Mutex<FaultState>>,
}

impl fmt::Debug for FaultLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FaultLock").field("id", &self.id).finish()
    }
}

impl FileLock for FaultLock {}

impl Drop for FaultLock {
    fn drop(&mut self) {
        // Take the inner lock out first so it is released after our mutex is unlocked.
        let inner = lock_state(&self.state).locks.remove(&self.id);
        drop(inner);
    }
}

impl Fs for FaultFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let mut state = self.live()?;
        let norm = normalize(path);
        let existed = self.inner.exists(path);
        let inner = self.inner.create(path)?;
        // Truncating keeps the directory entry: it is as durable as it was before.
        let entry_durable = match state.untrack_path(&norm) {
            Some(old) => old.entry_durable,
            None => existed,
        };
        let id = state.insert(Tracked {
            path: norm,
            len: 0,
            durable_len: 0,
            synced: false,
            entry_durable,
            last_append: None,
            cut: None,
        });
        Ok(Box::new(FaultWritable {
            inner,
            path: path.to_path_buf(),
            id,
            epoch: state.epoch,
            state: Arc::clone(&self.state),
        }))
    }

    fn open_appendable(&self, path: &Path, committed_len: u64) -> Result<Box<dyn WritableFile>> {
        let mut state = self.live()?;
        let norm = normalize(path);
        let id = match state.by_path.get(&norm) {
            Some(&id) => id,
            None => {
                let len = self.inner.file_size(path)?;
                state.insert(Tracked::durable(norm, len))
            }
        };
        let durable = match state.files.get(&id) {
            Some(t) => durable_content(&*self.inner, t)?,
            None => Vec::new(),
        };
        let inner = self.inner.open_appendable(path, committed_len)?;
        if let Some(t) = state.files.get_mut(&id) {
            t.reopen(&durable, committed_len);
        }
        Ok(Box::new(FaultWritable {
            inner,
            path: path.to_path_buf(),
            id,
            epoch: state.epoch,
            state: Arc::clone(&self.state),
        }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let epoch = self.live()?.epoch;
        Ok(Arc::new(FaultRandomAccess {
            inner: self.inner.open(path)?,
            path: path.to_path_buf(),
            epoch,
            state: Arc::clone(&self.state),
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        drop(self.live()?);
        self.inner.file_size(path)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut state = self.live()?;
        let (from_n, to_n) = (normalize(from), normalize(to));
        if from_n == to_n {
            return self.inner.rename(from, to);
        }
        // Snapshot what a crash would restore at `to` before the rename destroys it.
        let replaced = match state.by_path.get(&to_n).and_then(|id| state.files.get(id)) {
            Some(t) if t.entry_durable || t.synced => {
                Some((t.clone(), durable_content(&*self.inner, t)?))
            }
            Some(_) => None,
            None if self.inner.exists(to) => {
                let bytes = super::read_all(&*self.inner, to)?;
                Some((Tracked::durable(to_n.clone(), bytes.len() as u64), bytes))
            }
            None => None,
        };
        let from_id = state.by_path.get(&from_n).copied();
        let from_untracked_len = match from_id {
            Some(_) => 0,
            None => self.inner.file_size(from)?,
        };
        self.inner.rename(from, to)?;
        let id = match from_id {
            Some(id) => id,
            None => state.insert(Tracked::durable(from_n.clone(), from_untracked_len)),
        };
        state.untrack_path(&to_n);
        state.by_path.remove(&from_n);
        state.by_path.insert(to_n.clone(), id);
        let mut from_entry_durable = true;
        if let Some(t) = state.files.get_mut(&id) {
            from_entry_durable = t.entry_durable;
            t.path = to_n.clone();
            t.entry_durable = false;
        }
        state.renames.push(PendingRename {
            id,
            from: from_n,
            to: to_n,
            from_entry_durable,
            replaced,
        });
        Ok(())
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let mut state = self.live()?;
        self.inner.remove(path)?;
        state.untrack_path(&normalize(path));
        Ok(())
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        drop(self.live()?);
        self.inner.list(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        drop(self.live()?);
        self.inner.create_dir_all(dir)
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        drop(self.live()?);
        self.inner.remove_dir(dir)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let mut state = self.live()?;
        state.inject(FaultKind::Sync, "sync directory", dir)?;
        self.inner.sync_dir(dir)?;
        state.stats.syncs += 1;
        let norm = normalize(dir);
        for t in state.files.values_mut() {
            if parent_dir(&t.path) == norm {
                t.entry_durable = true;
            }
        }
        state.renames.retain(|r| parent_dir(&r.to) != norm);
        Ok(())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let mut state = self.live()?;
        let inner = self.inner.lock(path)?;
        state.next_id += 1;
        let id = state.next_id;
        state.locks.insert(id, inner);
        Ok(Box::new(FaultLock {
            id,
            state: Arc::clone(&self.state),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{MemFs, read_all, write_all_synced};
    use super::*;

    #[test]
    fn files_that_predate_the_wrapper_are_durable() {
        let mem = MemFs::new();
        let mut w = mem.create(Path::new("/old")).unwrap();
        w.append(b"never synced, but not ours").unwrap();
        write_all_synced(&mem, Path::new("/CURRENT"), b"v1").unwrap();
        let fs = FaultFs::new(Arc::new(mem.clone()));
        fs.crash();
        assert_eq!(
            read_all(&fs, Path::new("/old")).unwrap(),
            b"never synced, but not ours"
        );

        // Renaming one untracked file over another is undone by a crash.
        fs.rename(Path::new("/old"), Path::new("/CURRENT")).unwrap();
        fs.crash();
        assert_eq!(read_all(&mem, Path::new("/CURRENT")).unwrap(), b"v1");
        assert!(mem.exists(Path::new("/old")));
        assert_eq!(fs.stats(), FaultStats::default());
    }

    #[test]
    fn chained_renames_are_undone_newest_first() {
        let fs = FaultFs::new(Arc::new(MemFs::new()));
        write_all_synced(&fs, Path::new("a"), b"A").unwrap();
        fs.sync_dir(Path::new(".")).unwrap();
        fs.rename(Path::new("a"), Path::new("b")).unwrap();
        fs.rename(Path::new("./b"), Path::new("c")).unwrap();
        fs.crash();
        assert_eq!(read_all(&fs, Path::new("a")).unwrap(), b"A");
        assert!(!fs.exists(Path::new("b")));
        assert!(!fs.exists(Path::new("c")));
    }

    #[test]
    fn a_reopened_untracked_file_is_durable_up_to_its_length() {
        let mem = MemFs::new();
        write_all_synced(&mem, Path::new("/t"), b"old|tail").unwrap();
        let fs = FaultFs::new(Arc::new(mem));
        let mut w = fs.open_appendable(Path::new("/t"), 4).unwrap();
        w.append(b"new").unwrap();
        fs.crash();
        assert_eq!(read_all(&fs, Path::new("/t")).unwrap(), b"old|tail");
        let mut w = fs.open_appendable(Path::new("/t"), 4).unwrap();
        w.append(b"new").unwrap();
        w.sync().unwrap();
        w.append(b"+lost").unwrap();
        fs.crash();
        assert_eq!(read_all(&fs, Path::new("/t")).unwrap(), b"old|new");
    }

    #[test]
    fn fail_nth_zero_means_the_next_one() {
        let fs = FaultFs::new(Arc::new(MemFs::new()));
        let mut w = fs.create(Path::new("f")).unwrap();
        fs.fail_nth(FaultKind::Sync, 0);
        assert!(w.sync().is_err());
        w.sync().unwrap();
        assert_eq!(fs.stats().syncs, 1);
    }
}
