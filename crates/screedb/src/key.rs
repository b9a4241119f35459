//! Internal keys: a user key followed by an 8-byte trailer.
//!
//! ```text
//! internal key := user_key bytes | trailer: u64 little-endian
//! trailer      := (sequence << 8) | kind
//! ```
//!
//! Internal keys sort by user key ascending (under the user comparator), then by sequence number
//! descending, then by kind descending: the newest version of a key comes first. The `kind` byte
//! values are written to disk and frozen.

use crate::error::{Error, Result};

/// A write's position in the total order of writes. Only the low 56 bits are usable.
pub type SequenceNumber = u64;

/// The largest sequence number that fits in a trailer.
pub const MAX_SEQUENCE: SequenceNumber = (1 << 56) - 1;

/// Bytes in an internal key's trailer.
pub const TRAILER_LEN: usize = 8;

/// Longest user key accepted (64 MiB). Longer keys are rejected with [`Error::InvalidArgument`].
pub const MAX_KEY_LEN: usize = 64 << 20;

/// Longest value accepted (256 MiB). Longer values are rejected with [`Error::InvalidArgument`].
pub const MAX_VALUE_LEN: usize = 256 << 20;

/// What an internal key records. The numbers are on disk: never change or reuse them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum ValueKind {
    /// A tombstone: the key was deleted at this sequence number.
    Deletion = 0,
    /// A value was put at this sequence number.
    Value = 1,
}

impl ValueKind {
    /// The kind used when building a seek target: the highest kind, so that a seek to
    /// `(key, seq)` lands on the newest entry with sequence <= seq.
    pub const FOR_SEEK: ValueKind = ValueKind::Value;

    /// Decodes a kind byte.
    pub fn from_u8(b: u8) -> Option<ValueKind> {
        match b {
            0 => Some(ValueKind::Deletion),
            1 => Some(ValueKind::Value),
            _ => None,
        }
    }
}

/// Packs a sequence number and kind into a trailer.
pub fn pack_trailer(seq: SequenceNumber, kind: ValueKind) -> u64 {
    debug_assert!(seq <= MAX_SEQUENCE);
    (seq << 8) | kind as u64
}

/// Appends the internal key for `(user_key, seq, kind)` to `dst`.
pub fn append_internal_key(
    dst: &mut Vec<u8>,
    user_key: &[u8],
    seq: SequenceNumber,
    kind: ValueKind,
) {
    dst.reserve(user_key.len() + TRAILER_LEN);
    dst.extend_from_slice(user_key);
    dst.extend_from_slice(&pack_trailer(seq, kind).to_le_bytes());
}

/// Builds the internal key for `(user_key, seq, kind)`.
pub fn make_internal_key(user_key: &[u8], seq: SequenceNumber, kind: ValueKind) -> Vec<u8> {
    let mut k = Vec::with_capacity(user_key.len() + TRAILER_LEN);
    append_internal_key(&mut k, user_key, seq, kind);
    k
}

/// A borrowed, decoded internal key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParsedKey<'a> {
    /// The user's key.
    pub user_key: &'a [u8],
    /// Sequence number of the write.
    pub seq: SequenceNumber,
    /// What the write did.
    pub kind: ValueKind,
}

/// Decodes an internal key; `None` if it is shorter than a trailer or has an unknown kind.
pub fn parse_internal_key(ikey: &[u8]) -> Option<ParsedKey<'_>> {
    let split = ikey.len().checked_sub(TRAILER_LEN)?;
    let (user_key, trailer) = ikey.split_at(split);
    let trailer = u64::from_le_bytes(trailer.try_into().ok()?);
    Some(ParsedKey {
        user_key,
        seq: trailer >> 8,
        kind: ValueKind::from_u8((trailer & 0xff) as u8)?,
    })
}

/// The user-key part of an internal key (the whole slice if it is too short to have a trailer).
pub fn user_key(ikey: &[u8]) -> &[u8] {
    &ikey[..ikey.len().saturating_sub(TRAILER_LEN)]
}

/// The trailer of an internal key (0 if it is too short to have one).
pub fn trailer(ikey: &[u8]) -> u64 {
    ikey.len()
        .checked_sub(TRAILER_LEN)
        .and_then(|s| ikey.get(s..))
        .and_then(|t| t.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// Checks a user key and value against the size limits.
pub fn check_key_value(key: &[u8], value: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_LEN {
        return Err(Error::invalid(format!(
            "key of {} bytes is over the limit of {MAX_KEY_LEN} bytes",
            key.len()
        )));
    }
    if value.len() > MAX_VALUE_LEN {
        return Err(Error::invalid(format!(
            "value of {} bytes is over the limit of {MAX_VALUE_LEN} bytes",
            value.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn internal_key_round_trips(
            key in proptest::collection::vec(any::<u8>(), 0..64),
            seq in 0..=MAX_SEQUENCE,
            del in any::<bool>(),
        ) {
            let kind = if del { ValueKind::Deletion } else { ValueKind::Value };
            let ik = make_internal_key(&key, seq, kind);
            let p = parse_internal_key(&ik).unwrap();
            prop_assert_eq!(p.user_key, &key[..]);
            prop_assert_eq!(p.seq, seq);
            prop_assert_eq!(p.kind, kind);
            prop_assert_eq!(user_key(&ik), &key[..]);
            prop_assert_eq!(trailer(&ik), pack_trailer(seq, kind));
        }
    }

    #[test]
    fn bad_internal_keys_are_rejected() {
        assert!(parse_internal_key(b"short").is_none());
        let mut k = make_internal_key(b"a", 1, ValueKind::Value);
        let n = k.len();
        k[n - 8] = 7; // unknown kind
        assert!(parse_internal_key(&k).is_none());
    }

    #[test]
    fn limits_are_enforced() {
        assert!(check_key_value(b"", b"").is_ok());
        let big = vec![0u8; MAX_KEY_LEN + 1];
        let err = check_key_value(&big, b"").unwrap_err();
        assert!(err.to_string().contains("key of"), "{err}");
    }
}
