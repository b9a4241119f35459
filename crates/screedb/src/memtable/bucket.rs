//! One membuffer bucket: its entries as records back to back in one byte buffer the bucket
//! owns (see `docs/memory.md`, "Membuffer").
//!
//! Record layout (little-endian, unaligned):
//!
//! ```text
//! record := seq: u64 | kind: u8 | tag: u32 | key_len: u32 | value_len: u32 | key | value
//! ```
//!
//! The buffer is allocated at the bucket's first put for the bucket's nominal share of the
//! membuffer, grows by half (doubling held 10% more memory at 1 GiB, for no speed), and is kept when entries leave (given back only when it had
//! grown past twice the nominal size and becomes empty). A put therefore copies into memory the
//! bucket already owns: no allocation per entry. (One `Box` per entry, allocated by the writer
//! and freed by the drain thread, cost a quarter of both threads' time in malloc and free at
//! 4 GiB; see docs/memory.md.) A drain reads a bucket's records from one contiguous region.
//!
//! The bucket keeps the tag (32 bits of the key's hash) of each of its first [`INLINE_TAGS`]
//! records next to its mutex, so a lookup of an absent key reads only the bucket's cache line.

use crate::key::{SequenceNumber, ValueKind};

/// Bytes of a record's header.
const HEADER: usize = 21;

/// Tags a bucket keeps inline for its first records.
pub(super) const INLINE_TAGS: usize = 8;

/// One buffered version, borrowed from its bucket (or a drain's copy of it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct BufferedEntry<'a> {
    key: &'a [u8],
    value: &'a [u8],
    pub(crate) seq: SequenceNumber,
    pub(crate) kind: ValueKind,
}

impl<'a> BufferedEntry<'a> {
    pub(crate) fn key(&self) -> &'a [u8] {
        self.key
    }

    pub(crate) fn value(&self) -> &'a [u8] {
        self.value
    }

    /// Bytes of key and value (what the membuffer's byte budget counts).
    pub(super) fn bytes(&self) -> usize {
        self.key.len() + self.value.len()
    }
}

/// A record decoded in place: its entry, its tag and its length in bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Record<'a> {
    pub(super) entry: BufferedEntry<'a>,
    tag: u32,
    pub(super) len: usize,
}

fn read_u32(d: &[u8], at: usize) -> u32 {
    d.get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

/// Decodes the record at `at` of `d` (records written by [`write_record`]; bytes that are not a
/// record decode as an empty one rather than panicking).
pub(super) fn parse(d: &[u8], at: usize) -> Record<'_> {
    let seq = d
        .get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes);
    let kind = match d.get(at + 8) {
        Some(&b) if b == ValueKind::Deletion as u8 => ValueKind::Deletion,
        _ => ValueKind::Value,
    };
    let tag = read_u32(d, at + 9);
    let key_len = read_u32(d, at + 13) as usize;
    let value_len = read_u32(d, at + 17) as usize;
    let k = at + HEADER;
    Record {
        entry: BufferedEntry {
            key: d.get(k..k + key_len).unwrap_or(&[]),
            value: d.get(k + key_len..k + key_len + value_len).unwrap_or(&[]),
            seq,
            kind,
        },
        tag,
        len: HEADER + key_len + value_len,
    }
}

/// The length of the record of `(key, value)`.
fn record_len(key: &[u8], value: &[u8]) -> usize {
    HEADER + key.len() + value.len()
}

/// Writes a record into `dst`, which is exactly [`record_len`] bytes.
fn write_record(
    dst: &mut [u8],
    tag: u32,
    seq: SequenceNumber,
    kind: ValueKind,
    key: &[u8],
    value: &[u8],
) {
    // Keys and values are far below u32::MAX bytes (`key::MAX_KEY_LEN`, `MAX_VALUE_LEN`, checked
    // before any write), and a bucket never holds more than u32::MAX bytes.
    let (key_len, value_len) = (key.len() as u32, value.len() as u32);
    let parts: [&[u8]; 7] = [
        &seq.to_le_bytes(),
        &[kind as u8],
        &tag.to_le_bytes(),
        &key_len.to_le_bytes(),
        &value_len.to_le_bytes(),
        key,
        value,
    ];
    let mut pos = 0;
    for part in parts {
        dst[pos..pos + part.len()].copy_from_slice(part);
        pos += part.len();
    }
}

/// The records of one bucket; `tags[i]` is the tag of record `i` for `i < INLINE_TAGS`.
#[derive(Debug, Default)]
pub(super) struct Bucket {
    data: Box<[u8]>,
    used: u32,
    count: u32,
    tags: [u32; INLINE_TAGS],
}

impl Bucket {
    /// Records held.
    pub(super) fn len(&self) -> usize {
        self.count as usize
    }

    fn used(&self) -> &[u8] {
        &self.data[..self.used as usize]
    }

    /// The records in order, each with its offset.
    pub(super) fn records(&self) -> impl Iterator<Item = (usize, Record<'_>)> {
        let d = self.used();
        let mut at = 0;
        (0..self.count).map(move |_| {
            let r = parse(d, at);
            at += r.len;
            (at - r.len, r)
        })
    }

    /// The bytes of the record at `at` that is `len` long.
    pub(super) fn record_bytes(&self, at: usize, len: usize) -> &[u8] {
        self.used().get(at..at + len).unwrap_or(&[])
    }

    /// The entry at offset `at`.
    pub(super) fn entry(&self, at: usize) -> BufferedEntry<'_> {
        parse(self.used(), at).entry
    }

    /// The offset of `key`'s record, if buffered.
    pub(super) fn find(&self, tag: u32, key: &[u8]) -> Option<usize> {
        let n = self.len();
        if n <= INLINE_TAGS && !self.tags[..n].contains(&tag) {
            return None;
        }
        self.records()
            .find(|(_, r)| r.tag == tag && r.entry.key == key)
            .map(|(at, _)| at)
    }

    /// Makes room for `needed` bytes in all, at least `nominal`.
    fn grow(&mut self, needed: usize, nominal: usize) {
        if needed <= self.data.len() {
            return;
        }
        let cap = needed
            .max(self.data.len() + self.data.len() / 2)
            .max(nominal);
        let mut data = vec![0u8; cap].into_boxed_slice();
        let used = self.used as usize;
        data[..used].copy_from_slice(&self.data[..used]);
        self.data = data;
    }

    /// Appends a record; false (nothing changed) if the bucket would pass u32::MAX bytes.
    pub(super) fn push(
        &mut self,
        tag: u32,
        seq: SequenceNumber,
        kind: ValueKind,
        key: &[u8],
        value: &[u8],
        nominal: usize,
    ) -> bool {
        let at = self.used as usize;
        let Some(end) = at
            .checked_add(record_len(key, value))
            .filter(|&e| u32::try_from(e).is_ok())
        else {
            return false;
        };
        self.grow(end, nominal);
        write_record(&mut self.data[at..end], tag, seq, kind, key, value);
        if let Some(t) = self.tags.get_mut(self.count as usize) {
            *t = tag;
        }
        self.used = end as u32;
        self.count += 1;
        true
    }

    /// Replaces the record at `at` (of the same key, hence tag) by a new version, in place;
    /// false (nothing changed) if the bucket would pass u32::MAX bytes.
    pub(super) fn replace(
        &mut self,
        at: usize,
        seq: SequenceNumber,
        kind: ValueKind,
        value: &[u8],
    ) -> bool {
        let old = parse(self.used(), at);
        let (tag, old_len) = (old.tag, old.len);
        let key_len = old.entry.key.len();
        let new_len = HEADER + key_len + value.len();
        let used = self.used as usize;
        let Some(end) = (used - old_len)
            .checked_add(new_len)
            .filter(|&e| u32::try_from(e).is_ok())
        else {
            return false;
        };
        if new_len != old_len {
            self.grow(end, 0);
            self.data.copy_within(at + old_len..used, at + new_len);
        }
        // The key stays where it is; rewrite the header and the value around it.
        let (head, rest) = self.data[at..at + new_len].split_at_mut(HEADER);
        let mut header = [0u8; HEADER];
        write_record(&mut header, tag, seq, kind, &[], &[]);
        header[13..17].copy_from_slice(&(key_len as u32).to_le_bytes());
        header[17..21].copy_from_slice(&(value.len() as u32).to_le_bytes());
        head.copy_from_slice(&header);
        rest[key_len..].copy_from_slice(value);
        self.used = end as u32;
        true
    }

    /// Removes the records whose entry `drop` selects, keeping the others in order. Returns
    /// (records removed, key and value bytes removed). An emptied buffer that had grown past
    /// twice `nominal` is given back.
    pub(super) fn remove_where(
        &mut self,
        mut drop: impl FnMut(&BufferedEntry<'_>) -> bool,
        nominal: usize,
    ) -> (usize, usize) {
        let (mut read, mut write, mut kept) = (0, 0, 0);
        let (mut removed, mut freed) = (0, 0);
        for _ in 0..self.count {
            let r = parse(self.used(), read);
            let (len, tag) = (r.len, r.tag);
            if drop(&r.entry) {
                removed += 1;
                freed += r.entry.bytes();
            } else {
                if write != read {
                    self.data.copy_within(read..read + len, write);
                }
                if let Some(t) = self.tags.get_mut(kept) {
                    *t = tag;
                }
                kept += 1;
                write += len;
            }
            read += len;
        }
        // Both are at most the old values, which fitted.
        self.used = write as u32;
        self.count = kept as u32;
        if kept == 0 && self.data.len() > 2 * nominal {
            self.data = Box::default();
        }
        (removed, freed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_replace_and_remove() {
        let mut b = Bucket::default();
        assert!(b.push(1, 10, ValueKind::Value, b"a", b"one", 64));
        assert!(b.push(2, 11, ValueKind::Deletion, b"bb", b"", 64));
        assert!(b.push(3, 12, ValueKind::Value, b"c", b"three", 64));
        let at_b = b.find(2, b"bb").expect("bb");
        assert_eq!(b.find(2, b"b"), None);
        assert_eq!(b.find(9, b"bb"), None);
        // Longer, then shorter, then equal-length replacement; neighbours stay intact.
        assert!(b.replace(at_b, 13, ValueKind::Value, b"a much longer value"));
        assert!(b.replace(at_b, 14, ValueKind::Value, b"x"));
        assert!(b.replace(at_b, 15, ValueKind::Value, b"y"));
        let got: Vec<_> = b
            .records()
            .map(|(_, r)| (r.entry.key(), r.entry.seq, r.entry.kind, r.entry.value()))
            .collect();
        assert_eq!(
            got,
            vec![
                (&b"a"[..], 10, ValueKind::Value, &b"one"[..]),
                (&b"bb"[..], 15, ValueKind::Value, &b"y"[..]),
                (&b"c"[..], 12, ValueKind::Value, &b"three"[..]),
            ]
        );
        assert_eq!(b.remove_where(|e| e.seq != 12, 64), (2, 7));
        assert_eq!(b.len(), 1);
        assert_eq!(
            b.find(3, b"c").map(|at| b.entry(at).value()),
            Some(&b"three"[..])
        );
        assert_eq!(b.find(1, b"a"), None);
        // Growing past twice the nominal size, then emptying, gives the buffer back.
        assert!(b.push(4, 16, ValueKind::Value, b"d", &[7; 500], 64));
        assert_eq!(b.remove_where(|_| true, 64), (2, 507));
        assert_eq!((b.len(), b.data.len()), (0, 0));
        // Bytes that are not a record decode as an empty entry.
        assert_eq!(parse(&[1, 2, 3], 0).entry.key(), b"");
    }
}
