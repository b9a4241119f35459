//! FLSM guards: which keys are guards, and which guard a key or a table belongs to.
//!
//! A level's committed guard keys `g_0 < g_1 < … < g_{n-1}` (user-key order) cut it into `n + 1`
//! guards: the sentinel `(-inf, g_0)`, then `[g_k, g_{k+1})`, and the last `[g_{n-1}, +inf)`.
//! Guard `k + 1` starts at `g_k`, so [`guard_index`] of a key is the number of guard keys
//! `<=` it.
//!
//! A key is a guard *candidate* for a level when the low `bits` bits of its xxh3-64 hash are all
//! ones ([`is_guard`]): the decision depends on the key bytes and `bits` alone, so it is the
//! same in every process and every run. Fewer bits make more guards; the bits per level never
//! grow with the level, so a candidate at level `i` is one at every deeper level.

use std::cmp::Ordering;

use xxhash_rust::xxh3::xxh3_64;

use crate::comparator::Comparator;
use crate::manifest::FileMeta;

/// The number of trailing one bits of the key's xxh3-64 hash: the key is a guard candidate at
/// every level whose bits are at most this.
pub fn guard_height(user_key: &[u8]) -> u32 {
    xxh3_64(user_key).trailing_ones()
}

/// True when `user_key` is a guard candidate for a level using `bits` bits.
pub fn is_guard(user_key: &[u8], bits: u32) -> bool {
    guard_height(user_key) >= bits
}

/// The guard of `user_key` among sorted `guards`: 0 is the sentinel, `k + 1` starts at
/// `guards[k]`.
pub fn guard_index(ucmp: &dyn Comparator, guards: &[Vec<u8>], user_key: &[u8]) -> usize {
    guards.partition_point(|g| ucmp.compare(g, user_key) != Ordering::Greater)
}

/// `[start, end)` of guard `index` (`None` = unbounded).
pub fn guard_bounds(guards: &[Vec<u8>], index: usize) -> (Option<&[u8]>, Option<&[u8]>) {
    let start = index
        .checked_sub(1)
        .and_then(|i| guards.get(i))
        .map(Vec::as_slice);
    (start, guards.get(index).map(Vec::as_slice))
}

/// True when the table holds keys on both sides of `key` (it would have to be split for `key`
/// to become a guard of its level).
pub fn spans(ucmp: &dyn Comparator, file: &FileMeta, key: &[u8]) -> bool {
    ucmp.compare(file.smallest_user_key(), key) == Ordering::Less
        && ucmp.compare(file.largest_user_key(), key) != Ordering::Less
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparator::default_comparator;
    use proptest::prelude::*;

    #[test]
    fn guard_index_counts_guards_at_or_below_the_key() {
        let ucmp = default_comparator();
        let guards = vec![b"d".to_vec(), b"m".to_vec()];
        assert_eq!(guard_index(ucmp.as_ref(), &guards, b"a"), 0);
        assert_eq!(guard_index(ucmp.as_ref(), &guards, b"d"), 1);
        assert_eq!(guard_index(ucmp.as_ref(), &guards, b"l"), 1);
        assert_eq!(guard_index(ucmp.as_ref(), &guards, b"m"), 2);
        assert_eq!(guard_bounds(&guards, 0), (None, Some(&b"d"[..])));
        assert_eq!(guard_bounds(&guards, 2), (Some(&b"m"[..]), None));
    }

    #[test]
    fn hash_is_frozen() {
        // Guards on disk are never re-derived, but candidates must not drift between versions
        // of the code either: a changed hash would commit a different guard set.
        assert_eq!(xxh3_64(b"screedb"), 0x8ae5_9008_63ef_413f);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Deterministic, and a guard at `bits` is a guard at every smaller `bits` (skip list).
        #[test]
        fn guard_choice_is_deterministic_and_nested(key in proptest::collection::vec(any::<u8>(), 0..32), bits in 0u32..20) {
            prop_assert_eq!(is_guard(&key, bits), is_guard(&key.clone(), bits));
            if is_guard(&key, bits + 1) {
                prop_assert!(is_guard(&key, bits));
            }
        }

        /// About one key in `2^bits` is a guard.
        #[test]
        fn density_follows_the_bits(bits in 2u32..6, seed in any::<u64>()) {
            let n = 20_000u64;
            let hits = (0..n).filter(|i| is_guard(&(seed ^ i).to_le_bytes(), bits)).count() as f64;
            let expected = n as f64 / f64::from(1u32 << bits);
            prop_assert!((hits - expected).abs() < expected * 0.25, "{} vs {}", hits, expected);
        }
    }
}
