//! Two-level and concatenating iterators.
//!
//! A [`TwoLevelIterator`] walks an index iterator whose values each describe a child (a block
//! handle inside a table, a table inside a level) and yields the entries of the children in turn,
//! opening each child only when the walk reaches it. A [`ConcatIterator`] is a two-level
//! iterator over one level's tables: its index is the sorted list of [`FileMeta`]s, keyed by
//! each table's largest key, so a seek binary-searches the one table that can hold the target.
//!
//! Errors are sticky: once opening a child fails, or a child or the index stops with an error,
//! the iterator stays invalid and reports the error from `status()` until it is dropped. It never
//! skips over a child it could not read.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use super::InternalIterator;
use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::manifest::FileMeta;

/// Builds the child iterator for one index value.
pub type OpenChild = Box<dyn FnMut(&[u8]) -> Result<Box<dyn InternalIterator>> + Send>;

/// Builds the iterator over one table.
pub type OpenTable = Arc<dyn Fn(&FileMeta) -> Result<Box<dyn InternalIterator>> + Send + Sync>;

/// Iterates the entries of the children an index iterator describes, in index order.
///
/// REQUIRES: the children are sorted and non-overlapping, and each index key is >= every key of
/// its child and < every key of the following children (as in a table's index block).
pub struct TwoLevelIterator {
    index: Box<dyn InternalIterator>,
    open: OpenChild,
    /// The child at the index's current entry, if open.
    data: Option<Box<dyn InternalIterator>>,
    /// The index value `data` was opened from, to avoid reopening the same child.
    data_handle: Vec<u8>,
    /// The first error met opening or reading a child (sticky).
    err: Option<Error>,
}

impl fmt::Debug for TwoLevelIterator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TwoLevelIterator")
            .field("data_open", &self.data.is_some())
            .field("err", &self.err)
            .finish()
    }
}

impl TwoLevelIterator {
    /// Walks `index`, opening children with `open`. The iterator starts unpositioned.
    pub fn new(index: Box<dyn InternalIterator>, open: OpenChild) -> Self {
        TwoLevelIterator {
            index,
            open,
            data: None,
            data_handle: Vec::new(),
            err: None,
        }
    }

    /// Opens the child of the index's current entry (or drops the child if the index is
    /// exhausted). Keeps the open child when it is the same one.
    fn init_data(&mut self) {
        if self.err.is_some() || !self.index.valid() {
            self.data = None;
            return;
        }
        let handle = self.index.value();
        if self.data.is_some() && self.data_handle == handle {
            return;
        }
        match (self.open)(handle) {
            Ok(child) => {
                self.data_handle.clear();
                self.data_handle.extend_from_slice(handle);
                self.data = Some(child);
            }
            Err(e) => {
                self.err.get_or_insert(e);
                self.data = None;
            }
        }
    }

    /// True if the walk must stop here: positioned on an entry, or failed. Records a child's
    /// error.
    fn settled(&mut self) -> bool {
        if self.err.is_some() {
            self.data = None;
            return true;
        }
        match &self.data {
            Some(d) if d.valid() => true,
            Some(d) => match d.status() {
                Ok(()) => false,
                Err(e) => {
                    self.err = Some(e);
                    self.data = None;
                    true
                }
            },
            None => false,
        }
    }

    fn skip_empty_forward(&mut self) {
        while !self.settled() {
            if !self.index.valid() {
                self.data = None;
                return;
            }
            self.index.next();
            self.init_data();
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
        }
    }

    fn skip_empty_backward(&mut self) {
        while !self.settled() {
            if !self.index.valid() {
                self.data = None;
                return;
            }
            self.index.prev();
            self.init_data();
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
        }
    }
}

impl InternalIterator for TwoLevelIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && self.data.as_ref().is_some_and(|d| d.valid())
    }

    fn seek_to_first(&mut self) {
        self.index.seek_to_first();
        self.init_data();
        if let Some(d) = &mut self.data {
            d.seek_to_first();
        }
        self.skip_empty_forward();
    }

    fn seek_to_last(&mut self) {
        self.index.seek_to_last();
        self.init_data();
        if let Some(d) = &mut self.data {
            d.seek_to_last();
        }
        self.skip_empty_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        self.index.seek(target);
        self.init_data();
        if let Some(d) = &mut self.data {
            d.seek(target);
        }
        self.skip_empty_forward();
    }

    fn prefetch_seek(&mut self, target: &[u8]) {
        self.index.seek(target);
        self.init_data();
        if let Some(d) = &mut self.data {
            d.prefetch_seek(target);
        }
    }

    fn next(&mut self) {
        if let Some(d) = &mut self.data {
            d.next();
        }
        self.skip_empty_forward();
    }

    fn prev(&mut self) {
        if let Some(d) = &mut self.data {
            d.prev();
        }
        self.skip_empty_backward();
    }

    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.key())
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.value())
    }

    /// The index's error, else the current child's, else the first error met on the way.
    fn status(&self) -> Result<()> {
        self.index.status()?;
        if let Some(d) = &self.data {
            d.status()?;
        }
        self.err.clone().map_or(Ok(()), Err)
    }
}

/// The index of a [`ConcatIterator`]: one entry per table, keyed by the table's largest key,
/// valued by the table's position in the list (u64 LE).
struct FileIndexIterator {
    icmp: InternalKeyComparator,
    files: Arc<[Arc<FileMeta>]>,
    pos: Option<usize>,
    value: [u8; 8],
}

impl FileIndexIterator {
    fn set(&mut self, pos: Option<usize>) {
        self.pos = pos.filter(|&p| p < self.files.len());
        if let Some(p) = self.pos {
            self.value = (p as u64).to_le_bytes();
        }
    }
}

impl InternalIterator for FileIndexIterator {
    fn valid(&self) -> bool {
        self.pos.is_some()
    }
    fn seek_to_first(&mut self) {
        self.set(Some(0));
    }
    fn seek_to_last(&mut self) {
        self.set(self.files.len().checked_sub(1));
    }
    fn seek(&mut self, target: &[u8]) {
        let i = self
            .files
            .partition_point(|f| self.icmp.compare(&f.largest, target) == Ordering::Less);
        self.set(Some(i));
    }
    fn next(&mut self) {
        self.set(self.pos.map(|p| p + 1));
    }
    fn prev(&mut self) {
        self.set(self.pos.and_then(|p| p.checked_sub(1)));
    }
    fn key(&self) -> &[u8] {
        self.pos
            .and_then(|p| self.files.get(p))
            .map_or(&[], |f| &f.largest)
    }
    fn value(&self) -> &[u8] {
        if self.pos.is_some() { &self.value } else { &[] }
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}

/// Iterates one level's tables in key order, opening each table only when it is reached.
///
/// With [`ConcatIterator::lazy_seeks`], a seek whose target lies before the first key of the
/// table it lands on (in a gap between tables, as between the fragments of FLSM guards) does
/// not open that table: the iterator sits on the table's smallest key, taken from its
/// metadata, until something needs the entry (`prepare_value`, `next`, `prev`). A merging
/// iterator over many runs then opens only the tables whose entries it reaches.
pub struct ConcatIterator {
    inner: TwoLevelIterator,
    files: Arc<[Arc<FileMeta>]>,
    icmp: InternalKeyComparator,
    lazy_seeks: bool,
    /// Positioned on the smallest key of this table without having opened it.
    lazy_at: Option<usize>,
}

impl fmt::Debug for ConcatIterator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConcatIterator")
            .field("num_files", &self.files.len())
            .field("lazy_at", &self.lazy_at)
            .field("inner", &self.inner)
            .finish()
    }
}

impl ConcatIterator {
    /// Concatenates `files`, which must be sorted by key and non-overlapping (one level of a
    /// version; shared, so building an iterator copies no list); `open` builds the iterator
    /// over one table. The iterator starts unpositioned.
    pub fn new(icmp: InternalKeyComparator, files: Arc<[Arc<FileMeta>]>, open: OpenTable) -> Self {
        let index = FileIndexIterator {
            icmp: icmp.clone(),
            files: Arc::clone(&files),
            pos: None,
            value: [0; 8],
        };
        let tables = Arc::clone(&files);
        let open_child = move |value: &[u8]| {
            let meta = crate::coding::get_u64(value)
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| tables.get(i))
                .ok_or_else(|| {
                    Error::invalid(format!(
                        "concatenating iterator asked for table {value:?} of {}",
                        tables.len()
                    ))
                })?;
            open(meta)
        };
        ConcatIterator {
            inner: TwoLevelIterator::new(Box::new(index), Box::new(open_child)),
            files,
            icmp,
            lazy_seeks: false,
            lazy_at: None,
        }
    }

    /// Seeks that land before a table's first key leave the table unopened (see the type's
    /// comment). Every reader of such an iterator must call `prepare_value` before `value`.
    pub fn lazy_seeks(mut self) -> Self {
        self.lazy_seeks = true;
        self
    }

    /// The table a seek to `target` leaves unopened, sitting on its smallest key: with lazy
    /// seeks, the table the target falls in or before, if the target is not past its first key.
    fn lazy_table(&self, target: &[u8]) -> Option<usize> {
        if !self.lazy_seeks {
            return None;
        }
        let i = self
            .files
            .partition_point(|f| self.icmp.compare(&f.largest, target) == Ordering::Less);
        let f = self.files.get(i)?;
        (self.icmp.compare(target, &f.smallest) != Ordering::Greater).then_some(i)
    }

    /// Opens the table a lazy seek left unopened and positions on its first entry.
    fn materialize(&mut self) -> bool {
        let Some(i) = self.lazy_at.take() else {
            return false;
        };
        let smallest = Arc::clone(&self.files[i]);
        self.inner.seek(&smallest.smallest);
        true
    }
}

impl InternalIterator for ConcatIterator {
    fn valid(&self) -> bool {
        self.lazy_at.is_some() || self.inner.valid()
    }

    fn seek_to_first(&mut self) {
        self.lazy_at = None;
        self.inner.seek_to_first();
    }

    fn seek_to_last(&mut self) {
        self.lazy_at = None;
        self.inner.seek_to_last();
    }

    fn seek(&mut self, target: &[u8]) {
        self.lazy_at = self.lazy_table(target);
        if self.lazy_at.is_none() {
            self.inner.seek(target);
        }
    }

    fn prefetch_seek(&mut self, target: &[u8]) {
        if self.lazy_table(target).is_none() {
            self.inner.prefetch_seek(target);
        }
    }

    fn next(&mut self) {
        self.materialize();
        self.inner.next();
    }

    fn prev(&mut self) {
        self.materialize();
        self.inner.prev();
    }

    fn key(&self) -> &[u8] {
        match self.lazy_at {
            Some(i) => &self.files[i].smallest,
            None => self.inner.key(),
        }
    }

    fn value(&self) -> &[u8] {
        debug_assert!(self.lazy_at.is_none(), "value() before prepare_value()");
        self.inner.value()
    }

    fn prepare_value(&mut self) -> bool {
        self.materialize()
    }

    fn status(&self) -> Result<()> {
        self.inner.status()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

    use super::*;
    use crate::iter::VecIterator;
    use crate::iter::merging::tests::{
        Entry, FailingIterator, Op, arb_ops, arb_raw, check_against_model, icmp, ikey,
        scan_backward, scan_forward, sorted_entries,
    };
    use crate::key::{MAX_SEQUENCE, ValueKind, make_internal_key};
    use proptest::collection::vec;
    use proptest::prelude::*;

    /// Splits sorted `all` at the sorted `cuts` (positions may repeat: empty parts).
    fn partition(all: &[Entry], cuts: &[usize]) -> Vec<Vec<Entry>> {
        let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(all.len())).collect();
        cuts.sort_unstable();
        let mut parts = Vec::new();
        let mut start = 0;
        for c in cuts.into_iter().chain([all.len()]) {
            parts.push(all[start..c].to_vec());
            start = c;
        }
        parts
    }

    /// A two-level iterator over `parts`; an empty part is keyed by the previous part's largest
    /// key (or the smallest possible key), so the index stays sorted.
    fn two_level(parts: Vec<Vec<Entry>>) -> TwoLevelIterator {
        let mut last = make_internal_key(b"", MAX_SEQUENCE, ValueKind::Value);
        let mut index = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            if let Some((k, _)) = part.last() {
                last = k.clone();
            }
            index.push((last.clone(), (i as u64).to_le_bytes().to_vec()));
        }
        let open: OpenChild = Box::new(move |v: &[u8]| {
            let i = crate::coding::get_u64(v).unwrap() as usize;
            Ok(Box::new(VecIterator::new(parts[i].clone(), icmp())) as Box<dyn InternalIterator>)
        });
        TwoLevelIterator::new(Box::new(VecIterator::new(index, icmp())), open)
    }

    fn meta(number: u64, part: &[Entry]) -> Arc<FileMeta> {
        Arc::new(FileMeta {
            number,
            file_size: 0,
            smallest: part.first().map(|e| e.0.clone()).unwrap_or_default(),
            largest: part.last().map(|e| e.0.clone()).unwrap_or_default(),
            smallest_seq: 0,
            largest_seq: 0,
            num_entries: part.len() as u64,
            num_deletions: 0,

            ..FileMeta::default()
        })
    }

    /// A concat iterator over the non-empty `parts`; counts opens; fails to open `bad`.
    fn concat(parts: Vec<Vec<Entry>>, bad: Option<u64>) -> (ConcatIterator, Arc<AtomicUsize>) {
        let parts: Vec<Vec<Entry>> = parts.into_iter().filter(|p| !p.is_empty()).collect();
        let files = parts
            .iter()
            .enumerate()
            .map(|(i, p)| meta(i as u64, p))
            .collect();
        let opens = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&opens);
        let open: OpenTable = Arc::new(move |f: &FileMeta| {
            counter.fetch_add(1, AtomicOrdering::SeqCst);
            if Some(f.number) == bad {
                return Err(Error::corruption(
                    format!("{:06}.sst", f.number),
                    0,
                    "bad footer",
                ));
            }
            let part = parts[f.number as usize].clone();
            Ok(Box::new(VecIterator::new(part, icmp())) as Box<dyn InternalIterator>)
        });
        (ConcatIterator::new(icmp(), files, open), opens)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn two_level_matches_model(
            raw in arb_raw(),
            cuts in vec(0usize..14, 0..6),
            ops in arb_ops(),
        ) {
            let all = sorted_entries(&raw, "t");
            let mut it = two_level(partition(&all, &cuts));
            scans_and_ops_match_model(&mut it, &all, &ops)?;
        }

        #[test]
        fn concat_matches_model(
            raw in arb_raw(),
            cuts in vec(0usize..14, 0..6),
            ops in arb_ops(),
        ) {
            let all = sorted_entries(&raw, "c");
            let (mut it, _) = concat(partition(&all, &cuts), None);
            scans_and_ops_match_model(&mut it, &all, &ops)?;
        }
    }

    // Lazy seeks inside a merge: every other entry in tables (with gaps between them, where
    // lazy seeks land), the rest in a second child; the merge matches the model in every
    // direction, and the tables' unopened positions never show.
    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn lazy_concat_in_a_merge_matches_model(
            raw in arb_raw(),
            cuts in vec(0usize..14, 0..6),
            ops in arb_ops(),
        ) {
            let all = sorted_entries(&raw, "l");
            let (tabled, other): (Vec<_>, Vec<_>) =
                all.iter().cloned().enumerate().partition(|(i, _)| i % 2 == 0);
            let tabled: Vec<Entry> = tabled.into_iter().map(|(_, e)| e).collect();
            let other: Vec<Entry> = other.into_iter().map(|(_, e)| e).collect();
            let (concat, _) = concat(partition(&tabled, &cuts), None);
            let children: Vec<Box<dyn InternalIterator>> = vec![
                Box::new(concat.lazy_seeks()),
                Box::new(VecIterator::new(other, icmp())),
            ];
            let mut it = crate::iter::MergingIterator::new(icmp(), children);
            scans_and_ops_match_model(&mut it, &all, &ops)?;
        }
    }

    #[test]
    fn a_lazy_seek_into_a_gap_opens_nothing_until_the_entry_is_needed() {
        // Tables hold user keys 0..3, 6..9 and 12..15; the gaps are 3..6 and 9..12.
        let parts: Vec<Vec<Entry>> = (0..3u8)
            .map(|t| (0..3).map(|k| (ikey(6 * t + k, 1), vec![t])).collect())
            .collect();
        let (it, opens) = concat(parts, None);
        let mut it = it.lazy_seeks();
        it.seek(&ikey(4, 1));
        assert!(it.valid());
        assert_eq!(it.key(), ikey(6, 1), "the next table's smallest key");
        assert_eq!(opens.load(AtomicOrdering::SeqCst), 0);
        assert!(it.prepare_value());
        assert_eq!((it.key(), it.value()), (&ikey(6, 1)[..], &[1][..]));
        assert_eq!(opens.load(AtomicOrdering::SeqCst), 1);
        assert!(!it.prepare_value(), "nothing left to load");
        // A lazy position moves like a loaded one.
        it.seek(&ikey(10, 1));
        it.prev();
        assert_eq!(it.key(), ikey(8, 1));
        it.seek(&ikey(10, 1));
        it.next();
        assert_eq!(it.key(), ikey(13, 1));
        // A seek inside a table opens it at once.
        it.seek(&ikey(1, 1));
        assert!(!it.prepare_value());
        assert_eq!(it.value(), [0]);
    }

    /// Both full scans give `all`, and `ops` agree with it as a model.
    fn scans_and_ops_match_model(
        it: &mut dyn InternalIterator,
        all: &[Entry],
        ops: &[Op],
    ) -> Result<(), TestCaseError> {
        prop_assert_eq!(scan_forward(it), all.to_vec());
        let mut back = scan_backward(it);
        back.reverse();
        prop_assert_eq!(&back, all);
        check_against_model(it, all, ops)
    }

    /// Ten tables of three user keys each: table `t` holds user keys `3t..3t+3`.
    fn ten_tables() -> Vec<Vec<Entry>> {
        (0..10u8)
            .map(|t| (0..3).map(|k| (ikey(3 * t + k, 1), vec![t])).collect())
            .collect()
    }

    #[test]
    fn concat_opens_tables_lazily() {
        let (mut it, opens) = concat(ten_tables(), None);
        assert_eq!(opens.load(AtomicOrdering::SeqCst), 0);
        it.seek(&ikey(16, 1)); // table 5
        assert!(it.valid());
        assert_eq!(it.value(), [5]);
        assert_eq!(opens.load(AtomicOrdering::SeqCst), 1);
        it.next(); // 17, still table 5
        assert_eq!(opens.load(AtomicOrdering::SeqCst), 1);
        it.next(); // 18, table 6
        assert_eq!(it.value(), [6]);
        assert_eq!(opens.load(AtomicOrdering::SeqCst), 2);
        // Past the last table's largest key: nothing to open.
        it.seek(&ikey(40, 1));
        assert!(!it.valid());
        assert!(it.status().is_ok());
    }

    #[test]
    fn concat_open_error_stops_and_surfaces() {
        let (mut it, _) = concat(ten_tables(), Some(2));
        let seen = scan_forward(&mut it);
        assert_eq!(seen.len(), 6, "tables 0 and 1, then the error");
        assert!(!it.valid());
        let err = it.status().unwrap_err();
        assert!(err.to_string().contains("000002.sst"), "{err}");
        assert!(err.to_string().contains("bad footer"), "{err}");

        let (mut it, _) = concat(ten_tables(), Some(2));
        let seen = scan_backward(&mut it);
        assert_eq!(seen.len(), 21, "tables 9 down to 3, then the error");
        assert!(it.status().is_err());
    }

    #[test]
    fn two_level_child_error_surfaces() {
        let index = vec![
            (ikey(2, 1), 0u64.to_le_bytes().to_vec()),
            (ikey(5, 1), 1u64.to_le_bytes().to_vec()),
        ];
        let open: OpenChild = Box::new(|v: &[u8]| {
            let child: Box<dyn InternalIterator> = if v[0] == 0 {
                Box::new(VecIterator::new(
                    (0..3).map(|k| (ikey(k, 1), vec![k])).collect(),
                    icmp(),
                ))
            } else {
                Box::new(FailingIterator::new(
                    (3..6).map(|k| (ikey(k, 1), vec![k])).collect(),
                    1,
                ))
            };
            Ok(child)
        });
        let mut it = TwoLevelIterator::new(Box::new(VecIterator::new(index, icmp())), open);
        let seen = scan_forward(&mut it);
        assert_eq!(
            seen.len(),
            4,
            "three from the good child, one before the failure"
        );
        assert!(!it.valid());
        assert!(it.status().unwrap_err().is_corruption());
        // Errors are sticky.
        it.seek_to_first();
        assert!(!it.valid());
        assert!(it.status().is_err());
    }

    #[test]
    fn empty_index_is_empty() {
        let (mut it, opens) = concat(Vec::new(), None);
        it.seek_to_first();
        assert!(!it.valid());
        it.seek_to_last();
        assert!(!it.valid());
        assert_eq!(opens.load(AtomicOrdering::SeqCst), 0);
        assert!(it.status().is_ok());
    }
}
