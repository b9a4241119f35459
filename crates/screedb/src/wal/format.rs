//! Byte layout of the log (write-ahead log and MANIFEST); LevelDB's `doc/log_format.md`, plus
//! one family of fragment types for compressed records.
//!
//! ```text
//! file     := block*                       every block is BLOCK_SIZE (32768) bytes, except that
//!                                          the last one may be shorter
//! block    := fragment* trailer?
//! fragment := checksum : u32 LE            mask(crc32c(type ++ payload)), see crate::checksum
//!             length   : u16 LE            payload length in bytes
//!             type     : u8                1 FULL, 2 FIRST, 3 MIDDLE, 4 LAST (0 is reserved);
//!                                          5..=8 the same four for a compressed record
//!             payload  : [u8; length]
//! trailer  := [0u8; 1..=6]                 when fewer than HEADER_SIZE bytes are left in a block
//! ```
//!
//! A fragment never spans a block boundary. A record that fits in the rest of the current block
//! is one FULL fragment (possibly of length 0); otherwise it is a FIRST fragment, any number of
//! MIDDLE fragments and a LAST fragment, each filling its block as far as it can.
//!
//! A *compressed* record (WAL only; the MANIFEST never writes one) is framed the same way with
//! types 5 to 8 (type + 4), every fragment of the record in that family; its reassembled bytes
//! are `uncompressed_len: u32 LE | LZ4 block` (`crate::table::compression`, type 1). LevelDB's
//! format stops at type 4, so a log holding compressed records is ScreeDB's own. The numbers on
//! this page are written to disk and must never change.

use std::fmt;
use std::ops::Range;

use crate::checksum::{crc32c, crc32c_extend, mask};
use crate::coding::get_u32;

/// Size of a log block. Fragments never cross a multiple of this offset.
pub const BLOCK_SIZE: usize = 32 * 1024;

/// Size of a fragment header: checksum (4) + length (2) + type (1).
pub const HEADER_SIZE: usize = 7;

/// The type byte of a fragment, without its compressed family ([`COMPRESSED_TYPE_OFFSET`]).
/// Value 0 (LevelDB's `kZeroType`) is reserved for preallocated, never-written bytes and is not a
/// variant: the reader treats it as damage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FragmentType {
    /// The whole record.
    Full = 1,
    /// The first fragment of a record that continues in the next block.
    First = 2,
    /// An inner fragment of a record.
    Middle = 3,
    /// The final fragment of a record.
    Last = 4,
}

/// Added to a type byte for a fragment of a compressed record (5 FULL ... 8 LAST).
pub(crate) const COMPRESSED_TYPE_OFFSET: u8 = 4;

impl FragmentType {
    /// Parses a type byte into the type and whether its record is compressed; `None` for 0 and
    /// for values above 8.
    pub(crate) fn from_byte(b: u8) -> Option<(Self, bool)> {
        let compressed = b > COMPRESSED_TYPE_OFFSET;
        let kind = match b - if compressed {
            COMPRESSED_TYPE_OFFSET
        } else {
            0
        } {
            1 => Self::Full,
            2 => Self::First,
            3 => Self::Middle,
            4 => Self::Last,
            _ => return None,
        };
        Some((kind, compressed))
    }

    /// The on-disk byte of this type, in the compressed family if `compressed`.
    pub(crate) fn as_byte(self, compressed: bool) -> u8 {
        self as u8
            + if compressed {
                COMPRESSED_TYPE_OFFSET
            } else {
                0
            }
    }

    /// Upper-case name, as the format documentation spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Full => "FULL",
            Self::First => "FIRST",
            Self::Middle => "MIDDLE",
            Self::Last => "LAST",
        }
    }
}

/// The masked checksum stored in a fragment header: CRC32C over the type byte, then the payload.
pub(crate) fn fragment_checksum(kind: u8, payload: &[u8]) -> u32 {
    mask(crc32c_extend(crc32c(&[kind]), payload))
}

/// Encodes the header of a fragment carrying `payload` (at most `BLOCK_SIZE - HEADER_SIZE` bytes)
/// of a record that is `compressed` or not.
pub(crate) fn encode_header(
    kind: FragmentType,
    compressed: bool,
    payload: &[u8],
) -> [u8; HEADER_SIZE] {
    debug_assert!(payload.len() <= BLOCK_SIZE - HEADER_SIZE);
    let byte = kind.as_byte(compressed);
    let crc = fragment_checksum(byte, payload);
    // The writer never builds a fragment longer than a block, so the length fits in 16 bits.
    let len = u16::try_from(payload.len()).unwrap_or(u16::MAX);
    let mut h = [0u8; HEADER_SIZE];
    h[..4].copy_from_slice(&crc.to_le_bytes());
    h[4..6].copy_from_slice(&len.to_le_bytes());
    h[6] = byte;
    h
}

/// A valid fragment, as [`decode_fragment`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fragment {
    /// Its place in the record.
    pub kind: FragmentType,
    /// True for types 5 to 8: the record is compressed.
    pub compressed: bool,
    /// The payload's range inside the block.
    pub range: Range<usize>,
}

/// Why the bytes at some offset are not a valid fragment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FragmentError {
    /// The file ends before the 7-byte header does.
    TruncatedHeader {
        /// Header bytes present.
        present: usize,
    },
    /// The length field runs past the end of the block.
    PastBlockEnd {
        /// Payload length from the header.
        length: usize,
        /// Payload bytes the block has room for.
        room: usize,
    },
    /// The length field runs past the end of the file.
    PastFileEnd {
        /// Payload length from the header.
        length: usize,
        /// Payload bytes present before the end of the file.
        present: usize,
    },
    /// Type byte 0: preallocated or zero-filled bytes.
    ZeroType,
    /// A type byte above 8.
    UnknownType(u8),
    /// The stored checksum does not match the type and payload.
    ChecksumMismatch {
        /// Masked checksum from the header.
        stored: u32,
        /// Masked checksum of the bytes present.
        computed: u32,
    },
}

impl fmt::Display for FragmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::TruncatedHeader { present } => write!(
                f,
                "the file ends inside a fragment header ({present} of {HEADER_SIZE} bytes present)"
            ),
            Self::PastBlockEnd { length, room } => write!(
                f,
                "fragment length {length} runs past the end of its block (room for {room} bytes)"
            ),
            Self::PastFileEnd { length, present } => write!(
                f,
                "the file ends inside a fragment ({present} of {length} payload bytes present)"
            ),
            Self::ZeroType => write!(f, "zero-filled bytes where a fragment header should be"),
            Self::UnknownType(t) => write!(f, "unknown fragment type {t}"),
            Self::ChecksumMismatch { stored, computed } => write!(
                f,
                "fragment checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
            ),
        }
    }
}

/// Decodes the fragment starting at `pos` of `block`.
///
/// `block` holds the bytes of one block that exist in the file (fewer than `BLOCK_SIZE` for the
/// last block), so `pos` is also the offset inside the block. REQUIRES: `pos + HEADER_SIZE <=
/// BLOCK_SIZE` (the caller handles the trailer region) and `pos < block.len()`.
/// Never panics.
pub(crate) fn decode_fragment(block: &[u8], pos: usize) -> Result<Fragment, FragmentError> {
    let Some(header) = block.get(pos..pos + HEADER_SIZE) else {
        return Err(FragmentError::TruncatedHeader {
            present: block.len().saturating_sub(pos),
        });
    };
    let stored = get_u32(header).unwrap_or(0);
    let length = usize::from(u16::from_le_bytes([header[4], header[5]]));
    let kind_byte = header[6];
    let start = pos + HEADER_SIZE;
    let room = BLOCK_SIZE.saturating_sub(start);
    if length > room {
        return Err(FragmentError::PastBlockEnd { length, room });
    }
    let Some(payload) = block.get(start..start + length) else {
        return Err(FragmentError::PastFileEnd {
            length,
            present: block.len().saturating_sub(start),
        });
    };
    let Some((kind, compressed)) = FragmentType::from_byte(kind_byte) else {
        return Err(if kind_byte == 0 {
            FragmentError::ZeroType
        } else {
            FragmentError::UnknownType(kind_byte)
        });
    };
    let computed = fragment_checksum(kind_byte, payload);
    if computed != stored {
        return Err(FragmentError::ChecksumMismatch { stored, computed });
    }
    Ok(Fragment {
        kind,
        compressed,
        range: start..start + length,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fragment(kind: FragmentType, payload: &[u8]) -> Vec<u8> {
        let mut v = encode_header(kind, false, payload).to_vec();
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn header_layout_is_checksum_length_type() {
        let h = encode_header(FragmentType::First, false, b"abc");
        assert_eq!(&h[..4], &fragment_checksum(2, b"abc").to_le_bytes());
        assert_eq!(&h[4..6], &[3, 0]);
        assert_eq!(h[6], 2);
        // The checksum is masked: it differs from the raw CRC of type ++ payload.
        assert_ne!(fragment_checksum(2, b"abc"), crc32c(b"\x02abc"));
        assert_eq!(
            crate::checksum::unmask(fragment_checksum(2, b"abc")),
            crc32c(b"\x02abc")
        );
    }

    #[test]
    fn decodes_a_valid_fragment_and_an_empty_one() {
        let mut block = fragment(FragmentType::Full, b"hello");
        block.extend(fragment(FragmentType::Full, b""));
        let f = decode_fragment(&block, 0).unwrap();
        assert_eq!((f.kind, f.compressed), (FragmentType::Full, false));
        assert_eq!(&block[f.range], b"hello");
        let f = decode_fragment(&block, 12).unwrap();
        assert_eq!(f.kind, FragmentType::Full);
        assert!(f.range.is_empty());
    }

    #[test]
    fn a_compressed_fragment_is_its_type_plus_four_under_the_checksum() {
        let mut block = encode_header(FragmentType::Middle, true, b"lz4").to_vec();
        block.extend_from_slice(b"lz4");
        assert_eq!(block[6], 7);
        let f = decode_fragment(&block, 0).unwrap();
        assert_eq!((f.kind, f.compressed), (FragmentType::Middle, true));
        // The type byte is under the checksum: turning it into its plain twin is damage.
        block[6] = 3;
        assert!(matches!(
            decode_fragment(&block, 0),
            Err(FragmentError::ChecksumMismatch { .. })
        ));
    }

    #[test]
    fn reports_each_kind_of_damage() {
        let good = fragment(FragmentType::Last, b"payload");
        assert_eq!(
            decode_fragment(&good[..5], 0),
            Err(FragmentError::TruncatedHeader { present: 5 })
        );
        assert_eq!(
            decode_fragment(&good[..10], 0),
            Err(FragmentError::PastFileEnd {
                length: 7,
                present: 3
            })
        );
        let mut bad = good.clone();
        bad[6] = 9;
        assert_eq!(decode_fragment(&bad, 0), Err(FragmentError::UnknownType(9)));
        bad[6] = 255;
        assert_eq!(
            decode_fragment(&bad, 0),
            Err(FragmentError::UnknownType(255))
        );
        assert_eq!(decode_fragment(&[0u8; 7], 0), Err(FragmentError::ZeroType));
        let mut bad = good.clone();
        bad[9] ^= 1;
        assert!(matches!(
            decode_fragment(&bad, 0),
            Err(FragmentError::ChecksumMismatch { .. })
        ));
        // A length that would cross the block boundary.
        let mut block = vec![0u8; BLOCK_SIZE];
        let at = BLOCK_SIZE - 10;
        block[at..at + 10].copy_from_slice(&good[..10]);
        assert_eq!(
            decode_fragment(&block, at),
            Err(FragmentError::PastBlockEnd { length: 7, room: 3 })
        );
        for e in [
            FragmentError::ZeroType,
            FragmentError::UnknownType(7),
            FragmentError::TruncatedHeader { present: 1 },
        ] {
            assert!(!e.to_string().is_empty());
        }
    }

    #[test]
    fn type_bytes_are_frozen() {
        for (b, name) in [(1, "FULL"), (2, "FIRST"), (3, "MIDDLE"), (4, "LAST")] {
            let (kind, compressed) = FragmentType::from_byte(b).unwrap();
            assert!(!compressed);
            assert_eq!(kind.as_byte(false), b);
            assert_eq!(kind.as_byte(true), b + 4);
            assert_eq!(FragmentType::from_byte(b + 4), Some((kind, true)));
            assert_eq!(kind.name(), name);
        }
        assert_eq!(FragmentType::from_byte(0), None);
        assert_eq!(FragmentType::from_byte(9), None);
    }
}
