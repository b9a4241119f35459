//! The file-system seam: every byte the engine reads or writes goes through [`Fs`].
//!
//! Three implementations: [`OsFs`] (the real file system, `flock`-style locking, directory fsync),
//! [`MemFs`] (in memory, for fast tests) and [`FaultFs`] (a wrapper that fails chosen writes or
//! syncs, and simulates a crash by dropping every byte not covered by a successful sync).
//!
//! Durability contract the engine relies on:
//! - bytes given to [`WritableFile::append`] are durable only after [`WritableFile::sync`] returns
//!   `Ok`;
//! - a created, renamed or removed directory entry is durable only after [`Fs::sync_dir`] on its
//!   parent directory returns `Ok`;
//! - [`Fs::rename`] atomically replaces the target.

mod fault;
#[cfg(target_os = "linux")]
mod mapped_log;
mod mem;
mod os;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::{Error, Result};

pub use fault::{FaultFs, FaultKind, FaultStats};
pub use mem::MemFs;
pub use os::OsFs;

/// A file opened for appending. Dropping it closes it without syncing.
pub trait WritableFile: Send + Sync {
    /// Appends `data` at the end of the file (possibly buffered in user space).
    fn append(&mut self, data: &[u8]) -> Result<()>;
    /// Hands buffered bytes to the operating system (no durability implied).
    fn flush(&mut self) -> Result<()>;
    /// Makes every appended byte durable (flush + `fdatasync`).
    fn sync(&mut self) -> Result<()>;
    /// Bytes appended so far, including buffered ones.
    fn size(&self) -> u64;
    /// Syncs, and releases any space reserved past the appended bytes (a file from
    /// [`Fs::create_mapped_log`]), so the file holds exactly what was appended. Call once the
    /// file is complete; appending after it is allowed. Default: [`WritableFile::sync`].
    fn finish(&mut self) -> Result<()> {
        self.sync()
    }
}

/// A file opened for positional reads; shared between threads.
pub trait RandomAccessFile: Send + Sync {
    /// Fills `buf` with the bytes at `offset`. Reading past the end is an error.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()>;
    /// Length of the file when it was opened (files are immutable once written).
    fn size(&self) -> u64;

    /// Reads `len` bytes at `offset` into a new vector.
    fn read_vec(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.read_exact_at(&mut buf, offset)?;
        Ok(buf)
    }
}

/// The `len` bytes of `data` at `offset` (a read of an in-memory or mapped file named
/// `path`); past the end is an error naming the file.
pub(crate) fn slice_at<'d>(
    data: &'d [u8],
    offset: u64,
    len: usize,
    path: &Path,
) -> Result<&'d [u8]> {
    usize::try_from(offset)
        .ok()
        .and_then(|start| data.get(start..start.checked_add(len)?))
        .ok_or_else(|| {
            Error::io(
                "read",
                path,
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!(
                        "read of {len} bytes at offset {offset} is past the end ({} bytes)",
                        data.len()
                    ),
                ),
            )
        })
}

/// A held lock on a LOCK file; released when dropped.
pub trait FileLock: Send + Sync + fmt::Debug {}

/// The operations the engine needs from a file system.
pub trait Fs: Send + Sync + fmt::Debug + 'static {
    /// Creates (or truncates) `path` for appending.
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>>;
    /// Creates (or truncates) a log file for appending through a shared writable memory map,
    /// where the file system has them (see `Options::mmap_wal`): appends are stores into the
    /// page cache, with no system call. Space is reserved ahead, so until
    /// [`WritableFile::finish`] the file may end in zeros after the appended bytes (also when the
    /// process dies). Default: [`Fs::create`].
    fn create_mapped_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        self.create(path)
    }
    /// Opens an existing file for positional reads.
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Opens an existing file that nothing modifies while it is open (a table) for positional
    /// reads through a read-only memory map, where the file system has them (see
    /// `Options::mmap_reads`). Default: [`Fs::open`].
    fn open_mapped(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open(path)
    }
    /// True if `path` exists.
    fn exists(&self, path: &Path) -> bool;
    /// Length of `path` in bytes.
    fn file_size(&self, path: &Path) -> Result<u64>;
    /// Atomically renames `from` to `to`, replacing `to` if it exists.
    fn rename(&self, from: &Path, to: &Path) -> Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> Result<()>;
    /// Names (not paths) of the entries in directory `dir`, in no particular order.
    fn list(&self, dir: &Path) -> Result<Vec<String>>;
    /// Creates `dir` and its parents if missing.
    fn create_dir_all(&self, dir: &Path) -> Result<()>;
    /// Removes an empty directory.
    fn remove_dir(&self, dir: &Path) -> Result<()>;
    /// Makes the directory entries of `dir` durable (fsync on the directory).
    fn sync_dir(&self, dir: &Path) -> Result<()>;
    /// Takes an exclusive lock on `path` (created if missing). Fails with [`Error::Locked`] when
    /// another process or another handle of this process holds it.
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>>;
}

/// Reads a whole file into memory.
pub fn read_all(fs: &dyn Fs, path: &Path) -> Result<Vec<u8>> {
    let file = fs.open(path)?;
    let len = usize::try_from(file.size())
        .map_err(|_| Error::invalid(format!("{} is too large to read", path.display())))?;
    file.read_vec(0, len)
}

/// Writes `data` to `path` durably: create, append, sync. Does not sync the directory.
pub fn write_all_synced(fs: &dyn Fs, path: &Path, data: &[u8]) -> Result<()> {
    let mut f = fs.create(path)?;
    f.append(data)?;
    f.sync()
}

/// The parent directory of `path` (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
