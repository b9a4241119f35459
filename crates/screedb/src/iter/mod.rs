//! Iterators over internal keys.
//!
//! Every source of entries (memtable, table block, table, level, the whole database) is an
//! [`InternalIterator`]: a LevelDB-style positioned cursor over `(internal key, value)` pairs in
//! [`crate::comparator::InternalKeyComparator`] order. Errors do not interrupt the cursor API;
//! an iterator that meets one becomes invalid and reports it from [`InternalIterator::status`].

/// Implements [`InternalIterator`] for a wrapper type by forwarding every positioning and access
/// call to its field `$inner`; `status` forwards too, or is given as `status: |self_| expr`.
/// `prepare_value` keeps its default: wrap only iterators that never position lazily.
macro_rules! forward_internal_iterator {
    ($ty:ty, $inner:ident) => {
        $crate::iter::forward_internal_iterator!($ty, $inner, status: |it| it.$inner.status());
    };
    ($ty:ty, $inner:ident, status: |$it:ident| $status:expr) => {
        impl $crate::iter::InternalIterator for $ty {
            fn valid(&self) -> bool {
                self.$inner.valid()
            }
            fn seek_to_first(&mut self) {
                self.$inner.seek_to_first();
            }
            fn seek_to_last(&mut self) {
                self.$inner.seek_to_last();
            }
            fn seek(&mut self, target: &[u8]) {
                self.$inner.seek(target);
            }
            fn next(&mut self) {
                self.$inner.next();
            }
            fn prev(&mut self) {
                self.$inner.prev();
            }
            fn key(&self) -> &[u8] {
                self.$inner.key()
            }
            fn value(&self) -> &[u8] {
                self.$inner.value()
            }
            fn status(&self) -> $crate::error::Result<()> {
                let $it = self;
                $status
            }
        }
    };
}
pub(crate) use forward_internal_iterator;

mod concat;
mod merging;
pub(crate) mod prefetch;

pub use concat::{ConcatIterator, OpenChild, OpenTable, TwoLevelIterator};
pub use merging::MergingIterator;

use crate::error::Result;

/// A positioned cursor over sorted `(internal key, value)` entries.
pub trait InternalIterator: Send {
    /// True when positioned on an entry.
    fn valid(&self) -> bool;
    /// Positions on the first entry (invalid if there is none).
    fn seek_to_first(&mut self);
    /// Positions on the last entry (invalid if there is none).
    fn seek_to_last(&mut self);
    /// Positions on the first entry whose key is >= `target` (an internal key).
    fn seek(&mut self, target: &[u8]);
    /// Announces a `seek(target)` that must follow before any other call: an iterator may
    /// start loading what that seek will read (a mapped table's data block) without waiting
    /// for it, so a merging iterator overlaps the memory misses of its children's seeks
    /// (`iter/prefetch.rs`). The position until that seek is unspecified. Default: nothing.
    fn prefetch_seek(&mut self, target: &[u8]) {
        let _ = target;
    }
    /// Moves to the next entry. REQUIRES: `valid()`.
    fn next(&mut self);
    /// Moves to the previous entry. REQUIRES: `valid()`.
    fn prev(&mut self);
    /// The current internal key. REQUIRES: `valid()`.
    fn key(&self) -> &[u8];
    /// The current value. REQUIRES: `valid()`, and [`InternalIterator::prepare_value`]
    /// called since the last positioning call if the iterator may position lazily.
    fn value(&self) -> &[u8];
    /// Loads the current entry when a positioning call only placed the iterator on its key
    /// without reading it (a [`ConcatIterator`] built with
    /// [`lazy_seeks`](ConcatIterator::lazy_seeks): a table is opened only when its first
    /// entry is needed). Returns true if it loaded something: the iterator may then sit on a
    /// later key, or be invalid with an error. Default: nothing to load.
    fn prepare_value(&mut self) -> bool {
        false
    }
    /// The first error met, if any. An iterator with an error is not valid.
    fn status(&self) -> Result<()>;
}

impl<I: InternalIterator + ?Sized> InternalIterator for Box<I> {
    fn valid(&self) -> bool {
        (**self).valid()
    }
    fn seek_to_first(&mut self) {
        (**self).seek_to_first()
    }
    fn seek_to_last(&mut self) {
        (**self).seek_to_last()
    }
    fn seek(&mut self, target: &[u8]) {
        (**self).seek(target)
    }
    fn prefetch_seek(&mut self, target: &[u8]) {
        (**self).prefetch_seek(target)
    }
    fn next(&mut self) {
        (**self).next()
    }
    fn prev(&mut self) {
        (**self).prev()
    }
    fn key(&self) -> &[u8] {
        (**self).key()
    }
    fn value(&self) -> &[u8] {
        (**self).value()
    }
    fn prepare_value(&mut self) -> bool {
        (**self).prepare_value()
    }
    fn status(&self) -> Result<()> {
        (**self).status()
    }
}

/// An iterator over nothing: stands in for one that was moved elsewhere.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EmptyIterator;

impl InternalIterator for EmptyIterator {
    fn valid(&self) -> bool {
        false
    }
    fn seek_to_first(&mut self) {}
    fn seek_to_last(&mut self) {}
    fn seek(&mut self, _target: &[u8]) {}
    fn next(&mut self) {}
    fn prev(&mut self) {}
    fn key(&self) -> &[u8] {
        &[]
    }
    fn value(&self) -> &[u8] {
        &[]
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

/// An iterator over a sorted in-memory vector of entries; handy in tests and for small sources.
#[derive(Debug, Clone)]
pub struct VecIterator {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    cmp: crate::comparator::InternalKeyComparator,
    pos: Option<usize>,
}

impl VecIterator {
    /// Wraps entries already sorted by `cmp`.
    pub fn new(
        entries: Vec<(Vec<u8>, Vec<u8>)>,
        cmp: crate::comparator::InternalKeyComparator,
    ) -> Self {
        VecIterator {
            entries,
            cmp,
            pos: None,
        }
    }
}

impl InternalIterator for VecIterator {
    fn valid(&self) -> bool {
        self.pos.is_some()
    }
    fn seek_to_first(&mut self) {
        self.pos = if self.entries.is_empty() {
            None
        } else {
            Some(0)
        };
    }
    fn seek_to_last(&mut self) {
        self.pos = self.entries.len().checked_sub(1);
    }
    fn seek(&mut self, target: &[u8]) {
        let i = self
            .entries
            .partition_point(|(k, _)| self.cmp.compare(k, target) == std::cmp::Ordering::Less);
        self.pos = (i < self.entries.len()).then_some(i);
    }
    fn next(&mut self) {
        self.pos = self
            .pos
            .and_then(|p| (p + 1 < self.entries.len()).then_some(p + 1));
    }
    fn prev(&mut self) {
        self.pos = self.pos.and_then(|p| p.checked_sub(1));
    }
    fn key(&self) -> &[u8] {
        self.pos
            .and_then(|p| self.entries.get(p))
            .map_or(&[], |(k, _)| k)
    }
    fn value(&self) -> &[u8] {
        self.pos
            .and_then(|p| self.entries.get(p))
            .map_or(&[], |(_, v)| v)
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}
