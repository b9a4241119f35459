//! Metadata of one sorted table, as recorded in the manifest.
//!
//! Byte layout inside a "new file" field of a version edit (after the tag and the level):
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

use crate::coding::put_u64;
use crate::error::Result;
use crate::key;

use super::{FieldReader, put_bytes};

/// What the manifest knows about one table file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMeta {
    /// The file number; the table is `<number>.sst`.
    pub number: u64,
    /// Size of the file in bytes.
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
        };
        assert_eq!(meta.smallest_user_key(), b"apple");
        assert_eq!(meta.largest_user_key(), b"pear");
    }
}
