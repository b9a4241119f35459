//! [`LogWriter`]: splits records into fragments and appends them to a file.
//!
//! The byte layout is in [`super::format`]: each fragment is a 7-byte header
//! (masked CRC32C u32 LE | length u16 LE | type u8) and its payload, and fragments never cross a
//! 32 KiB block boundary; fewer than 7 bytes left in a block are filled with zeros.
//! [`LogWriter::add_compressed_record`] writes a record of pieces compressed beforehand
//! ([`super::packed`]) in fragment types 5 to 8.

use std::fmt;

use super::format::{BLOCK_SIZE, FragmentType, HEADER_SIZE, encode_header};
use super::packed::{self, Piece};
use crate::error::{Error, Result};
use crate::fs::WritableFile;

/// A compressed record's encoding buffer larger than this is freed after use, not kept for the
/// next record (one huge batch must not pin its size for the log's life).
const MAX_KEPT_SCRATCH: usize = 1 << 20;

/// The zeros written into a block trailer (at most `HEADER_SIZE - 1` of them).
const TRAILER_ZEROS: [u8; HEADER_SIZE - 1] = [0; HEADER_SIZE - 1];

/// Appends records to a log file in the LevelDB log format.
///
/// Failure is sticky: after an append fails, the file may end inside a fragment, so every later
/// call returns the same error (a fresh writer on a new file is the way out).
pub struct LogWriter {
    file: Box<dyn WritableFile>,
    /// Offset inside the current block where the next fragment (or trailer) goes.
    block_offset: usize,
    /// The first error returned by the file, repeated by every later call.
    failed: Option<Error>,
    /// Set once [`LogWriter::finish`] succeeded: a second call has nothing to do.
    finished: bool,
    /// Where a compressed record is encoded before it is cut into fragments (kept between
    /// records for its allocation).
    scratch: Vec<u8>,
}

impl fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogWriter")
            .field("size", &self.file.size())
            .field("block_offset", &self.block_offset)
            .field("failed", &self.failed)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl LogWriter {
    /// A writer appending to `file`, which is normally new and empty. If `file` already holds a
    /// log (its `size()` is not 0), the block position continues from that size, so the records
    /// appended here follow the existing ones.
    pub fn new(file: Box<dyn WritableFile>) -> Self {
        // The remainder is below BLOCK_SIZE, so it always fits in usize.
        let block_offset = usize::try_from(file.size() % BLOCK_SIZE as u64).unwrap_or(0);
        LogWriter {
            file,
            block_offset,
            failed: None,
            finished: false,
            scratch: Vec::new(),
        }
    }

    /// Appends `data` as one record (one FULL fragment, or FIRST, MIDDLE*, LAST). `data` may be
    /// empty or of any size. Neither flushes nor syncs.
    pub fn add_record(&mut self, data: &[u8]) -> Result<()> {
        self.add(data, false)
    }

    /// Appends the record `prefix ++ pieces` as a compressed record (fragment types 5 to 8;
    /// readers return the record itself). For the WAL only: the MANIFEST stays in LevelDB's
    /// format. REQUIRES: `prefix` and each raw piece below 4 GiB.
    pub fn add_compressed_record(&mut self, prefix: &[u8], pieces: &[Piece<'_>]) -> Result<()> {
        let mut body = std::mem::take(&mut self.scratch);
        body.clear();
        packed::encode(prefix, pieces, &mut body);
        let result = self.add(&body, true);
        if body.capacity() <= MAX_KEPT_SCRATCH {
            self.scratch = body;
        }
        result
    }

    /// Emits one record of either family; the first failure is kept and repeated.
    fn add(&mut self, data: &[u8], compressed: bool) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let result = self.emit_record(data, compressed);
        if let Err(e) = &result {
            self.failed = Some(e.clone());
        }
        result
    }

    fn emit_record(&mut self, data: &[u8], compressed: bool) -> Result<()> {
        let mut rest = data;
        let mut begin = true;
        loop {
            let leftover = BLOCK_SIZE - self.block_offset;
            if leftover < HEADER_SIZE {
                if leftover > 0 {
                    self.file.append(&TRAILER_ZEROS[..leftover])?;
                }
                self.block_offset = 0;
            }
            let avail = BLOCK_SIZE - self.block_offset - HEADER_SIZE;
            let len = rest.len().min(avail);
            let end = len == rest.len();
            let kind = match (begin, end) {
                (true, true) => FragmentType::Full,
                (true, false) => FragmentType::First,
                (false, false) => FragmentType::Middle,
                (false, true) => FragmentType::Last,
            };
            let (payload, tail) = rest.split_at(len);
            self.file
                .append(&encode_header(kind, compressed, payload))?;
            self.file.append(payload)?;
            self.block_offset += HEADER_SIZE + len;
            rest = tail;
            begin = false;
            if end {
                return Ok(());
            }
        }
    }

    /// Hands buffered bytes to the operating system.
    pub fn flush(&mut self) -> Result<()> {
        self.checked(|f| f.flush())
    }

    /// Makes every record added so far durable.
    pub fn sync(&mut self) -> Result<()> {
        self.checked(|f| f.sync())
    }

    /// Makes every record durable and trims space the file reserved past them (see
    /// [`WritableFile::finish`]): the log is complete and reads back exactly, in strict mode too.
    /// Once it succeeded, later calls return `Ok` at once; no record may be added after it.
    pub fn finish(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.checked(|f| f.finish())?;
        self.finished = true;
        Ok(())
    }

    fn checked(&mut self, op: impl FnOnce(&mut dyn WritableFile) -> Result<()>) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let result = op(self.file.as_mut());
        if let Err(e) = &result {
            self.failed = Some(e.clone());
        }
        result
    }

    /// Bytes written to the file so far (including bytes it had before this writer).
    pub fn size(&self) -> u64 {
        self.file.size()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A `WritableFile` over a shared vector, failing appends once `fail_after` bytes are in.
    struct VecFile {
        data: Arc<Mutex<Vec<u8>>>,
        fail_after: usize,
        syncs: Arc<Mutex<usize>>,
    }

    impl WritableFile for VecFile {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            let mut v = self.data.lock().unwrap();
            if v.len() + data.len() > self.fail_after {
                return Err(Error::io(
                    "write",
                    "vec",
                    std::io::Error::other("disk full"),
                ));
            }
            v.extend_from_slice(data);
            Ok(())
        }
        fn flush(&mut self) -> Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            *self.syncs.lock().unwrap() += 1;
            Ok(())
        }
        fn size(&self) -> u64 {
            self.data.lock().unwrap().len() as u64
        }
    }

    fn writer(fail_after: usize) -> (LogWriter, Arc<Mutex<Vec<u8>>>) {
        let data = Arc::new(Mutex::new(Vec::new()));
        let file = VecFile {
            data: Arc::clone(&data),
            fail_after,
            syncs: Arc::default(),
        };
        (LogWriter::new(Box::new(file)), data)
    }

    #[test]
    fn empty_record_is_a_bare_full_header() {
        let (mut w, data) = writer(usize::MAX);
        w.add_record(b"").unwrap();
        assert_eq!(w.size(), HEADER_SIZE as u64);
        assert_eq!(
            *data.lock().unwrap(),
            encode_header(FragmentType::Full, false, b"")
        );
    }

    #[test]
    fn trailer_of_one_to_six_zero_bytes_is_written_before_the_next_record() {
        for leftover in 1..HEADER_SIZE {
            let (mut w, data) = writer(usize::MAX);
            let first = vec![7u8; BLOCK_SIZE - HEADER_SIZE - leftover];
            w.add_record(&first).unwrap();
            assert_eq!(w.size(), (BLOCK_SIZE - leftover) as u64);
            w.add_record(b"next").unwrap();
            let v = data.lock().unwrap();
            assert_eq!(v.len(), BLOCK_SIZE + HEADER_SIZE + 4);
            assert!(v[BLOCK_SIZE - leftover..BLOCK_SIZE].iter().all(|&b| b == 0));
            assert_eq!(v[BLOCK_SIZE + 6], FragmentType::Full.as_byte(false));
        }
    }

    #[test]
    fn exactly_seven_bytes_left_gives_an_empty_first_fragment() {
        let (mut w, data) = writer(usize::MAX);
        w.add_record(&vec![1u8; BLOCK_SIZE - 2 * HEADER_SIZE])
            .unwrap();
        w.add_record(b"xy").unwrap();
        let v = data.lock().unwrap();
        let first = BLOCK_SIZE - HEADER_SIZE;
        assert_eq!(
            &v[first + 4..first + 7],
            &[0, 0, FragmentType::First.as_byte(false)]
        );
        assert_eq!(v[BLOCK_SIZE + 6], FragmentType::Last.as_byte(false));
    }

    #[test]
    fn large_record_uses_first_middle_last() {
        let (mut w, data) = writer(usize::MAX);
        w.add_record(&vec![3u8; 3 * BLOCK_SIZE]).unwrap();
        let v = data.lock().unwrap();
        let types: Vec<u8> = (0..4).map(|b| v[b * BLOCK_SIZE + 6]).collect();
        assert_eq!(types, vec![2, 3, 3, 4]);
        assert_eq!(v.len(), 3 * BLOCK_SIZE + 4 * HEADER_SIZE);
    }

    #[test]
    fn continues_the_block_position_of_an_existing_file() {
        let data = Arc::new(Mutex::new(vec![0u8; BLOCK_SIZE - 3]));
        let file = VecFile {
            data: Arc::clone(&data),
            fail_after: usize::MAX,
            syncs: Arc::default(),
        };
        let mut w = LogWriter::new(Box::new(file));
        w.add_record(b"a").unwrap();
        assert_eq!(w.size(), (BLOCK_SIZE + HEADER_SIZE + 1) as u64);
    }

    #[test]
    fn a_failed_append_is_sticky() {
        let (mut w, _data) = writer(10);
        w.add_record(b"ab").unwrap();
        let err = w.add_record(b"abc").unwrap_err();
        assert_eq!(err.io_kind(), Some(std::io::ErrorKind::Other));
        assert!(
            w.add_record(b"").is_err(),
            "writes after a failure must fail"
        );
        assert!(w.sync().is_err());
        assert!(w.flush().is_err());
        assert!(format!("{w:?}").contains("LogWriter"));
    }

    #[test]
    fn finish_works_once() {
        let syncs = Arc::new(Mutex::new(0));
        let file = VecFile {
            data: Arc::default(),
            fail_after: usize::MAX,
            syncs: Arc::clone(&syncs),
        };
        let mut w = LogWriter::new(Box::new(file));
        w.add_record(b"a").unwrap();
        w.finish().unwrap();
        w.finish().unwrap();
        assert_eq!(
            *syncs.lock().unwrap(),
            1,
            "a finished log is not synced again"
        );
    }
}
