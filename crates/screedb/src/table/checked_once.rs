//! [`CheckedOnce`]: what a reader of a mapped file has already checked, one bit per item (a
//! sorted table's data block, a tree leaf's value record), set once the item was read in place
//! and its checksum held. Later reads through the map trust it: the mapped bytes of an
//! immutable file are the ones checked, unless the device hands back other bytes for a page the
//! kernel evicted and reads again. (LevelDB's mmap reads check a block only when asked to;
//! RocksDB checks a block when it enters the block cache, not on each use.)

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A fixed number of bits (the items asked for, rounded up to a multiple of 64), all clear at
/// first, set concurrently without locks. Clones share the bits.
#[derive(Debug, Clone)]
pub(crate) struct CheckedOnce(Arc<[AtomicU64]>);

impl CheckedOnce {
    /// Bits for `items` items (none known yet).
    pub(crate) fn new(items: usize) -> CheckedOnce {
        CheckedOnce((0..items.div_ceil(64)).map(|_| AtomicU64::new(0)).collect())
    }

    /// Whether item `i` was checked (false past the bits).
    pub(crate) fn contains(&self, i: usize) -> bool {
        self.0
            .get(i / 64)
            .is_some_and(|w| w.load(Ordering::Relaxed) & (1 << (i % 64)) != 0)
    }

    /// Records that item `i` was checked (nothing past the bits).
    pub(crate) fn insert(&self, i: usize) {
        if let Some(w) = self.0.get(i / 64) {
            w.fetch_or(1 << (i % 64), Ordering::Relaxed);
        }
    }

    /// Bytes of the bits and their shared allocation's two counts.
    pub(crate) fn bytes(&self) -> usize {
        size_of_val(&*self.0) + 16
    }
}

#[cfg(test)]
mod tests {
    use super::CheckedOnce;

    #[test]
    fn bits_are_set_one_by_one_and_nothing_past_them() {
        let c = CheckedOnce::new(130);
        assert_eq!(c.bytes(), 3 * 8 + 16);
        for i in [0, 63, 64, 129] {
            assert!(!c.contains(i));
            c.insert(i);
            assert!(c.contains(i));
        }
        assert!(!c.contains(1) && !c.contains(65) && !c.contains(128));
        c.insert(192);
        assert!(!c.contains(192));
        assert_eq!(CheckedOnce::new(0).bytes(), 16);
        let shared = c.clone();
        shared.insert(5);
        assert!(c.contains(5), "clones share the bits");
    }
}
