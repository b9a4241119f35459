//! Expiry enforced by compaction: the engine's compaction filter drops the metadata of every
//! key whose expiry has passed, so an expired key's bytes leave the disk at its next compaction
//! even if no read or sweep touches it. (Reads already treat it as absent; the sweeper still
//! deletes the orphaned subkeys of an expired hash or sorted set, which need a metadata lookup
//! this filter must not make.)

use std::time::{SystemTime, UNIX_EPOCH};

use screedb::compaction::CompactionFilter;

use crate::encoding::META;

/// Drops the newest metadata value of a key whose `expire_at_ms` has passed.
#[derive(Debug, Default, Clone, Copy)]
pub struct ExpiryFilter;

impl ExpiryFilter {
    /// True when `value`, a metadata value (`kind | expire_at_ms: u64 LE | ...`), has expired at
    /// `now_ms`.
    fn expired(value: &[u8], now_ms: u64) -> bool {
        value
            .get(1..9)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(u64::from_le_bytes)
            .is_some_and(|at| at != 0 && at <= now_ms)
    }
}

impl CompactionFilter for ExpiryFilter {
    fn name(&self) -> &str {
        "screedb-server.expiry"
    }

    fn drop_value(&self, _level: usize, key: &[u8], value: &[u8]) -> bool {
        if key.first() != Some(&META) {
            return false;
        }
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Self::expired(value, now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_expired_metadata_is_dropped() {
        let meta = |at: u64| {
            let mut v = vec![0u8];
            v.extend_from_slice(&at.to_le_bytes());
            v.extend_from_slice(b"value");
            v
        };
        let f = ExpiryFilter;
        assert!(f.drop_value(1, b"Mkey", &meta(1)));
        assert!(!f.drop_value(1, b"Mkey", &meta(0)), "0 never expires");
        assert!(!f.drop_value(1, b"Mkey", &meta(u64::MAX)));
        assert!(
            !f.drop_value(1, b"Skey", &meta(1)),
            "subkeys are the sweeper's"
        );
        assert!(
            !f.drop_value(1, b"Mkey", b"\x00\x01"),
            "a short value is kept"
        );
    }
}
