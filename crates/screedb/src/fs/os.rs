//! [`Fs`] on the real file system.
//!
//! Writes go through a user-space buffer (flushed by `flush`/`sync`); `sync` is `fdatasync`;
//! directory entries are made durable by opening the directory and calling `fsync` on it;
//! LOCK files use the OS advisory lock (`flock` on Linux) through `std::fs::File::try_lock`;
//! `open_mapped` reads through a read-only `mmap` of the whole file (crate memmap2);
//! `create_mapped_log` appends through a writable one on Linux (see `mapped_log.rs`), falling
//! back to `create` where the file system cannot reserve space. `open_appendable` is a plain
//! buffered file like `create`'s, cut with `ftruncate` and positioned at the committed length.
//! A reader reads only below its length when opened (pread and map alike), so appends made
//! after it opened are invisible to it.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use super::{FileLock, Fs, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsFs;

/// Size of the user-space write buffer of [`OsFs`] files.
const WRITE_BUFFER: usize = 64 << 10;

struct OsWritable {
    path: PathBuf,
    file: BufWriter<File>,
    size: u64,
    /// Bytes whose write-back has been started ([`WritableFile::start_write_back`]).
    written_back: u64,
}

impl WritableFile for OsWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.file
            .write_all(data)
            .map_err(|e| Error::io("write", &self.path, e))?;
        self.size += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.file
            .flush()
            .map_err(|e| Error::io("write", &self.path, e))
    }

    fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.file
            .get_ref()
            .sync_data()
            .map_err(|e| Error::io("sync", &self.path, e))?;
        // Synced bytes need no write-back: the next one starts after them.
        self.written_back = self.size;
        Ok(())
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn start_write_back(&mut self) -> Result<()> {
        self.flush()?;
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let (from, len) = (self.written_back, self.size - self.written_back);
            let (Ok(from), Ok(len)) = (i64::try_from(from), i64::try_from(len)) else {
                return Ok(());
            };
            // SAFETY: sync_file_range takes a descriptor and a byte range, no pointers into
            // our memory; the descriptor stays open while `self.file` lives.
            let rc = unsafe {
                libc::sync_file_range(
                    self.file.get_ref().as_raw_fd(),
                    from,
                    len,
                    libc::SYNC_FILE_RANGE_WRITE,
                )
            };
            if rc != 0 {
                let e = std::io::Error::last_os_error();
                return Err(Error::io("write back", &self.path, e));
            }
        }
        self.written_back = self.size;
        Ok(())
    }
}

struct OsRandomAccess {
    path: PathBuf,
    size: u64,
    source: Source,
}

/// Where an open file's bytes are read from.
enum Source {
    /// `pread` on the open file.
    File(File),
    /// The whole file, read-only, when opened by `open_mapped` (the map, shared: `read_bytes`
    /// hands out views of it that keep it mapped). The file itself is closed once mapped (the
    /// map stays valid), so a mapped table costs no file descriptor (as LevelDB's mmap
    /// reader), whatever `max_open_tables` is.
    Map(Bytes),
}

impl RandomAccessFile for OsRandomAccess {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        match &self.source {
            Source::Map(map) => {
                buf.copy_from_slice(super::slice_at(map, offset, buf.len(), &self.path)?);
                Ok(())
            }
            Source::File(file) => {
                super::check_within(&self.path, offset, buf.len(), self.size)?;
                file.read_exact_at(buf, offset)
                    .map_err(|e| Error::io("read", &self.path, e))
            }
        }
    }

    /// A mapped file copies the bytes straight into the new vector (no zero-fill first).
    fn read_vec(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        match &self.source {
            Source::Map(map) => Ok(super::slice_at(map, offset, len, &self.path)?.to_vec()),
            Source::File(_) => {
                let mut buf = vec![0u8; len];
                self.read_exact_at(&mut buf, offset)?;
                Ok(buf)
            }
        }
    }

    /// A mapped file gives a view of the map: no copy.
    fn read_bytes(&self, offset: u64, len: usize) -> Result<Bytes> {
        match &self.source {
            Source::Map(map) => Ok(map.slice_ref(super::slice_at(map, offset, len, &self.path)?)),
            Source::File(_) => self.read_vec(offset, len).map(Bytes::from),
        }
    }

    fn is_mapped(&self) -> bool {
        matches!(self.source, Source::Map(_))
    }

    fn size(&self) -> u64 {
        self.size
    }
}

/// Opens `path` through a read-only map of the whole file (positional reads where it cannot be
/// mapped), its pages mapped in at once with `populate` where the system can.
fn map_file(path: &Path, populate: bool) -> Result<Arc<dyn RandomAccessFile>> {
    let (file, size) = open_with_size(path)?;
    // An empty file cannot be mapped; a map that fails (address space, map count) falls
    // back to positional reads.
    let map = if size == 0 {
        None
    } else {
        // SAFETY: `Mmap::map` is unsafe because the mapped bytes change (or the process
        // gets SIGBUS) if the file is modified or truncated while mapped. Callers map only
        // files nothing modifies below their extent while open (`Fs::open_mapped`'s
        // contract): ScreeDB tables, written under a fresh name, synced, and never written
        // again, and files that only grow by appends (`open_appendable`), whose reopen cuts
        // only bytes past every reader's extent, so no page a reader touches is cut; the map
        // covers the length at open, so appends after it are never read through it;
        // deleting a file while mapped keeps its pages. Another ScreeDB process is kept out by the LOCK file;
        // another program truncating a live table is outside the contract (as with
        // LevelDB's and RocksDB's mmap reads), documented at `Options::mmap_reads`.
        unsafe { memmap2::Mmap::map(&file) }.ok().inspect(|map| {
            if populate {
                populate_read(map);
            }
        })
    };
    Ok(Arc::new(OsRandomAccess {
        path: path.to_path_buf(),
        size,
        source: map.map_or(Source::File(file), |m| Source::Map(Bytes::from_owner(m))),
    }))
}

/// Maps in every page of `map` (`MADV_POPULATE_READ`, Linux 5.14); a hint, so a kernel without
/// it leaves the pages to fault in on first read, as without the call.
#[cfg(target_os = "linux")]
fn populate_read(map: &memmap2::Mmap) {
    let _ = map.advise(memmap2::Advice::PopulateRead);
}

#[cfg(not(target_os = "linux"))]
fn populate_read(_map: &memmap2::Mmap) {}

/// Opens `path` for reading and returns it with its length.
fn open_with_size(path: &Path) -> Result<(File, u64)> {
    let file = File::open(path).map_err(|e| Error::io("open", path, e))?;
    let size = file
        .metadata()
        .map_err(|e| Error::io("stat", path, e))?
        .len();
    Ok((file, size))
}

/// Bytes of every map of `path` in this process that are mapped to pages now (the `Rss` of
/// its maps in `/proc/self/smaps`), for tests of [`Fs::open_mapped_populated`].
#[cfg(test)]
#[cfg(target_os = "linux")]
pub(crate) fn mapped_resident_bytes(path: &Path) -> u64 {
    let smaps = fs::read_to_string("/proc/self/smaps").unwrap();
    let name = path.to_string_lossy();
    let mut in_map = false;
    let mut kib = 0u64;
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or("");
        if first.contains('-') && !first.ends_with(':') {
            // A map's header: range, perms, offset, device, inode, then its path.
            in_map = fields.nth(4) == Some(&*name);
        } else if in_map && first == "Rss:" {
            kib += fields
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    kib * 1024
}

#[derive(Debug)]
struct OsLock {
    // The lock is released when the file is closed.
    _file: File,
}

impl FileLock for OsLock {}

impl Fs for OsFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io("create", path, e))?;
        Ok(Box::new(OsWritable {
            path: path.to_path_buf(),
            file: BufWriter::with_capacity(WRITE_BUFFER, file),
            size: 0,
            written_back: 0,
        }))
    }

    fn open_appendable(&self, path: &Path, committed_len: u64) -> Result<Box<dyn WritableFile>> {
        let mut file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| Error::io("open for appending", path, e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io("stat", path, e))?
            .len();
        if len < committed_len {
            return Err(super::shorter_than_committed(path, len, committed_len));
        }
        if len > committed_len {
            // The unacknowledged tail goes; the new size is made durable by the next sync
            // (fdatasync flushes a size change, since later reads depend on it).
            file.set_len(committed_len)
                .map_err(|e| Error::io("truncate", path, e))?;
        }
        file.seek(SeekFrom::Start(committed_len))
            .map_err(|e| Error::io("seek", path, e))?;
        Ok(Box::new(OsWritable {
            path: path.to_path_buf(),
            file: BufWriter::with_capacity(WRITE_BUFFER, file),
            size: committed_len,
            written_back: committed_len,
        }))
    }

    #[cfg(target_os = "linux")]
    fn create_mapped_log(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        use super::mapped_log::{Created, MappedLog};
        match MappedLog::create(path)? {
            Created::Mapped(log) => Ok(Box::new(log)),
            Created::Unsupported => self.create(path),
        }
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let (file, size) = open_with_size(path)?;
        Ok(Arc::new(OsRandomAccess {
            path: path.to_path_buf(),
            size,
            source: Source::File(file),
        }))
    }

    fn open_mapped(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        map_file(path, false)
    }

    fn open_mapped_populated(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        map_file(path, true)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        Ok(fs::metadata(path)
            .map_err(|e| Error::io("stat", path, e))?
            .len())
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        fs::rename(from, to).map_err(|e| Error::io("rename", from, e))
    }

    fn remove(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| Error::io("remove", path, e))
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir).map_err(|e| Error::io("list", dir, e))? {
            let entry = entry.map_err(|e| Error::io("list", dir, e))?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_owned());
            }
        }
        Ok(names)
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        fs::create_dir_all(dir).map_err(|e| Error::io("create directory", dir, e))
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        fs::remove_dir(dir).map_err(|e| Error::io("remove directory", dir, e))
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io("sync directory", dir, e))
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Error::io("open lock file", path, e))?;
        match file.try_lock() {
            Ok(()) => Ok(Box::new(OsLock { _file: file })),
            Err(TryLockError::WouldBlock) => Err(Error::Locked(path.to_path_buf())),
            Err(TryLockError::Error(e)) => Err(Error::io("lock", path, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Open descriptors of this process on `path` (other tests never open this file).
    fn descriptors_on(path: &Path) -> usize {
        std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.unwrap().path()).ok())
            .filter(|target| target == path)
            .count()
    }

    #[test]
    fn a_mapped_file_holds_no_descriptor_and_reads_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().canonicalize().unwrap().join("mapped");
        std::fs::write(&path, b"0123456789").unwrap();
        let mapped = OsFs.open_mapped(&path).unwrap();
        assert_eq!(descriptors_on(&path), 0, "the map keeps no descriptor open");
        let plain = OsFs.open(&path).unwrap();
        assert_eq!(descriptors_on(&path), 1);
        assert_eq!(mapped.read_vec(3, 4).unwrap(), b"3456");
        assert_eq!(plain.read_vec(3, 4).unwrap(), b"3456");
        assert_eq!(mapped.size(), 10);
        assert!(mapped.read_vec(8, 4).is_err(), "past the end is an error");
        drop(plain);
        assert_eq!(descriptors_on(&path), 0);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_populated_map_has_every_page_mapped_before_any_read() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        let data = vec![7u8; 1 << 20];
        let (plain, populated) = (dir.join("plain"), dir.join("populated"));
        std::fs::write(&plain, &data).unwrap();
        std::fs::write(&populated, &data).unwrap();
        let p = OsFs.open_mapped(&plain).unwrap();
        let q = OsFs.open_mapped_populated(&populated).unwrap();
        assert_eq!(mapped_resident_bytes(&populated), 1 << 20);
        assert!(
            mapped_resident_bytes(&plain) < 1 << 20,
            "an unread map of {} bytes has {} mapped",
            1 << 20,
            mapped_resident_bytes(&plain)
        );
        assert_eq!(q.read_vec(4096, 3).unwrap(), p.read_vec(4096, 3).unwrap());
    }

    #[test]
    fn write_sync_read_rename_remove() {
        let dir = tempfile::tempdir().unwrap();
        let fs = OsFs;
        let a = dir.path().join("a");
        let mut w = fs.create(&a).unwrap();
        w.append(b"hello ").unwrap();
        w.append(b"world").unwrap();
        assert_eq!(w.size(), 11);
        w.sync().unwrap();
        drop(w);
        let r = fs.open(&a).unwrap();
        assert_eq!(r.size(), 11);
        assert_eq!(r.read_vec(6, 5).unwrap(), b"world");
        assert!(r.read_vec(8, 5).is_err(), "reading past the end must fail");
        let b = dir.path().join("b");
        fs.rename(&a, &b).unwrap();
        fs.sync_dir(dir.path()).unwrap();
        assert!(!fs.exists(&a));
        assert_eq!(fs.list(dir.path()).unwrap(), vec!["b".to_string()]);
        fs.remove(&b).unwrap();
        assert!(fs.list(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn mapped_reads_match_positional_reads() {
        let dir = tempfile::tempdir().unwrap();
        let fs = OsFs;
        let a = dir.path().join("a");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
        let mut w = fs.create(&a).unwrap();
        w.append(&data).unwrap();
        w.sync().unwrap();
        drop(w);
        let (plain, mapped) = (fs.open(&a).unwrap(), fs.open_mapped(&a).unwrap());
        assert_eq!(mapped.size(), 10_000);
        for (off, len) in [(0, 1), (4090, 20), (9_990, 10), (0, 10_000)] {
            assert_eq!(
                mapped.read_vec(off, len).unwrap(),
                plain.read_vec(off, len).unwrap()
            );
        }
        for (off, len) in [(9_995, 10), (10_000, 1), (u64::MAX, 1)] {
            let err = mapped.read_vec(off, len).unwrap_err();
            assert!(err.to_string().contains("read"), "{err}");
            assert!(err.to_string().contains(&*a.to_string_lossy()), "{err}");
        }
        // An empty file cannot be mapped: it opens and reads like any other.
        let empty = dir.path().join("empty");
        fs.create(&empty).unwrap().sync().unwrap();
        let e = fs.open_mapped(&empty).unwrap();
        assert_eq!(e.size(), 0);
        assert_eq!(e.read_vec(0, 0).unwrap(), Vec::<u8>::new());
        assert!(e.read_vec(0, 1).is_err());
    }

    #[test]
    fn open_appendable_cuts_the_tail_and_appends_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let mut w = OsFs.create(&a).unwrap();
        w.append(b"keep|drop").unwrap();
        w.sync().unwrap();
        drop(w);
        let mapped = OsFs.open_mapped(&a).unwrap();
        let mut w = OsFs.open_appendable(&a, 5).unwrap();
        assert_eq!(w.size(), 5);
        w.append(b"new").unwrap();
        w.sync().unwrap();
        assert_eq!(OsFs.open(&a).unwrap().read_vec(0, 8).unwrap(), b"keep|new");
        // The mapped reader still reads below the committed length it was given.
        assert_eq!(mapped.read_vec(0, 5).unwrap(), b"keep|");
        let err = OsFs.open_appendable(&a, 9).err().unwrap();
        assert!(err.is_corruption(), "{err}");
    }

    #[test]
    fn second_lock_is_refused_until_first_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("LOCK");
        let first = OsFs.lock(&path).unwrap();
        let err = OsFs.lock(&path).unwrap_err();
        assert!(matches!(err, Error::Locked(_)), "{err}");
        assert!(err.to_string().contains("locked by another process"));
        drop(first);
        OsFs.lock(&path).unwrap();
    }

    #[test]
    fn errors_name_the_path() {
        let err = OsFs
            .open(Path::new("/nonexistent/screedb-file"))
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("/nonexistent/screedb-file"),
            "{err}"
        );
    }
}
