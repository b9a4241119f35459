//! A Bloom filter over the user keys in a memtable's skiplist (RocksDB's memtable whole-key
//! filter, `memtable_whole_key_filtering`): a point read of a key the skiplist does not hold
//! skips the skiplist search, a walk of about twenty nodes each a likely cache miss, for one
//! cache line of this filter.
//!
//! Blocked to one 64-bit word per key: a key sets [`PROBES`] bits of one word chosen by its
//! hash, so a write costs one atomic OR (a lookup one load). Blocking to a word raises the
//! false-positive rate only where few bits per key are spent; the memtable's filter gets many
//! (`Options::memtable_filter_ratio`: about 20 to 80 bits per key); at 21 bits per key six
//! bits in a word let 0.6% of absent keys through (the unit test measures it), each costing
//! the skiplist search the filter would have saved. Bits are never cleared.
//!
//! Ordering: a key's bits are set before its entry is inserted into the skiplist, and the
//! insert publishes the entry (a release store) before the write's sequence number is
//! published (or, for a membuffer drain, before the entry leaves the membuffer under its bucket
//! lock). A reader that can see the entry at its snapshot has synchronised with one of those
//! stores, so it sees the bits too: the filter never hides an entry a reader may read.

use std::sync::atomic::{AtomicU64, Ordering};

use xxhash_rust::xxh3::xxh3_64;

/// Bits a key sets in its word.
const PROBES: u32 = 6;

/// The filter: one bit array in 64-bit words.
pub(super) struct KeyFilter {
    words: Box<[AtomicU64]>,
}

impl std::fmt::Debug for KeyFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyFilter")
            .field("bytes", &self.bytes())
            .finish()
    }
}

impl KeyFilter {
    /// A filter of about `bytes` (at least one word); `None` for 0.
    pub(super) fn with_bytes(bytes: usize) -> Option<Self> {
        if bytes == 0 {
            return None;
        }
        let words = super::huge_pages::boxed_slice(bytes.div_ceil(8), |_| AtomicU64::new(0));
        Some(KeyFilter { words })
    }

    /// Bytes the filter holds.
    pub(super) fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// The word of a key whose xxh3 hash is `hash`, and the bits it sets there.
    fn probe(&self, hash: u64) -> (&AtomicU64, u64) {
        // The high half picks the word (multiply-shift, no division), the low half the bits.
        let word = ((u128::from(hash >> 32) * self.words.len() as u128) >> 32) as usize;
        let (mut bit, mut mask) = (hash as u32, 0u64);
        let delta = bit.rotate_right(17) | 1;
        for _ in 0..PROBES {
            mask |= 1 << (bit % 64);
            bit = bit.wrapping_add(delta);
        }
        (&self.words[word], mask)
    }

    /// Records `user_key`. Call before the key's entry is inserted into the skiplist.
    pub(super) fn insert(&self, user_key: &[u8]) {
        self.insert_hash(xxh3_64(user_key));
    }

    /// Records the key whose xxh3 hash is `hash`.
    pub(super) fn insert_hash(&self, hash: u64) {
        let (word, mask) = self.probe(hash);
        if word.load(Ordering::Relaxed) & mask != mask {
            word.fetch_or(mask, Ordering::Relaxed);
        }
    }

    /// False if `user_key` was certainly never inserted.
    pub(super) fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(xxh3_64(user_key))
    }

    /// False if the key whose xxh3 hash is `hash` was certainly never inserted.
    pub(super) fn may_contain_hash(&self, hash: u64) -> bool {
        let (word, mask) = self.probe(hash);
        word.load(Ordering::Relaxed) & mask == mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserted_keys_always_match_and_others_rarely() {
        // 100k keys in 256 KiB: about 21 bits per key, the fewest the default gives.
        let f = KeyFilter::with_bytes(256 << 10).unwrap();
        for i in 0..100_000u32 {
            f.insert(format!("key{i:08}").as_bytes());
        }
        for i in 0..100_000u32 {
            assert!(f.may_contain(format!("key{i:08}").as_bytes()), "{i}");
        }
        let false_positives = (100_000..200_000u32)
            .filter(|i| f.may_contain(format!("key{i:08}").as_bytes()))
            .count();
        // Six bits in one word at ~21 bits per key: 0.6% measured (a miss costs one skiplist
        // search, which the filter exists to save).
        assert!(false_positives < 1000, "{false_positives} of 100000");
    }

    #[test]
    fn an_empty_filter_matches_nothing_and_zero_bytes_is_none() {
        assert!(KeyFilter::with_bytes(0).is_none());
        let f = KeyFilter::with_bytes(1).unwrap();
        assert_eq!(f.bytes(), 8);
        assert!(!f.may_contain(b"a"));
        f.insert(b"a");
        assert!(f.may_contain(b"a"));
    }
}
