//! The records of a tree file: checksummed values, leaves, internal nodes and filters (all
//! `payload | type: u8 | masked crc32c: u32`), and the commit record. See the layout in
//! `mod.rs`; every number here is on disk and frozen.

use std::path::Path;

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

/// A decoded node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// Entries in internal-key order.
    Leaf(Vec<LeafEntry>),
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
pub fn decode_node(rtype: u8, payload: &[u8]) -> Option<Node> {
    let mut c = Cur(payload);
    let count = c.u32()?;
    // Every entry takes at least 9 bytes: a count larger than that is corrupt, not a huge alloc.
    let cap = usize::try_from(count).ok()?.min(payload.len() / 9);
    let node = match rtype {
        LEAF_RECORD => {
            let mut entries = Vec::with_capacity(cap);
            for _ in 0..count {
                let ikey = c.bytes()?;
                let value = match c.u8()? {
                    INLINE => ValueRef::Inline(c.bytes()?),
                    REFERENCE => ValueRef::Stored(c.handle()?),
                    _ => return None,
                };
                entries.push(LeafEntry { ikey, value });
            }
            Node::Leaf(entries)
        }
        INTERNAL_RECORD => {
            let mut children = Vec::with_capacity(cap);
            for _ in 0..count {
                let (first, last) = (c.bytes()?, c.bytes()?);
                children.push(Child {
                    first,
                    last,
                    handle: c.handle()?,
                });
            }
            Node::Internal(children)
        }
        _ => return None,
    };
    c.0.is_empty().then_some(node)
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
    let what = record_name(rtype);
    if handle
        .offset
        .checked_add(u64::from(handle.size) + RECORD_TRAILER_LEN as u64)
        .is_none_or(|end| end > extent)
    {
        return Err(Error::corruption(
            path,
            handle.offset,
            format!(
                "{what} of {} bytes runs past the committed length {extent}",
                handle.size
            ),
        ));
    }
    let size = handle.size as usize;
    let mut buf = file.read_vec(handle.offset, size + RECORD_TRAILER_LEN)?;
    let (stored_type, stored_crc) = match buf.get(size..) {
        Some([t, c @ ..]) => (*t, get_u32(c).unwrap_or_default()),
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
        let crc = checksum::crc32c_extend(checksum::crc32c(&buf[..size]), &[stored_type]);
        if checksum::unmask(stored_crc) != crc {
            return Err(Error::corruption(
                path,
                handle.offset,
                format!("{what} checksum mismatch ({size} bytes)"),
            ));
        }
    }
    buf.truncate(size);
    Ok(buf)
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
    let payload = read_record(file, path, extent, handle, rtype, verify)?;
    let node = decode_node(rtype, &payload);
    // Everything a node points to was written before it: this keeps a damaged (or crafted)
    // file from sending a reader round a cycle.
    let points_back = |h: &Handle| h.end() <= handle.offset;
    let well_formed = match &node {
        Some(Node::Leaf(es)) => es.iter().all(|e| match &e.value {
            ValueRef::Stored(h) => points_back(h),
            ValueRef::Inline(_) => true,
        }),
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
