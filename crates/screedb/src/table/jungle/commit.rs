//! The commit record that ends every segment, and the search for the last valid one.
//!
//! ```text
//! commit := body | body_len: u32 | magic: u64 | masked crc32c: u32 (of everything before it)
//! body   := fixed 100 bytes (see docs/format.md) | smallest key | largest key
//! ```

use std::path::Path;

use super::node::Handle;
use super::{Commit, SegmentStats, TREE_MAGIC};
use crate::checksum;
use crate::coding::{get_u32, get_u64, put_u32, put_u64};
use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;

/// Bytes of the fixed part of a commit body.
pub const COMMIT_FIXED: usize = 100;
/// Bytes after the body: body_len, magic, checksum.
pub const COMMIT_TAIL: usize = 16;
/// Stored for "no previous commit".
const NO_PREV: u64 = u64::MAX;

/// Encodes the commit record for `c` (its `offset` and `len` are where it is written).
pub fn encode_commit(c: &Commit) -> Vec<u8> {
    let mut out = Vec::with_capacity(COMMIT_FIXED + c.smallest.len() + c.largest.len() + 16);
    put_u64(&mut out, c.root);
    put_u32(&mut out, c.root_size);
    put_u32(&mut out, c.height);
    put_u64(&mut out, c.live_bytes);
    put_u64(&mut out, c.total_bytes);
    put_u64(&mut out, c.entries);
    put_u64(&mut out, c.smallest_seq);
    put_u64(&mut out, c.largest_seq);
    put_u64(&mut out, c.prev.unwrap_or(NO_PREV));
    let filter = c.filter.unwrap_or(Handle { offset: 0, size: 0 });
    put_u64(&mut out, filter.offset);
    put_u32(&mut out, filter.size);
    put_u64(&mut out, c.segment.value_bytes);
    put_u64(&mut out, c.segment.node_bytes);
    put_u32(&mut out, c.smallest.len() as u32);
    put_u32(&mut out, c.largest.len() as u32);
    debug_assert_eq!(out.len(), COMMIT_FIXED);
    out.extend_from_slice(&c.smallest);
    out.extend_from_slice(&c.largest);
    let body_len = out.len() as u32;
    put_u32(&mut out, body_len);
    put_u64(&mut out, TREE_MAGIC);
    let crc = checksum::mask(checksum::crc32c(&out));
    put_u32(&mut out, crc);
    out
}

/// Bytes of the commit record for `c`.
pub fn commit_record_len(smallest: &[u8], largest: &[u8]) -> u64 {
    (COMMIT_FIXED + smallest.len() + largest.len() + COMMIT_TAIL) as u64
}

/// Decodes a whole commit record found at `offset`; `Err(reason)` if it is not a valid one.
fn decode_commit(rec: &[u8], offset: u64) -> Result<Commit, String> {
    let n = rec.len();
    let tail = rec
        .get(n.saturating_sub(COMMIT_TAIL)..)
        .filter(|_| n >= COMMIT_TAIL);
    let tail = tail.ok_or("commit record too short")?;
    let magic = get_u64(&tail[4..]).unwrap_or_default();
    if magic != TREE_MAGIC {
        return Err(format!("bad tree magic {magic:#018x}"));
    }
    let stored = get_u32(&tail[12..]).unwrap_or_default();
    if checksum::unmask(stored) != checksum::crc32c(&rec[..n - 4]) {
        return Err("commit checksum mismatch".into());
    }
    let body = &rec[..n - COMMIT_TAIL];
    let u64_at = |at: usize| get_u64(body.get(at..).unwrap_or_default()).unwrap_or_default();
    let u32_at = |at: usize| get_u32(body.get(at..).unwrap_or_default()).unwrap_or_default();
    let (sl, ll) = (u32_at(92) as usize, u32_at(96) as usize);
    if body.len() < COMMIT_FIXED || body.len() != COMMIT_FIXED + sl + ll {
        return Err("commit key lengths do not match the record".into());
    }
    let prev = u64_at(56);
    let filter = Handle {
        offset: u64_at(64),
        size: u32_at(72),
    };
    Ok(Commit {
        offset,
        len: offset + n as u64,
        root: u64_at(0),
        root_size: u32_at(8),
        height: u32_at(12),
        live_bytes: u64_at(16),
        total_bytes: u64_at(24),
        entries: u64_at(32),
        smallest_seq: u64_at(40),
        largest_seq: u64_at(48),
        prev: (prev != NO_PREV).then_some(prev),
        filter: (filter.size > 0).then_some(filter),
        segment: SegmentStats {
            value_bytes: u64_at(76),
            node_bytes: u64_at(84),
        },
        smallest: body[COMMIT_FIXED..COMMIT_FIXED + sl].to_vec(),
        largest: body[COMMIT_FIXED + sl..].to_vec(),
    })
}

/// Reads the commit whose record ends exactly at `len`.
pub fn read_commit_ending_at(file: &dyn RandomAccessFile, path: &Path, len: u64) -> Result<Commit> {
    let at = len.saturating_sub(COMMIT_TAIL as u64);
    let bad = |offset: u64, reason: String| {
        Error::corruption(
            path,
            offset,
            format!("no tree commit ends at {len}: {reason}"),
        )
    };
    if len < (COMMIT_FIXED + COMMIT_TAIL) as u64 || len > file.size() {
        return Err(bad(at, format!("the file has {} bytes", file.size())));
    }
    let tail = file.read_vec(at, COMMIT_TAIL)?;
    let body_len = u64::from(get_u32(&tail).unwrap_or_default());
    let start = at
        .checked_sub(body_len)
        .ok_or_else(|| bad(at, format!("body length {body_len} is past the start")))?;
    let rec = file.read_vec(start, (len - start) as usize)?;
    decode_commit(&rec, start).map_err(|reason| bad(start, reason))
}

/// Reads the commit record starting at `offset` (a `prev` link), below `extent`.
pub fn read_commit_at(
    file: &dyn RandomAccessFile,
    path: &Path,
    offset: u64,
    extent: u64,
) -> Result<Commit> {
    let bad = |reason: String| Error::corruption(path, offset, format!("bad commit: {reason}"));
    if offset + (COMMIT_FIXED + COMMIT_TAIL) as u64 > extent {
        return Err(bad(format!("runs past {extent}")));
    }
    let fixed = file.read_vec(offset, COMMIT_FIXED)?;
    let keys = u64::from(get_u32(&fixed[92..]).unwrap_or_default())
        + u64::from(get_u32(&fixed[96..]).unwrap_or_default());
    let end = offset + (COMMIT_FIXED + COMMIT_TAIL) as u64 + keys;
    if end > extent {
        return Err(bad(format!("runs past {extent}")));
    }
    let rec = file.read_vec(offset, (end - offset) as usize)?;
    decode_commit(&rec, offset).map_err(bad)
}

/// Bytes read per step of the backward scan of [`find_last_commit`].
const SCAN_WINDOW: u64 = 1 << 20;

/// Finds the last valid commit record ending at or below `len`, scanning back from `len` for
/// the magic number (for repair and check of a file whose tail is torn). `None` if there is none.
pub fn find_last_commit(
    file: &dyn RandomAccessFile,
    path: &Path,
    len: u64,
) -> Result<Option<Commit>> {
    let len = len.min(file.size());
    let magic = TREE_MAGIC.to_le_bytes();
    // Candidate record ends are `magic position + 12`; scan windows from the end, overlapping
    // by the magic's length so a magic across a window boundary is seen.
    let mut hi = len;
    while hi >= COMMIT_TAIL as u64 {
        let lo = hi.saturating_sub(SCAN_WINDOW);
        let buf = file.read_vec(lo, (hi - lo) as usize)?;
        for pos in (0..buf.len().saturating_sub(magic.len() - 1)).rev() {
            if buf[pos..].starts_with(&magic) {
                let end = lo + pos as u64 + 12;
                if end <= len
                    && let Ok(c) = read_commit_ending_at(file, path, end)
                {
                    return Ok(Some(c));
                }
            }
        }
        if lo == 0 {
            break;
        }
        hi = lo + magic.len() as u64 - 1;
    }
    Ok(None)
}
