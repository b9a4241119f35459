//! Steady write-back of long files (RocksDB's `bytes_per_sync`).
//!
//! A table is written into the page cache and made durable by one `fdatasync` at its end: the
//! kernel then writes its tens of megabytes in one burst, and every read that needs the device
//! meanwhile waits behind that burst. [`WriteBackEvery`] starts the write-back of each
//! `every` bytes as they are appended ([`WritableFile::start_write_back`]), so a file goes out
//! in steps the device can interleave with reads, and its final sync finds little left to do.
//! Durability is unchanged: nothing is durable before `sync`.

use super::WritableFile;
use crate::error::Result;

/// A file that starts the write-back of its appended bytes every `every` bytes.
struct WriteBackEvery {
    inner: Box<dyn WritableFile>,
    every: u64,
    /// Bytes appended since the last write-back started (or the last sync).
    pending: u64,
}

/// `file`, starting its write-back every `every` bytes appended; `every == 0`: `file` as it
/// is.
pub fn write_back_every(file: Box<dyn WritableFile>, every: u64) -> Box<dyn WritableFile> {
    if every == 0 {
        return file;
    }
    Box::new(WriteBackEvery {
        inner: file,
        every,
        pending: 0,
    })
}

impl WritableFile for WriteBackEvery {
    /// Appends in steps that end where a write-back is due, so one large append (an HTable
    /// writes its buckets in a few) is still written back every `every` bytes.
    fn append(&mut self, mut data: &[u8]) -> Result<()> {
        while !data.is_empty() {
            let room = usize::try_from(self.every - self.pending).unwrap_or(usize::MAX);
            let (step, rest) = data.split_at(data.len().min(room));
            self.inner.append(step)?;
            self.pending += step.len() as u64;
            if self.pending >= self.every {
                self.inner.start_write_back()?;
                self.pending = 0;
            }
            data = rest;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.inner.flush()
    }

    fn sync(&mut self) -> Result<()> {
        self.inner.sync()?;
        self.pending = 0;
        Ok(())
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn start_write_back(&mut self) -> Result<()> {
        self.inner.start_write_back()?;
        self.pending = 0;
        Ok(())
    }

    fn finish(&mut self) -> Result<()> {
        self.inner.finish()?;
        self.pending = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::fs::{Fs, MemFs, OsFs};

    /// Records the file size at each started write-back.
    struct Recorder {
        size: u64,
        starts: Arc<Mutex<Vec<u64>>>,
    }

    impl WritableFile for Recorder {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            self.size += data.len() as u64;
            Ok(())
        }
        fn flush(&mut self) -> Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
        fn size(&self) -> u64 {
            self.size
        }
        fn start_write_back(&mut self) -> Result<()> {
            self.starts.lock().unwrap().push(self.size);
            Ok(())
        }
    }

    fn recorder() -> (Box<dyn WritableFile>, Arc<Mutex<Vec<u64>>>) {
        let starts = Arc::new(Mutex::new(Vec::new()));
        let file = Recorder {
            size: 0,
            starts: Arc::clone(&starts),
        };
        (Box::new(file), starts)
    }

    #[test]
    fn write_back_starts_once_every_so_many_bytes() {
        let (inner, starts) = recorder();
        let mut f = write_back_every(inner, 1000);
        for _ in 0..25 {
            f.append(&[7u8; 300]).unwrap();
        }
        // At every 1000 bytes: appends are cut where a write-back is due.
        let every_1000: Vec<u64> = (1..=7).map(|i| i * 1000).collect();
        assert_eq!(*starts.lock().unwrap(), every_1000);
        f.sync().unwrap();
        f.append(&[7u8; 900]).unwrap();
        assert_eq!(
            starts.lock().unwrap().len(),
            7,
            "a sync starts the count again"
        );
        f.append(&[7u8; 3500]).unwrap();
        assert_eq!(starts.lock().unwrap()[7..], [8500, 9500, 10500, 11500]);
        assert_eq!(f.size(), 7500 + 900 + 3500);
    }

    #[test]
    fn zero_bytes_means_never() {
        let (inner, starts) = recorder();
        let mut f = write_back_every(inner, 0);
        f.append(&vec![1u8; 1 << 20]).unwrap();
        assert!(starts.lock().unwrap().is_empty());
    }

    /// On a real file and in memory, the bytes written back are the bytes appended, before and
    /// after the sync.
    #[test]
    fn files_read_back_what_was_appended() {
        let dir = tempfile::tempdir().unwrap();
        let mem = MemFs::new();
        let disk = dir.path().join("f");
        for (fs, path) in [
            (&OsFs as &dyn Fs, disk.as_path()),
            (&mem, std::path::Path::new("/f")),
        ] {
            let mut f = write_back_every(fs.create(path).unwrap(), 4096);
            let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
            for chunk in data.chunks(777) {
                f.append(chunk).unwrap();
            }
            f.sync().unwrap();
            drop(f);
            assert_eq!(crate::fs::read_all(fs, path).unwrap(), data);
        }
    }
}
