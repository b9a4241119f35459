//! Little-endian fixed-width and LEB128 varint encoding helpers.
//!
//! Decoders never panic: they return `None` when the input is too short or malformed, and the
//! caller turns that into a [`crate::Error::Corruption`] naming the file and offset it knows.

/// Appends `v` as 4 little-endian bytes.
pub fn put_u32(dst: &mut Vec<u8>, v: u32) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Appends `v` as 8 little-endian bytes.
pub fn put_u64(dst: &mut Vec<u8>, v: u64) {
    dst.extend_from_slice(&v.to_le_bytes());
}

/// Reads 4 little-endian bytes at the start of `src`.
pub fn get_u32(src: &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(src.get(..4)?.try_into().ok()?))
}

/// Reads 8 little-endian bytes at the start of `src`.
pub fn get_u64(src: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(src.get(..8)?.try_into().ok()?))
}

/// Appends `v` as a LEB128 varint (1 to 5 bytes).
pub fn put_varint32(dst: &mut Vec<u8>, v: u32) {
    put_varint64(dst, u64::from(v));
}

/// Appends `v` as a LEB128 varint (1 to 10 bytes).
pub fn put_varint64(dst: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        dst.push((v as u8) | 0x80);
        v >>= 7;
    }
    dst.push(v as u8);
}

/// Decodes a varint32 from the start of `src`; returns the value and the bytes consumed.
/// Inlined with [`get_varint64`]'s one-byte shortcut: a block entry's header is three of these,
/// most of them one byte.
#[inline]
pub fn get_varint32(src: &[u8]) -> Option<(u32, usize)> {
    let (v, n) = get_varint64(src)?;
    if n > 5 {
        return None;
    }
    Some((u32::try_from(v).ok()?, n))
}

/// Decodes a varint64 from the start of `src`; returns the value and the bytes consumed.
/// The memtable decodes an entry's key length at every comparison of a search: a one-byte
/// varint is decided before the loop.
#[inline]
pub fn get_varint64(src: &[u8]) -> Option<(u64, usize)> {
    match src.first() {
        Some(&b) if b < 0x80 => Some((u64::from(b), 1)),
        _ => get_varint64_long(src),
    }
}

/// [`get_varint64`] past its first byte.
fn get_varint64_long(src: &[u8]) -> Option<(u64, usize)> {
    let mut result = 0u64;
    for (i, &byte) in src.iter().enumerate().take(10) {
        let shift = 7 * i as u32;
        let bits = u64::from(byte & 0x7f);
        if shift == 63 && bits > 1 {
            return None;
        }
        result |= bits << shift;
        if byte & 0x80 == 0 {
            return Some((result, i + 1));
        }
    }
    None
}

/// Appends `bytes` preceded by its length as a varint32.
pub fn put_length_prefixed(dst: &mut Vec<u8>, bytes: &[u8]) {
    put_varint32(dst, bytes.len() as u32);
    dst.extend_from_slice(bytes);
}

/// Decodes a varint32-length-prefixed slice; returns it and the bytes consumed.
pub fn get_length_prefixed(src: &[u8]) -> Option<(&[u8], usize)> {
    let (len, n) = get_varint32(src)?;
    let end = n.checked_add(len as usize)?;
    Some((src.get(n..end)?, end))
}

/// Number of bytes `put_varint64(v)` writes.
pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn varint64_round_trips(v in any::<u64>()) {
            let mut buf = Vec::new();
            put_varint64(&mut buf, v);
            prop_assert_eq!(buf.len(), varint_len(v));
            prop_assert_eq!(get_varint64(&buf), Some((v, buf.len())));
        }

        #[test]
        fn varint32_round_trips(v in any::<u32>()) {
            let mut buf = Vec::new();
            put_varint32(&mut buf, v);
            prop_assert_eq!(get_varint32(&buf), Some((v, buf.len())));
        }

        #[test]
        fn length_prefixed_round_trips(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut buf = Vec::new();
            put_length_prefixed(&mut buf, &bytes);
            prop_assert_eq!(get_length_prefixed(&buf), Some((&bytes[..], buf.len())));
        }

        #[test]
        fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..16)) {
            let _ = get_varint64(&bytes);
            let _ = get_varint32(&bytes);
            let _ = get_length_prefixed(&bytes);
            let _ = get_u32(&bytes);
            let _ = get_u64(&bytes);
        }
    }

    #[test]
    fn truncated_and_overlong_varints_are_rejected() {
        assert_eq!(get_varint64(&[0x80]), None);
        assert_eq!(get_varint64(&[0xff; 11]), None);
        assert_eq!(get_varint32(&[0xff, 0xff, 0xff, 0xff, 0x7f]), None); // > u32::MAX
        assert_eq!(get_u32(&[1, 2, 3]), None);
    }
}
