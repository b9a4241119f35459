//! Fixed-size framing of a table: block handles, block trailers and the footer.
//!
//! ```text
//! BlockHandle (16 bytes)      offset: u64 LE | size: u64 LE      size excludes the trailer
//! block trailer (5 bytes)     type: u8 (0 none, 1 lz4) | crc: u32 LE
//!                             crc = mask(crc32c(block bytes as stored ++ type byte))
//! Footer (48 bytes, at EOF)   metaindex: BlockHandle | index: BlockHandle
//!                             | format_version: u32 LE (= 1) | padding: u32 (written 0, ignored)
//!                             | magic: u64 LE (= TABLE_MAGIC)
//! ```
//!
//! These numbers are on disk: never change them; a new layout gets a new `format_version`.

use std::path::Path;

use bytes::Bytes;

use crate::checksum;
use crate::coding::{get_u32, get_u64, put_u32, put_u64};
use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;

use super::compression::{self, CompressionType};

/// Encoded length of a [`BlockHandle`].
pub const BLOCK_HANDLE_LEN: usize = 16;
/// Length of the trailer after every block: compression type + masked CRC32C.
pub const BLOCK_TRAILER_LEN: usize = 5;
/// Length of the [`Footer`].
pub const FOOTER_LEN: usize = 48;
/// The only table format version this code reads and writes.
pub const FORMAT_VERSION: u32 = 1;
/// Magic number closing every table: the first 8 bytes of SHA-1("screedb.table")
/// (`67969cf70459a2bc...`) read as a big-endian integer; stored little-endian like every field.
pub const TABLE_MAGIC: u64 = 0x6796_9cf7_0459_a2bc;

/// Where a block lives in a table file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BlockHandle {
    /// Offset of the block's first byte.
    pub offset: u64,
    /// Length of the block as stored, without its trailer.
    pub size: u64,
}

impl BlockHandle {
    /// Appends the 16-byte encoding.
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_u64(dst, self.offset);
        put_u64(dst, self.size);
    }

    /// The 16-byte encoding.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(BLOCK_HANDLE_LEN);
        self.encode_to(&mut v);
        v
    }

    /// Decodes a handle that must be exactly 16 bytes; `None` otherwise.
    pub fn decode(src: &[u8]) -> Option<BlockHandle> {
        if src.len() != BLOCK_HANDLE_LEN {
            return None;
        }
        Some(BlockHandle {
            offset: get_u64(src)?,
            size: get_u64(src.get(8..)?)?,
        })
    }

    /// Offset just past the block's trailer, or `None` on overflow.
    pub fn end_with_trailer(&self) -> Option<u64> {
        self.offset
            .checked_add(self.size)?
            .checked_add(BLOCK_TRAILER_LEN as u64)
    }
}

/// The fixed-size record at the end of every table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// Handle of the meta-index block.
    pub metaindex: BlockHandle,
    /// Handle of the index block.
    pub index: BlockHandle,
}

impl Footer {
    /// The 48-byte encoding (version [`FORMAT_VERSION`], zero padding, [`TABLE_MAGIC`]).
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(FOOTER_LEN);
        self.metaindex.encode_to(&mut v);
        self.index.encode_to(&mut v);
        put_u32(&mut v, FORMAT_VERSION);
        put_u32(&mut v, 0);
        put_u64(&mut v, TABLE_MAGIC);
        debug_assert_eq!(v.len(), FOOTER_LEN);
        v
    }

    /// Decodes the footer of `file`, whose last 48 bytes are `src` and which is `file_size`
    /// bytes long. Checks the magic, the version, and that both handles lie before the footer.
    pub fn decode(src: &[u8], file: &Path, file_size: u64) -> Result<Footer> {
        let start = file_size.saturating_sub(FOOTER_LEN as u64);
        if src.len() != FOOTER_LEN || file_size < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                file,
                0,
                format!("file of {file_size} bytes is too short to hold a table footer"),
            ));
        }
        let field = |at: usize| src.get(at..).unwrap_or_default();
        let magic = get_u64(field(40)).unwrap_or_default();
        if magic != TABLE_MAGIC {
            return Err(Error::corruption(
                file,
                start + 40,
                format!("bad table magic number {magic:#018x} (not a ScreeDB table?)"),
            ));
        }
        let version = get_u32(field(32)).unwrap_or_default();
        if version != FORMAT_VERSION {
            return Err(Error::corruption(
                file,
                start + 32,
                format!("unknown table format version {version}"),
            ));
        }
        let handle = |at: usize, what: &str| -> Result<BlockHandle> {
            let h = src
                .get(at..at + BLOCK_HANDLE_LEN)
                .and_then(BlockHandle::decode)
                .unwrap_or_default();
            match h.end_with_trailer() {
                Some(end) if end <= start => Ok(h),
                _ => Err(Error::corruption(
                    file,
                    start + at as u64,
                    format!(
                        "{what} handle (offset {}, size {}) lies outside the {start} bytes before the footer",
                        h.offset, h.size
                    ),
                )),
            }
        };
        Ok(Footer {
            metaindex: handle(0, "meta-index")?,
            index: handle(16, "index")?,
        })
    }
}

/// Builds the trailer for `block` stored with compression `kind`.
pub fn block_trailer(block: &[u8], kind: CompressionType) -> [u8; BLOCK_TRAILER_LEN] {
    let type_byte = kind as u8;
    let crc = checksum::crc32c_extend(checksum::crc32c(block), &[type_byte]);
    let mut t = [0u8; BLOCK_TRAILER_LEN];
    t[0] = type_byte;
    t[1..].copy_from_slice(&checksum::mask(crc).to_le_bytes());
    t
}

/// Reads the block at `handle` with its trailer, checks its CRC if `verify`, and returns the
/// uncompressed contents in a buffer of their own. Every failure is a Corruption naming `path`
/// and the block's offset (or an I/O error).
pub fn read_block(
    file: &dyn RandomAccessFile,
    path: &Path,
    handle: BlockHandle,
    verify: bool,
) -> Result<Vec<u8>> {
    let size = block_size(file, path, handle)?;
    let mut buf = file.read_vec(handle.offset, size + BLOCK_TRAILER_LEN)?;
    match check_trailer(&buf, size, path, handle.offset, verify)? {
        CompressionType::None => {
            buf.truncate(size);
            Ok(buf)
        }
        CompressionType::Lz4 => decompress_lz4(&buf[..size], path, handle.offset),
    }
}

/// The block at `handle` as a view of `file`'s bytes, if it is stored uncompressed (`None` if
/// not: read it with [`read_block`]). Meant for a mapped file ([`RandomAccessFile::is_mapped`]),
/// whose view costs no copy. Checks the CRC if `verify`, as [`read_block`] does.
pub fn read_block_in_place(
    file: &dyn RandomAccessFile,
    path: &Path,
    handle: BlockHandle,
    verify: bool,
) -> Result<Option<Bytes>> {
    let size = block_size(file, path, handle)?;
    let raw = file.read_bytes(handle.offset, size + BLOCK_TRAILER_LEN)?;
    if raw.get(size) != Some(&(CompressionType::None as u8)) {
        return Ok(None);
    }
    check_trailer(&raw, size, path, handle.offset, verify)?;
    Ok(Some(raw.slice(..size)))
}

/// The size of the block at `handle`, which with its trailer must lie inside `file`.
fn block_size(file: &dyn RandomAccessFile, path: &Path, handle: BlockHandle) -> Result<usize> {
    let off = handle.offset;
    let in_file = handle.end_with_trailer().is_some_and(|e| e <= file.size());
    usize::try_from(handle.size)
        .ok()
        .filter(|_| in_file)
        .ok_or_else(|| {
            Error::corruption(
                path,
                off,
                format!(
                    "block of {} bytes at offset {off} runs past the end of the {}-byte file",
                    handle.size,
                    file.size()
                ),
            )
        })
}

/// Checks the trailer after the `size` bytes of block `raw` (read at `off`): its CRC if
/// `verify`, and its compression type, which it returns.
fn check_trailer(
    raw: &[u8],
    size: usize,
    path: &Path,
    off: u64,
    verify: bool,
) -> Result<CompressionType> {
    let (type_byte, stored) = match raw.get(size..) {
        Some([t, c @ ..]) => (*t, get_u32(c).unwrap_or_default()),
        _ => return Err(Error::corruption(path, off, "short block read")),
    };
    if verify {
        let crc = checksum::crc32c_extend(checksum::crc32c(&raw[..size]), &[type_byte]);
        if checksum::unmask(stored) != crc {
            return Err(Error::corruption(
                path,
                off,
                format!("block checksum mismatch (block of {size} bytes)"),
            ));
        }
    }
    CompressionType::from_u8(type_byte).ok_or_else(|| {
        Error::corruption(
            path,
            off,
            format!("unknown block compression type {type_byte}"),
        )
    })
}

fn decompress_lz4(data: &[u8], path: &Path, off: u64) -> Result<Vec<u8>> {
    compression::decompress_lz4(data)
        .ok_or_else(|| Error::corruption(path, off, "LZ4 block does not decompress"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn handle_round_trips(offset in any::<u64>(), size in any::<u64>()) {
            let h = BlockHandle { offset, size };
            let enc = h.encode();
            prop_assert_eq!(enc.len(), BLOCK_HANDLE_LEN);
            prop_assert_eq!(BlockHandle::decode(&enc), Some(h));
            prop_assert_eq!(BlockHandle::decode(&enc[..15]), None);
        }

        #[test]
        fn footer_round_trips(a in 0u64..1000, b in 0u64..1000, c in 0u64..1000, d in 0u64..1000) {
            let f = Footer {
                metaindex: BlockHandle { offset: a, size: b },
                index: BlockHandle { offset: c, size: d },
            };
            let enc = f.encode();
            let size = 5000 + FOOTER_LEN as u64;
            prop_assert_eq!(Footer::decode(&enc, Path::new("t.sst"), size).unwrap(), f);
        }

        #[test]
        fn footer_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..60), size in any::<u64>()) {
            let _ = Footer::decode(&bytes, Path::new("t.sst"), size);
        }
    }

    fn sample() -> Vec<u8> {
        Footer {
            metaindex: BlockHandle {
                offset: 100,
                size: 20,
            },
            index: BlockHandle {
                offset: 125,
                size: 30,
            },
        }
        .encode()
    }

    fn expect_corruption(enc: &[u8], size: u64, offset: u64, needle: &str) {
        let err = Footer::decode(enc, Path::new("x.sst"), size).unwrap_err();
        match &err {
            Error::Corruption {
                file,
                offset: o,
                reason,
            } => {
                assert_eq!(file, Path::new("x.sst"));
                assert_eq!(*o, offset, "{err}");
                assert!(reason.contains(needle), "{err}");
            }
            other => panic!("not corruption: {other}"),
        }
    }

    #[test]
    fn footer_rejects_bad_magic_version_and_handles() {
        let size = 160 + FOOTER_LEN as u64;
        let mut bad = sample();
        bad[47] ^= 1;
        expect_corruption(&bad, size, 160 + 40, "magic");
        let mut bad = sample();
        bad[32] = 2;
        expect_corruption(&bad, size, 160 + 32, "version");
        // Index block ends at 125 + 30 + 5 = 160: fits exactly, one byte less does not.
        expect_corruption(&sample(), size - 1, 159 + 16, "index handle");
        let mut bad = sample();
        bad[15] = 0xff; // metaindex size huge
        expect_corruption(&bad, size, 160, "meta-index handle");
        expect_corruption(&sample()[..40], size, 0, "too short");
        expect_corruption(&sample(), 10, 0, "too short");
        // Padding is ignored.
        let mut pad = sample();
        pad[36] = 0xaa;
        assert!(Footer::decode(&pad, Path::new("x.sst"), size).is_ok());
    }

    #[test]
    fn magic_is_documented_digest_prefix() {
        // SHA-1("screedb.table") = 67969cf70459a2bc211bfa07bb9a0103f1c0ce02
        assert_eq!(
            TABLE_MAGIC.to_be_bytes(),
            [0x67, 0x96, 0x9c, 0xf7, 0x04, 0x59, 0xa2, 0xbc]
        );
    }
}
