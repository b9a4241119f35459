//! Block compression.
//!
//! ```text
//! type 0 (none): the block bytes as built
//! type 1 (lz4):  uncompressed_len: u32 LE | LZ4 block-format bytes   (lz4_flex "size prepended")
//! ```
//!
//! The type byte is stored in each block's trailer. A block whose compressed form is not at least
//! 1/8 smaller than the original is stored uncompressed. The type numbers are on disk: never
//! change or reuse them.

/// How a block is compressed on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CompressionType {
    /// Stored as built.
    None = 0,
    /// LZ4 block format with the uncompressed length prepended (u32 LE).
    Lz4 = 1,
}

impl CompressionType {
    /// Decodes a type byte.
    pub fn from_u8(b: u8) -> Option<CompressionType> {
        match b {
            0 => Some(CompressionType::None),
            1 => Some(CompressionType::Lz4),
            _ => None,
        }
    }
}

/// LZ4 never expands data by more than this factor (a match encodes at most ~255 bytes per input
/// byte); a larger claimed length is corruption, not a reason to allocate.
const LZ4_MAX_RATIO: usize = 255;

/// True when `packed_len` compressed bytes are worth storing instead of `raw_len` raw ones: they
/// save at least an eighth (the rule for blocks, values and WAL records alike).
pub(crate) fn saves_an_eighth(packed_len: usize, raw_len: usize) -> bool {
    packed_len <= raw_len - raw_len / 8 && packed_len < raw_len
}

/// True when an LZ4 block of `packed_len` bytes can decode to `raw_len` bytes at all; a claimed
/// length beyond it is corruption, refused before anything is allocated for it.
pub(crate) fn lz4_length_plausible(raw_len: usize, packed_len: usize) -> bool {
    raw_len <= packed_len.saturating_mul(LZ4_MAX_RATIO).saturating_add(16)
}

/// Compresses `raw` as `wanted` asks. Returns the type actually used and, for a compressed block,
/// its bytes. `None` as bytes means "store `raw` as is".
pub fn compress(wanted: CompressionType, raw: &[u8]) -> (CompressionType, Option<Vec<u8>>) {
    match wanted {
        CompressionType::None => (CompressionType::None, None),
        CompressionType::Lz4 => {
            if u32::try_from(raw.len()).is_err() {
                return (CompressionType::None, None);
            }
            let out = lz4_flex::block::compress_prepend_size(raw);
            if saves_an_eighth(out.len(), raw.len()) {
                (CompressionType::Lz4, Some(out))
            } else {
                (CompressionType::None, None)
            }
        }
    }
}

/// Decompresses a type-1 block; `None` if the bytes are not valid LZ4 of the claimed length.
pub fn decompress_lz4(src: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    decompress_lz4_into(src, &mut out).map(|()| out)
}

/// [`decompress_lz4`] over `out`, whose allocation is reused (an iterator decompressing one
/// value after another); `None` (and `out` unspecified) if the bytes are not valid LZ4 of the
/// claimed length.
pub fn decompress_lz4_into(src: &[u8], out: &mut Vec<u8>) -> Option<()> {
    let (len, body) = src.split_first_chunk::<4>()?;
    let len = usize::try_from(u32::from_le_bytes(*len)).ok()?;
    if !lz4_length_plausible(len, body.len()) {
        return None;
    }
    // Bytes left from the last use are overwritten: a decode must fill all `len` of them.
    if out.len() < len {
        out.resize(len, 0);
    } else {
        out.truncate(len);
    }
    let n = lz4_flex::block::decompress_into(body, out).ok()?;
    (n == len).then_some(())
}

/// `len` bytes LZ4 cannot shrink (xorshift64 output from `seed`), for tests that need a
/// block or value stored raw.
#[cfg(test)]
pub(crate) fn incompressible(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn compressible_data_is_compressed_and_round_trips() {
        let raw: Vec<u8> = (0..4096u32).map(|i| (i % 7) as u8).collect();
        let (kind, out) = compress(CompressionType::Lz4, &raw);
        assert_eq!(kind, CompressionType::Lz4);
        let out = out.unwrap();
        assert!(out.len() < raw.len() / 4);
        assert_eq!(decompress_lz4(&out).unwrap(), raw);
    }

    #[test]
    fn incompressible_data_is_stored_raw() {
        let raw = incompressible(1, 4096);
        assert_eq!(
            compress(CompressionType::Lz4, &raw),
            (CompressionType::None, None)
        );
        assert_eq!(
            compress(CompressionType::None, &[0; 100]),
            (CompressionType::None, None)
        );
        assert_eq!(
            compress(CompressionType::Lz4, &[]),
            (CompressionType::None, None)
        );
    }

    #[test]
    fn absurd_lengths_are_rejected_without_allocating() {
        let mut bad = u32::MAX.to_le_bytes().to_vec();
        bad.extend_from_slice(&[0x10, 0x61]);
        assert_eq!(decompress_lz4(&bad), None);
        assert_eq!(decompress_lz4(&[1, 2]), None);
    }

    #[test]
    fn type_bytes_are_frozen() {
        assert_eq!(CompressionType::None as u8, 0);
        assert_eq!(CompressionType::Lz4 as u8, 1);
        assert_eq!(CompressionType::from_u8(1), Some(CompressionType::Lz4));
        assert_eq!(CompressionType::from_u8(2), None);
    }

    proptest! {
        #[test]
        fn lz4_round_trips(raw in proptest::collection::vec(0u8..4, 0..3000)) {
            if let (CompressionType::Lz4, Some(out)) = compress(CompressionType::Lz4, &raw) {
                prop_assert_eq!(decompress_lz4(&out).unwrap(), raw);
            }
        }

        #[test]
        fn decompressing_over_a_used_buffer_gives_the_same_bytes(
            a in proptest::collection::vec(0u8..3, 0..2000),
            b in proptest::collection::vec(0u8..3, 0..2000),
        ) {
            let mut out = Vec::new();
            for raw in [&a, &b, &a] {
                let packed = lz4_flex::block::compress_prepend_size(raw);
                prop_assert_eq!(decompress_lz4_into(&packed, &mut out), Some(()));
                prop_assert_eq!(&out, raw);
            }
        }

        #[test]
        fn decompress_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decompress_lz4(&bytes);
        }
    }
}
