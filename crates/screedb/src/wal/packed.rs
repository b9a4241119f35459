//! The body of a compressed record (fragment types 5 to 8): a plain prefix, then pieces, each
//! LZ4-compressed or stored as it is.
//!
//! ```text
//! compressed record := prefix_len: varint32 | prefix | piece*
//! piece             := raw_len: varint32 | packed_len: varint32 | bytes
//!                      packed_len = 0: `raw_len` bytes stored as they are
//!                      packed_len > 0: an LZ4 block of `packed_len` bytes that decodes to
//!                                      exactly `raw_len` bytes (raw_len <= 255 * packed_len + 16)
//! record            := prefix ++ the pieces' raw bytes, in order
//! ```
//!
//! Pieces let each writer compress its own batch in its own thread before it joins the write
//! queue ([`Packed::new`]); the leader then frames the group's batches, compressed or not,
//! behind the group's header (the prefix, which holds the sequence number only the leader
//! knows), and compresses nothing itself.

use crate::coding::{get_varint32, put_varint32};
use crate::table::compression::{lz4_length_plausible, saves_an_eighth};

/// Bytes LZ4 shrank by at least an eighth, with their original length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    raw_len: usize,
    bytes: Vec<u8>,
}

impl Packed {
    /// `raw` compressed, if that saves at least an eighth of it (and it is below 4 GiB).
    pub fn new(raw: &[u8]) -> Option<Packed> {
        u32::try_from(raw.len()).ok()?;
        let bytes = lz4_flex::block::compress(raw);
        saves_an_eighth(bytes.len(), raw.len()).then_some(Packed {
            raw_len: raw.len(),
            bytes,
        })
    }
}

/// One piece of a compressed record.
#[derive(Debug, Clone, Copy)]
pub enum Piece<'a> {
    /// Stored as it is.
    Raw(&'a [u8]),
    /// Stored compressed.
    Packed(&'a Packed),
}

/// Appends the compressed record of `prefix` and `pieces` to `out`. REQUIRES: `prefix` and
/// every raw piece are below 4 GiB.
pub(super) fn encode(prefix: &[u8], pieces: &[Piece<'_>], out: &mut Vec<u8>) {
    let len32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    put_varint32(out, len32(prefix.len()));
    out.extend_from_slice(prefix);
    for piece in pieces {
        match piece {
            Piece::Raw(raw) => {
                put_varint32(out, len32(raw.len()));
                put_varint32(out, 0);
                out.extend_from_slice(raw);
            }
            Piece::Packed(p) => {
                put_varint32(out, len32(p.raw_len));
                put_varint32(out, len32(p.bytes.len()));
                out.extend_from_slice(&p.bytes);
            }
        }
    }
}

/// The record a compressed record's bytes stand for; `None` if they are not a valid one
/// (a length past the end, or an LZ4 block that does not decode to its claimed length).
pub(super) fn decode(mut src: &[u8]) -> Option<Vec<u8>> {
    let prefix_len = varint(&mut src)?;
    let mut out = take(&mut src, prefix_len)?.to_vec();
    while !src.is_empty() {
        let raw_len = varint(&mut src)?;
        let packed_len = varint(&mut src)?;
        if packed_len == 0 {
            out.extend_from_slice(take(&mut src, raw_len)?);
            continue;
        }
        if !lz4_length_plausible(raw_len, packed_len) {
            return None;
        }
        let packed = take(&mut src, packed_len)?;
        let start = out.len();
        out.resize(start + raw_len, 0);
        let n = lz4_flex::block::decompress_into(packed, &mut out[start..]).ok()?;
        if n != raw_len {
            return None;
        }
    }
    Some(out)
}

/// The first `n` bytes of `src`, which moves past them.
fn take<'a>(src: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    let (head, rest) = src.split_at_checked(n)?;
    *src = rest;
    Some(head)
}

/// The varint32 at the start of `src`, which moves past it.
fn varint(src: &mut &[u8]) -> Option<usize> {
    let (v, used) = get_varint32(src)?;
    *src = src.get(used..)?;
    usize::try_from(v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::compression::incompressible;

    fn runs(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i / 64) as u8).collect()
    }

    #[test]
    fn prefix_and_pieces_of_both_kinds_round_trip() {
        let (a, b) = (runs(3000), incompressible(1, 500));
        let pa = Packed::new(&a).unwrap();
        assert!(
            Packed::new(&b).is_none(),
            "random bytes are not worth packing"
        );
        let mut out = Vec::new();
        encode(
            b"header",
            &[Piece::Packed(&pa), Piece::Raw(&b), Piece::Raw(b"")],
            &mut out,
        );
        assert!(out.len() < 1000, "{}", out.len());
        assert_eq!(decode(&out).unwrap(), [&b"header"[..], &a, &b].concat());
        let mut empty = Vec::new();
        encode(b"", &[], &mut empty);
        assert_eq!(decode(&empty).unwrap(), b"");
    }

    #[test]
    fn damaged_bodies_are_refused_never_panic() {
        let pa = Packed::new(&runs(2000)).unwrap();
        let mut good = Vec::new();
        encode(b"hdr", &[Piece::Packed(&pa)], &mut good);
        for cut in 0..good.len() {
            let _ = decode(&good[..cut]);
        }
        for at in 0..good.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = good.clone();
                bad[at] ^= bit;
                // The log's checksums catch the flip; here it only must not panic.
                let _ = decode(&bad);
            }
        }
        // A claimed length no LZ4 block of that size can reach.
        let mut bomb = Vec::new();
        put_varint32(&mut bomb, 0);
        put_varint32(&mut bomb, u32::MAX);
        put_varint32(&mut bomb, 2);
        bomb.extend_from_slice(&[0x10, 0x61]);
        assert_eq!(decode(&bomb), None);
        assert_eq!(decode(&[]), None, "no prefix length");
    }
}
