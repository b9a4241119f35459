//! [`LogReader`]: reassembles records from the fragments of a log file, block by block.
//!
//! The byte layout is in [`super::format`]: 32 KiB blocks of fragments, each a 7-byte header
//! (masked CRC32C u32 LE | length u16 LE | type u8) and its payload; 1 to 6 zero bytes end a block
//! when no header fits.
//!
//! Damage — bytes at a fragment position that are not a valid fragment, non-zero trailer bytes,
//! or a file that ends inside a trailer — stops the reader. In [`RecoveryMode::Strict`] it is an
//! [`Error::Corruption`] naming the file and offset. In [`RecoveryMode::TolerateTornTail`] it is a
//! torn tail iff no valid fragment starts anywhere after the damaged offset; the tail (and any
//! record it cut) is dropped and reported through [`LogReader::torn_tail`]. A record whose LAST
//! fragment is missing at the end of the file is a torn tail too. Valid fragments in an impossible
//! order (MIDDLE or LAST without FIRST, FIRST or FULL inside a record) are corruption in these
//! two modes: they are data a writer could not have produced by being cut short; so are a
//! fragment of the other family (compressed or plain) inside a record, and a compressed record
//! whose checksummed bytes do not decode (`super::packed`).
//!
//! [`RecoveryMode::SkipDamage`] (repair only) salvages instead: damage and fragments in an
//! impossible order are skipped, with the record they belong to, up to the next valid fragment,
//! and reading goes on; each skipped region is reported through [`LogReader::skipped`].

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use super::format::{BLOCK_SIZE, Fragment, FragmentType, HEADER_SIZE, decode_fragment};
use super::packed;
use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;

/// How a [`LogReader`] treats damage at the end of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryMode {
    /// Every problem is an [`Error::Corruption`] (use for logs that were closed cleanly).
    Strict,
    /// Damage after which no valid fragment exists is a torn tail left by a crash mid-write: it
    /// is dropped and reported; any other damage is still an [`Error::Corruption`].
    TolerateTornTail,
    /// Every damaged region is skipped up to the next valid fragment, and reported (repair:
    /// the records after a damaged one are kept, as LevelDB's repair keeps them). A torn tail
    /// is dropped as in [`RecoveryMode::TolerateTornTail`].
    SkipDamage,
}

/// A region a [`RecoveryMode::SkipDamage`] reader skipped: the records in it are lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedRegion {
    /// Where the skipped bytes start (the first fragment of the record they cut, if any).
    pub offset: u64,
    /// Where reading resumed.
    pub resumed_at: u64,
    /// What was found.
    pub reason: String,
}

/// The tail a [`RecoveryMode::TolerateTornTail`] reader dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// Where the dropped bytes start: the end of the last complete record (0 if there was none).
    /// Truncating the file here leaves a log that reads cleanly in strict mode.
    pub offset: u64,
    /// Bytes from `offset` to the end of the file.
    pub dropped_bytes: u64,
    /// What was found, including the offset of the damage.
    pub reason: String,
}

/// What the next position of the log holds.
enum Step {
    /// A valid fragment starting at `offset`; its payload is `block[fragment.range]`.
    Fragment { fragment: Fragment, offset: u64 },
    /// The file ends cleanly at a fragment boundary.
    End,
    /// The bytes at `offset` are damaged.
    Damage { offset: u64, reason: String },
}

/// Reads the records of one log file.
pub struct LogReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    mode: RecoveryMode,
    file_size: u64,
    /// The bytes of the current block present in the file (empty before the first read).
    block: Vec<u8>,
    /// File offset of `block[0]`; a multiple of `BLOCK_SIZE`.
    block_start: u64,
    /// Position in `block` of the next fragment.
    pos: usize,
    /// File offset just past the last record returned.
    end_of_last_record: u64,
    last_record_offset: u64,
    /// Whether the last returned record was stored compressed (fragment types 5 to 8).
    last_record_compressed: bool,
    torn_tail: Option<TornTail>,
    /// Regions skipped in [`RecoveryMode::SkipDamage`].
    skipped: Vec<SkippedRegion>,
    /// True once the end of the log has been returned.
    finished: bool,
    /// A returned error, repeated by every later call.
    failed: Option<Error>,
}

impl fmt::Debug for LogReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogReader")
            .field("path", &self.path)
            .field("mode", &self.mode)
            .field("file_size", &self.file_size)
            .field("position", &(self.block_start + self.pos as u64))
            .field("torn_tail", &self.torn_tail)
            .finish_non_exhaustive()
    }
}

impl LogReader {
    /// A reader of `file`; `path` is only used to name the file in errors.
    pub fn new(file: Arc<dyn RandomAccessFile>, path: PathBuf, mode: RecoveryMode) -> Self {
        let file_size = file.size();
        LogReader {
            file,
            path,
            mode,
            file_size,
            block: Vec::with_capacity(BLOCK_SIZE),
            block_start: 0,
            pos: 0,
            end_of_last_record: 0,
            last_record_offset: 0,
            last_record_compressed: false,
            torn_tail: None,
            skipped: Vec::new(),
            finished: false,
            failed: None,
        }
    }

    /// Next whole record; `Ok(None)` at the end of the log (including after a dropped torn tail).
    /// After an error, every later call returns the same error.
    pub fn read_record(&mut self) -> Result<Option<Vec<u8>>> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if self.finished {
            return Ok(None);
        }
        let result = self.assemble();
        match &result {
            Err(e) => self.failed = Some(e.clone()),
            Ok(None) => self.finished = true,
            Ok(Some(_)) => {}
        }
        result
    }

    /// Offset in the file where the last returned record started (its first fragment's header).
    pub fn last_record_offset(&self) -> u64 {
        self.last_record_offset
    }

    /// File bytes the last returned record took, from its first fragment's header to the end
    /// of its last fragment (headers and any block trailers between them included).
    pub fn last_record_stored_bytes(&self) -> u64 {
        self.end_of_last_record - self.last_record_offset
    }

    /// True if the last returned record was stored as a compressed record (fragment types 5 to
    /// 8, `Options::wal_compression`); the record returned is its decoded bytes either way.
    pub fn last_record_compressed(&self) -> bool {
        self.last_record_compressed
    }

    /// Set when [`RecoveryMode::TolerateTornTail`] dropped a bad tail.
    pub fn torn_tail(&self) -> Option<&TornTail> {
        self.torn_tail.as_ref()
    }

    /// The regions [`RecoveryMode::SkipDamage`] skipped so far.
    pub fn skipped(&self) -> &[SkippedRegion] {
        &self.skipped
    }

    fn assemble(&mut self) -> Result<Option<Vec<u8>>> {
        // The record being reassembled: offset of its FIRST fragment, whether it is
        // compressed, and the bytes so far.
        let mut partial: Option<(u64, bool, Vec<u8>)> = None;
        loop {
            let (fragment, offset) = match self.step()? {
                Step::Fragment { fragment, offset } => (fragment, offset),
                Step::End => {
                    return match partial {
                        None => Ok(None),
                        Some((start, ..)) => {
                            let reason = format!(
                                "the file ends inside the record starting at offset {start} \
                                 (its LAST fragment is missing)"
                            );
                            self.damaged(start, self.file_size, reason)
                        }
                    };
                }
                Step::Damage { offset, reason } => {
                    let reason = match &partial {
                        Some((start, ..)) => {
                            format!("{reason} (inside the record starting at offset {start})")
                        }
                        None => reason,
                    };
                    let from = partial.take().map_or(offset, |(start, ..)| start);
                    if self.skip_to_next_fragment(from, offset, &reason)? {
                        continue;
                    }
                    return self.damaged(offset, offset, reason);
                }
            };
            let Fragment {
                kind,
                compressed,
                range,
            } = fragment;
            let payload = self.block.get(range).unwrap_or_default();
            match (kind, partial.as_mut()) {
                (FragmentType::Full, None) => {
                    let record = payload.to_vec();
                    match self.complete(offset, compressed, record)? {
                        Some(record) => return Ok(Some(record)),
                        None => continue,
                    }
                }
                (FragmentType::First, None) => {
                    partial = Some((offset, compressed, payload.to_vec()))
                }
                (FragmentType::Middle | FragmentType::Last, Some((start, family, _)))
                    if *family != compressed =>
                {
                    let start = *start;
                    let reason = format!(
                        "{} fragment of a {} record inside the {} record starting at offset \
                         {start}",
                        kind.name(),
                        family_name(compressed),
                        family_name(!compressed),
                    );
                    if self.mode == RecoveryMode::SkipDamage {
                        // The record and this fragment of another one are both lost.
                        partial = None;
                        self.skip(start, self.block_start + self.pos as u64, reason);
                        continue;
                    }
                    return Err(self.corruption(offset, reason));
                }
                (FragmentType::Middle, Some((.., buf))) => buf.extend_from_slice(payload),
                (FragmentType::Last, Some((start, family, buf))) => {
                    buf.extend_from_slice(payload);
                    let (start, family, record) = (*start, *family, std::mem::take(buf));
                    partial = None;
                    match self.complete(start, family, record)? {
                        Some(record) => return Ok(Some(record)),
                        None => continue,
                    }
                }
                (FragmentType::Middle | FragmentType::Last, None) => {
                    let reason = format!("{} fragment without a FIRST fragment", kind.name());
                    if self.mode == RecoveryMode::SkipDamage {
                        self.skip(offset, self.block_start + self.pos as u64, reason);
                        continue;
                    }
                    return Err(self.corruption(offset, reason));
                }
                (FragmentType::Full | FragmentType::First, Some((start, ..))) => {
                    let start = *start;
                    let reason = format!(
                        "{} fragment inside the record starting at offset {start}, \
                         which has no LAST fragment",
                        kind.name()
                    );
                    if self.mode == RecoveryMode::SkipDamage {
                        // The unfinished record is lost; this fragment starts the next one.
                        let payload = payload.to_vec();
                        self.skip(start, offset, reason);
                        partial = None;
                        if kind == FragmentType::Full {
                            match self.complete(offset, compressed, payload)? {
                                Some(record) => return Ok(Some(record)),
                                None => continue,
                            }
                        }
                        partial = Some((offset, compressed, payload));
                        continue;
                    }
                    return Err(self.corruption(offset, reason));
                }
            }
        }
    }

    /// Finishes the record starting at `start` that ends at the current position: its bytes,
    /// decoded if it is `compressed`. A compressed record that does not decode (its checksums
    /// held, so no crash wrote it) is corruption; [`RecoveryMode::SkipDamage`] skips it
    /// (`Ok(None)`) and goes on.
    fn complete(
        &mut self,
        start: u64,
        compressed: bool,
        record: Vec<u8>,
    ) -> Result<Option<Vec<u8>>> {
        let end = self.block_start + self.pos as u64;
        let record = if compressed {
            match packed::decode(&record) {
                Some(raw) => raw,
                None => {
                    let reason = format!(
                        "the compressed record starting at offset {start} ({} bytes) does not \
                         decode (a piece runs past its end or is not valid LZ4)",
                        record.len()
                    );
                    if self.mode == RecoveryMode::SkipDamage {
                        self.skip(start, end, reason);
                        return Ok(None);
                    }
                    return Err(self.corruption(start, reason));
                }
            }
        } else {
            record
        };
        self.last_record_offset = start;
        self.end_of_last_record = end;
        self.last_record_compressed = compressed;
        Ok(Some(record))
    }

    fn corruption(&self, offset: u64, reason: impl Into<String>) -> Error {
        Error::corruption(self.path.clone(), offset, reason)
    }

    /// Records a skipped region; one that continues the previous (the rest of a record whose
    /// start was damaged) extends it.
    fn skip(&mut self, offset: u64, resumed_at: u64, reason: String) {
        if let Some(last) = self.skipped.last_mut()
            && last.resumed_at == offset
        {
            last.resumed_at = resumed_at;
            return;
        }
        self.skipped.push(SkippedRegion {
            offset,
            resumed_at,
            reason,
        });
    }

    /// In [`RecoveryMode::SkipDamage`], moves to the next valid fragment after the damage at
    /// `damage` and records the region from `from` as skipped; false when there is none (the
    /// damage is a torn tail) or in another mode.
    fn skip_to_next_fragment(&mut self, from: u64, damage: u64, reason: &str) -> Result<bool> {
        if self.mode != RecoveryMode::SkipDamage {
            return Ok(false);
        }
        let next = match self.find_fragment_later_in_block(damage)? {
            Some(next) => Some(next),
            None => self.find_valid_fragment_after(damage)?,
        };
        let Some(next) = next else {
            return Ok(false);
        };
        let bs = BLOCK_SIZE as u64;
        let block_start = next - next % bs;
        load_block(&*self.file, self.file_size, block_start, &mut self.block)?;
        self.block_start = block_start;
        // Below BLOCK_SIZE.
        self.pos = (next - block_start) as usize;
        self.skip(from, next, format!("damage at offset {damage}: {reason}"));
        Ok(true)
    }

    /// Handles damage reported at `offset`; valid fragments are searched for after `scan_from`.
    fn damaged(&mut self, offset: u64, scan_from: u64, reason: String) -> Result<Option<Vec<u8>>> {
        if self.mode == RecoveryMode::Strict {
            return Err(self.corruption(offset, reason));
        }
        if let Some(valid) = self.find_valid_fragment_after(scan_from)? {
            let reason = format!(
                "{reason}; not a torn tail because a valid fragment starts later, at offset {valid}"
            );
            return Err(self.corruption(offset, reason));
        }
        self.torn_tail = Some(TornTail {
            offset: self.end_of_last_record,
            dropped_bytes: self.file_size - self.end_of_last_record,
            reason: format!("torn tail at offset {offset}: {reason}"),
        });
        Ok(None)
    }

    /// The next fragment, the clean end of the file, or damage.
    fn step(&mut self) -> Result<Step> {
        loop {
            if self.pos >= self.block.len() {
                let next = if self.block.is_empty() {
                    0
                } else if self.block.len() < BLOCK_SIZE {
                    return Ok(Step::End); // the last, partial block is used up
                } else {
                    self.block_start + BLOCK_SIZE as u64
                };
                if next >= self.file_size {
                    return Ok(Step::End);
                }
                load_block(&*self.file, self.file_size, next, &mut self.block)?;
                self.block_start = next;
                self.pos = 0;
            }
            let offset = self.block_start + self.pos as u64;
            if BLOCK_SIZE - self.pos < HEADER_SIZE {
                // The trailer: zeros the writer put where no header fits.
                let trailer = self.block.get(self.pos..).unwrap_or_default();
                if let Some(i) = trailer.iter().position(|&b| b != 0) {
                    let reason = format!(
                        "non-zero byte at offset {} in a block trailer",
                        offset + i as u64
                    );
                    return Ok(Step::Damage { offset, reason });
                }
                if self.block_start + BLOCK_SIZE as u64 >= self.file_size {
                    // The writer only pads a block right before the next fragment.
                    let reason = "the file ends in block trailer padding, before the fragment \
                                  that follows it"
                        .to_owned();
                    return Ok(Step::Damage { offset, reason });
                }
                self.pos = self.block.len();
                continue;
            }
            return Ok(match decode_fragment(&self.block, self.pos) {
                Ok(fragment) => {
                    self.pos = fragment.range.end;
                    Step::Fragment { fragment, offset }
                }
                Err(e) => Step::Damage {
                    offset,
                    reason: e.to_string(),
                },
            });
        }
    }

    /// Offset of a valid fragment after `after` in the same block, found by trying every
    /// position (a checksum per candidate header): the nearest record after mid-block damage,
    /// where LevelDB's reader drops the rest of the block.
    fn find_fragment_later_in_block(&self, after: u64) -> Result<Option<u64>> {
        let bs = BLOCK_SIZE as u64;
        let block_start = after - after % bs;
        let mut block = Vec::with_capacity(BLOCK_SIZE);
        load_block(&*self.file, self.file_size, block_start, &mut block)?;
        // Below BLOCK_SIZE.
        let first = (after - block_start) as usize + 1;
        let last = block.len().min(BLOCK_SIZE - HEADER_SIZE + 1);
        Ok((first..last)
            .find(|&pos| decode_fragment(&block, pos).is_ok())
            .map(|pos| block_start + pos as u64))
    }

    /// Offset of a valid fragment (correct checksum, type 1 to 8, length inside its block and the
    /// file) starting strictly after `after`, or `None` if there is none anywhere in the file.
    ///
    /// A log has a fragment at every block start, so the block starts are tried first: mid-log
    /// damage is then found after one decode per block. Only if none is valid is every byte
    /// position scanned, one block at a time; that costs at most a checksum per position, and a
    /// real torn tail is short.
    fn find_valid_fragment_after(&self, after: u64) -> Result<Option<u64>> {
        let mut block = Vec::with_capacity(BLOCK_SIZE);
        let bs = BLOCK_SIZE as u64;
        let mut start = (after / bs + 1) * bs;
        while start < self.file_size {
            load_block(&*self.file, self.file_size, start, &mut block)?;
            if decode_fragment(&block, 0).is_ok() {
                return Ok(Some(start));
            }
            start += bs;
        }
        let mut from = after.saturating_add(1);
        while from < self.file_size {
            let block_start = from - from % bs;
            load_block(&*self.file, self.file_size, block_start, &mut block)?;
            // `from - block_start` is below BLOCK_SIZE.
            let first = (from - block_start) as usize;
            // A fragment cannot start in the last HEADER_SIZE - 1 bytes of a block.
            let last = block.len().min(BLOCK_SIZE - HEADER_SIZE + 1);
            for pos in first..last {
                if decode_fragment(&block, pos).is_ok() {
                    return Ok(Some(block_start + pos as u64));
                }
            }
            from = block_start + bs;
        }
        Ok(None)
    }
}

/// How an error names a record of the compressed family or of the plain one.
fn family_name(compressed: bool) -> &'static str {
    if compressed { "compressed" } else { "plain" }
}

/// Reads the block at `start` (a multiple of `BLOCK_SIZE` below `file_size`) into `buf`.
fn load_block(
    file: &dyn RandomAccessFile,
    file_size: u64,
    start: u64,
    buf: &mut Vec<u8>,
) -> Result<()> {
    // At most BLOCK_SIZE, so the conversion cannot fail.
    let len = usize::try_from((file_size - start).min(BLOCK_SIZE as u64)).unwrap_or(BLOCK_SIZE);
    buf.resize(len, 0);
    file.read_exact_at(buf, start)
}
