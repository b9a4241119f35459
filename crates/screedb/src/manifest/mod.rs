//! The records of the MANIFEST: version edits and the table metadata they carry.
//!
//! A MANIFEST is a framing log (the write-ahead log's block format) whose records are
//! encoded [`VersionEdit`]s. Replaying every edit in order rebuilds the current set of tables per
//! level, the FLSM guards, the file-number and sequence counters and persisted statistics.
//!
//! The record encoding is described in `edit.rs` and `docs/format.md`. Its tag numbers
//! are written to disk and frozen.

mod edit;
mod file_meta;

pub use edit::{MAX_LEVEL, VersionEdit, tag};
pub use file_meta::{END_CHECKSUM_SPAN, FileMeta, end_checksum};

use std::path::Path;

use crate::error::{Error, Result};

/// A cursor over an encoded version edit that turns every short read into a corruption error
/// naming the field being read.
pub(crate) struct FieldReader<'a> {
    src: &'a [u8],
    pos: usize,
    file: &'a Path,
    /// Offset of the record inside the manifest file.
    base: u64,
}

impl<'a> FieldReader<'a> {
    /// Reads `src`, a record found at byte `base` of `file`.
    pub(crate) fn new(src: &'a [u8], file: &'a Path, base: u64) -> Self {
        FieldReader {
            src,
            pos: 0,
            file,
            base,
        }
    }

    /// The manifest being read.
    pub(crate) fn file(&self) -> &'a Path {
        self.file
    }

    /// True when every byte has been consumed.
    pub(crate) fn is_done(&self) -> bool {
        self.pos >= self.src.len()
    }

    /// Absolute offset (in the manifest file) of the next unread byte.
    pub(crate) fn offset(&self) -> u64 {
        self.base.saturating_add(self.pos as u64)
    }

    /// A corruption error at the current position.
    pub(crate) fn corruption(&self, reason: impl Into<String>) -> Error {
        Error::corruption(self.file, self.offset(), reason)
    }

    fn take(&mut self, n: usize, field: &str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n);
        match end.and_then(|end| self.src.get(self.pos..end)) {
            Some(bytes) => {
                self.pos += n;
                Ok(bytes)
            }
            None => Err(self.corruption(format!(
                "truncated {field}: needs {n} bytes, {} left",
                self.src.len().saturating_sub(self.pos)
            ))),
        }
    }

    /// Reads one byte.
    pub(crate) fn u8(&mut self, field: &str) -> Result<u8> {
        Ok(self.take(1, field)?[0])
    }

    /// Reads a little-endian u32.
    pub(crate) fn u32(&mut self, field: &str) -> Result<u32> {
        let bytes = self.take(4, field)?;
        Ok(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    /// Reads a little-endian u64.
    pub(crate) fn u64(&mut self, field: &str) -> Result<u64> {
        let bytes = self.take(8, field)?;
        let mut le = [0u8; 8];
        le.copy_from_slice(bytes);
        Ok(u64::from_le_bytes(le))
    }

    /// Reads `len: u32 LE | bytes`.
    pub(crate) fn bytes(&mut self, field: &str) -> Result<&'a [u8]> {
        let len = self.u32(field)?;
        self.take(len as usize, field)
    }

    /// Reads a byte string that must be UTF-8.
    pub(crate) fn string(&mut self, field: &str) -> Result<String> {
        let start = self.offset();
        let bytes = self.bytes(field)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| Error::corruption(self.file, start, format!("{field} is not UTF-8")))
    }

    /// Reads a level number and checks it against [`MAX_LEVEL`].
    pub(crate) fn level(&mut self, field: &str) -> Result<u32> {
        let start = self.offset();
        let level = self.u32(field)?;
        if level > MAX_LEVEL {
            return Err(Error::corruption(
                self.file,
                start,
                format!("{field} has level {level}, above the maximum {MAX_LEVEL}"),
            ));
        }
        Ok(level)
    }
}

/// Appends `len: u32 LE | bytes`.
///
/// Byte strings longer than `u32::MAX` cannot occur: keys are limited to
/// [`crate::key::MAX_KEY_LEN`] and names are short.
pub(crate) fn put_bytes(dst: &mut Vec<u8>, bytes: &[u8]) {
    debug_assert!(u32::try_from(bytes.len()).is_ok());
    crate::coding::put_u32(dst, bytes.len() as u32);
    dst.extend_from_slice(bytes);
}
