//! Leaves of a tree file: the entries of one key range, each with its internal key and its
//! value inline or as a reference to a value record. Three encodings read (types 2, 5 and 6 in
//! `mod.rs`; only type 6, the prefix leaf, is written), decoded once into a [`LeafIndex`] that a
//! cache keeps for a mapped file, so a lookup binary-searches the leaf's bytes in place.

use std::sync::Arc;

use bytes::Bytes;

use super::node::{Cur, Handle, LEAF_RECORD, PREFIX_LEAF_RECORD};
use crate::coding::{put_u64, put_varint32, varint_len};
use crate::key;
use crate::table::checked_once::CheckedOnce;
use crate::table::compression::CompressionType;

/// Bytes of a prefix leaf's header at most, its prefix not counted: the entry count (a
/// varint32), `stored_end` and the prefix length (a varint32).
pub const PREFIX_LEAF_HEADER_BYTES: usize = 5 + 8 + 5;

/// Longest internal key [`Leaf::with_ikey`] assembles on the stack.
const KEY_BUF_BYTES: usize = 128;

/// Value tag of a leaf entry: the value follows inline.
const INLINE: u8 = 0;

/// Value tag of a leaf entry: the value is a value record elsewhere in the file.
const REFERENCE: u8 = 1;

/// Value tag (bits 0-1) of a compact leaf entry: the value is an LZ4-compressed value record
/// ([`LZ4_VALUE_RECORD`](super::node::LZ4_VALUE_RECORD)) elsewhere in the file.
const LZ4_REFERENCE: u8 = 2;

/// Bytes (1 to 8) that hold `v` little-endian with its leading zero bytes dropped.
fn le_width(v: u64) -> usize {
    (8 - v.leading_zeros() as usize / 8).max(1)
}

/// The tag of a compact leaf's reference: [`REFERENCE`] (or [`LZ4_REFERENCE`] for a
/// compressed record) in bits 0-1, the offset's width less one in bits 2-4, the size's width
/// less one in bits 5-6.
fn reference_tag(h: Handle, compression: CompressionType) -> u8 {
    let (ow, sw) = (le_width(h.offset), le_width(u64::from(h.size)));
    let kind = match compression {
        CompressionType::None => REFERENCE,
        CompressionType::Lz4 => LZ4_REFERENCE,
    };
    kind | (((ow - 1) as u8) << 2) | (((sw - 1) as u8) << 5)
}

/// The offset and size widths a compact reference tag states, and how its record is
/// compressed; `None` if it is malformed.
fn reference_widths(tag: u8) -> Option<(usize, usize, CompressionType)> {
    let (ow, sw) = (
        usize::from((tag >> 2) & 7) + 1,
        usize::from((tag >> 5) & 3) + 1,
    );
    let compression = match tag & 0x83 {
        REFERENCE => CompressionType::None,
        LZ4_REFERENCE => CompressionType::Lz4,
        _ => return None,
    };
    Some((ow, sw, compression))
}

/// A leaf entry's value: inline, or a reference to a value record stored with the compression
/// it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueRef {
    /// The value itself.
    Inline(Vec<u8>),
    /// A value record.
    Stored(Handle, CompressionType),
}

impl ValueRef {
    /// Bytes the value takes in the file: its length inline, its record's payload (compressed
    /// where it is) stored. The unit of live bytes, so a tree is rewritten at C times the bytes
    /// a fresh copy of it takes.
    pub fn value_len(&self) -> u64 {
        match self {
            ValueRef::Inline(v) => v.len() as u64,
            ValueRef::Stored(h, _) => u64::from(h.size),
        }
    }
}

/// One entry of a leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafEntry {
    /// The internal key.
    pub ikey: Vec<u8>,
    /// The value.
    pub value: ValueRef,
}

impl LeafEntry {
    /// Bytes the entry takes in a compact leaf with its whole key; in a prefix leaf whose
    /// prefix is `p` bytes, at most this less `p` ([`LeafEntry::encoded_len_past`]).
    pub fn encoded_len(&self) -> usize {
        self.encoded_len_past(0)
    }

    /// Bytes the entry takes in a leaf that stores its key past the first `p` bytes.
    pub fn encoded_len_past(&self, p: usize) -> usize {
        let rest = self.ikey.len().saturating_sub(p);
        varint_len(rest as u64)
            + rest
            + match &self.value {
                ValueRef::Inline(v) => 1 + varint_len(v.len() as u64) + v.len(),
                ValueRef::Stored(h, _) => 1 + le_width(h.offset) + le_width(u64::from(h.size)),
            }
    }

    /// Bytes of the entry's key and stored value ([`ValueRef::value_len`]), the unit of live
    /// bytes.
    pub fn logical_len(&self) -> u64 {
        self.ikey.len() as u64 + self.value.value_len()
    }
}

/// A leaf entry's value, borrowed from its leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueSlot<'a> {
    /// The value itself.
    Inline(&'a [u8]),
    /// A value record stored with the compression it names.
    Stored(Handle, CompressionType),
}

impl ValueSlot<'_> {
    /// Bytes the value takes in the file ([`ValueRef::value_len`]).
    pub fn value_len(&self) -> u64 {
        match self {
            ValueSlot::Inline(v) => v.len() as u64,
            ValueSlot::Stored(h, _) => u64::from(h.size),
        }
    }

    /// An owned copy, for a writer.
    pub fn to_owned(self) -> ValueRef {
        match self {
            ValueSlot::Inline(v) => ValueRef::Inline(v.to_vec()),
            ValueSlot::Stored(h, c) => ValueRef::Stored(h, c),
        }
    }
}

/// A decoded leaf, read in place: its payload as read (a view of the file's map when the file is
/// mapped, so nothing is copied) and where each entry starts. Decoding checks every entry's
/// bounds and tag once; a lookup then binary-searches the keys with no allocation, which is what
/// a get pays on every level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    payload: Bytes,
    /// Where each entry lies in `payload`, checked against it.
    index: LeafIndex,
}

/// What decoding a leaf learns, apart from its bytes: where its key prefix lies and where each
/// entry starts. Shared, so a cache can keep it for a leaf of a mapped file and pair it with the
/// file's bytes again ([`Leaf::over`]) instead of keeping a copy of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafIndex {
    /// Where each entry (its key length, then key past the prefix, tag and value) starts in
    /// the payload.
    starts: EntryStarts,
    /// `(offset, length)` in the payload of the prefix every entry's key starts with (`(0, 0)`
    /// in leaves of types 2 and 5, which store whole keys).
    prefix: (u32, u32),
    /// The end (past the trailer) of the furthest value record an entry refers to (0: none).
    stored_end: u64,
    /// Bytes of the payload it was built from.
    payload_len: usize,
    /// Which entries' value records were already checked.
    checked: CheckedValues,
    /// Whether lengths are varints and handles compact (record types 5 and 6), not fixed-width
    /// (type 2).
    compact: bool,
}

impl LeafIndex {
    /// Bytes it holds in memory (what a cache charges for it).
    pub fn charge(&self) -> u64 {
        // The offsets' Arc has two counts besides its slice (16 bytes).
        (size_of::<LeafIndex>() + 16 + self.starts.bytes() + self.checked.0.bytes()) as u64
    }
}

/// One bit per entry of a leaf, set once the value record the entry refers to was read from
/// a mapped file with its checksum checked: later reads of it through a map skip the check, as
/// a sorted table's blocks used in place are checked once ([`CheckedOnce`]). A cached leaf
/// index carries the bits, so they last as long as it stays cached; a leaf read again starts
/// with none.
#[derive(Debug, Clone)]
struct CheckedValues(CheckedOnce);

/// What is known about the bytes, not the bytes: two indexes of one leaf are equal whatever
/// each has checked so far.
impl PartialEq for CheckedValues {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for CheckedValues {}

/// The entries' start offsets, two bytes each when the payload is at most 64 KiB (every leaf of
/// the default node size): a cache keeps these for many leaves, and at 8 bytes an entry it held
/// a quarter as many, so more gets decoded their leaf again.
#[derive(Debug, Clone, PartialEq, Eq)]
enum EntryStarts {
    /// Offsets of a payload of at most 64 KiB.
    Narrow(Arc<[u16]>),
    /// Offsets of a larger payload (long keys or inline values).
    Wide(Arc<[u32]>),
}

impl EntryStarts {
    /// `starts` (each below `payload_len`), in the narrowest width that holds them.
    fn new(starts: &[u32], payload_len: usize) -> EntryStarts {
        if payload_len <= 1 << 16 {
            EntryStarts::Narrow(starts.iter().map(|&s| s as u16).collect())
        } else {
            EntryStarts::Wide(starts.into())
        }
    }

    fn get(&self, i: usize) -> Option<usize> {
        match self {
            EntryStarts::Narrow(s) => s.get(i).map(|&s| usize::from(s)),
            EntryStarts::Wide(s) => s.get(i).map(|&s| s as usize),
        }
    }

    fn len(&self) -> usize {
        match self {
            EntryStarts::Narrow(s) => s.len(),
            EntryStarts::Wide(s) => s.len(),
        }
    }

    /// Bytes of the offsets.
    fn bytes(&self) -> usize {
        match self {
            EntryStarts::Narrow(s) => size_of_val(&**s),
            EntryStarts::Wide(s) => size_of_val(&**s),
        }
    }
}

impl Leaf {
    /// Decodes a leaf payload of record type `rtype` (one of the three leaf types); `None` if
    /// malformed.
    pub(super) fn decode(payload: Bytes, rtype: u8) -> Option<Leaf> {
        let compact = rtype != LEAF_RECORD;
        let mut c = Cur(&payload);
        let count = c.len(compact)?;
        // A compact leaf states where its furthest value record ends (its encoder's maximum),
        // so decoding only steps over each handle; a get reads the one it needs.
        let mut stored_end = if compact { c.le(8)? } else { 0 };
        let prefix = if rtype == PREFIX_LEAF_RECORD {
            let len = c.varint32()?;
            let at = payload.len() - c.0.len();
            c.take(usize::try_from(len).ok()?)?;
            (u32::try_from(at).ok()?, len)
        } else {
            (0, 0)
        };
        // The prefix is part of every user key, so each entry keeps at least its trailer.
        let shortest = if prefix.1 > 0 { key::TRAILER_LEN } else { 0 };
        // Every entry takes at least 3 bytes: a count larger than that is corrupt, not a huge
        // alloc.
        let mut starts = Vec::with_capacity(usize::try_from(count).ok()?.min(payload.len() / 3));
        for _ in 0..count {
            starts.push(u32::try_from(payload.len() - c.0.len()).ok()?);
            let len = usize::try_from(c.len(compact)?).ok()?;
            if len < shortest {
                return None;
            }
            c.take(len)?;
            match c.u8()? {
                INLINE => {
                    let n = usize::try_from(c.len(compact)?).ok()?;
                    c.take(n)?;
                }
                tag if compact => {
                    let (ow, sw, _) = reference_widths(tag)?;
                    c.take(ow + sw)?;
                }
                tag => stored_end = stored_end.max(c.value_handle(false, tag)?.0.end()),
            }
        }
        let payload_len = payload.len();
        c.0.is_empty().then_some(Leaf {
            payload,
            index: LeafIndex {
                checked: CheckedValues(CheckedOnce::new(starts.len())),
                starts: EntryStarts::new(&starts, payload_len),
                prefix,
                stored_end,
                payload_len,
                compact,
            },
        })
    }

    /// Its index (shared, not copied).
    pub fn index(&self) -> LeafIndex {
        self.index.clone()
    }

    /// The end (past its trailer) of the furthest value record an entry refers to (0: none),
    /// which must lie before the leaf.
    pub fn stored_end(&self) -> u64 {
        self.index.stored_end
    }

    /// The leaf `index` was decoded from, over `payload`: the same bytes read again (from the
    /// same offset of the same file, which never changes below a commit). `None` if the length
    /// differs.
    pub fn over(payload: Bytes, index: &LeafIndex) -> Option<Leaf> {
        (payload.len() == index.payload_len).then(|| Leaf {
            payload,
            index: index.clone(),
        })
    }

    /// Entries in the leaf.
    pub fn len(&self) -> usize {
        self.index.starts.len()
    }

    /// True if the leaf has no entries (only a damaged file has such a leaf).
    pub fn is_empty(&self) -> bool {
        self.index.starts.len() == 0
    }

    /// Entry `i`'s internal key past the leaf's prefix, and the bytes after it (its value);
    /// `None` past the end. Decoding checked every entry's bounds, so within the count this
    /// succeeds.
    #[inline]
    fn split_entry(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let mut c = Cur(self.payload.get(self.index.starts.get(i)?..)?);
        let len = c.len(self.index.compact)?;
        let key = c.take(usize::try_from(len).ok()?)?;
        Some((key, c.0))
    }

    /// The prefix every key of the leaf starts with (empty in leaves of types 2 and 5).
    #[inline]
    fn prefix(&self) -> &[u8] {
        let (at, len) = (self.index.prefix.0 as usize, self.index.prefix.1 as usize);
        self.payload.get(at..at + len).unwrap_or_default()
    }

    /// Entry `i`'s internal key in two parts, the leaf's prefix and the rest (both empty past
    /// the end).
    #[inline]
    fn ikey_parts(&self, i: usize) -> (&[u8], &[u8]) {
        match self.split_entry(i) {
            Some((rest, _)) => (self.prefix(), rest),
            None => (&[], &[]),
        }
    }

    /// Calls `f` with entry `i`'s internal key (empty past the end): borrowed from the leaf
    /// when it stores whole keys, else assembled on the stack (in a `Vec` past
    /// [`KEY_BUF_BYTES`]), so a search allocates nothing.
    #[inline]
    pub fn with_ikey<R>(&self, i: usize, f: impl FnOnce(&[u8]) -> R) -> R {
        let (prefix, rest) = self.ikey_parts(i);
        if prefix.is_empty() {
            return f(rest);
        }
        let n = prefix.len() + rest.len();
        if n > KEY_BUF_BYTES {
            return f(&[prefix, rest].concat());
        }
        let mut buf = [0u8; KEY_BUF_BYTES];
        buf[..prefix.len()].copy_from_slice(prefix);
        buf[prefix.len()..n].copy_from_slice(rest);
        f(&buf[..n])
    }

    /// Entry `i`'s internal key written over `out` (empty past the end).
    pub fn ikey_into(&self, i: usize, out: &mut Vec<u8>) {
        let (prefix, rest) = self.ikey_parts(i);
        out.clear();
        out.extend_from_slice(prefix);
        out.extend_from_slice(rest);
    }

    /// Entry `i`'s internal key, copied (empty past the end).
    pub fn ikey_vec(&self, i: usize) -> Vec<u8> {
        let (prefix, rest) = self.ikey_parts(i);
        [prefix, rest].concat()
    }

    /// The value of entry `i` (an empty inline value past the end).
    pub fn value(&self, i: usize) -> ValueSlot<'_> {
        let empty = ValueSlot::Inline(&[]);
        let Some((_, rest)) = self.split_entry(i) else {
            return empty;
        };
        let mut c = Cur(rest);
        let compact = self.index.compact;
        // Decoding checked every tag and length, so these reads succeed.
        let slot = match c.u8() {
            Some(INLINE) => c
                .len(compact)
                .and_then(|n| c.take(usize::try_from(n).ok()?))
                .map(ValueSlot::Inline),
            Some(tag) => c
                .value_handle(compact, tag)
                .map(|(h, compression)| ValueSlot::Stored(h, compression)),
            None => None,
        };
        slot.unwrap_or(empty)
    }

    /// Whether entry `i`'s value record was read from a mapped file and checked before
    /// ([`Leaf::set_value_checked`]).
    pub fn value_checked(&self, i: usize) -> bool {
        self.index.checked.0.contains(i)
    }

    /// Records that entry `i`'s value record was read from a mapped file and its checksum held.
    pub fn set_value_checked(&self, i: usize) {
        self.index.checked.0.insert(i);
    }

    /// `part` (an inline value [`Leaf::value`] handed out) as a view of the leaf's bytes, no
    /// copy; empty if it does not lie in them (the empty value past the end).
    pub fn view(&self, part: &[u8]) -> Bytes {
        let at = (part.as_ptr() as usize).checked_sub(self.payload.as_ptr() as usize);
        match at {
            Some(at) if at + part.len() <= self.payload.len() => {
                self.payload.slice(at..at + part.len())
            }
            _ => Bytes::new(),
        }
    }

    /// Entry `i`, copied (for the write path, which merges entries into new leaves).
    pub fn entry(&self, i: usize) -> LeafEntry {
        LeafEntry {
            ikey: self.ikey_vec(i),
            value: self.value(i).to_owned(),
        }
    }

    /// Every entry, copied, in key order.
    pub fn entries(&self) -> impl Iterator<Item = LeafEntry> + '_ {
        (0..self.len()).map(|i| self.entry(i))
    }

    /// Key + value bytes of every entry (the unit of live bytes).
    pub fn logical_len(&self) -> u64 {
        let prefix = self.prefix().len() as u64;
        (0..self.len())
            .map(|i| {
                let rest = self.split_entry(i).map_or(0, |(rest, _)| rest.len());
                prefix + rest as u64 + self.value(i).value_len()
            })
            .sum()
    }

    /// The number of leading entries whose key satisfies `pred` (which must hold for a prefix
    /// of the entries, as `slice::partition_point`).
    pub fn partition_point(&self, mut pred: impl FnMut(&[u8]) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.with_ikey(mid, &mut pred) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// Bytes `a` and `b` share at their start.
pub fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Bytes every entry's user key shares at its start (0 for no entries).
pub fn shared_prefix_len(entries: &[LeafEntry]) -> usize {
    let Some(first) = entries.first() else {
        return 0;
    };
    let first = key::user_key(&first.ikey);
    entries.iter().fold(first.len(), |p, e| {
        p.min(common_prefix_len(first, key::user_key(&e.ikey)))
    })
}

/// The end of the furthest value record `entries` refer to (0: none), a compact leaf's
/// `stored_end`.
fn stored_end(entries: &[LeafEntry]) -> u64 {
    let ends = entries.iter().filter_map(|e| match &e.value {
        ValueRef::Stored(h, _) => Some(h.end()),
        ValueRef::Inline(_) => None,
    });
    ends.max().unwrap_or(0)
}

/// Appends a compact leaf entry's value: its tag, then the inline value or the handle.
fn put_value(out: &mut Vec<u8>, value: &ValueRef) {
    match value {
        ValueRef::Inline(v) => {
            out.push(INLINE);
            put_varint32(out, v.len() as u32);
            out.extend_from_slice(v);
        }
        ValueRef::Stored(h, compression) => {
            let tag = reference_tag(*h, *compression);
            out.push(tag);
            let (ow, sw, _) = reference_widths(tag).unwrap_or((8, 4, *compression));
            out.extend_from_slice(&h.offset.to_le_bytes()[..ow]);
            out.extend_from_slice(&h.size.to_le_bytes()[..sw]);
        }
    }
}

/// Encodes a leaf payload ([`PREFIX_LEAF_RECORD`]): the prefix the entries' user keys share,
/// once, then each entry's internal key past it.
pub fn encode_leaf(entries: &[LeafEntry]) -> Vec<u8> {
    let p = shared_prefix_len(entries);
    let prefix = entries.first().map_or(&[][..], |e| &e.ikey[..p]);
    let entry_bytes: usize = entries.iter().map(|e| e.encoded_len_past(p)).sum();
    let mut out = Vec::with_capacity(PREFIX_LEAF_HEADER_BYTES + p + entry_bytes);
    put_varint32(&mut out, entries.len() as u32);
    put_u64(&mut out, stored_end(entries));
    put_varint32(&mut out, p as u32);
    out.extend_from_slice(prefix);
    for e in entries {
        let rest = &e.ikey[p..];
        put_varint32(&mut out, rest.len() as u32);
        out.extend_from_slice(rest);
        put_value(&mut out, &e.value);
    }
    out
}

/// The reads only a leaf makes.
impl Cur<'_> {
    /// A count or length in a leaf: a varint if `compact`, else 4 bytes.
    #[inline]
    fn len(&mut self, compact: bool) -> Option<u32> {
        if compact { self.varint32() } else { self.u32() }
    }
    /// The value handle after a leaf entry's tag `tag` (anything but [`INLINE`]) and how its
    /// record is compressed: in a compact leaf, offset and size little-endian in the widths the
    /// tag states; else 8 + 4 bytes of an uncompressed record.
    #[inline]
    fn value_handle(&mut self, compact: bool, tag: u8) -> Option<(Handle, CompressionType)> {
        if !compact {
            let h = (tag == REFERENCE).then(|| self.handle()).flatten()?;
            return Some((h, CompressionType::None));
        }
        let (ow, sw, compression) = reference_widths(tag)?;
        let offset = self.le(ow)?;
        let size = u32::try_from(self.le(sw)?).ok()?;
        Some((Handle { offset, size }, compression))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coding::put_u32;
    use crate::table::jungle::node::{COMPACT_LEAF_RECORD, Node, RECORD_TRAILER_LEN, decode_node};

    /// Encodes a leaf payload with fixed-width fields ([`LEAF_RECORD`], the format before
    /// 2026-11-27), so tests can check that such leaves still read.
    fn encode_fixed_leaf(entries: &[LeafEntry]) -> Vec<u8> {
        let mut out = Vec::new();
        put_u32(&mut out, entries.len() as u32);
        for e in entries {
            put_u32(&mut out, e.ikey.len() as u32);
            out.extend_from_slice(&e.ikey);
            match &e.value {
                ValueRef::Inline(v) => {
                    out.push(INLINE);
                    put_u32(&mut out, v.len() as u32);
                    out.extend_from_slice(v);
                }
                ValueRef::Stored(h, _) => {
                    out.push(REFERENCE);
                    put_u64(&mut out, h.offset);
                    put_u32(&mut out, h.size);
                }
            }
        }
        out
    }

    /// Encodes a compact leaf payload with whole keys ([`COMPACT_LEAF_RECORD`], written on
    /// 2026-11-27), so tests can check that such leaves still read.
    fn encode_compact_leaf(entries: &[LeafEntry]) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint32(&mut out, entries.len() as u32);
        put_u64(&mut out, stored_end(entries));
        for e in entries {
            put_varint32(&mut out, e.ikey.len() as u32);
            out.extend_from_slice(&e.ikey);
            put_value(&mut out, &e.value);
        }
        out
    }

    fn entries() -> Vec<LeafEntry> {
        vec![
            LeafEntry {
                ikey: b"apple\x01\0\0\0\0\0\0\0".to_vec(),
                value: ValueRef::Inline(b"red".to_vec()),
            },
            LeafEntry {
                ikey: b"banana\x01\0\0\0\0\0\0\0".to_vec(),
                value: ValueRef::Stored(
                    Handle {
                        offset: 300_000,
                        size: 1024,
                    },
                    CompressionType::None,
                ),
            },
            LeafEntry {
                ikey: b"cherry\x01\0\0\0\0\0\0\0".to_vec(),
                value: ValueRef::Stored(
                    Handle {
                        offset: 1 << 40,
                        size: 5,
                    },
                    CompressionType::None,
                ),
            },
        ]
    }

    fn decoded(rtype: u8, payload: Vec<u8>) -> Vec<LeafEntry> {
        match decode_node(rtype, Bytes::from(payload)) {
            Some(Node::Leaf(leaf)) => {
                assert_eq!(
                    leaf.index().stored_end,
                    (1 << 40) + 5 + RECORD_TRAILER_LEN as u64
                );
                leaf.entries().collect()
            }
            other => panic!("not a leaf: {other:?}"),
        }
    }

    #[test]
    fn compact_leaves_round_trip_and_fixed_width_leaves_still_read() {
        let compact = encode_compact_leaf(&entries());
        assert_eq!(
            compact.len(),
            1 + 8 + entries().iter().map(LeafEntry::encoded_len).sum::<usize>(),
        );
        let fixed = encode_fixed_leaf(&entries());
        assert!(
            compact.len() + 10 < fixed.len(),
            "{} vs {}",
            compact.len(),
            fixed.len()
        );
        assert_eq!(decoded(COMPACT_LEAF_RECORD, compact.clone()), entries());
        assert_eq!(decoded(LEAF_RECORD, fixed.clone()), entries());
        // Read as the other encoding, neither decodes.
        assert!(decode_node(LEAF_RECORD, Bytes::from(compact.clone())).is_none());
        assert!(decode_node(COMPACT_LEAF_RECORD, Bytes::from(fixed)).is_none());
        // A truncated compact leaf is refused, never read past its end.
        for cut in 0..compact.len() {
            let short = Bytes::from(compact[..cut].to_vec());
            assert!(
                decode_node(COMPACT_LEAF_RECORD, short).is_none(),
                "cut at {cut}"
            );
        }
    }

    /// Entries whose user keys share `shared` (plus one entry whose user key is `shared`
    /// itself, so its key past the prefix is only its trailer).
    fn prefixed(shared: &[u8]) -> Vec<LeafEntry> {
        let mut out = vec![LeafEntry {
            ikey: [shared, &[1, 0, 0, 0, 0, 0, 0, 0][..]].concat(),
            value: ValueRef::Inline(b"bare".to_vec()),
        }];
        out.extend(entries().into_iter().map(|e| LeafEntry {
            ikey: [shared, &e.ikey[..]].concat(),
            // Compressed records are referred to by prefix leaves only.
            value: match e.value {
                ValueRef::Stored(h, _) if h.size == 5 => ValueRef::Stored(h, CompressionType::Lz4),
                v => v,
            },
        }));
        out
    }

    #[test]
    fn prefix_leaves_store_the_shared_prefix_once_and_read_back_whole_keys() {
        let es = prefixed(b"user:0000");
        assert_eq!(shared_prefix_len(&es), 9);
        let payload = encode_leaf(&es);
        assert_eq!(
            payload.len(),
            1 + 8 + 1 + 9 + es.iter().map(|e| e.encoded_len_past(9)).sum::<usize>(),
            "what the packer counts"
        );
        let whole = encode_compact_leaf(&es);
        assert_eq!(payload.len() + 9 * (es.len() - 1) - 1, whole.len());
        let Some(Node::Leaf(leaf)) = decode_node(PREFIX_LEAF_RECORD, Bytes::from(payload.clone()))
        else {
            panic!("not a prefix leaf");
        };
        assert_eq!(leaf.entries().collect::<Vec<_>>(), es);
        assert_eq!(
            leaf.logical_len(),
            es.iter().map(LeafEntry::logical_len).sum()
        );
        let mut buf = vec![7; 3];
        for (i, e) in es.iter().enumerate() {
            assert_eq!(leaf.with_ikey(i, <[u8]>::to_vec), e.ikey);
            leaf.ikey_into(i, &mut buf);
            assert_eq!(buf, e.ikey);
            let (p, rest) = leaf.ikey_parts(i);
            assert_eq!((p, rest), (&e.ikey[..9], &e.ikey[9..]));
            // The search sees whole keys: each key is found at its own index.
            assert_eq!(leaf.partition_point(|k| k < &e.ikey[..]), i);
        }
        assert_eq!(leaf.ikey_vec(es.len()), b"");
        // Leaves of keys sharing nothing, or too long for the stack buffer, read back too.
        let long = prefixed(&[b'k'; 200]);
        for es in [entries(), long] {
            let payload = Bytes::from(encode_leaf(&es));
            let Some(Node::Leaf(leaf)) = decode_node(PREFIX_LEAF_RECORD, payload) else {
                panic!("not a prefix leaf");
            };
            assert_eq!(leaf.entries().collect::<Vec<_>>(), es);
            let last = es.len() - 1;
            assert_eq!(leaf.with_ikey(last, <[u8]>::to_vec), es[last].ikey);
        }
        // Truncated, or with a key shorter than a trailer past the prefix: refused.
        for cut in 0..payload.len() {
            let short = Bytes::from(payload[..cut].to_vec());
            assert!(
                decode_node(PREFIX_LEAF_RECORD, short).is_none(),
                "cut at {cut}"
            );
        }
        let mut bad = payload;
        let first_entry = 1 + 8 + 1 + 9;
        assert_eq!(bad[first_entry], 8);
        bad[first_entry] = 7;
        bad.remove(first_entry + 1);
        assert!(decode_node(PREFIX_LEAF_RECORD, Bytes::from(bad)).is_none());
    }

    #[test]
    fn leaves_past_64_kib_keep_wide_entry_offsets_and_read_back() {
        // Entries starting past 64 KiB need four-byte offsets; a leaf of small entries is
        // indexed in two bytes each, so a cache holds four times as many of them.
        let big: Vec<LeafEntry> = (0..4u8)
            .map(|i| LeafEntry {
                ikey: [b"key", &[i][..], &[1, 0, 0, 0, 0, 0, 0, 0][..]].concat(),
                value: ValueRef::Inline(vec![i; 30_000]),
            })
            .collect();
        let payload = encode_leaf(&big);
        assert!(payload.len() > 1 << 16);
        let Some(Node::Leaf(wide)) = decode_node(PREFIX_LEAF_RECORD, Bytes::from(payload)) else {
            panic!("not a leaf");
        };
        assert!(matches!(wide.index.starts, EntryStarts::Wide(_)));
        assert_eq!(wide.entries().collect::<Vec<_>>(), big);
        let Some(Node::Leaf(narrow)) =
            decode_node(PREFIX_LEAF_RECORD, Bytes::from(encode_leaf(&big[..1])))
        else {
            panic!("not a leaf");
        };
        assert!(matches!(narrow.index.starts, EntryStarts::Narrow(_)));
        assert_eq!(narrow.entries().collect::<Vec<_>>(), big[..1]);
        // Past the last entry: an empty key and value, never a panic.
        assert_eq!(wide.ikey_vec(4), b"");
        assert_eq!(wide.value(4), ValueSlot::Inline(&[]));
        let per_entry = |l: &Leaf| l.index.starts.bytes() / l.len();
        assert_eq!((per_entry(&narrow), per_entry(&wide)), (2, 4));
        assert!(narrow.index.charge() < wide.index.charge());
    }

    #[test]
    fn reference_tags_state_the_widths_they_are_written_with() {
        for (offset, size) in [
            (0u64, 0u32),
            (255, 1),
            (256, 256),
            (1 << 40, u32::MAX),
            (u64::MAX, 7),
        ] {
            for compression in [CompressionType::None, CompressionType::Lz4] {
                let h = Handle { offset, size };
                let tag = reference_tag(h, compression);
                let (ow, sw, c) = reference_widths(tag).unwrap();
                assert_eq!(
                    (ow, sw, c),
                    (le_width(offset), le_width(u64::from(size)), compression)
                );
                let mut bytes = vec![];
                bytes.extend_from_slice(&offset.to_le_bytes()[..ow]);
                bytes.extend_from_slice(&size.to_le_bytes()[..sw]);
                assert_eq!(Cur(&bytes).value_handle(true, tag), Some((h, compression)));
                // A fixed-width leaf (type 2) has no compressed references.
                assert_eq!(Cur(&[0; 12]).value_handle(false, tag).is_some(), tag == 1);
            }
        }
        assert_eq!(reference_widths(INLINE), None);
        assert_eq!(
            reference_widths(REFERENCE | 0x80),
            None,
            "bit 7 is not a width"
        );
        assert_eq!(reference_widths(3), None, "kind 3 is not a reference");
    }
}
