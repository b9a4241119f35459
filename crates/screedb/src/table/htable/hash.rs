//! The one hash of a user key and the bit ranges cut from it; the per-bucket Bloom probes.
//!
//! `h = xxh3_128_with_seed(user_key, seed)`; bit `i` is `(h >> i) & 1`. Frozen ranges:
//!
//! | bits       | use                                                            |
//! |------------|----------------------------------------------------------------|
//! | `[0, 30)`  | trie path: child at depth `d` is bits `[3d, 3d + 3)` (10 levels) |
//! | `[30, 64)` | bucket: this 34-bit number mod `num_buckets`                   |
//! | `[64, 96)` | migration rank (u32)                                           |
//! | `[96,128)` | Bloom probes                                                    |
//! | `[64,128)` | distinct-count sketch (`crate::sketch`; shares the bits above) |
//!
//! Bloom probes (SplitMix64 over the Bloom bits): for `i` in `1..=k`,
//! `x = fmix64(bloom + i * 0x9E3779B97F4A7C15)` (wrapping u64; `fmix64` is MurmurHash3's
//! 64-bit finalizer) sets bit `((x >> 32) * m) >> 32` of the bucket's `m`-bit filter.
//! `k = round(bits_per_key * ln 2)` clamped to 1..=30. (Double hashing `h1 + i*h2` was tried
//! first: with filters of a few hundred bits, the keys whose step maps to under one bit put all
//! their probes on one or two bits, which took the false-positive rate to 0.11%; independent
//! probes measure 0.05%, the textbook rate for 16 bits and 11 probes.)

use xxhash_rust::xxh3::xxh3_128_with_seed;

/// Depths the trie bits cover: [`KeyHash::trie_child`] of depths 0..10 use distinct bits.
pub const MAX_TRIE_DEPTH: u32 = 10;

/// Largest number of Bloom probes.
const MAX_PROBES: u32 = 30;

/// The seeded 128-bit hash of a user key and its bit ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyHash(u128);

impl KeyHash {
    /// Hashes `user_key` with `seed`.
    pub fn of(seed: u64, user_key: &[u8]) -> KeyHash {
        KeyHash(xxh3_128_with_seed(user_key, seed))
    }

    /// The raw 128-bit hash.
    pub fn raw(&self) -> u128 {
        self.0
    }

    /// The child (0..8) at trie depth `depth`: bits `[3 depth, 3 depth + 3)`. Depths from
    /// [`MAX_TRIE_DEPTH`] on reuse the bits of `depth % MAX_TRIE_DEPTH` (8^10 containers deep: a
    /// trie never gets there).
    pub fn trie_child(&self, depth: u32) -> u8 {
        let shift = 3 * (depth % MAX_TRIE_DEPTH);
        ((self.0 >> shift) & 7) as u8
    }

    /// The home bucket among `num_buckets` (bits `[30, 64)` mod `num_buckets`; 0 if
    /// `num_buckets` is 0).
    pub fn bucket(&self, num_buckets: u32) -> u32 {
        let bits = ((self.0 >> 30) as u64) & ((1 << 34) - 1);
        bits.checked_rem(u64::from(num_buckets)).unwrap_or(0) as u32
    }

    /// The migration rank: bits `[64, 96)`.
    pub fn rank(&self) -> u32 {
        (self.0 >> 64) as u32
    }

    /// The Bloom bits: `[96, 128)`.
    pub fn bloom(&self) -> u32 {
        (self.0 >> 96) as u32
    }

    /// The bits a distinct-count sketch counts the key by (`crate::sketch`): `[64, 128)`, the
    /// rank and Bloom bits, which no trie path fixes (every key of a container shares its
    /// path bits).
    pub fn sketch_bits(&self) -> u64 {
        (self.0 >> 64) as u64
    }

    /// The `k` bit positions this key uses in a filter of `m` bits.
    pub fn bloom_bits(&self, k: u32, m: u64) -> impl Iterator<Item = u64> {
        let seed = u64::from(self.bloom());
        (1..=u64::from(k)).map(move |i| {
            let x = fmix64(seed.wrapping_add(i.wrapping_mul(GOLDEN)));
            ((x >> 32) * m) >> 32
        })
    }
}

/// 2^64 / golden ratio: SplitMix64's increment.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// MurmurHash3's 64-bit finalizer.
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// Bloom probes for `bits_per_key`: `round(bits_per_key * ln 2)` in 1..=30 (0 bits: 0 probes,
/// no filter).
pub(super) fn probes_for(bits_per_key: u32) -> u32 {
    if bits_per_key == 0 {
        return 0;
    }
    let k = (f64::from(bits_per_key) * std::f64::consts::LN_2).round();
    k.clamp(1.0, f64::from(MAX_PROBES)) as u32
}

/// True if the `m`-bit filter `bits` may hold the key of `hash` (probes `k`).
pub(super) fn filter_may_contain(bits: &[u8], k: u32, hash: &KeyHash) -> bool {
    let m = bits.len() as u64 * 8;
    if k == 0 {
        return true;
    }
    if m == 0 {
        return false;
    }
    hash.bloom_bits(k, m).all(|b| {
        let byte = bits.get((b / 8) as usize).copied().unwrap_or(0);
        byte & (1 << (b % 8)) != 0
    })
}

/// Sets the key's bits in the filter `bits`.
pub(super) fn filter_add(bits: &mut [u8], k: u32, hash: &KeyHash) {
    let m = bits.len() as u64 * 8;
    for b in hash.bloom_bits(k, m) {
        if let Some(byte) = bits.get_mut((b / 8) as usize) {
            *byte |= 1 << (b % 8);
        }
    }
}

/// Largest valid probe count (readers reject filters claiming more).
pub(super) const MAX_FILTER_PROBES: u32 = MAX_PROBES;

fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    let mut d = 2u64;
    while d * d <= n {
        if n.is_multiple_of(d) {
            return false;
        }
        d += 1;
    }
    true
}

/// A prime bucket count for about `target_bytes` of table: the largest prime at or below
/// `target_bytes / bucket_bytes` (so the file stays within the target; 32 MiB of 4 KiB buckets
/// gives the paper's 8191), at least 2.
pub fn bucket_count_for(target_bytes: u64, bucket_bytes: usize) -> u32 {
    let n = target_bytes / (bucket_bytes.max(1) as u64);
    let mut n = n.clamp(2, u64::from(u32::MAX));
    while !is_prime(n) {
        n -= 1;
    }
    n as u32
}

/// The smallest prime at or above `n` (at least 2): the bucket count of a table shrunk to its
/// items, which must not lose buckets to the gap below (between 1,000 and 10,000 a prime gap
/// reaches 36).
pub fn prime_at_least(n: u64) -> u32 {
    let mut n = n.clamp(2, u64::from(u32::MAX));
    while !is_prime(n) {
        n += 1;
    }
    n as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_the_documented_bits() {
        let h = KeyHash(0b101_011 | (u128::from(u32::MAX - 1) << 64) | (5u128 << 96));
        assert_eq!(h.trie_child(0), 0b011);
        assert_eq!(h.trie_child(1), 0b101);
        assert_eq!(h.trie_child(11), h.trie_child(1));
        assert_eq!(h.rank(), u32::MAX - 1);
        assert_eq!(h.bloom(), 5);
        let b = KeyHash(7u128 << 30);
        assert_eq!(b.bucket(5), 2);
        assert_eq!(b.bucket(0), 0);
        assert_ne!(KeyHash::of(1, b"k"), KeyHash::of(2, b"k"));
    }

    #[test]
    fn bucket_counts_are_primes_below_the_target() {
        assert_eq!(bucket_count_for(32 << 20, 4096), 8191);
        assert_eq!(bucket_count_for(0, 4096), 2);
        assert_eq!(bucket_count_for(4 << 20, 4096), 1021);
        assert_eq!(bucket_count_for(100, 0), 97);
        assert_eq!(prime_at_least(510), 521);
        assert_eq!(prime_at_least(521), 521);
        assert_eq!(prime_at_least(0), 2);
        assert_eq!(probes_for(16), 11);
        assert_eq!(probes_for(0), 0);
        assert_eq!(probes_for(100), 30);
    }

    #[test]
    fn filters_have_no_false_negatives() {
        let mut bits = vec![0u8; 64];
        let keys: Vec<KeyHash> = (0..32u32)
            .map(|i| KeyHash::of(9, &i.to_le_bytes()))
            .collect();
        for h in &keys {
            filter_add(&mut bits, 11, h);
        }
        assert!(keys.iter().all(|h| filter_may_contain(&bits, 11, h)));
        assert!(!filter_may_contain(&[], 11, &keys[0]));
        assert!(filter_may_contain(&[], 0, &keys[0]));
    }
}
