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
//! - [`Fs::rename`] atomically replaces the target;
//! - [`Fs::open_appendable`] cuts an existing file back to a committed length and appends after
//!   it; the cut is durable only after [`WritableFile::sync`] on the returned file returns `Ok`
//!   (until then a crash may bring back the bytes past the committed length, which the caller
//!   never reads: it cuts them again at its next reopen). Bytes below the committed length are
//!   never changed.
//!
//! Files that may grow: a file reopened by [`Fs::open_appendable`] grows while readers opened
//! before hold it. A reader reads only below [`RandomAccessFile::size`] (its length when opened),
//! and callers give each reader an extent (a committed length) at or below it, so an append, or
//! the cut at a reopen, never changes a byte a reader can see.

mod fault;
#[cfg(target_os = "linux")]
mod mapped_log;
mod mem;
mod os;
mod write_back;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::error::{Error, Result};

pub use fault::{FaultFs, FaultKind, FaultStats};
pub use mem::MemFs;
pub use os::OsFs;
#[cfg(test)]
#[cfg(target_os = "linux")]
pub(crate) use os::mapped_resident_bytes;
pub use write_back::write_back_every;

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
    /// Asks the operating system to start writing the bytes appended so far to the device,
    /// without waiting for them (Linux: `sync_file_range(SYNC_FILE_RANGE_WRITE)` over the bytes
    /// not yet started). No durability is implied: only [`WritableFile::sync`] gives it. Lets a
    /// long file go out in steady steps instead of one burst at its sync ([`write_back_every`]).
    /// Default: [`WritableFile::flush`].
    fn start_write_back(&mut self) -> Result<()> {
        self.flush()
    }
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
    /// Length of the file when it was opened. A file may grow by appends after it was opened
    /// ([`Fs::open_appendable`]): readers only read below an extent they were given, which is
    /// at most this length. Reads ending past this length fail, even if the file has grown.
    fn size(&self) -> u64;

    /// Reads `len` bytes at `offset` into a new vector.
    fn read_vec(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.read_exact_at(&mut buf, offset)?;
        Ok(buf)
    }

    /// The `len` bytes at `offset` as shared bytes: a file read through a memory map
    /// ([`RandomAccessFile::is_mapped`]) hands out a view of the map without copying; others
    /// read into a new buffer.
    fn read_bytes(&self, offset: u64, len: usize) -> Result<Bytes> {
        self.read_vec(offset, len).map(Bytes::from)
    }

    /// Whether [`RandomAccessFile::read_bytes`] is a view of a memory map (no copy, no system
    /// call): a reader may then read a block on each use instead of caching a copy.
    fn is_mapped(&self) -> bool {
        false
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
        .ok_or_else(|| past_end(path, offset, len, data.len() as u64))
}

/// Fails, naming `path`, unless `len` bytes at `offset` end at or below `size` (the length a
/// reader was opened with: bytes appended since are not its to read).
pub(crate) fn check_within(path: &Path, offset: u64, len: usize, size: u64) -> Result<()> {
    match offset.checked_add(len as u64) {
        Some(end) if end <= size => Ok(()),
        _ => Err(past_end(path, offset, len, size)),
    }
}

fn past_end(path: &Path, offset: u64, len: usize, size: u64) -> Error {
    Error::io(
        "read",
        path,
        std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("read of {len} bytes at offset {offset} is past the end ({size} bytes)"),
        ),
    )
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
    /// Reopens the existing file `path` for appending at `committed_len`: bytes past
    /// `committed_len` (an unacknowledged tail written before a crash) are cut first, then
    /// appends continue there, and [`WritableFile::size`] starts at `committed_len`. Bytes below
    /// `committed_len` are never changed. The cut becomes durable with the first successful
    /// [`WritableFile::sync`] of the returned file. Fails with an I/O error (kind `NotFound`) if
    /// `path` does not exist, and with [`Error::Corruption`] naming `path` if it is shorter than
    /// `committed_len` (acknowledged bytes are missing).
    fn open_appendable(&self, path: &Path, committed_len: u64) -> Result<Box<dyn WritableFile>>;
    /// Opens an existing file for positional reads.
    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>>;
    /// Opens an existing file for positional reads through a read-only memory map, where the
    /// file system has them (see `Options::mmap_reads`). REQUIRES: nothing modifies the file's
    /// bytes below the reader's extent while it is open: a table, or a file that only grows by
    /// appends and whose reopen cuts only bytes past every reader's extent. The map covers the
    /// length when opened; later appends are not visible through it. Default: [`Fs::open`].
    fn open_mapped(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open(path)
    }
    /// [`Fs::open_mapped`] that also maps every page of the file into the process before it
    /// returns (Linux `MADV_POPULATE_READ`), so that reads through the map take no page fault:
    /// for a file just written, whose pages the page cache still holds (mapped in one pass
    /// instead of a fault per first touch). Pages the page cache does not hold are read from
    /// the device first. Where the system cannot populate, the same as [`Fs::open_mapped`].
    fn open_mapped_populated(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        self.open_mapped(path)
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

/// The error of [`Fs::open_appendable`] for a file shorter than the committed length.
pub(crate) fn shorter_than_committed(path: &Path, len: u64, committed_len: u64) -> Error {
    Error::corruption(
        path,
        len,
        format!(
            "cannot append at the committed length {committed_len}: the file has only {len} \
             bytes, so acknowledged bytes are missing"
        ),
    )
}

/// The parent directory of `path` (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
