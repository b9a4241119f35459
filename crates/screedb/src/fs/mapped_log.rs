//! [`MappedLog`]: a log file appended through a shared, writable memory map (Linux only).
//!
//! Why: a WAL append with `write(2)` costs a system call per write group, about 0.9 µs, which
//! was 45% of a `fillseq` process (perf, third session). A store into a shared file mapping
//! puts the bytes in the page cache with no system call, so, exactly as after `write(2)`, they
//! survive the process being killed, and `fdatasync` makes them durable (Linux writes back the
//! dirty pages of a file however they were dirtied). LevelDB's early releases wrote logs this way.
//!
//! Layout: the file grows in [`CHUNK`]-sized steps. Each step first reserves the chunk's disk
//! blocks with `fallocate` (so a store into the map never needs a new block: a full disk is an
//! ordinary `ENOSPC` error from `append`, never a SIGBUS), then maps that chunk. Bytes past the
//! appended ones read as zeros; [`WritableFile::finish`] trims them (`ftruncate` + `fsync`). A log
//! left by a killed process therefore ends in zeros, which the log reader treats as a torn tail
//! of the newest log (`wal::RecoveryMode::TolerateTornTail`); logs the engine finished are exact.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use super::WritableFile;
use crate::error::{Error, Result};

/// Bytes reserved and mapped at a time (a multiple of every page size Linux uses).
pub(super) const CHUNK: u64 = 1 << 20;

/// A log file written through a memory map of its current [`CHUNK`].
pub(super) struct MappedLog {
    path: PathBuf,
    file: File,
    /// Bytes appended so far.
    size: u64,
    /// File offset of `map[0]`: a multiple of `CHUNK`.
    window_start: u64,
    /// The chunk that holds offset `size`, when mapped (none before the first append and after
    /// `finish`).
    map: Option<memmap2::MmapMut>,
}

/// What [`MappedLog::create`] found.
pub(super) enum Created {
    /// The file is created and its first chunk reserved.
    Mapped(MappedLog),
    /// The file system cannot reserve blocks (`fallocate` is unsupported): the caller should
    /// write the file with `write(2)` instead. The file is created and empty.
    Unsupported,
}

impl MappedLog {
    /// Creates (or truncates) `path` and reserves its first chunk.
    pub(super) fn create(path: &Path) -> Result<Created> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| Error::io("create", path, e))?;
        match reserve(&file, 0) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                return Ok(Created::Unsupported);
            }
            Err(e) => return Err(Error::io("reserve space for", path, e)),
        }
        Ok(Created::Mapped(MappedLog {
            path: path.to_path_buf(),
            file,
            size: 0,
            window_start: 0,
            map: None,
        }))
    }

    /// Maps the chunk holding offset `self.size` (reserving its blocks first) and makes it the
    /// window. The caller has dropped the previous map.
    fn map_window(&mut self) -> Result<memmap2::MmapMut> {
        let start = self.size - self.size % CHUNK;
        reserve(&self.file, start).map_err(|e| Error::io("reserve space for", &self.path, e))?;
        // SAFETY: `MmapMut::map_mut` is unsafe because the mapped bytes may change underneath
        // (or the process get SIGBUS) if the file is modified or truncated by anyone else while
        // mapped. This file is a log the engine just created under a fresh name, in a directory
        // another ScreeDB process cannot open (LOCK file); only this writer writes or truncates
        // it, and it drops the map before truncating (`finish`). The chunk's blocks are
        // reserved above, so stores into it need no allocation. Another program truncating a
        // live log is outside the contract, as documented at `Options::mmap_wal`.
        let map = unsafe {
            memmap2::MmapOptions::new()
                .offset(start)
                .len(CHUNK as usize)
                .map_mut(&self.file)
        }
        .map_err(|e| Error::io("map", &self.path, e))?;
        self.window_start = start;
        Ok(map)
    }
}

/// Reserves the blocks of the chunk at `start` (and extends the file to its end) with
/// `fallocate`; reserving blocks already reserved is a no-op.
fn reserve(file: &File, start: u64) -> std::io::Result<()> {
    let (Ok(offset), Ok(len)) = (libc::off_t::try_from(start), libc::off_t::try_from(CHUNK)) else {
        return Err(std::io::Error::from(std::io::ErrorKind::FileTooLarge));
    };
    // SAFETY: `fallocate` only reads its integer arguments; the descriptor is open and owned by
    // `file` for the duration of the call.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), 0, offset, len) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

impl WritableFile for MappedLog {
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        while !data.is_empty() {
            let mut map = match self.map.take() {
                Some(map) if self.size < self.window_start + CHUNK => map,
                _ => self.map_window()?,
            };
            // Below CHUNK, which fits in usize.
            let at = (self.size - self.window_start) as usize;
            let n = data.len().min(CHUNK as usize - at);
            let (now, rest) = data.split_at(n);
            map[at..at + n].copy_from_slice(now);
            self.map = Some(map);
            self.size += n as u64;
            data = rest;
        }
        Ok(())
    }

    /// The bytes are in the page cache already: nothing to hand over.
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| Error::io("sync", &self.path, e))
    }

    fn finish(&mut self) -> Result<()> {
        // No store may reach a page past the new end of file: unmap first.
        self.map = None;
        self.file
            .set_len(self.size)
            .map_err(|e| Error::io("truncate", &self.path, e))?;
        self.file
            .sync_all()
            .map_err(|e| Error::io("sync", &self.path, e))
    }

    fn size(&self) -> u64 {
        self.size
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn created(path: &Path) -> MappedLog {
        match MappedLog::create(path).unwrap() {
            Created::Mapped(log) => log,
            Created::Unsupported => panic!("the test directory's file system has no fallocate"),
        }
    }

    #[test]
    fn appends_across_chunks_read_back_and_finish_trims_the_reserve() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000001.log");
        let mut log = created(&path);
        let chunk = CHUNK as usize;
        // One append that crosses two chunk boundaries, then small ones up to a boundary.
        let big: Vec<u8> = (0..2 * chunk + 77).map(|i| (i % 251) as u8).collect();
        log.append(&big).unwrap();
        let small = vec![9u8; 3 * chunk - big.len()];
        log.append(&small).unwrap();
        log.append(b"tail").unwrap();
        log.flush().unwrap();
        log.sync().unwrap();
        let size = log.size();
        assert_eq!(size as usize, 3 * chunk + 4);
        // Before finish the file holds the reserve of the fourth chunk, as zeros.
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(on_disk.len(), 4 * chunk);
        assert_eq!(&on_disk[..big.len()], &big[..]);
        assert_eq!(&on_disk[big.len()..3 * chunk], &small[..]);
        assert_eq!(&on_disk[3 * chunk..3 * chunk + 4], b"tail");
        assert!(on_disk[3 * chunk + 4..].iter().all(|&b| b == 0));
        log.finish().unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
        // Appending after finish continues where the log ended.
        log.append(b"more").unwrap();
        log.finish().unwrap();
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(on_disk.len() as u64, size + 4);
        assert_eq!(&on_disk[on_disk.len() - 8..], b"tailmore");
    }

    #[test]
    fn dropped_without_finish_keeps_every_appended_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("000002.log");
        let mut log = created(&path);
        log.append(b"acknowledged").unwrap();
        drop(log);
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(&on_disk[..12], b"acknowledged");
        assert_eq!(on_disk.len() as u64, CHUNK);
    }

    #[test]
    fn an_unwritable_path_is_an_error_naming_it() {
        let err = MappedLog::create(Path::new("/no/such/dir/000003.log"))
            .err()
            .unwrap();
        assert!(err.to_string().contains("/no/such/dir/000003.log"), "{err}");
    }
}
