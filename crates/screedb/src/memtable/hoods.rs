//! How the membuffer maps a key to its neighbourhood, the unit a drain takes (see
//! `docs/memory.md`, "Neighbourhoods").
//!
//! By **key range** when the membuffer is built with a sample of the keys to come (the keys of
//! the memtable before it): `hoods - 1` splitter keys, evenly spaced in the sample, cut the key
//! space into ranges that each get about the same share of the writes, as FloDB's leading-bits
//! neighbourhoods do for uniformly random keys. A drain of one range then hands the skiplist
//! keys that are its neighbours there too, a few nodes apart however large the skiplist has
//! grown, and the multi-insert's finger search climbs one or two levels per key.
//!
//! By **hash** otherwise (the first memtable of a process, or when the previous memtable's
//! keys did not predict its successor's): any key set spreads evenly, but one neighbourhood's
//! keys lie all over the skiplist, and a drain must take many neighbourhoods at once for its
//! sorted keys to be close together. FloDB's own choice, the key's leading bits, is a range
//! map fixed in advance: keys sharing a long prefix (zero-padded numbers, timestamps, table
//! prefixes) then all fall into one neighbourhood, 1/1024 of the buffer.
//!
//! A map never changes during the membuffer's life, so a key's bucket is the same for every
//! writer, reader and drainer.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::comparator::Comparator;

/// A key-to-neighbourhood map over a power-of-two number of neighbourhoods.
pub(crate) struct HoodMap {
    /// log2 of the number of neighbourhoods.
    bits: u32,
    ranges: Option<Splitters>,
}

/// `hoods - 1` ascending user keys; neighbourhood `i` holds the keys with exactly `i` of them
/// at or below the key.
struct Splitters {
    /// The keys back to back (one allocation, for the binary search's cache lines).
    bytes: Vec<u8>,
    /// The end of each key in `bytes`.
    ends: Vec<u32>,
    cmp: Arc<dyn Comparator>,
    /// Under a bytewise comparator, the search compares 8-byte words instead of keys
    /// (a dynamic call and a slice per probe cost more than the rest of a put).
    words: Option<Words>,
}

/// Every splitter's 8 bytes after the prefix all of them share, as a big-endian integer
/// (zero-padded): for keys with that prefix, a smaller word means a smaller key, and only
/// equal words need the keys compared.
struct Words {
    prefix: usize,
    words: Vec<u64>,
}

/// The 8 bytes of `key` from `at`, zero-padded, big-endian.
fn word_at(key: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    let tail = key.get(at..).unwrap_or_default();
    let n = tail.len().min(8);
    w[..n].copy_from_slice(&tail[..n]);
    u64::from_be_bytes(w)
}

impl std::fmt::Debug for HoodMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HoodMap")
            .field("hoods", &self.hoods())
            .field("by_range", &self.is_by_range())
            .finish()
    }
}

impl HoodMap {
    /// A map by hash onto `hoods` (a power of two) neighbourhoods.
    pub(crate) fn by_hash(hoods: usize) -> Self {
        debug_assert!(hoods.is_power_of_two());
        HoodMap {
            bits: hoods.trailing_zeros(),
            ranges: None,
        }
    }

    /// A map by key range onto `hoods` neighbourhoods, its splitters evenly spaced in
    /// `sample` (ascending under `cmp`): `sample[i * len / hoods]` for `i` in `1..hoods`, so
    /// that the `n - 1` keys cutting a key set into `n` equal parts (`n` a power of two) serve
    /// any power of two up to `n`. By hash if the sample has fewer than `hoods - 1` keys.
    pub(crate) fn by_range(hoods: usize, sample: &[Vec<u8>], cmp: Arc<dyn Comparator>) -> Self {
        let mut map = Self::by_hash(hoods);
        if hoods < 2 || sample.len() + 1 < hoods {
            return map;
        }
        let (mut bytes, mut ends) = (Vec::new(), Vec::with_capacity(hoods - 1));
        for i in 1..hoods {
            bytes.extend_from_slice(&sample[i * sample.len() / hoods]);
            ends.push(u32::try_from(bytes.len()).unwrap_or(u32::MAX));
        }
        if bytes.len() > u32::MAX as usize {
            return map; // splitters of over 4 GiB: not worth a special case
        }
        let mut splitters = Splitters {
            bytes,
            ends,
            cmp,
            words: None,
        };
        if splitters.cmp.is_bytewise() {
            let (first, last) = (splitters.key(0), splitters.key(hoods - 2));
            let prefix = first.iter().zip(last).take_while(|(a, b)| a == b).count();
            let words = (0..hoods - 1)
                .map(|i| word_at(splitters.key(i), prefix))
                .collect();
            splitters.words = Some(Words { prefix, words });
        }
        map.ranges = Some(splitters);
        map
    }

    /// Number of neighbourhoods.
    pub(crate) fn hoods(&self) -> usize {
        1 << self.bits
    }

    /// True if neighbourhoods are key ranges.
    pub(crate) fn is_by_range(&self) -> bool {
        self.ranges.is_some()
    }

    /// The neighbourhood of `key`, whose xxh3 hash is `hash`.
    pub(crate) fn hood(&self, key: &[u8], hash: u64) -> usize {
        match &self.ranges {
            Some(s) => s.count_at_or_below(key),
            // The top bits of the hash times a Fibonacci constant, independent of the low bits
            // (the bucket within the neighbourhood) and of the high 32 (the tag).
            None if self.bits == 0 => 0,
            None => (hash.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - self.bits)) as usize,
        }
    }
}

impl Splitters {
    fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.bytes[start..self.ends[i] as usize]
    }

    /// How many splitters are at or below `key` (a binary search: over the words, then over
    /// the keys of the splitters whose word equals the key's, if any).
    fn count_at_or_below(&self, key: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.ends.len());
        if let Some(w) = &self.words {
            let first = self.key(0);
            if key.get(..w.prefix) != Some(&first[..w.prefix]) {
                // Outside the shared prefix: before or after every splitter.
                return if key < first { 0 } else { self.ends.len() };
            }
            let word = word_at(key, w.prefix);
            lo = w.words.partition_point(|&x| x < word);
            hi = lo + w.words[lo..].partition_point(|&x| x == word);
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.cmp.compare(self.key(mid), key) == Ordering::Greater {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparator::default_comparator;
    use proptest::prelude::Just;

    fn keys(range: std::ops::Range<u32>) -> Vec<Vec<u8>> {
        range.map(|i| format!("{i:016}").into_bytes()).collect()
    }

    #[test]
    fn ranges_follow_key_order_and_split_the_sample_evenly() {
        let map = HoodMap::by_range(16, &keys(0..1600), default_comparator());
        assert!(map.is_by_range());
        let hoods: Vec<usize> = keys(0..1600).iter().map(|k| map.hood(k, 0)).collect();
        assert!(hoods.windows(2).all(|w| w[0] <= w[1]), "not monotone");
        for h in 0..16 {
            let n = hoods.iter().filter(|&&x| x == h).count();
            assert_eq!(n, 100, "neighbourhood {h}");
        }
        // Keys outside the sample's span go to the first and last neighbourhoods.
        assert_eq!(map.hood(b"", 0), 0);
        assert_eq!(map.hood(b"~", 0), 15);
    }

    /// A comparator that orders like the bytewise one but is not marked bytewise, so the map
    /// searches its splitters with it instead of with words.
    struct Plain;
    impl Comparator for Plain {
        fn name(&self) -> &str {
            "test.plain"
        }
        fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
            a.cmp(b)
        }
    }

    proptest::proptest! {
        /// The word search under the bytewise comparator finds the same neighbourhood as the
        /// comparator search, for keys sharing long prefixes, short keys, zero bytes and ties.
        #[test]
        fn words_find_the_neighbourhood_keys_do(
            mut sample in proptest::collection::vec(
                proptest::collection::vec(proptest::prelude::prop_oneof![Just(0u8), Just(1), Just(b'0'), Just(0xff)], 0..12),
                8..64,
            ),
            probes in proptest::collection::vec(proptest::collection::vec(0u8..3, 0..14), 1..64),
            shared in proptest::collection::vec(0u8..2, 0..10),
        ) {
            for k in &mut sample {
                k.splice(0..0, shared.iter().copied());
            }
            sample.sort();
            let words = HoodMap::by_range(8, &sample, crate::comparator::default_comparator());
            let plain = HoodMap::by_range(8, &sample, Arc::new(Plain));
            proptest::prop_assert!(words.ranges.as_ref().is_some_and(|s| s.words.is_some()));
            // Probes with the shared prefix, cut inside it, and diverging inside it.
            let cut = probes.iter().map(|p| shared[..p.len().min(shared.len())].to_vec());
            let diverging = probes.iter().map(|p| {
                let mut k = shared.clone();
                if let Some(b) = k.get_mut(p.len() % shared.len().max(1)) {
                    *b ^= 1;
                }
                k
            });
            let with_prefix = probes.iter().map(|p| [shared.as_slice(), p].concat());
            for p in with_prefix.chain(cut).chain(diverging).chain(sample.clone()) {
                proptest::prop_assert_eq!(words.hood(&p, 0), plain.hood(&p, 0), "key {:?}", p);
            }
        }
    }

    #[test]
    fn the_keys_cutting_a_set_into_equal_parts_serve_fewer_parts() {
        // The 15 keys cutting 0..1600 into 16 parts, used for 4 and for 16 neighbourhoods.
        let quantiles: Vec<Vec<u8>> = (1..16)
            .map(|i| format!("{:016}", i * 100).into_bytes())
            .collect();
        for hoods in [2, 4, 8, 16] {
            let map = HoodMap::by_range(hoods, &quantiles, default_comparator());
            for h in 0..hoods {
                let n = keys(0..1600).iter().filter(|k| map.hood(k, 0) == h).count();
                assert_eq!(n, 1600 / hoods, "{hoods} neighbourhoods, neighbourhood {h}");
            }
        }
        assert!(!HoodMap::by_range(32, &quantiles, default_comparator()).is_by_range());
    }

    #[test]
    fn a_sample_smaller_than_the_neighbourhoods_maps_by_hash() {
        let map = HoodMap::by_range(16, &keys(0..14), default_comparator());
        assert!(!map.is_by_range());
        assert_eq!(
            map.hood(b"k", 0x1234_5678_9abc_def0),
            map.hood(b"other", 0x1234_5678_9abc_def0)
        );
        let one = HoodMap::by_range(1, &keys(0..100), default_comparator());
        assert_eq!((one.hoods(), one.hood(b"k", u64::MAX)), (1, 0));
    }

    #[test]
    fn a_sample_of_one_repeated_key_still_maps_every_key() {
        let sample = vec![b"same".to_vec(); 64];
        let map = HoodMap::by_range(8, &sample, default_comparator());
        assert_eq!(map.hood(b"a", 0), 0);
        assert_eq!(map.hood(b"same", 0), 7);
        assert_eq!(map.hood(b"z", 0), 7);
    }
}
