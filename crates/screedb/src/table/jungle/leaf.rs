//! Leaves of a tree file: the entries of one key range, each with its internal key and its
//! value inline or as a reference to a value record. Four encodings read (types 2, 5, 6 and 8
//! in `mod.rs`; only type 8, the indexed leaf, is written). An indexed leaf ends with the
//! offset of each entry, so a lookup binary-searches its bytes in place with nothing decoded;
//! a leaf of an older type is decoded once into a [`LeafIndex`] (where each entry starts) that
//! a cache keeps for a mapped file.

use std::cmp::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use super::node::{Cur, Handle, INDEXED_LEAF_RECORD, LEAF_RECORD, PREFIX_LEAF_RECORD};
use crate::coding::{put_u64, put_varint32, varint_len};
use crate::comparator::InternalKeyComparator;
use crate::key;
use crate::table::compression::CompressionType;

/// Bytes an indexed leaf takes at most besides its prefix and entries when its entries end
/// within 64 KiB: the entry count (a varint32), `stored_end`, the prefix length (a varint32)
/// and the offsets' width, plus [`LEAF_OFFSET_BYTES`] per entry.
pub const LEAF_HEADER_BYTES: usize = 5 + 8 + 5 + 1;

/// Bytes of each entry's offset in an indexed leaf whose entries end within 64 KiB (every leaf
/// of the default node size); past that, four.
pub const LEAF_OFFSET_BYTES: usize = 2;

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

/// A leaf read in place: its payload as read (a view of the file's map when the file is mapped,
/// so nothing is copied) and where each entry starts (the offsets an indexed leaf stores, or
/// those decoding an older leaf found). Decoding checks every entry's bounds and tag once; a
/// lookup then binary-searches the keys with no allocation, which is what a get pays on every
/// level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    payload: Bytes,
    /// Where each entry lies in `payload`, checked against it.
    index: LeafIndex,
}

/// What reading a leaf learns, apart from its bytes: where its key prefix lies, where its
/// entries end and where each entry starts. Shared, so a cache can keep it for a leaf of an
/// older type in a mapped file and pair it with the file's bytes again ([`Leaf::over`]) instead
/// of keeping a copy of them (an indexed leaf's is read from its bytes, nothing to keep).
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
    /// Where the entries end in the payload (an indexed leaf's offsets follow them).
    entries_end: usize,
    /// Whether lengths are varints and handles compact (record types 5 and 6), not fixed-width
    /// (type 2).
    compact: bool,
}

impl LeafIndex {
    /// Bytes it holds in memory (what a cache charges for it).
    pub fn charge(&self) -> u64 {
        // The offsets' Arc has two counts besides its slice (16 bytes).
        (size_of::<LeafIndex>() + 16 + self.starts.bytes()) as u64
    }
}

/// The entries' start offsets, two bytes each when the payload is at most 64 KiB (every leaf of
/// the default node size): a cache keeps these for many leaves, and at 8 bytes an entry it held
/// a quarter as many, so more gets decoded their leaf again.
#[derive(Debug, Clone, PartialEq, Eq)]
enum EntryStarts {
    /// Offsets of a payload of at most 64 KiB.
    Narrow(Arc<[u16]>),
    /// Offsets of a larger payload (long keys or inline values).
    Wide(Arc<[u32]>),
    /// An indexed leaf's own: `count` little-endian offsets at `at` in the payload, four bytes
    /// each if `wide`, else two.
    InPlace { at: usize, count: usize, wide: bool },
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

    /// Entry `i`'s offset (`payload` is the leaf's, where an indexed leaf keeps them).
    #[inline]
    fn get(&self, payload: &[u8], i: usize) -> Option<usize> {
        match self {
            EntryStarts::Narrow(s) => s.get(i).map(|&s| usize::from(s)),
            EntryStarts::Wide(s) => s.get(i).map(|&s| s as usize),
            EntryStarts::InPlace { at, count, wide } => {
                if i >= *count {
                    return None;
                }
                let w = if *wide { 4 } else { 2 };
                let b = payload.get(at + i * w..at + (i + 1) * w)?;
                Some(b.iter().rev().fold(0, |v, &b| (v << 8) | usize::from(b)))
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            EntryStarts::Narrow(s) => s.len(),
            EntryStarts::Wide(s) => s.len(),
            EntryStarts::InPlace { count, .. } => *count,
        }
    }

    /// Bytes of the offsets held in memory (none for an indexed leaf's).
    fn bytes(&self) -> usize {
        match self {
            EntryStarts::Narrow(s) => size_of_val(&**s),
            EntryStarts::Wide(s) => size_of_val(&**s),
            EntryStarts::InPlace { .. } => 0,
        }
    }
}

/// The fields before a leaf's first entry, as [`Leaf::decode`] reads them.
struct LeafHeader {
    count: u32,
    /// 0 in a leaf of type 2 (which does not state it).
    stored_end: u64,
    /// `(offset, length)` of the shared prefix (`(0, 0)` in types 2 and 5).
    prefix: (u32, u32),
    /// Where the first entry starts.
    end: usize,
}

impl LeafHeader {
    /// Reads the header of a leaf payload of record type `rtype`; `None` if malformed.
    fn read(payload: &[u8], rtype: u8) -> Option<LeafHeader> {
        let compact = rtype != LEAF_RECORD;
        let mut c = Cur(payload);
        let count = c.len(compact)?;
        // A compact leaf states where its furthest value record ends (its encoder's maximum),
        // so decoding only steps over each handle; a get reads the one it needs.
        let stored_end = if compact { c.le(8)? } else { 0 };
        let prefix = if matches!(rtype, PREFIX_LEAF_RECORD | INDEXED_LEAF_RECORD) {
            let len = c.varint32()?;
            let at = payload.len() - c.0.len();
            c.take(usize::try_from(len).ok()?)?;
            (u32::try_from(at).ok()?, len)
        } else {
            (0, 0)
        };
        Some(LeafHeader {
            count,
            stored_end,
            prefix,
            end: payload.len() - c.0.len(),
        })
    }

    /// Bytes each entry's key holds at least: its trailer when a prefix (part of every user
    /// key) was taken off, else none.
    fn shortest_key(&self) -> usize {
        if self.prefix.1 > 0 {
            key::TRAILER_LEN
        } else {
            0
        }
    }
}

/// Steps `c` over one leaf entry whose key holds at least `shortest` bytes, checking its bounds
/// and tag; returns the end of the value record a fixed-width entry (type 2) refers to, 0 for
/// any other. `None` if malformed.
fn skip_entry(c: &mut Cur<'_>, compact: bool, shortest: usize) -> Option<u64> {
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
        tag => return Some(c.value_handle(false, tag)?.0.end()),
    }
    Some(0)
}

impl Leaf {
    /// Decodes a leaf payload of record type `rtype` (one of the four leaf types), checking
    /// every entry's bounds and tag (and, in an indexed leaf, that each stored offset is where
    /// its entry starts); `None` if malformed.
    pub(super) fn decode(payload: Bytes, rtype: u8) -> Option<Leaf> {
        if rtype == INDEXED_LEAF_RECORD {
            let leaf = Leaf::in_place(payload)?;
            return leaf.offsets_match_entries().then_some(leaf);
        }
        let compact = rtype != LEAF_RECORD;
        let h = LeafHeader::read(&payload, rtype)?;
        let mut c = Cur(payload.get(h.end..)?);
        let mut stored_end = h.stored_end;
        // Every entry takes at least 3 bytes: a count larger than that is corrupt, not a huge
        // alloc.
        let count = usize::try_from(h.count).ok()?;
        let mut starts = Vec::with_capacity(count.min(payload.len() / 3));
        for _ in 0..count {
            starts.push(u32::try_from(payload.len() - c.0.len()).ok()?);
            stored_end = stored_end.max(skip_entry(&mut c, compact, h.shortest_key())?);
        }
        let payload_len = payload.len();
        c.0.is_empty().then_some(Leaf {
            payload,
            index: LeafIndex {
                starts: EntryStarts::new(&starts, payload_len),
                prefix: h.prefix,
                stored_end,
                payload_len,
                entries_end: payload_len,
                compact,
            },
        })
    }

    /// An indexed leaf's payload (record type 8) read in place: its header and where its
    /// offsets lie, not its entries. For a leaf whose bytes [`Leaf::decode`] accepted before
    /// (a mapped file's bytes below a commit never change); every read still stays within the
    /// payload. `None` if the header or the offsets' bounds are malformed.
    pub(super) fn in_place(payload: Bytes) -> Option<Leaf> {
        let h = LeafHeader::read(&payload, INDEXED_LEAF_RECORD)?;
        let (&width, _) = payload.split_last()?;
        let wide = match width {
            2 => false,
            4 => true,
            _ => return None,
        };
        let count = usize::try_from(h.count).ok()?;
        let offsets = count.checked_mul(usize::from(width))?;
        let entries_end = (payload.len() - 1).checked_sub(offsets)?;
        if entries_end < h.end {
            return None;
        }
        let payload_len = payload.len();
        Some(Leaf {
            payload,
            index: LeafIndex {
                starts: EntryStarts::InPlace {
                    at: entries_end,
                    count,
                    wide,
                },
                prefix: h.prefix,
                stored_end: h.stored_end,
                payload_len,
                entries_end,
                compact: true,
            },
        })
    }

    /// Whether an indexed leaf's entries are well formed, back to back from its header to its
    /// offsets, each where its stored offset says.
    fn offsets_match_entries(&self) -> bool {
        let Some(h) = LeafHeader::read(&self.payload, INDEXED_LEAF_RECORD) else {
            return false;
        };
        let Some(entries) = self.payload.get(..self.index.entries_end) else {
            return false;
        };
        let mut c = Cur(entries.get(h.end..).unwrap_or_default());
        for i in 0..self.len() {
            let at = entries.len() - c.0.len();
            if self.start(i) != Some(at) || skip_entry(&mut c, true, h.shortest_key()).is_none() {
                return false;
            }
        }
        c.0.is_empty()
    }

    /// Whether its entry offsets are read from its bytes (an indexed leaf), so a cache has
    /// nothing to keep for it.
    pub fn is_indexed(&self) -> bool {
        matches!(self.index.starts, EntryStarts::InPlace { .. })
    }

    /// Where entry `i` starts in the payload; `None` past the end.
    #[inline]
    fn start(&self, i: usize) -> Option<usize> {
        self.index.starts.get(&self.payload, i)
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
        let mut c = Cur(self.payload.get(self.start(i)?..self.index.entries_end)?);
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

    /// The index of the first entry whose internal key is >= `target` (the length past the
    /// last). Under a bytewise comparator the leaf's prefix is compared with `target` once:
    /// a target outside it lies before or after every entry, and one inside it is compared
    /// from past the prefix, against each entry's stored bytes in place, with no key assembled.
    pub fn lower_bound(&self, icmp: &InternalKeyComparator, target: &[u8]) -> usize {
        let prefix = self.prefix();
        if prefix.is_empty() || !icmp.is_bytewise() || target.len() < key::TRAILER_LEN {
            return self.partition_point(|k| icmp.compare(k, target) == Ordering::Less);
        }
        let user = key::user_key(target);
        let Some(rest) = user.strip_prefix(prefix) else {
            // Every entry's user key is `prefix` and more: a target not starting with it sorts
            // before all of them or after all of them.
            return if user < prefix { 0 } else { self.len() };
        };
        // `target` past the prefix, trailer included: ordered against the entries' stored
        // keys as the whole keys are.
        let target = &target[target.len() - rest.len() - key::TRAILER_LEN..];
        self.search(|i| {
            let stored = self.split_entry(i).map_or(&[][..], |(k, _)| k);
            icmp.compare(stored, target) == Ordering::Less
        })
    }

    /// The number of leading entries whose key satisfies `pred` (which must hold for a prefix
    /// of the entries, as `slice::partition_point`).
    pub fn partition_point(&self, mut pred: impl FnMut(&[u8]) -> bool) -> usize {
        self.search(|i| self.with_ikey(i, &mut pred))
    }

    /// The number of leading entries `i` for which `before(i)` holds (a prefix of them), by
    /// binary search.
    fn search(&self, mut before: impl FnMut(usize) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(mid) {
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

/// Encodes a leaf payload ([`INDEXED_LEAF_RECORD`]): the prefix the entries' user keys share,
/// once, then each entry's internal key past it, then where each entry starts (two bytes each
/// while the entries end within 64 KiB, else four) and that width.
pub fn encode_leaf(entries: &[LeafEntry]) -> Vec<u8> {
    let p = shared_prefix_len(entries);
    let prefix = entries.first().map_or(&[][..], |e| &e.ikey[..p]);
    let entry_bytes: usize = entries.iter().map(|e| e.encoded_len_past(p)).sum();
    let n = entries.len();
    let mut out = Vec::with_capacity(LEAF_HEADER_BYTES + p + entry_bytes + 4 * n);
    put_varint32(&mut out, n as u32);
    put_u64(&mut out, stored_end(entries));
    put_varint32(&mut out, p as u32);
    out.extend_from_slice(prefix);
    let mut starts = Vec::with_capacity(n);
    for e in entries {
        starts.push(out.len());
        let rest = &e.ikey[p..];
        put_varint32(&mut out, rest.len() as u32);
        out.extend_from_slice(rest);
        put_value(&mut out, &e.value);
    }
    let width: u8 = if out.len() <= 1 << 16 { 2 } else { 4 };
    for s in starts {
        out.extend_from_slice(&(s as u32).to_le_bytes()[..usize::from(width)]);
    }
    out.push(width);
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
#[path = "leaf_tests.rs"]
mod tests;
