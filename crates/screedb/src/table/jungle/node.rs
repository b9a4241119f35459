//! The records of a tree file: checksummed values, leaves, internal nodes and filters (all
//! `payload | type: u8 | masked crc32c: u32`), and the commit record. See the layout in
//! `mod.rs`; every number here is on disk and frozen.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use crate::checksum;
use crate::coding::{get_u32, get_u64, put_u32, put_u64};
use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;

/// Bytes after every record's payload: type byte and masked CRC32C.
pub const RECORD_TRAILER_LEN: usize = 5;

/// Record type of a value (written to disk: never change).
pub const VALUE_RECORD: u8 = 1;
/// Record type of a leaf node.
pub const LEAF_RECORD: u8 = 2;
/// Record type of an internal node.
pub const INTERNAL_RECORD: u8 = 3;
/// Record type of a filter.
pub const FILTER_RECORD: u8 = 4;

/// Value tag of a leaf entry: the value follows inline.
const INLINE: u8 = 0;
/// Value tag of a leaf entry: the value is a value record elsewhere in the file.
const REFERENCE: u8 = 1;

/// Where a record's payload lies: `size` bytes at `offset`, followed by its trailer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handle {
    /// Offset of the payload.
    pub offset: u64,
    /// Bytes of the payload (the trailer not included).
    pub size: u32,
}

impl Handle {
    /// Offset just past the record's trailer.
    pub fn end(&self) -> u64 {
        self.offset
            .saturating_add(u64::from(self.size) + RECORD_TRAILER_LEN as u64)
    }
}

/// A leaf entry's value: inline, or a reference to a value record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueRef {
    /// The value itself.
    Inline(Vec<u8>),
    /// A value record.
    Stored(Handle),
}

impl ValueRef {
    /// Length of the value.
    pub fn value_len(&self) -> u64 {
        match self {
            ValueRef::Inline(v) => v.len() as u64,
            ValueRef::Stored(h) => u64::from(h.size),
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
    /// Bytes the entry takes in a leaf.
    pub fn encoded_len(&self) -> usize {
        4 + self.ikey.len()
            + 1
            + match &self.value {
                ValueRef::Inline(v) => 4 + v.len(),
                ValueRef::Stored(_) => 12,
            }
    }

    /// Logical bytes of the entry (key + value), the unit of live and total bytes.
    pub fn logical_len(&self) -> u64 {
        self.ikey.len() as u64 + self.value.value_len()
    }
}

/// One child of an internal node: the key range of its subtree and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Child {
    /// Smallest internal key in the subtree.
    pub first: Vec<u8>,
    /// Largest internal key in the subtree.
    pub last: Vec<u8>,
    /// The child node.
    pub handle: Handle,
}

impl Child {
    /// Bytes the child takes in an internal node.
    pub fn encoded_len(&self) -> usize {
        8 + self.first.len() + self.last.len() + 12
    }
}

/// A leaf entry's value, borrowed from its leaf.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueSlot<'a> {
    /// The value itself.
    Inline(&'a [u8]),
    /// A value record.
    Stored(Handle),
}

impl ValueSlot<'_> {
    /// Length of the value.
    pub fn value_len(&self) -> u64 {
        match self {
            ValueSlot::Inline(v) => v.len() as u64,
            ValueSlot::Stored(h) => u64::from(h.size),
        }
    }

    /// An owned copy, for a writer.
    pub fn to_owned(self) -> ValueRef {
        match self {
            ValueSlot::Inline(v) => ValueRef::Inline(v.to_vec()),
            ValueSlot::Stored(h) => ValueRef::Stored(h),
        }
    }
}

/// A decoded leaf, read in place: its payload as read (a view of the file's map when the file is
/// mapped, so nothing is copied) and where each entry's key lies. Decoding checks every entry's
/// bounds and tag once; a lookup then binary-searches the keys with no allocation, which is what
/// a get pays on every level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    payload: Bytes,
    /// Where each entry lies in `payload`, checked against it.
    index: LeafIndex,
}

/// What decoding a leaf learns, apart from its bytes: where each entry's key lies. Shared, so a
/// cache can keep it for a leaf of a mapped file and pair it with the file's bytes again
/// ([`Leaf::over`]) instead of keeping a copy of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeafIndex {
    /// `(offset, length)` of each entry's internal key in the payload; its value tag follows.
    keys: Arc<[(u32, u32)]>,
    /// The end (past the trailer) of the furthest value record an entry refers to (0: none).
    stored_end: u64,
    /// Bytes of the payload it was built from.
    payload_len: usize,
}

impl LeafIndex {
    /// Bytes it holds in memory (what a cache charges for it).
    pub fn charge(&self) -> u64 {
        (self.keys.len() * 8 + 48) as u64
    }
}

impl Leaf {
    /// Decodes a leaf payload; `None` if malformed.
    fn decode(payload: Bytes) -> Option<Leaf> {
        let mut c = Cur(&payload);
        let count = c.u32()?;
        // Every entry takes at least 9 bytes: a count larger than that is corrupt, not a huge
        // alloc.
        let mut keys = Vec::with_capacity(usize::try_from(count).ok()?.min(payload.len() / 9));
        let mut stored_end = 0;
        for _ in 0..count {
            let len = c.u32()?;
            let at = payload.len() - c.0.len();
            c.take(usize::try_from(len).ok()?)?;
            keys.push((u32::try_from(at).ok()?, len));
            match c.u8()? {
                INLINE => {
                    let n = usize::try_from(c.u32()?).ok()?;
                    c.take(n)?;
                }
                REFERENCE => stored_end = stored_end.max(c.handle()?.end()),
                _ => return None,
            }
        }
        let payload_len = payload.len();
        c.0.is_empty().then_some(Leaf {
            payload,
            index: LeafIndex {
                keys: keys.into(),
                stored_end,
                payload_len,
            },
        })
    }

    /// Its index (shared, not copied).
    pub fn index(&self) -> LeafIndex {
        self.index.clone()
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
        self.index.keys.len()
    }

    /// True if the leaf has no entries (only a damaged file has such a leaf).
    pub fn is_empty(&self) -> bool {
        self.index.keys.is_empty()
    }

    /// The internal key of entry `i` (empty past the end).
    pub fn ikey(&self, i: usize) -> &[u8] {
        self.index.keys.get(i).map_or(&[], |&(at, len)| {
            let at = at as usize;
            self.payload.get(at..at + len as usize).unwrap_or_default()
        })
    }

    /// The value of entry `i` (an empty inline value past the end).
    pub fn value(&self, i: usize) -> ValueSlot<'_> {
        let empty = ValueSlot::Inline(&[]);
        let Some(&(at, len)) = self.index.keys.get(i) else {
            return empty;
        };
        let Some(rest) = self.payload.get(at as usize + len as usize..) else {
            return empty;
        };
        let mut c = Cur(rest);
        // Decoding checked every tag and length, so these reads succeed.
        let slot = match c.u8() {
            Some(INLINE) => c
                .u32()
                .and_then(|n| c.take(usize::try_from(n).ok()?))
                .map(ValueSlot::Inline),
            Some(REFERENCE) => c.handle().map(ValueSlot::Stored),
            _ => None,
        };
        slot.unwrap_or(empty)
    }

    /// Entry `i`, copied (for the write path, which merges entries into new leaves).
    pub fn entry(&self, i: usize) -> LeafEntry {
        LeafEntry {
            ikey: self.ikey(i).to_vec(),
            value: self.value(i).to_owned(),
        }
    }

    /// Every entry, copied, in key order.
    pub fn entries(&self) -> impl Iterator<Item = LeafEntry> + '_ {
        (0..self.len()).map(|i| self.entry(i))
    }

    /// Key + value bytes of every entry (the unit of live bytes).
    pub fn logical_len(&self) -> u64 {
        (0..self.len())
            .map(|i| self.ikey(i).len() as u64 + self.value(i).value_len())
            .sum()
    }

    /// The number of leading entries whose key satisfies `pred` (which must hold for a prefix
    /// of the entries, as `slice::partition_point`).
    pub fn partition_point(&self, mut pred: impl FnMut(&[u8]) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.ikey(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// A decoded node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// Entries in internal-key order.
    Leaf(Leaf),
    /// Children in key order (their ranges ascending and disjoint).
    Internal(Vec<Child>),
}

/// Encodes a leaf payload.
pub fn encode_leaf(entries: &[LeafEntry]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + entries.iter().map(LeafEntry::encoded_len).sum::<usize>());
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
            ValueRef::Stored(h) => {
                out.push(REFERENCE);
                put_u64(&mut out, h.offset);
                put_u32(&mut out, h.size);
            }
        }
    }
    out
}

/// Encodes an internal-node payload.
pub fn encode_internal(children: &[Child]) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + children.iter().map(Child::encoded_len).sum::<usize>());
    put_u32(&mut out, children.len() as u32);
    for c in children {
        put_u32(&mut out, c.first.len() as u32);
        out.extend_from_slice(&c.first);
        put_u32(&mut out, c.last.len() as u32);
        out.extend_from_slice(&c.last);
        put_u64(&mut out, c.handle.offset);
        put_u32(&mut out, c.handle.size);
    }
    out
}

/// A cursor over a payload; every read past the end is `None`.
struct Cur<'a>(&'a [u8]);

impl<'a> Cur<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(*self.take(1)?.first()?)
    }
    fn u32(&mut self) -> Option<u32> {
        get_u32(self.take(4)?)
    }
    fn u64(&mut self) -> Option<u64> {
        get_u64(self.take(8)?)
    }
    fn bytes(&mut self) -> Option<Vec<u8>> {
        let n = usize::try_from(self.u32()?).ok()?;
        Some(self.take(n)?.to_vec())
    }
    fn handle(&mut self) -> Option<Handle> {
        Some(Handle {
            offset: self.u64()?,
            size: self.u32()?,
        })
    }
}

/// Decodes a node payload of record type `rtype`; `None` if malformed.
pub fn decode_node(rtype: u8, payload: Bytes) -> Option<Node> {
    if rtype == LEAF_RECORD {
        return Leaf::decode(payload).map(Node::Leaf);
    }
    if rtype != INTERNAL_RECORD {
        return None;
    }
    let mut c = Cur(&payload);
    let count = c.u32()?;
    // Every child takes at least 20 bytes: a count larger than that is corrupt, not a huge alloc.
    let mut children = Vec::with_capacity(usize::try_from(count).ok()?.min(payload.len() / 20));
    for _ in 0..count {
        let (first, last) = (c.bytes()?, c.bytes()?);
        children.push(Child {
            first,
            last,
            handle: c.handle()?,
        });
    }
    c.0.is_empty().then_some(Node::Internal(children))
}

/// The trailer of a record of type `rtype` holding `payload`.
pub fn record_trailer(payload: &[u8], rtype: u8) -> [u8; RECORD_TRAILER_LEN] {
    let crc = checksum::crc32c_extend(checksum::crc32c(payload), &[rtype]);
    let mut t = [0u8; RECORD_TRAILER_LEN];
    t[0] = rtype;
    t[1..].copy_from_slice(&checksum::mask(crc).to_le_bytes());
    t
}

/// Reads the record at `handle` (which must end at or below `extent`), checks its type is
/// `rtype` and, if `verify`, its checksum. Failures are Corruption naming `path` and the offset.
pub fn read_record(
    file: &dyn RandomAccessFile,
    path: &Path,
    extent: u64,
    handle: Handle,
    rtype: u8,
    verify: bool,
) -> Result<Vec<u8>> {
    let size = record_len(path, extent, handle, rtype)?;
    let mut buf = file.read_vec(handle.offset, size + RECORD_TRAILER_LEN)?;
    check_record(&buf, path, handle, rtype, verify)?;
    buf.truncate(size);
    Ok(buf)
}

/// [`read_record`] as shared bytes: a view of the file's map when it is mapped (no copy).
pub fn read_record_bytes(
    file: &dyn RandomAccessFile,
    path: &Path,
    extent: u64,
    handle: Handle,
    rtype: u8,
    verify: bool,
) -> Result<Bytes> {
    let size = record_len(path, extent, handle, rtype)?;
    let buf = file.read_bytes(handle.offset, size + RECORD_TRAILER_LEN)?;
    check_record(&buf, path, handle, rtype, verify)?;
    Ok(buf.slice(..size))
}

/// The payload length of the record at `handle`, which must end at or below `extent`.
fn record_len(path: &Path, extent: u64, handle: Handle, rtype: u8) -> Result<usize> {
    match handle
        .offset
        .checked_add(u64::from(handle.size) + RECORD_TRAILER_LEN as u64)
    {
        Some(end) if end <= extent => Ok(handle.size as usize),
        _ => Err(Error::corruption(
            path,
            handle.offset,
            format!(
                "{} of {} bytes runs past the committed length {extent}",
                record_name(rtype),
                handle.size
            ),
        )),
    }
}

/// Checks a record read whole (payload and trailer): its type is `rtype` and, if `verify`, its
/// checksum matches.
fn check_record(buf: &[u8], path: &Path, handle: Handle, rtype: u8, verify: bool) -> Result<()> {
    let what = record_name(rtype);
    let size = handle.size as usize;
    let (payload, stored_type, stored_crc) = match (buf.get(..size), buf.get(size..)) {
        (Some(p), Some([t, c @ ..])) => (p, *t, get_u32(c).unwrap_or_default()),
        _ => return Err(Error::corruption(path, handle.offset, "short record read")),
    };
    if stored_type != rtype {
        return Err(Error::corruption(
            path,
            handle.offset,
            format!("expected a {what}, found record type {stored_type}"),
        ));
    }
    if verify {
        let crc = checksum::crc32c_extend(checksum::crc32c(payload), &[stored_type]);
        if checksum::unmask(stored_crc) != crc {
            return Err(Error::corruption(
                path,
                handle.offset,
                format!("{what} checksum mismatch ({size} bytes)"),
            ));
        }
    }
    Ok(())
}

/// What a record type holds, for error messages.
pub fn record_name(rtype: u8) -> &'static str {
    match rtype {
        VALUE_RECORD => "value",
        LEAF_RECORD => "leaf node",
        INTERNAL_RECORD => "internal node",
        FILTER_RECORD => "filter",
        _ => "record",
    }
}

/// Reads and decodes the node at `handle`.
pub fn read_node(
    file: &dyn RandomAccessFile,
    path: &Path,
    extent: u64,
    handle: Handle,
    leaf: bool,
    verify: bool,
) -> Result<Node> {
    let rtype = if leaf { LEAF_RECORD } else { INTERNAL_RECORD };
    let payload = read_record_bytes(file, path, extent, handle, rtype, verify)?;
    let node = decode_node(rtype, payload);
    // Everything a node points to was written before it: this keeps a damaged (or crafted)
    // file from sending a reader round a cycle.
    let points_back = |h: &Handle| h.end() <= handle.offset;
    let well_formed = match &node {
        Some(Node::Leaf(leaf)) => leaf.index.stored_end <= handle.offset,
        Some(Node::Internal(cs)) => cs.iter().all(|c| points_back(&c.handle)),
        None => false,
    };
    match node {
        Some(node) if well_formed => Ok(node),
        _ => Err(Error::corruption(
            path,
            handle.offset,
            format!(
                "malformed {} (a reference not before the node, or bad encoding)",
                record_name(rtype)
            ),
        )),
    }
}
