//! The whole-table Bloom filter over user keys.
//!
//! ```text
//! filter := bits: [u8; m / 8] | k: u8
//! ```
//!
//! `m` is `max(64, n * bits_per_key)` rounded up to a multiple of 8, for `n` distinct user keys;
//! `k = round(bits_per_key * ln 2)` clamped to 1..=30. A key sets bits `h, h + d, h + 2d, ...`
//! (mod m, k of them) where `h` = xxh3-64(user key) and `d = h.rotate_right(17)` (double hashing
//! as in LevelDB's bloom.cc, with a 64-bit hash). Bit `i` is bit `i % 8` of byte `i / 8`.
//!
//! The filter is stored as a checksummed meta block, loaded once by `Table::open` and kept in
//! memory.

use xxhash_rust::xxh3::xxh3_64;

/// Largest number of probes a filter may use.
const MAX_PROBES: u8 = 30;

fn probes_for(bits_per_key: u32) -> u8 {
    let k = (f64::from(bits_per_key) * std::f64::consts::LN_2).round();
    k.clamp(1.0, f64::from(MAX_PROBES)) as u8
}

/// Collects user-key hashes while a table is built.
#[derive(Debug, Clone)]
pub struct BloomFilterBuilder {
    bits_per_key: u32,
    hashes: Vec<u64>,
    last_key: Option<Vec<u8>>,
}

impl BloomFilterBuilder {
    /// A builder using `bits_per_key` bits per distinct key (must be > 0).
    pub fn new(bits_per_key: u32) -> Self {
        BloomFilterBuilder {
            bits_per_key: bits_per_key.max(1),
            hashes: Vec::new(),
            last_key: None,
        }
    }

    /// Adds a user key. Consecutive repeats of one key (several versions) count once.
    pub fn add_key(&mut self, user_key: &[u8]) {
        if self.last_key.as_deref() == Some(user_key) {
            return;
        }
        self.hashes.push(xxh3_64(user_key));
        match &mut self.last_key {
            Some(k) => {
                k.clear();
                k.extend_from_slice(user_key);
            }
            None => self.last_key = Some(user_key.to_vec()),
        }
    }

    /// Distinct keys added.
    pub fn num_keys(&self) -> usize {
        self.hashes.len()
    }

    /// The encoded filter.
    pub fn finish(&self) -> Vec<u8> {
        let bits = (self.hashes.len() as u64)
            .saturating_mul(u64::from(self.bits_per_key))
            .max(64);
        let bytes = usize::try_from(bits.div_ceil(8)).unwrap_or(usize::MAX / 2);
        let bits = bytes as u64 * 8;
        let k = probes_for(self.bits_per_key);
        let mut out = vec![0u8; bytes + 1];
        for &h0 in &self.hashes {
            let (mut h, delta) = (h0, h0.rotate_right(17));
            for _ in 0..k {
                let pos = h % bits;
                out[(pos / 8) as usize] |= 1 << (pos % 8);
                h = h.wrapping_add(delta);
            }
        }
        out[bytes] = k;
        out
    }
}

/// A decoded filter, probed on reads.
#[derive(Debug, Clone)]
pub struct BloomFilter {
    data: Vec<u8>,
    k: u8,
}

impl BloomFilter {
    /// Parses an encoded filter; `None` if it has no bit array or an out-of-range probe count.
    pub fn new(mut data: Vec<u8>) -> Option<BloomFilter> {
        let k = data.pop()?;
        if data.is_empty() || !(1..=MAX_PROBES).contains(&k) {
            return None;
        }
        Some(BloomFilter { data, k })
    }

    /// False only if `user_key` was certainly never added.
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        let bits = self.data.len() as u64 * 8;
        let h0 = xxh3_64(user_key);
        let (mut h, delta) = (h0, h0.rotate_right(17));
        for _ in 0..self.k {
            let pos = h % bits;
            let byte = self.data.get((pos / 8) as usize).copied().unwrap_or(0);
            if byte & (1 << (pos % 8)) == 0 {
                return false;
            }
            h = h.wrapping_add(delta);
        }
        true
    }

    /// Bytes held in memory.
    pub fn size(&self) -> usize {
        self.data.len() + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn build(keys: impl IntoIterator<Item = Vec<u8>>, bits: u32) -> BloomFilter {
        let mut b = BloomFilterBuilder::new(bits);
        for k in keys {
            b.add_key(&k);
        }
        BloomFilter::new(b.finish()).unwrap()
    }

    #[test]
    fn no_false_negatives_and_about_one_percent_false_positives() {
        let n = 10_000u32;
        let f = build((0..n).map(|i| format!("key-{i}").into_bytes()), 10);
        for i in 0..n {
            assert!(f.may_contain(format!("key-{i}").as_bytes()));
        }
        let fp = (0..n)
            .filter(|i| f.may_contain(format!("absent-{i}").as_bytes()))
            .count();
        let rate = fp as f64 / f64::from(n);
        assert!(rate < 0.03, "false-positive rate {rate}");
        assert!(rate > 0.0005, "suspiciously low false-positive rate {rate}");
    }

    #[test]
    fn probe_count_and_size_follow_bits_per_key() {
        assert_eq!(probes_for(10), 7);
        assert_eq!(probes_for(1), 1);
        assert_eq!(probes_for(100), 30);
        let mut b = BloomFilterBuilder::new(10);
        for _ in 0..3 {
            b.add_key(b"same"); // versions of one key count once
        }
        assert_eq!(b.num_keys(), 1);
        assert_eq!(b.finish().len(), 64 / 8 + 1);
        let f = build((0..1000u32).map(|i| i.to_le_bytes().to_vec()), 10);
        assert_eq!(f.size(), 10_000 / 8 + 1);
    }

    #[test]
    fn empty_filter_matches_nothing_and_bad_encodings_are_rejected() {
        let f = build(std::iter::empty(), 10);
        assert!(!f.may_contain(b"x"));
        assert!(BloomFilter::new(vec![]).is_none());
        assert!(BloomFilter::new(vec![7]).is_none());
        assert!(BloomFilter::new(vec![0xff, 0]).is_none());
        assert!(BloomFilter::new(vec![0xff, 31]).is_none());
    }

    proptest! {
        #[test]
        fn added_keys_always_match(
            keys in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..24), 0..200),
            bits in 1u32..24,
        ) {
            let f = build(keys.clone(), bits);
            for k in &keys {
                prop_assert!(f.may_contain(k));
            }
        }
    }
}
