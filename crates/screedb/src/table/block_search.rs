//! A search aid for a table's index block under the bytewise order: one dense array of 8-byte
//! key windows, so a seek binary-searches integers in one allocation instead of decoding a
//! varint entry header and comparing keys at every step.
//!
//! An index block has one restart point per entry (restart interval 1), ~16k entries for a
//! 64 MiB table of 4 KiB blocks. Searching it the plain way decodes a varint entry header and
//! compares whole keys at every step. Here each restart key's user key contributes 8 bytes: the
//! 8 that follow a prefix the block's keys share (zero-padded, big-endian). For the bytewise
//! order a smaller window means a smaller user key, so an integer binary search over one dense
//! array cuts the search to the few restart points whose windows equal the target's, which the
//! block iterator then compares in full.
//!
//! The prefix is the one shared by the first and the second-to-last restart keys: the last
//! separator of a table's index is a short successor of its last key (`"1"` after
//! `"0000000099999999"`), which would otherwise leave no shared prefix at all. Keys outside the
//! prefix get window 0 (below it) or `u64::MAX` (above it), which keeps the windows
//! non-decreasing and leaves such keys to the full comparison.
//!
//! Kept in memory only (nothing on disk changes); built when a table is opened, 8 bytes per
//! index entry (~128 KiB per 64 MiB table).

use std::ops::Range;

/// Per restart point of one block, the 8 user-key bytes after the block's common prefix.
#[derive(Debug)]
pub(super) struct RestartWindows {
    /// Bytes every restart key's user key starts with.
    prefix: Box<[u8]>,
    /// Window of each restart key, in restart order (non-decreasing).
    windows: Box<[u64]>,
    /// Every `STRIDE`th window: a small array that stays in cache and picks the stretch of
    /// `windows` to search (so a search misses the cache a few times, not at every step).
    top: Box<[u64]>,
}

/// Windows per stretch of [`RestartWindows::top`] (512 bytes: 8 cache lines).
const STRIDE: usize = 64;

impl RestartWindows {
    /// Builds the windows of the user keys of a block's restart keys, given in order (`None`
    /// when there are none).
    pub(super) fn build(user_keys: &[&[u8]]) -> Option<Self> {
        let first = user_keys.first()?;
        let last = user_keys[user_keys.len().saturating_sub(2)];
        let shared = first.iter().zip(last).take_while(|(a, b)| a == b).count();
        let prefix: Box<[u8]> = first[..shared].into();
        let windows: Box<[u64]> = user_keys.iter().map(|k| window_of(&prefix, k)).collect();
        let top = windows.iter().step_by(STRIDE).copied().collect();
        Some(RestartWindows {
            prefix,
            windows,
            top,
        })
    }

    /// The restart points whose user keys may equal `user_key`: every restart key before the
    /// range has a smaller user key, every one from its end on a larger one.
    pub(super) fn candidates(&self, user_key: &[u8]) -> Range<usize> {
        let w = window_of(&self.prefix, user_key);
        // Windows before stretch b - 1 are below top[b - 1] < w; windows from b * STRIDE on are
        // at least top[b] >= w: the first window >= w lies in between.
        let b = self.top.partition_point(|&x| x < w);
        let start = b.saturating_sub(1) * STRIDE;
        let end = (b * STRIDE).min(self.windows.len());
        let lo = start + self.windows[start..end].partition_point(|&x| x < w);
        // Few keys share a window: walk them rather than search the rest of the array again.
        let hi = lo + self.windows[lo..].iter().take_while(|&&x| x == w).count();
        lo..hi
    }
}

/// The window of `key` after `prefix`: its next 8 bytes if it starts with `prefix`, else 0 or
/// `u64::MAX` as it sorts below or above every key that does.
fn window_of(prefix: &[u8], key: &[u8]) -> u64 {
    match key.strip_prefix(prefix) {
        Some(rest) => window(rest),
        None if key < prefix => 0,
        None => u64::MAX,
    }
}

/// The first 8 bytes of `bytes`, zero-padded, as a big-endian integer: `window(a) < window(b)`
/// implies `a < b` in byte order (equal windows decide nothing).
fn window(bytes: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    let n = bytes.len().min(8);
    w[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn windows(keys: &[Vec<u8>]) -> RestartWindows {
        let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        RestartWindows::build(&keys).unwrap()
    }

    #[test]
    fn common_prefix_is_skipped_even_after_a_short_last_separator() {
        let keys: Vec<Vec<u8>> = [
            "0000000012345678",
            "0000000012349999",
            "0000000099999999",
            "1",
        ]
        .map(|k| k.as_bytes().to_vec())
        .into();
        let w = windows(&keys);
        assert_eq!(&*w.prefix, b"00000000");
        assert_eq!(w.candidates(b"0000000012345678"), 0..1);
        assert_eq!(w.candidates(b"0000000012345679"), 1..1);
        assert_eq!(w.candidates(b"0000000099999999"), 2..3);
        assert_eq!(w.candidates(b"00000000"), 0..0);
        assert_eq!(w.candidates(b""), 0..0);
        assert_eq!(w.candidates(b"1"), 3..4);
        assert_eq!(w.candidates(b"2"), 3..4);
        assert!(RestartWindows::build(&[]).is_none());
    }

    #[test]
    fn stretches_find_what_a_full_search_finds() {
        let keys: Vec<Vec<u8>> = (0..1000u32)
            .map(|i| format!("user{:08}", i * 3).into_bytes())
            .collect();
        let w = windows(&keys);
        assert_eq!(w.top.len(), 1000usize.div_ceil(STRIDE));
        for t in 0..3002u32 {
            let target = format!("user{t:08}").into_bytes();
            let first_ge = keys.partition_point(|k| k < &target);
            let present = t % 3 == 0 && t < 3000;
            let expected = first_ge..first_ge + usize::from(present);
            assert_eq!(w.candidates(&target), expected, "{t}");
        }
    }

    proptest! {
        /// The candidate range brackets the target exactly as a full comparison of every key
        /// would: keys before it are smaller, keys from its end on are larger.
        #[test]
        fn candidates_bracket_the_target(
            keys in proptest::collection::btree_set(
                proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(b'a'), any::<u8>()], 0..14),
                1..300,
            ),
            target in proptest::collection::vec(prop_oneof![Just(0u8), Just(1u8), Just(b'a'), any::<u8>()], 0..14),
            common in proptest::collection::vec(any::<u8>(), 0..4),
            short_successor_last in any::<bool>(),
        ) {
            let mut keys: Vec<Vec<u8>> = keys.into_iter().map(|k| [common.clone(), k].concat()).collect();
            if short_successor_last {
                // Larger than every key, sharing nothing with them (like an index's last separator).
                keys.push(vec![0xff; 20]);
            }
            let target = if target.first() == Some(&1) { [common.clone(), target].concat() } else { target };
            let w = windows(&keys);
            let r = w.candidates(&target);
            prop_assert!(r.start <= r.end && r.end <= keys.len());
            for (i, k) in keys.iter().enumerate() {
                if i < r.start {
                    prop_assert!(k.as_slice() < target.as_slice(), "{:?} before {:?}", k, r);
                } else if i >= r.end {
                    prop_assert!(k.as_slice() > target.as_slice(), "{:?} after {:?}", k, r);
                }
            }
        }
    }
}
