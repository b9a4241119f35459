//! CRC32C (Castagnoli) checksums, masked as LevelDB masks them.
//!
//! A CRC stored next to the data it covers is "masked" (rotated and offset) so that computing the
//! CRC of a string that itself contains embedded CRCs does not produce degenerate results.
//! The mask constant `0xa282ead8` is LevelDB's (util/crc32c.h), kept so the log format matches.

const MASK_DELTA: u32 = 0xa282_ead8;

/// CRC32C of `data`.
pub fn crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// CRC32C of the concatenation of `init`'s input and `data`, continuing from `init`.
pub fn crc32c_extend(init: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(init, data)
}

/// Masks a CRC for storage.
pub fn mask(crc: u32) -> u32 {
    crc.rotate_right(15).wrapping_add(MASK_DELTA)
}

/// Inverse of [`mask`].
pub fn unmask(masked: u32) -> u32 {
    masked.wrapping_sub(MASK_DELTA).rotate_left(15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        // RFC 3720 test vectors, as in LevelDB's crc32c_test.cc.
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(crc32c(&[0xffu8; 32]), 0x62a8_ab43);
        assert_eq!(
            crc32c(b"hello world"),
            crc32c_extend(crc32c(b"hello "), b"world")
        );
    }

    #[test]
    fn mask_round_trips_and_changes_value() {
        let crc = crc32c(b"foo");
        assert_ne!(mask(crc), crc);
        assert_ne!(mask(mask(crc)), crc);
        assert_eq!(unmask(mask(crc)), crc);
        assert_eq!(unmask(unmask(mask(mask(crc)))), crc);
    }
}
