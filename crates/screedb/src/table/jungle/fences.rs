//! [`LeafFences`]: a tree reader's index of its leaves (each leaf's last key and handle, in key
//! order, the keys back to back), gathered at open from the internal nodes it keeps. A get
//! finds its leaf with one binary search over contiguous keys, as a sorted table searches its
//! index block, instead of one search per level over children whose keys each lie in their own
//! allocation (on aged full-size stores, gets 15-17% faster: docs/jungle.md, "Reads").

use std::cmp::Ordering;

use super::node::Handle;
use crate::comparator::InternalKeyComparator;

/// The last internal key and the handle of each leaf of a tree, in key order, their keys in one
/// buffer.
#[derive(Debug, Default)]
pub(super) struct LeafFences {
    /// The keys, back to back.
    keys: Vec<u8>,
    /// Where each key ends in `keys`.
    ends: Vec<usize>,
    /// Each leaf's handle.
    handles: Vec<Handle>,
}

impl LeafFences {
    pub(super) fn push(&mut self, last: &[u8], handle: Handle) {
        self.keys.extend_from_slice(last);
        self.ends.push(self.keys.len());
        self.handles.push(handle);
    }

    pub(super) fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }

    /// Bytes held (counted as the tree's metadata).
    pub(super) fn bytes(&self) -> u64 {
        let per_leaf = std::mem::size_of::<usize>() + std::mem::size_of::<Handle>();
        (self.keys.len() + self.handles.len() * per_leaf) as u64
    }

    /// The last key of leaf `i` (empty past the end).
    pub(super) fn key(&self, i: usize) -> &[u8] {
        let start = match i.checked_sub(1) {
            Some(p) => self.ends.get(p).copied().unwrap_or_default(),
            None => 0,
        };
        self.ends
            .get(i)
            .and_then(|&end| self.keys.get(start..end))
            .unwrap_or_default()
    }

    /// The first leaf whose last key is >= `target` (the number of leaves if none is).
    pub(super) fn partition_point(&self, icmp: &InternalKeyComparator, target: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.handles.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if icmp.compare(self.key(mid), target) == Ordering::Less {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    pub(super) fn handle(&self, i: usize) -> Option<Handle> {
        self.handles.get(i).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::ValueKind;
    use crate::table::jungle::tests::{icmp, ik};

    #[test]
    fn finds_the_first_leaf_whose_last_key_is_not_below_the_target() {
        let mut f = LeafFences::default();
        let h = |offset| Handle { offset, size: 1 };
        // Keys of different lengths, so a wrong start or end in the buffer shows.
        f.push(&ik(b"b", 5, ValueKind::Value), h(0));
        f.push(&ik(b"dddd", 5, ValueKind::Value), h(10));
        f.push(&ik(b"f", 5, ValueKind::Value), h(20));
        let at = |user: &[u8], seq| f.partition_point(&icmp(), &ik(user, seq, ValueKind::Value));
        assert_eq!(at(b"a", 1), 0);
        assert_eq!(at(b"b", 9), 0, "a newer version sorts first");
        assert_eq!(at(b"b", 4), 1, "an older one is past the leaf's last key");
        assert_eq!(at(b"c", 1), 1);
        assert_eq!(at(b"dddd", 5), 1);
        assert_eq!(at(b"e", 1), 2);
        assert_eq!(at(b"g", 1), 3);
        assert_eq!(f.handle(1), Some(h(10)));
        assert_eq!(f.handle(3), None);
        assert_eq!(f.key(1), ik(b"dddd", 5, ValueKind::Value).as_slice());
        assert!(f.key(3).is_empty());
        let per_leaf = std::mem::size_of::<usize>() + std::mem::size_of::<Handle>();
        assert_eq!(f.bytes(), (9 + 12 + 9) as u64 + 3 * per_leaf as u64);
    }
}
