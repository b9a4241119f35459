//! How Redis keys and types are laid out over the engine's ordered keys (after Kvrocks's
//! metadata/subkey encoding). Every number here is written to disk: the tags are frozen.
//!
//! ```text
//! metadata key  := 'M' | user_key
//! metadata      := kind: u8 | expire_at_ms: u64 LE (0 = never)
//!                  | string: value bytes
//!                  | hash, zset: version: u64 LE | size: u64 LE
//! subkey        := 'S' | len(user_key): u32 BE | user_key | version: u64 BE | field_or_member
//!                  value: the hash field's value, or the member's score (f64 bits, u64 LE)
//! score key     := 'Z' | len(user_key): u32 BE | user_key | version: u64 BE
//!                  | score: u64 BE (order-preserving, see `score_bits`) | member
//!                  value: empty
//! ```
//!
//! Numbers inside keys are big-endian because they must sort as the engine compares bytes; the
//! length prefix keeps `("a", field "bc")` apart from `("ab", field "c")`. A hash or sorted set
//! only reaches the subkeys of its own `version`, so deleting, expiring or overwriting it is one
//! metadata write: the old subkeys are garbage that the server's sweeper deletes later (dropping
//! them at compaction would need a metadata lookup per subkey; expired metadata itself is
//! dropped by the compaction filter in `expiry.rs`; see docs/server.md).

use bytes::Bytes;

/// Tag of metadata keys.
pub const META: u8 = b'M';
/// Tag of hash-field and zset-member subkeys.
pub const SUB: u8 = b'S';
/// Tag of the zset score index.
pub const SCORE: u8 = b'Z';

/// The type of a key. The numbers are written to disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A string (the value lives in the metadata).
    String = 1,
    /// A hash (fields are subkeys).
    Hash = 2,
    /// A sorted set (members are subkeys, plus a score index).
    Zset = 3,
}

impl Kind {
    /// The name TYPE answers.
    pub fn name(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Hash => "hash",
            Kind::Zset => "zset",
        }
    }

    fn from_u8(b: u8) -> Option<Kind> {
        match b {
            1 => Some(Kind::String),
            2 => Some(Kind::Hash),
            3 => Some(Kind::Zset),
            _ => None,
        }
    }
}

/// The decoded metadata of one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// Its type.
    pub kind: Kind,
    /// Unix milliseconds at which it expires; 0 = never.
    pub expire_ms: u64,
    /// Hash/zset: the version its subkeys carry. 0 for strings.
    pub version: u64,
    /// Hash/zset: number of fields/members. 0 for strings.
    pub size: u64,
    /// String: the value. Empty otherwise.
    pub value: Bytes,
}

impl Meta {
    /// True when it has expired at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.expire_ms != 0 && self.expire_ms <= now_ms
    }

    /// The metadata value bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(9 + 16 + self.value.len());
        out.push(self.kind as u8);
        out.extend_from_slice(&self.expire_ms.to_le_bytes());
        match self.kind {
            Kind::String => out.extend_from_slice(&self.value),
            Kind::Hash | Kind::Zset => {
                out.extend_from_slice(&self.version.to_le_bytes());
                out.extend_from_slice(&self.size.to_le_bytes());
            }
        }
        out
    }

    /// Decodes a metadata value; `None` if it is not one (a corrupt or foreign value).
    pub fn decode(raw: Vec<u8>) -> Option<Meta> {
        let kind = Kind::from_u8(*raw.first()?)?;
        let expire_ms = le_u64(raw.get(1..9)?)?;
        let (version, size, value) = match kind {
            Kind::String => {
                let mut raw = Bytes::from(raw);
                (0, 0, raw.split_off(9))
            }
            Kind::Hash | Kind::Zset => (
                le_u64(raw.get(9..17)?)?,
                le_u64(raw.get(17..25)?)?,
                Bytes::new(),
            ),
        };
        Some(Meta {
            kind,
            expire_ms,
            version,
            size,
            value,
        })
    }
}

fn le_u64(b: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(b.try_into().ok()?))
}

/// The metadata key of `user_key`.
pub fn meta_key(user_key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + user_key.len());
    k.push(META);
    k.extend_from_slice(user_key);
    k
}

/// `tag | len | user_key | version`: the prefix every subkey (or score key) of one
/// hash/zset version starts with.
pub fn versioned_prefix(tag: u8, user_key: &[u8], version: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + 4 + user_key.len() + 8 + 16);
    k.push(tag);
    let len = u32::try_from(user_key.len()).unwrap_or(u32::MAX);
    k.extend_from_slice(&len.to_be_bytes());
    k.extend_from_slice(user_key);
    k.extend_from_slice(&version.to_be_bytes());
    k
}

/// The subkey of `field` in version `version` of hash/zset `user_key`.
pub fn sub_key(user_key: &[u8], version: u64, field: &[u8]) -> Vec<u8> {
    let mut k = versioned_prefix(SUB, user_key, version);
    k.extend_from_slice(field);
    k
}

/// The score-index key of `member` with `score`.
pub fn score_key(user_key: &[u8], version: u64, score: f64, member: &[u8]) -> Vec<u8> {
    let mut k = versioned_prefix(SCORE, user_key, version);
    k.extend_from_slice(&score_bits(score).to_be_bytes());
    k.extend_from_slice(member);
    k
}

/// Splits a subkey or score key (after its tag) into `(user_key, version, rest)`.
pub fn split_versioned(key: &[u8]) -> Option<(&[u8], u64, &[u8])> {
    let len = u32::from_be_bytes(key.get(1..5)?.try_into().ok()?);
    let len = usize::try_from(len).ok()?;
    let user = key.get(5..5 + len)?;
    let version = u64::from_be_bytes(key.get(5 + len..13 + len)?.try_into().ok()?);
    Some((user, version, key.get(13 + len..)?))
}

/// An f64 as a u64 whose unsigned order is the float order (-inf < ... < -0 = 0 < ... < inf):
/// flip every bit of a negative number, only the sign bit of a positive one. `-0.0` is stored
/// as `0.0`.
pub fn score_bits(score: f64) -> u64 {
    let score = if score == 0.0 { 0.0 } else { score };
    let bits = score.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// The inverse of [`score_bits`].
pub fn score_from_bits(bits: u64) -> f64 {
    if bits >> 63 == 1 {
        f64::from_bits(bits & !(1 << 63))
    } else {
        f64::from_bits(!bits)
    }
}

/// The score stored as a subkey's value.
pub fn decode_score_value(v: &[u8]) -> Option<f64> {
    Some(f64::from_bits(le_u64(v)?))
}

/// The smallest key greater than every key starting with `prefix` (`None`: no bound).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    screedb::comparator::bytewise_prefix_successor(prefix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn score_order_is_float_order() {
        let xs = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -1.0,
            -1e-300,
            0.0,
            1e-300,
            1.0,
            2.5,
            1e300,
            f64::INFINITY,
        ];
        for w in xs.windows(2) {
            assert!(score_bits(w[0]) < score_bits(w[1]), "{} < {}", w[0], w[1]);
        }
        for x in xs {
            assert_eq!(score_from_bits(score_bits(x)), x);
        }
        assert_eq!(score_bits(-0.0), score_bits(0.0));
    }

    #[test]
    fn meta_round_trip_and_subkeys_split() {
        let m = Meta {
            kind: Kind::Hash,
            expire_ms: 7,
            version: 9,
            size: 3,
            value: Bytes::new(),
        };
        assert_eq!(Meta::decode(m.encode()), Some(m));
        let s = Meta {
            kind: Kind::String,
            expire_ms: 0,
            version: 0,
            size: 0,
            value: Bytes::from_static(b"v"),
        };
        assert_eq!(Meta::decode(s.encode()), Some(s));
        assert_eq!(Meta::decode(vec![9; 30]), None);
        let k = sub_key(b"ab", 5, b"c");
        assert_eq!(split_versioned(&k), Some((&b"ab"[..], 5, &b"c"[..])));
        assert_ne!(sub_key(b"a", 5, b"bc"), sub_key(b"ab", 5, b"c"));
    }
}
