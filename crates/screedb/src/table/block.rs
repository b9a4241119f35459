//! A decoded block (contents + parsed restart array) and its iterator.
//!
//! The byte layout is documented in [`super::block_builder`]:
//!
//! ```text
//! block := entry* | restarts: u32 LE * num_restarts | num_restarts: u32 LE
//! entry := shared: varint32 | non_shared: varint32 | value_len: varint32 | key_delta | value
//! ```
//!
//! [`Block::new`] checks the restart array (first restart 0, strictly increasing, inside the
//! entry area); entries are bounds-checked as they are decoded. Bad bytes never panic: they make
//! the iterator invalid with a Corruption in [`InternalIterator::status`].

use std::cmp::Ordering;
use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use crate::coding::{get_u32, get_varint32};
use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::iter::InternalIterator;

use super::block_search::RestartWindows;

/// An immutable, uncompressed block, shared through `Arc` by iterators and the block cache.
/// Its bytes are its own, or a view of a mapped table file (a block used in place).
pub struct Block {
    data: Bytes,
    num_restarts: usize,
    /// Where the entries end and the restart array begins.
    restarts_offset: usize,
    /// The search aid of an index block under the bytewise order (see `block_search.rs`).
    windows: Option<RestartWindows>,
    file: Arc<Path>,
    offset: u64,
}

impl fmt::Debug for Block {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Block")
            .field("file", &self.file)
            .field("offset", &self.offset)
            .field("len", &self.data.len())
            .field("num_restarts", &self.num_restarts)
            .finish()
    }
}

/// One decoded entry header: how much of the previous key to keep, and where the rest is.
struct Entry {
    shared: usize,
    key_delta: Range<usize>,
    value: Range<usize>,
}

impl Block {
    /// The block's bytes (a clone shares them; `slice_ref` cuts a shared view of an entry).
    pub(crate) fn bytes(&self) -> &Bytes {
        &self.data
    }

    /// Parses uncompressed block `data` read from `file` at `offset` (both only name the block
    /// in errors). Checks the restart array without copying it.
    pub fn new(data: impl Into<Bytes>, file: Arc<Path>, offset: u64) -> Result<Block> {
        let data: Bytes = data.into();
        let bad = |reason: String| Error::corruption(&*file, offset, reason);
        let len = data.len();
        let n = len
            .checked_sub(4)
            .and_then(|at| data.get(at..))
            .and_then(get_u32)
            .ok_or_else(|| bad(format!("block of {len} bytes is too short")))?
            as usize;
        let restarts_offset = n
            .checked_mul(4)
            .and_then(|r| len.checked_sub(4)?.checked_sub(r))
            .filter(|_| n >= 1)
            .ok_or_else(|| {
                bad(format!(
                    "block of {len} bytes cannot hold {n} restart points"
                ))
            })?;
        let mut prev = None;
        for i in 0..n {
            let at = restarts_offset + 4 * i;
            let r = data.get(at..).and_then(get_u32).unwrap_or(u32::MAX);
            let ok = match prev {
                None => r == 0,
                Some(prev) => r > prev && (r as usize) < restarts_offset,
            };
            if !ok {
                return Err(bad(format!(
                    "restart point {i} ({r}) is out of order or range"
                )));
            }
            prev = Some(r);
        }
        Ok(Block {
            data,
            num_restarts: n,
            restarts_offset,
            windows: None,
            file,
            offset,
        })
    }

    /// Adds the search aid of `block_search.rs` for seeks under the bytewise order (for index
    /// blocks: built once per table open). A block whose restart keys do not decode as internal
    /// keys is left as it is (its iterator reports the corruption).
    pub fn with_bytewise_search(mut self) -> Block {
        let keys: Option<Vec<&[u8]>> = (0..self.num_restarts)
            .map(|i| {
                let e = self.decode_entry(self.restart_point(i), 0)?;
                let k = self.data.get(e.key_delta)?;
                k.get(..k.len().checked_sub(8)?)
            })
            .collect();
        let windows = keys.and_then(|k| RestartWindows::build(&k));
        self.windows = windows;
        self
    }

    /// Bytes this block holds in memory (its charge in the block cache).
    pub fn charge(&self) -> usize {
        self.data.len() + size_of::<Block>()
    }

    /// Number of restart points.
    pub fn num_restarts(&self) -> usize {
        self.num_restarts
    }

    /// Number of entries (decoding every entry header; a malformed one ends the count).
    pub fn count_entries(&self) -> usize {
        let (mut n, mut at, mut key_len) = (0, 0, 0);
        while at < self.restarts_offset {
            let Some(e) = self.decode_entry(at, key_len) else {
                break;
            };
            key_len = e.shared + e.key_delta.len();
            at = e.value.end;
            n += 1;
        }
        n
    }

    /// The file offset of this block (as given to [`Block::new`]).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// An iterator over this block ordered by `cmp`.
    pub fn iter(self: &Arc<Self>, cmp: InternalKeyComparator) -> BlockIter {
        BlockIter {
            block: Arc::clone(self),
            cmp,
            current: self.restarts_offset,
            restart_index: self.num_restarts,
            key: Vec::new(),
            value: self.restarts_offset..self.restarts_offset,
            err: None,
            interval: Interval::default(),
        }
    }

    /// Points `iter` at this block, unpositioned, keeping its buffers: a table iterator moves
    /// from block to block without allocating a key buffer for each.
    pub fn reuse_iter(self: &Arc<Self>, iter: &mut BlockIter) {
        iter.block = Arc::clone(self);
        iter.err = None;
        iter.invalidate();
    }

    /// Every entry in order, decoded whole; for small meta blocks and verification.
    pub fn entries(&self) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut out = Vec::new();
        let mut key = Vec::new();
        let mut at = 0;
        while at < self.restarts_offset {
            let e = self
                .decode_entry(at, key.len())
                .ok_or_else(|| self.corruption_at(at))?;
            key.truncate(e.shared);
            key.extend_from_slice(&self.data[e.key_delta]);
            out.push((key.clone(), self.data[e.value.clone()].to_vec()));
            at = e.value.end;
        }
        Ok(out)
    }

    fn corruption_at(&self, at: usize) -> Error {
        Error::corruption(
            &*self.file,
            self.offset,
            format!("bad entry at byte {at} of the block"),
        )
    }

    /// Where restart point `i` is (checked by [`Block::new`]), or the end of the entries.
    fn restart_point(&self, i: usize) -> usize {
        if i >= self.num_restarts {
            return self.restarts_offset;
        }
        self.data
            .get(self.restarts_offset + 4 * i..)
            .and_then(get_u32)
            .map_or(self.restarts_offset, |r| r as usize)
    }

    /// Decodes the entry header at `at`; `None` if it is malformed, runs past the entry area, or
    /// shares more than `prev_key_len` bytes.
    fn decode_entry(&self, at: usize, prev_key_len: usize) -> Option<Entry> {
        let area = self.data.get(..self.restarts_offset)?;
        let mut p = at;
        let mut next = || -> Option<usize> {
            let (v, n) = get_varint32(area.get(p..)?)?;
            p += n;
            Some(v as usize)
        };
        let (shared, non_shared, value_len) = (next()?, next()?, next()?);
        if shared > prev_key_len {
            return None;
        }
        let key_end = p.checked_add(non_shared)?;
        let value_end = key_end.checked_add(value_len)?;
        if value_end > area.len() {
            return None;
        }
        Some(Entry {
            shared,
            key_delta: p..key_end,
            value: key_end..value_end,
        })
    }
}

/// Entries of one restart interval, decoded once for backward steps. A block stores each key
/// as a suffix of the previous one, so an entry can be decoded only forward from its restart
/// point: without this, every `prev` decodes its interval again up to the entry before the
/// current one (LevelDB's way), about interval / 2 entries per step. RocksDB keeps such a
/// cache in its data block iterator too.
#[derive(Default)]
struct Interval {
    /// The entries' whole keys, back to back.
    keys: Vec<u8>,
    /// Per entry, in block order: its offset, where its key ends in `keys`, its value.
    entries: Vec<(usize, usize, Range<usize>)>,
}

impl Interval {
    fn clear(&mut self) {
        self.keys.clear();
        self.entries.clear();
    }

    fn push(&mut self, offset: usize, key: &[u8], value: Range<usize>) {
        self.keys.extend_from_slice(key);
        self.entries.push((offset, self.keys.len(), value));
    }

    /// The position of the entry at `offset`, if held.
    fn find(&self, offset: usize) -> Option<usize> {
        self.entries.binary_search_by_key(&offset, |e| e.0).ok()
    }

    /// Entry `i`'s key. REQUIRES: `i < entries.len()`.
    fn key(&self, i: usize) -> &[u8] {
        let start = i.checked_sub(1).map_or(0, |p| self.entries[p].1);
        &self.keys[start..self.entries[i].1]
    }
}

/// A cursor over one block's entries. Holds its block alive through an `Arc`.
pub struct BlockIter {
    block: Arc<Block>,
    cmp: InternalKeyComparator,
    /// Offset of the current entry; `restarts_offset` when not positioned.
    current: usize,
    /// Restart point at or before `current`.
    restart_index: usize,
    key: Vec<u8>,
    /// The current value; its end is where the next entry starts.
    value: Range<usize>,
    err: Option<Error>,
    /// The restart interval the last backward step decoded.
    interval: Interval,
}

impl fmt::Debug for BlockIter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockIter")
            .field("block", &self.block)
            .field("current", &self.current)
            .field("err", &self.err)
            .finish()
    }
}

impl BlockIter {
    fn invalidate(&mut self) {
        self.current = self.block.restarts_offset;
        self.restart_index = self.block.num_restarts;
        self.key.clear();
        self.value = self.current..self.current;
        self.interval.clear();
    }

    fn corrupt(&mut self, at: usize) {
        self.err = Some(self.block.corruption_at(at));
        self.invalidate();
    }

    fn seek_to_restart_point(&mut self, i: usize) {
        self.key.clear();
        self.restart_index = i;
        let p = self.block.restart_point(i);
        self.value = p..p;
    }

    /// Positions on the last entry of restart interval `i` that starts before `end` (an entry's
    /// offset, or the end of the entries), keeping the interval's entries up to it for the
    /// backward steps that follow.
    fn decode_interval_until(&mut self, i: usize, end: usize) {
        self.seek_to_restart_point(i);
        self.interval.clear();
        while self.parse_next_key() {
            self.interval
                .push(self.current, &self.key, self.value.clone());
            if self.value.end >= end {
                return;
            }
        }
    }

    /// Decodes the entry after the current one; false at the end or on corruption.
    fn parse_next_key(&mut self) -> bool {
        self.current = self.value.end;
        if self.current >= self.block.restarts_offset {
            self.invalidate();
            return false;
        }
        let Some(e) = self.block.decode_entry(self.current, self.key.len()) else {
            self.corrupt(self.current);
            return false;
        };
        self.key.truncate(e.shared);
        self.key.extend_from_slice(&self.block.data[e.key_delta]);
        self.value = e.value;
        // A scan reads the next entry's header soon, and with large values it lies on a cache
        // line nothing has touched (a scan that does not read values misses there at every
        // step): start loading it now (YCSB E with 1 KB values: +16%, docs/benchmarks.md).
        if let Some(next) = self
            .block
            .data
            .get(self.value.end..self.block.restarts_offset)
        {
            crate::iter::prefetch::prefetch_address(next.as_ptr());
        }
        while self.restart_index + 1 < self.block.num_restarts
            && self.block.restart_point(self.restart_index + 1) <= self.current
        {
            self.restart_index += 1;
        }
        true
    }

    /// The restart point at or before the current entry: in a block with one entry per
    /// restart point (an index block), the current entry's position.
    pub(crate) fn restart_index(&self) -> usize {
        self.restart_index
    }

    /// The whole key stored at restart point `i` (its `shared` must be 0).
    fn restart_key(&self, i: usize) -> Option<&[u8]> {
        let e = self.block.decode_entry(self.block.restart_point(i), 0)?;
        self.block.data.get(e.key_delta)
    }
}

impl InternalIterator for BlockIter {
    fn valid(&self) -> bool {
        self.err.is_none() && self.current < self.block.restarts_offset
    }

    fn seek_to_first(&mut self) {
        if self.err.is_none() {
            self.seek_to_restart_point(0);
            self.parse_next_key();
        }
    }

    fn seek_to_last(&mut self) {
        if self.err.is_some() {
            return;
        }
        self.decode_interval_until(self.block.num_restarts - 1, self.block.restarts_offset);
    }

    fn seek(&mut self, target: &[u8]) {
        if self.err.is_some() {
            return;
        }
        // Last restart point whose key is < target (or the first one). The windows, if any,
        // narrow the search to the restart points they cannot tell from the target.
        let (mut left, mut right) = (0, self.block.num_restarts - 1);
        if let Some(w) = &self.block.windows
            && let Some(user_key) = target.len().checked_sub(8).map(|n| &target[..n])
        {
            let c = w.candidates(user_key);
            left = c.start.saturating_sub(1);
            right = c.end.saturating_sub(1).max(left);
        }
        while left < right {
            let mid = (left + right).div_ceil(2);
            let Some(k) = self.restart_key(mid) else {
                self.corrupt(self.block.restart_point(mid));
                return;
            };
            if self.cmp.compare(k, target) == Ordering::Less {
                left = mid;
            } else {
                right = mid - 1;
            }
        }
        self.seek_to_restart_point(left);
        while self.parse_next_key() {
            if self.cmp.compare(&self.key, target) != Ordering::Less {
                return;
            }
        }
    }

    fn next(&mut self) {
        if self.valid() {
            self.parse_next_key();
        }
    }

    fn prev(&mut self) {
        if !self.valid() {
            return;
        }
        let original = self.current;
        // The entry before, when the interval decoded last holds both (the block never changes,
        // and the current entry lies in interval `restart_index`, which stays the same).
        if let Some(i) = self.interval.find(original).and_then(|i| i.checked_sub(1)) {
            let (offset, _, value) = self.interval.entries[i].clone();
            self.key.clear();
            self.key.extend_from_slice(self.interval.key(i));
            self.current = offset;
            self.value = value;
            return;
        }
        let mut r = self.restart_index;
        while self.block.restart_point(r) >= original {
            if r == 0 {
                self.invalidate();
                return;
            }
            r -= 1;
        }
        self.decode_interval_until(r, original);
    }

    fn key(&self) -> &[u8] {
        &self.key
    }

    fn value(&self) -> &[u8] {
        self.block.data.get(self.value.clone()).unwrap_or_default()
    }

    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "block_tests.rs"]
mod tests;
