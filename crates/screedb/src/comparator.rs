//! Orderings of user keys and of internal keys.
//!
//! The comparator's [`Comparator::name`] is persisted in the manifest; a database cannot be
//! reopened with a comparator of another name.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use crate::key::{self, TRAILER_LEN};

/// A total order on user keys.
pub trait Comparator: Send + Sync + 'static {
    /// A stable name, persisted in the manifest. Change it whenever the order changes.
    fn name(&self) -> &str;

    /// Three-way comparison of two user keys.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;

    /// A short key `k` with `start <= k < limit` (when `start < limit`), used for index
    /// separators. Returning `start` unchanged is always correct.
    fn find_shortest_separator(&self, start: &[u8], limit: &[u8]) -> Vec<u8> {
        let _ = limit;
        start.to_vec()
    }

    /// A short key `k >= key`. Returning `key` unchanged is always correct.
    fn find_short_successor(&self, key: &[u8]) -> Vec<u8> {
        key.to_vec()
    }

    /// True only if `compare` is exactly lexicographic byte order; table index searches then
    /// use a faster layout (see `table/block_search.rs`). Default: false.
    fn is_bytewise(&self) -> bool {
        false
    }
}

/// Lexicographic byte order, LevelDB's default; its name matches LevelDB's.
#[derive(Debug, Clone, Copy, Default)]
pub struct BytewiseComparator;

impl Comparator for BytewiseComparator {
    fn name(&self) -> &str {
        "leveldb.BytewiseComparator"
    }

    fn is_bytewise(&self) -> bool {
        true
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        bytewise_cmp(a, b)
    }

    fn find_shortest_separator(&self, start: &[u8], limit: &[u8]) -> Vec<u8> {
        let common = start.iter().zip(limit).take_while(|(a, b)| a == b).count();
        if common < start.len().min(limit.len()) {
            let byte = start[common];
            if byte < 0xff && byte + 1 < limit[common] {
                let mut sep = start[..=common].to_vec();
                sep[common] += 1;
                debug_assert!(sep.as_slice() < limit);
                return sep;
            }
        }
        start.to_vec()
    }

    fn find_short_successor(&self, key: &[u8]) -> Vec<u8> {
        for (i, &b) in key.iter().enumerate() {
            if b != 0xff {
                let mut succ = key[..=i].to_vec();
                succ[i] += 1;
                return succ;
            }
        }
        key.to_vec()
    }
}

/// The smallest key greater than every key starting with `prefix` in bytewise order, if any
/// (`None` when the prefix is empty or all `0xff`: no key bounds it).
pub fn bytewise_prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// The comparator used when none is given.
pub fn default_comparator() -> Arc<dyn Comparator> {
    Arc::new(BytewiseComparator)
}

/// The first eight bytes of `user_key` as a big-endian integer, zero-padded. For two keys `a`,
/// `b` under the bytewise order, `bytewise_prefix(a) < bytewise_prefix(b)` implies `a < b`
/// (a key shorter than eight bytes is padded with zeros, which sort first, as a shorter key
/// does), so only keys with equal prefixes need their bytes compared.
#[inline]
pub fn bytewise_prefix(user_key: &[u8]) -> u64 {
    let mut p = [0u8; 8];
    let n = user_key.len().min(8);
    p[..n].copy_from_slice(&user_key[..n]);
    u64::from_be_bytes(p)
}

/// Bytes [`bytewise_cmp`] compares as integers before it leaves the rest to `memcmp`.
const INLINE_COMPARE_BYTES: usize = 24;

/// `a.cmp(b)` for byte strings, with the first [`INLINE_COMPARE_BYTES`] compared eight at a
/// time as big-endian integers in line: keys are mostly short, and most comparisons are
/// decided there without a call to `memcmp` (whose length dispatch costs more than the
/// comparison of a 16-byte key).
#[inline]
pub(crate) fn bytewise_cmp(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n && i < INLINE_COMPARE_BYTES {
        let word = |s: &[u8]| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&s[i..i + 8]);
            u64::from_be_bytes(w)
        };
        let (x, y) = (word(a), word(b));
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    if i == n {
        return a.len().cmp(&b.len());
    }
    a[i..].cmp(&b[i..])
}

/// Orders internal keys: user key ascending, then trailer (sequence, kind) descending.
#[derive(Clone)]
pub struct InternalKeyComparator {
    user: Arc<dyn Comparator>,
    /// `user.is_bytewise()`: user keys are then compared as slices, without a dynamic call
    /// (every seek, get and merge step compares internal keys).
    bytewise: bool,
}

impl fmt::Debug for InternalKeyComparator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InternalKeyComparator")
            .field("user", &self.user.name())
            .finish()
    }
}

impl InternalKeyComparator {
    /// Wraps a user comparator.
    pub fn new(user: Arc<dyn Comparator>) -> Self {
        let bytewise = user.is_bytewise();
        InternalKeyComparator { user, bytewise }
    }

    /// Whether user keys compare as byte strings (so a prefix they share can be taken off
    /// both sides of a comparison without changing its answer).
    pub fn is_bytewise(&self) -> bool {
        self.bytewise
    }

    /// The user comparator.
    pub fn user(&self) -> &Arc<dyn Comparator> {
        &self.user
    }

    /// Compares two internal keys.
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        self.compare_user(a, b)
            .then_with(|| key::trailer(b).cmp(&key::trailer(a)))
    }

    /// Compares the user keys of two internal keys.
    #[inline]
    pub fn compare_user(&self, a: &[u8], b: &[u8]) -> Ordering {
        let (a, b) = (key::user_key(a), key::user_key(b));
        if self.bytewise {
            bytewise_cmp(a, b)
        } else {
            self.user.compare(a, b)
        }
    }

    /// A short internal key `k` with `start <= k < limit`, for index separators.
    pub fn find_shortest_separator(&self, start: &[u8], limit: &[u8]) -> Vec<u8> {
        let (us, ul) = (key::user_key(start), key::user_key(limit));
        let sep = self.user.find_shortest_separator(us, ul);
        if sep.len() < us.len() && self.user.compare(us, &sep) == Ordering::Less {
            // A physically shorter but logically larger user key: give it the earliest
            // possible trailer so it still sorts before every entry of `limit`'s user key.
            let mut k = sep;
            k.extend_from_slice(
                &key::pack_trailer(key::MAX_SEQUENCE, key::ValueKind::FOR_SEEK).to_le_bytes(),
            );
            debug_assert_eq!(self.compare(start, &k), Ordering::Less);
            debug_assert_eq!(self.compare(&k, limit), Ordering::Less);
            return k;
        }
        start.to_vec()
    }

    /// A short internal key `k >= key`, for the last index separator of a table.
    pub fn find_short_successor(&self, ikey: &[u8]) -> Vec<u8> {
        let uk = key::user_key(ikey);
        let succ = self.user.find_short_successor(uk);
        if succ.len() < uk.len() && self.user.compare(uk, &succ) == Ordering::Less {
            let mut k = succ;
            k.extend_from_slice(
                &key::pack_trailer(key::MAX_SEQUENCE, key::ValueKind::FOR_SEEK).to_le_bytes(),
            );
            return k;
        }
        ikey.to_vec()
    }
}

/// Bytes in an internal key's trailer (re-exported for callers that only import this module).
pub const INTERNAL_TRAILER_LEN: usize = TRAILER_LEN;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{ValueKind, make_internal_key};
    use proptest::prelude::*;

    #[test]
    fn internal_order_is_user_then_newest_first() {
        let c = InternalKeyComparator::new(default_comparator());
        let a5 = make_internal_key(b"a", 5, ValueKind::Value);
        let a3 = make_internal_key(b"a", 3, ValueKind::Value);
        let a5d = make_internal_key(b"a", 5, ValueKind::Deletion);
        let b1 = make_internal_key(b"b", 1, ValueKind::Value);
        assert_eq!(c.compare(&a5, &a3), Ordering::Less);
        assert_eq!(c.compare(&a5, &a5d), Ordering::Less);
        assert_eq!(c.compare(&a3, &b1), Ordering::Less);
        assert_eq!(c.compare(&b1, &b1), Ordering::Equal);
    }

    proptest! {
        /// The in-line comparison orders as the slices' own `cmp` does, across the word
        /// boundaries and past the bytes it compares in line (keys sharing long prefixes).
        #[test]
        fn bytewise_cmp_is_slice_order(
            shared in proptest::collection::vec(prop_oneof![Just(0u8), Just(0xffu8), any::<u8>()], 0..40),
            a in proptest::collection::vec(prop_oneof![Just(0u8), Just(0xffu8), any::<u8>()], 0..12),
            b in proptest::collection::vec(prop_oneof![Just(0u8), Just(0xffu8), any::<u8>()], 0..12),
        ) {
            let a = [shared.clone(), a].concat();
            let b = [shared, b].concat();
            prop_assert_eq!(bytewise_cmp(&a, &b), a.cmp(&b));
            prop_assert_eq!(bytewise_cmp(&b, &a), b.cmp(&a));
            prop_assert_eq!(bytewise_cmp(&a, &a), Ordering::Equal);
        }

        #[test]
        fn separators_lie_between(
            a in proptest::collection::vec(any::<u8>(), 0..12),
            b in proptest::collection::vec(any::<u8>(), 0..12),
            sa in 0u64..1000, sb in 0u64..1000,
        ) {
            let c = InternalKeyComparator::new(default_comparator());
            let ka = make_internal_key(&a, sa, ValueKind::Value);
            let kb = make_internal_key(&b, sb, ValueKind::Value);
            let (lo, hi) = if c.compare(&ka, &kb) == Ordering::Less { (ka, kb) } else { (kb, ka) };
            prop_assume!(c.compare(&lo, &hi) == Ordering::Less);
            let sep = c.find_shortest_separator(&lo, &hi);
            prop_assert!(c.compare(&lo, &sep) != Ordering::Greater);
            prop_assert!(c.compare(&sep, &hi) == Ordering::Less);
            let succ = c.find_short_successor(&lo);
            prop_assert!(c.compare(&lo, &succ) != Ordering::Greater);
        }
    }
}
