//! The model behind [`super::FaultFs`]: which bytes and directory entries are durable, and how
//! a crash is applied to the inner file system (see the crash model in the parent module).

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::{FaultKind, FaultStats};
use crate::error::{Error, Result};
use crate::fs::{FileLock, Fs};

#[derive(Debug, Default)]
pub(super) struct FaultState {
    /// Bumped by every crash; handles from an older epoch are dead.
    pub(super) epoch: u64,
    /// Set when simulating a crash failed; returned by every later operation.
    pub(super) broken: Option<Error>,
    /// Per kind: the number of operations until the one that fails.
    pub(super) fail_in: [Option<u64>; 2],
    pub(super) fail_always: [bool; 2],
    pub(super) stats: FaultStats,
    pub(super) next_id: u64,
    pub(super) append_seq: u64,
    /// Tracked files by id; the id follows the file through renames.
    pub(super) files: HashMap<u64, Tracked>,
    /// Normalised path -> id of the tracked file there.
    pub(super) by_path: HashMap<PathBuf, u64>,
    /// Renames not yet made durable by `sync_dir`, oldest first.
    pub(super) renames: Vec<PendingRename>,
    /// Locks held through this file system, released by a crash.
    pub(super) locks: HashMap<u64, Box<dyn FileLock>>,
}

#[derive(Debug, Clone)]
pub(super) struct Tracked {
    pub(super) path: PathBuf,
    pub(super) len: u64,
    pub(super) durable_len: u64,
    pub(super) synced: bool,
    pub(super) entry_durable: bool,
    /// (sequence number, offset, length) of the last append.
    pub(super) last_append: Option<(u64, u64, u64)>,
    /// A cut made by [`crate::fs::Fs::open_appendable`] that no sync has made durable yet:
    /// (offset, the durable bytes from there on that the cut removed). A crash restores them.
    pub(super) cut: Option<(u64, Vec<u8>)>,
}

impl Tracked {
    pub(super) fn durable(path: PathBuf, len: u64) -> Tracked {
        Tracked {
            path,
            len,
            durable_len: len,
            synced: true,
            entry_durable: true,
            last_append: None,
            cut: None,
        }
    }

    /// Applies a reopen for appending at `committed_len`, given the file's durable content
    /// from before the cut ([`durable_content`]): what a crash would restore past
    /// `committed_len` is kept aside.
    pub(super) fn reopen(&mut self, durable: &[u8], committed_len: u64) {
        let at = match &self.cut {
            Some((at, _)) => (*at).min(committed_len),
            None => self.durable_len.min(committed_len),
        };
        self.cut = usize::try_from(at)
            .ok()
            .and_then(|a| durable.get(a..))
            .filter(|rest| !rest.is_empty())
            .map(|rest| (at, rest.to_vec()));
        self.durable_len = durable.len() as u64;
        self.len = committed_len;
        self.last_append = None;
    }
}

/// The bytes of tracked file `t` that a crash keeps (no torn write): its durable prefix in
/// `inner`, and the durable tail a pending cut removed.
pub(super) fn durable_content(inner: &dyn Fs, t: &Tracked) -> Result<Vec<u8>> {
    let below = t.cut.as_ref().map_or(t.durable_len, |(at, _)| *at);
    let len = usize::try_from(below)
        .map_err(|_| Error::invalid(format!("{} is too large", t.path.display())))?;
    let mut bytes = inner.open(&t.path)?.read_vec(0, len)?;
    if let Some((_, tail)) = &t.cut {
        bytes.extend_from_slice(tail);
    }
    Ok(bytes)
}

/// How the most recent unsynced append is torn by a crash.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tear {
    /// Bytes of that append that reach the disk.
    pub(super) keep: usize,
    /// The bytes that reach the disk are garbage (each byte inverted) instead of the data.
    pub(super) garble: bool,
}

#[derive(Debug)]
pub(super) struct PendingRename {
    pub(super) id: u64,
    pub(super) from: PathBuf,
    pub(super) to: PathBuf,
    pub(super) from_entry_durable: bool,
    /// The file the rename replaced and its durable bytes.
    pub(super) replaced: Option<(Tracked, Vec<u8>)>,
}

pub(super) fn lock_state(state: &Mutex<FaultState>) -> MutexGuard<'_, FaultState> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

fn dead(op: &'static str, path: &Path) -> Error {
    Error::io(
        op,
        path,
        io::Error::other(
            "the file system crashed (simulated power loss) since this handle was opened",
        ),
    )
}

impl FaultState {
    pub(super) fn check_epoch(&self, epoch: u64, op: &'static str, path: &Path) -> Result<()> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        if epoch == self.epoch {
            Ok(())
        } else {
            Err(dead(op, path))
        }
    }

    /// Counts one operation of `kind` and fails it if a fault is due.
    pub(super) fn inject(&mut self, kind: FaultKind, op: &'static str, path: &Path) -> Result<()> {
        let k = kind as usize;
        let mut fail = self.fail_always[k];
        if let Some(n) = self.fail_in[k] {
            if n <= 1 {
                self.fail_in[k] = None;
                fail = true;
            } else {
                self.fail_in[k] = Some(n - 1);
            }
        }
        if !fail {
            return Ok(());
        }
        let source = match kind {
            FaultKind::Write => io::Error::new(
                io::ErrorKind::StorageFull,
                "No space left on device (injected)",
            ),
            FaultKind::Sync => io::Error::other("fsync failed (injected)"),
        };
        Err(Error::io(op, path, source))
    }

    pub(super) fn insert(&mut self, tracked: Tracked) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.by_path.insert(tracked.path.clone(), id);
        self.files.insert(id, tracked);
        id
    }

    pub(super) fn untrack_path(&mut self, path: &Path) -> Option<Tracked> {
        let id = self.by_path.remove(path)?;
        self.files.remove(&id)
    }

    /// Applies the crash model to the inner file system (see the module doc).
    pub(super) fn simulate_crash(&mut self, inner: &dyn Fs, tear: Option<Tear>) -> Result<()> {
        // The torn write, chosen before renames move files around:
        // (id, offset of the torn append, surviving length).
        let torn = tear.and_then(|tear| {
            self.files
                .iter()
                .filter_map(|(&id, t)| {
                    let (seq, off, len) = t.last_append?;
                    (off + len > t.durable_len || t.cut.is_some())
                        .then(|| (seq, id, off, off + len.min(tear.keep as u64)))
                })
                .max()
                .map(|(_, id, off, cut)| (id, off, cut))
        });
        for r in std::mem::take(&mut self.renames).into_iter().rev() {
            if self.files.get(&r.id).is_some_and(|t| t.path == r.to) {
                inner.rename(&r.to, &r.from)?;
                self.untrack_path(&r.from);
                self.by_path.remove(&r.to);
                self.by_path.insert(r.from.clone(), r.id);
                if let Some(t) = self.files.get_mut(&r.id) {
                    t.path = r.from.clone();
                    t.entry_durable = r.from_entry_durable;
                }
            }
            if let Some((mut tracked, bytes)) = r.replaced
                && !self.by_path.contains_key(&r.to)
            {
                rewrite(inner, &r.to, &bytes)?;
                tracked.durable_len = bytes.len() as u64;
                tracked.cut = None;
                self.insert(tracked);
            }
        }
        let ids: Vec<u64> = self.files.keys().copied().collect();
        for id in ids {
            let Some(t) = self.files.get_mut(&id) else {
                continue;
            };
            if !t.entry_durable && !t.synced {
                if inner.exists(&t.path) {
                    inner.remove(&t.path)?;
                }
                let path = t.path.clone();
                self.untrack_path(&path);
                continue;
            }
            let bytes = match torn {
                // The disk applied a pending cut, then the appends in order, and failed in
                // the middle of the last one.
                Some((torn_id, off, cut)) if torn_id == id => {
                    let keep_len = if t.cut.is_some() {
                        cut
                    } else {
                        cut.max(t.durable_len)
                    };
                    let mut bytes = read_prefix(inner, &t.path, keep_len)?;
                    if tear.is_some_and(|tear| tear.garble) {
                        let from = usize::try_from(off).unwrap_or(usize::MAX);
                        for b in bytes.iter_mut().skip(from) {
                            *b = !*b;
                        }
                    }
                    Some(bytes)
                }
                _ if t.cut.is_some() => Some(durable_content(inner, t)?),
                _ if inner.file_size(&t.path)? != t.durable_len => {
                    Some(read_prefix(inner, &t.path, t.durable_len)?)
                }
                _ => None,
            };
            let keep_len = match bytes {
                Some(bytes) => {
                    rewrite(inner, &t.path, &bytes)?;
                    bytes.len() as u64
                }
                None => t.durable_len,
            };
            *t = Tracked::durable(t.path.clone(), keep_len);
        }
        Ok(())
    }
}

/// The first `len` bytes of `path` in `inner`.
fn read_prefix(inner: &dyn Fs, path: &Path, len: u64) -> Result<Vec<u8>> {
    let len = usize::try_from(len)
        .map_err(|_| Error::invalid(format!("{} is too large", path.display())))?;
    inner.open(path)?.read_vec(0, len)
}

/// Replaces the content of `path` in `inner` with `bytes`, durably.
fn rewrite(inner: &dyn Fs, path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = inner.create(path)?;
    f.append(bytes)?;
    f.sync()
}
