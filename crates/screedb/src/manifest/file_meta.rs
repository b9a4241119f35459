//! Metadata of one table, as recorded in the manifest.
//!
//! Byte layout inside a "new file" field (tag 6) of a version edit, after the tag and the level.
//! Tag 6 describes a sorted table that never grows; every other table is written as a "new table"
//! (tag 12) or "table grew" (tag 13) field, which frame the same fields with its format, the
//! checksum of its committed end, its route and, for a tree, its live bytes (see edit.rs):
//!
//! ```text
//! number:        u64 LE
//! file_size:     u64 LE
//! smallest:      len: u32 LE | internal key bytes
//! largest:       len: u32 LE | internal key bytes
//! smallest_seq:  u64 LE
//! largest_seq:   u64 LE
//! num_entries:   u64 LE
//! num_deletions: u64 LE
//! ```

use crate::coding::{put_u32, put_u64};
use crate::error::Result;
use crate::key;
use crate::table::TableFormat;

use super::{FieldReader, put_bytes};

/// What the manifest knows about one table file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileMeta {
    /// The file number; the table is `<number>.sst`.
    pub number: u64,
    /// The table's extent: bytes of the file this version reads. For a table that never grows,
    /// the size of the file. A table that grows by appends has a larger extent in each newer
    /// version; readers of an older version never read past theirs.
    pub file_size: u64,
    /// Smallest internal key in the table.
    pub smallest: Vec<u8>,
    /// Largest internal key in the table.
    pub largest: Vec<u8>,
    /// Smallest sequence number of any entry in the table.
    pub smallest_seq: u64,
    /// Largest sequence number of any entry in the table.
    pub largest_seq: u64,
    /// Number of entries (puts and tombstones).
    pub num_entries: u64,
    /// Number of tombstones.
    pub num_deletions: u64,
    /// The table's format. Default: [`TableFormat::Sorted`].
    pub format: TableFormat,
    /// For a table that grows: the CRC32C (masked) of the last bytes below the extent (at most
    /// [`END_CHECKSUM_SPAN`]), so a reopened file whose committed end was overwritten is caught.
    /// `None` for a table that never grows.
    pub end_checksum: Option<u32>,
    /// Where the layout routes the table: the trie container of a hashed table (see
    /// `crate::layout::trie::route_of`); 0 for layouts that route by key range.
    pub route: u64,
    /// For a tree ([`TableFormat::Tree`]): key + value bytes of the entries it holds at this
    /// extent, so `file_size / live_bytes` is its space ratio (Jungle's compaction factor C is
    /// compared with it). 0 for the other formats, which do not record it.
    pub live_bytes: u64,
    /// For an HTable: the sketch of its distinct user keys (tag 16 of the edit that adds it;
    /// `None` for the other formats and for HTables written before sketches). The trie's
    /// strategy estimates a container's garbage from the union of its tables' sketches.
    pub distinct_sketch: Option<std::sync::Arc<crate::sketch::DistinctSketch>>,
}

/// How many bytes below a table's extent [`FileMeta::end_checksum`] covers (fewer when the
/// table is shorter).
pub const END_CHECKSUM_SPAN: u64 = 4096;

/// The [`FileMeta::end_checksum`] of a table whose extent is `extent`: the masked CRC32C of
/// its last [`END_CHECKSUM_SPAN`] bytes below it.
pub fn end_checksum(file: &dyn crate::fs::RandomAccessFile, extent: u64) -> Result<u32> {
    let span = END_CHECKSUM_SPAN.min(extent);
    let bytes = file.read_vec(extent - span, span as usize)?;
    Ok(crate::checksum::mask(crate::checksum::crc32c(&bytes)))
}

impl FileMeta {
    /// The user-key part of [`FileMeta::smallest`].
    pub fn smallest_user_key(&self) -> &[u8] {
        key::user_key(&self.smallest)
    }

    /// The user-key part of [`FileMeta::largest`].
    pub fn largest_user_key(&self) -> &[u8] {
        key::user_key(&self.largest)
    }

    /// Appends the fields in the layout above.
    pub(crate) fn encode_fields(&self, dst: &mut Vec<u8>) {
        put_u64(dst, self.number);
        put_u64(dst, self.file_size);
        put_bytes(dst, &self.smallest);
        put_bytes(dst, &self.largest);
        put_u64(dst, self.smallest_seq);
        put_u64(dst, self.largest_seq);
        put_u64(dst, self.num_entries);
        put_u64(dst, self.num_deletions);
    }

    /// True when tag 6 can describe the table: a sorted table with no end checksum or route.
    pub(crate) fn is_plain(&self) -> bool {
        self.format == TableFormat::Sorted && self.end_checksum.is_none() && self.route == 0
    }

    /// Appends `format: u8 | fields | has end checksum: u8 | end checksum: u32 LE |
    /// route: u64 LE`, then, for a tree only, `live bytes: u64 LE` (tags 12, 13; the format
    /// code comes first, so a reader knows whether the tree's field follows).
    pub(crate) fn encode_framed(&self, dst: &mut Vec<u8>) {
        dst.push(self.format.code());
        self.encode_fields(dst);
        dst.push(u8::from(self.end_checksum.is_some()));
        put_u32(dst, self.end_checksum.unwrap_or(0));
        put_u64(dst, self.route);
        if self.format == TableFormat::Tree {
            put_u64(dst, self.live_bytes);
        }
    }

    /// Key + value bytes the table holds: [`FileMeta::live_bytes`] for a tree, the file size
    /// for the other formats (which hold no garbage).
    pub fn live_or_file_bytes(&self) -> u64 {
        match self.format {
            TableFormat::Tree => self.live_bytes,
            TableFormat::Sorted | TableFormat::HTable => self.file_size,
        }
    }

    /// Reads what [`FileMeta::encode_framed`] wrote.
    pub(crate) fn decode_framed(r: &mut FieldReader<'_>) -> Result<FileMeta> {
        let at = r.offset();
        let code = r.u8("table format")?;
        let format = TableFormat::from_code(code).ok_or_else(|| {
            crate::error::Error::corruption(
                r.file(),
                at,
                format!("unknown table format code {code} (a newer build wrote this database)"),
            )
        })?;
        let mut meta = FileMeta::decode_fields(r)?;
        meta.format = format;
        let at = r.offset();
        let has = r.u8("end checksum flag")?;
        let crc = r.u32("end checksum")?;
        meta.end_checksum = match has {
            0 => None,
            1 => Some(crc),
            other => {
                return Err(crate::error::Error::corruption(
                    r.file(),
                    at,
                    format!("end checksum flag is {other}, not 0 or 1"),
                ));
            }
        };
        meta.route = r.u64("table route")?;
        if format == TableFormat::Tree {
            meta.live_bytes = r.u64("tree live bytes")?;
        }
        Ok(meta)
    }

    /// Reads the fields in the layout above.
    pub(crate) fn decode_fields(r: &mut FieldReader<'_>) -> Result<FileMeta> {
        Ok(FileMeta {
            number: r.u64("new file number")?,
            file_size: r.u64("new file size")?,
            smallest: r.bytes("new file smallest key")?.to_vec(),
            largest: r.bytes("new file largest key")?.to_vec(),
            smallest_seq: r.u64("new file smallest sequence")?,
            largest_seq: r.u64("new file largest sequence")?,
            num_entries: r.u64("new file entry count")?,
            num_deletions: r.u64("new file deletion count")?,
            format: TableFormat::Sorted,
            end_checksum: None,
            route: 0,
            live_bytes: 0,
            distinct_sketch: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, make_internal_key};

    #[test]
    fn user_keys_strip_the_trailer() {
        let meta = FileMeta {
            number: 7,
            file_size: 100,
            smallest: make_internal_key(b"apple", 3, ValueKind::Value),
            largest: make_internal_key(b"pear", 9, ValueKind::Deletion),
            smallest_seq: 3,
            largest_seq: 9,
            num_entries: 2,
            num_deletions: 1,
            ..FileMeta::default()
        };
        assert_eq!(meta.smallest_user_key(), b"apple");
        assert_eq!(meta.largest_user_key(), b"pear");
    }
}
