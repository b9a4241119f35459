//! The records of a tree file: checksummed values, nodes and filters (all `payload | type: u8 |
//! masked crc32c: u32`): their types, handles, internal nodes, and reading and checking a
//! record. Leaves, their four encodings and their cached index are in `leaf.rs`. See the
//! layout in `mod.rs`; every number here is on disk and frozen.

use std::path::Path;

use bytes::Bytes;

use super::leaf::Leaf;
use crate::checksum;
use crate::coding::{get_u32, get_u64, get_varint32, put_u32, put_u64};
use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;
use crate::table::compression::{self, CompressionType};

/// Bytes after every record's payload: type byte and masked CRC32C.
pub const RECORD_TRAILER_LEN: usize = 5;

/// Record type of a value (written to disk: never change).
pub const VALUE_RECORD: u8 = 1;
/// Record type of an LZ4-compressed value: `uncompressed_len: u32 | LZ4 block`, as a table
/// block of compression type 1 (written since 2026-11-27).
pub const LZ4_VALUE_RECORD: u8 = 7;
/// Record type of a leaf node.
pub const LEAF_RECORD: u8 = 2;
/// Record type of an internal node.
pub const INTERNAL_RECORD: u8 = 3;
/// Record type of a filter.
pub const FILTER_RECORD: u8 = 4;
/// Record type of a compact leaf node: varint lengths, value handles in the widths their tag
/// states, and a header naming the furthest value record (written on 2026-11-27; a leaf of
/// type [`LEAF_RECORD`], with fixed-width fields, still reads).
pub const COMPACT_LEAF_RECORD: u8 = 5;
/// Record type of a prefix leaf: a compact leaf that stores the prefix its entries' user keys
/// share once and each entry's internal key past it (written on 2026-11-27, after type 5;
/// still read, as are leaves of types [`LEAF_RECORD`] and [`COMPACT_LEAF_RECORD`]).
pub const PREFIX_LEAF_RECORD: u8 = 6;
/// Record type of an indexed leaf: a prefix leaf followed by the offset of each entry, so a
/// reader binary-searches it in place with nothing decoded or cached (written since
/// 2026-11-27, after type 6; leaves of types 2, 5 and 6 still read).
pub const INDEXED_LEAF_RECORD: u8 = 8;

/// The record type of a value record stored with `compression`.
pub fn value_record_type(compression: CompressionType) -> u8 {
    match compression {
        CompressionType::None => VALUE_RECORD,
        CompressionType::Lz4 => LZ4_VALUE_RECORD,
    }
}

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
    Leaf(Leaf),
    /// Children in key order (their ranges ascending and disjoint).
    Internal(Vec<Child>),
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

/// A cursor over a payload; every read past the end is `None`. Leaves add their own reads
/// (`leaf.rs`).
pub(super) struct Cur<'a>(pub(super) &'a [u8]);

impl<'a> Cur<'a> {
    pub(super) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = rest;
        Some(head)
    }
    pub(super) fn u8(&mut self) -> Option<u8> {
        Some(*self.take(1)?.first()?)
    }
    pub(super) fn u32(&mut self) -> Option<u32> {
        get_u32(self.take(4)?)
    }
    fn u64(&mut self) -> Option<u64> {
        get_u64(self.take(8)?)
    }
    fn bytes(&mut self) -> Option<Vec<u8>> {
        let n = usize::try_from(self.u32()?).ok()?;
        Some(self.take(n)?.to_vec())
    }
    pub(super) fn handle(&mut self) -> Option<Handle> {
        Some(Handle {
            offset: self.u64()?,
            size: self.u32()?,
        })
    }
    /// A varint32: lengths in a compact leaf, read for every entry on every leaf read, so the
    /// one-byte case (every key length under 128) comes first.
    #[inline]
    pub(super) fn varint32(&mut self) -> Option<u32> {
        let (&b0, rest) = self.0.split_first()?;
        if b0 < 0x80 {
            self.0 = rest;
            return Some(u32::from(b0));
        }
        let (v, n) = get_varint32(self.0)?;
        self.take(n)?;
        Some(v)
    }
    /// `width` (1 to 8) bytes as a little-endian number: one eight-byte load, masked, where
    /// eight bytes remain (copying fewer to a buffer and loading it back stalls a leaf's decode).
    #[inline]
    pub(super) fn le(&mut self, width: usize) -> Option<u64> {
        let v = match self.0.get(..8) {
            Some(chunk) => {
                let x = u64::from_le_bytes(chunk.try_into().ok()?);
                match width {
                    0..8 => x & ((1u64 << (8 * width)) - 1),
                    _ => x,
                }
            }
            None => self
                .0
                .get(..width)?
                .iter()
                .rev()
                .fold(0u64, |v, &b| (v << 8) | u64::from(b)),
        };
        self.take(width)?;
        Some(v)
    }
}

/// Decodes a node payload of record type `rtype`; `None` if malformed.
pub fn decode_node(rtype: u8, payload: Bytes) -> Option<Node> {
    if matches!(
        rtype,
        LEAF_RECORD | COMPACT_LEAF_RECORD | PREFIX_LEAF_RECORD | INDEXED_LEAF_RECORD
    ) {
        return Leaf::decode(payload, rtype).map(Node::Leaf);
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

/// [`read_record`] as shared bytes (a view of the file's map when it is mapped: no copy), and
/// the record's stored type (a leaf's may be any leaf type).
pub fn read_record_bytes(
    file: &dyn RandomAccessFile,
    path: &Path,
    extent: u64,
    handle: Handle,
    rtype: u8,
    verify: bool,
) -> Result<(Bytes, u8)> {
    let size = record_len(path, extent, handle, rtype)?;
    let buf = file.read_bytes(handle.offset, size + RECORD_TRAILER_LEN)?;
    let stored = check_record(&buf, path, handle, rtype, verify)?;
    Ok((buf.slice(..size), stored))
}

/// The payload of the record at `handle` (which must end at or below `extent`), of type
/// `rtype`, already read and checked once: its trailer is not read again, so a reader touches
/// only the bytes it uses.
pub fn read_checked_payload(
    file: &dyn RandomAccessFile,
    path: &Path,
    extent: u64,
    handle: Handle,
    rtype: u8,
) -> Result<Bytes> {
    let size = record_len(path, extent, handle, rtype)?;
    file.read_bytes(handle.offset, size)
}

/// The value a value record's `payload` holds, stored with `compression` (the record at
/// `handle` of `path`, for the error a payload that does not decompress gets).
pub fn decompress_value(
    path: &Path,
    handle: Handle,
    compression: CompressionType,
    payload: Bytes,
) -> Result<Bytes> {
    match compression {
        CompressionType::None => Ok(payload),
        CompressionType::Lz4 => compression::decompress_lz4(&payload)
            .map(Bytes::from)
            .ok_or_else(|| not_decompressed(path, handle)),
    }
}

/// [`decompress_value`] over `out`, whose allocation is reused.
pub fn decompress_value_into(
    path: &Path,
    handle: Handle,
    compression: CompressionType,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Result<()> {
    let done = match compression {
        CompressionType::None => {
            out.clear();
            out.extend_from_slice(payload);
            Some(())
        }
        CompressionType::Lz4 => compression::decompress_lz4_into(payload, out),
    };
    done.ok_or_else(|| not_decompressed(path, handle))
}

/// The error of a compressed value record that does not decompress.
fn not_decompressed(path: &Path, handle: Handle) -> Error {
    Error::corruption(
        path,
        handle.offset,
        format!(
            "compressed value of {} bytes does not decompress",
            handle.size
        ),
    )
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

/// Checks a record read whole (payload and trailer): its type is `rtype` (for a leaf, either
/// leaf type) and, if `verify`, its checksum matches. Returns the stored type.
fn check_record(buf: &[u8], path: &Path, handle: Handle, rtype: u8, verify: bool) -> Result<u8> {
    let what = record_name(rtype);
    let size = handle.size as usize;
    let (payload, stored_type, stored_crc) = match (buf.get(..size), buf.get(size..)) {
        (Some(p), Some([t, c @ ..])) => (p, *t, get_u32(c).unwrap_or_default()),
        _ => return Err(Error::corruption(path, handle.offset, "short record read")),
    };
    let leaf_types = rtype == LEAF_RECORD
        && matches!(
            stored_type,
            COMPACT_LEAF_RECORD | PREFIX_LEAF_RECORD | INDEXED_LEAF_RECORD
        );
    if stored_type != rtype && !leaf_types {
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
    Ok(stored_type)
}

/// What a record type holds, for error messages.
pub fn record_name(rtype: u8) -> &'static str {
    match rtype {
        VALUE_RECORD => "value",
        LZ4_VALUE_RECORD => "compressed value",
        LEAF_RECORD | COMPACT_LEAF_RECORD | PREFIX_LEAF_RECORD | INDEXED_LEAF_RECORD => "leaf node",
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
    let (payload, stored) = read_record_bytes(file, path, extent, handle, rtype, verify)?;
    let node = decode_node(stored, payload);
    // Everything a node points to was written before it: this keeps a damaged (or crafted)
    // file from sending a reader round a cycle.
    let points_back = |h: &Handle| h.end() <= handle.offset;
    let well_formed = match &node {
        Some(Node::Leaf(leaf)) => leaf.stored_end() <= handle.offset,
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
