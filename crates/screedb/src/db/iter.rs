//! The user-facing iterator: internal entries collapsed to the newest visible version per key.
//!
//! Follows LevelDB's DBIter. Moving forward, the inner iterator sits on the entry being returned.
//! Moving backward, it sits just before all entries of the current key, whose newest visible
//! version is copied into `saved_key`/`saved_value`.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::{Arc, Weak};

use super::iter_pool::Sources;
use super::{DbInner, SuperVersion};
use crate::comparator::Comparator;
use crate::error::{Error, Result};
use crate::iter::{EmptyIterator, InternalIterator};
use crate::key::{self, SequenceNumber, ValueKind};
use crate::version::obsolete::{ObsoleteFiles, PurgeOnDrop};

/// What an iterator of the latest state needs to read it again.
struct Refresh {
    db: Weak<DbInner>,
    /// The prefix a [`crate::Db::prefix`] iterator was built for (its tables are chosen by it).
    prefix: Option<Vec<u8>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    Forward,
    Reverse,
}

/// An ordered cursor over the database as of one sequence number.
pub struct DbIterator {
    // Field order matters: `inner` must drop before `_pinned` so that the version it reads from
    // is released last (tables are deleted when their last holder drops).
    inner: Box<dyn InternalIterator>,
    ucmp: Arc<dyn Comparator>,
    sequence: SequenceNumber,
    direction: Direction,
    valid: bool,
    saved_key: Vec<u8>,
    saved_value: Vec<u8>,
    error: Option<Error>,
    /// FLSM seek compaction: the database whose background threads a hot guard wakes (weak, so
    /// an iterator never keeps a closed database alive).
    seek_counting: Option<Weak<DbInner>>,
    /// Where [`DbIterator::refresh`] reads the latest state from; `None` for an iterator at a
    /// snapshot.
    refresh: Option<Refresh>,
    /// The database whose pool of sources `inner` goes back to when the iterator drops
    /// (`iter_pool.rs`); `None` for sources chosen for a prefix.
    pool: Option<Weak<DbInner>>,
    /// The [`super::iter_pool::stamp`] of the sources `inner` was built from.
    stamp: usize,
    _pinned: Arc<SuperVersion>,
    /// Dropped after `_pinned`: deletes the tables the pinned version was the last to hold (an
    /// iterator may outlive the compaction that replaced them).
    _purge: PurgeOnDrop<Arc<ObsoleteFiles>>,
}

impl std::fmt::Debug for DbIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbIterator")
            .field("sequence", &self.sequence)
            .field("valid", &self.valid)
            .finish_non_exhaustive()
    }
}

impl Drop for DbIterator {
    /// Gives the merged iterator to the database's pool of sources (`iter_pool.rs`) unless it
    /// failed or the database is closing; the fields then drop as declared.
    fn drop(&mut self) {
        let Some(db) = self.pool.take().and_then(|db| db.upgrade()) else {
            return;
        };
        if db.check_open().is_err() || self.inner.status().is_err() {
            return;
        }
        let merged = std::mem::replace(&mut self.inner, Box::new(EmptyIterator));
        db.iter_pool.give(
            &db.super_version,
            Sources {
                merged,
                sv: Arc::clone(&self._pinned),
                stamp: self.stamp,
            },
        );
    }
}

impl DbIterator {
    pub(crate) fn new(
        inner: Box<dyn InternalIterator>,
        ucmp: Arc<dyn Comparator>,
        sequence: SequenceNumber,
        (pinned, stamp): (Arc<SuperVersion>, usize),
        obsolete: Arc<ObsoleteFiles>,
    ) -> Self {
        DbIterator {
            inner,
            ucmp,
            sequence,
            direction: Direction::Forward,
            valid: false,
            saved_key: Vec::new(),
            saved_value: Vec::new(),
            error: None,
            seek_counting: None,
            refresh: None,
            pool: None,
            stamp,
            _pinned: pinned,
            _purge: PurgeOnDrop(obsolete),
        }
    }

    /// Lets [`DbIterator::refresh`] read the latest state of `db` again (tables chosen for
    /// `prefix`, if given).
    pub(crate) fn refresh_from(&mut self, db: Weak<DbInner>, prefix: Option<Vec<u8>>) {
        self.refresh = Some(Refresh { db, prefix });
    }

    /// Hands `inner` to `db`'s pool of sources when the iterator drops, for the next iterator
    /// over the same sources.
    pub(crate) fn return_sources_to(&mut self, db: Weak<DbInner>) {
        self.pool = Some(db);
    }

    /// Moves the iterator to the database's latest state (RocksDB's `Iterator::Refresh`): it
    /// then sees every write made before this call, and is left unpositioned (seek again).
    /// When no flush or compaction happened since the iterator last pinned its sources (and
    /// no memtable started a new run), it keeps them (nothing is opened again) and reads them
    /// at the newer sequence; else it opens the new ones. An iterator created at a snapshot
    /// reads that snapshot for good: [`Error::InvalidArgument`]; so is a refresh after the
    /// database was closed.
    pub fn refresh(&mut self) -> Result<()> {
        let Some(refresh) = &self.refresh else {
            return Err(Error::invalid(
                "refresh: this iterator reads at a snapshot, which does not move",
            ));
        };
        let db = refresh
            .db
            .upgrade()
            .ok_or_else(|| Error::invalid("refresh: the database was closed"))?;
        db.check_open()?;
        let (sequence, sv) = super::pin_for_scan(&db, None);
        let same = super::iter_pool::reads_all_of(&self._pinned, self.stamp, &sv);
        if !same || self.inner.status().is_err() {
            let (merged, stamp) = super::sources(&db, &sv, refresh.prefix.as_deref())?;
            // The old sources drop before the version that holds their tables.
            self.inner = merged;
            self.stamp = stamp;
            self._pinned = sv;
        }
        self.sequence = sequence;
        self.direction = Direction::Forward;
        self.valid = false;
        self.error = None;
        self.saved_key.clear();
        self.saved_value.clear();
        Ok(())
    }

    /// Counts every [`DbIterator::seek`] in the seek counters of the pinned version's guards.
    pub(crate) fn count_seeks(&mut self, inner: Weak<DbInner>) {
        self.seek_counting = Some(inner);
    }

    /// True when positioned on an entry.
    pub fn valid(&self) -> bool {
        self.valid
    }

    /// The current key. REQUIRES: `valid()`.
    pub fn key(&self) -> &[u8] {
        match self.direction {
            Direction::Forward => key::user_key(self.inner.key()),
            Direction::Reverse => &self.saved_key,
        }
    }

    /// The current value. REQUIRES: `valid()`.
    pub fn value(&self) -> &[u8] {
        match self.direction {
            Direction::Forward => self.inner.value(),
            Direction::Reverse => &self.saved_value,
        }
    }

    /// The first error met (corruption or I/O); an iterator with an error is not valid.
    pub fn status(&self) -> Result<()> {
        match &self.error {
            Some(e) => Err(e.clone()),
            None => self.inner.status(),
        }
    }

    /// Positions on the first key.
    pub fn seek_to_first(&mut self) {
        self.direction = Direction::Forward;
        self.saved_value.clear();
        self.inner.seek_to_first();
        self.find_next_user_entry(false);
    }

    /// Positions on the last key.
    pub fn seek_to_last(&mut self) {
        self.direction = Direction::Reverse;
        self.saved_value.clear();
        self.inner.seek_to_last();
        self.find_prev_user_entry();
    }

    /// Positions on the first key >= `target`.
    pub fn seek(&mut self, target: &[u8]) {
        self.direction = Direction::Forward;
        self.saved_value.clear();
        // The seek's internal key is built in `saved_key`'s buffer (no allocation per seek);
        // the buffer is cleared again before anything reads it as a user key.
        self.saved_key.clear();
        key::append_internal_key(
            &mut self.saved_key,
            target,
            self.sequence,
            ValueKind::FOR_SEEK,
        );
        self.inner.seek(&self.saved_key);
        self.saved_key.clear();
        if let Some(db) = &self.seek_counting
            && let Some(db) = db.upgrade()
        {
            let cost = self
                ._pinned
                .version
                .record_seek(target, db.seek_threshold());
            db.count_read_cost(cost);
        }
        self.find_next_user_entry(false);
    }

    /// Moves to the next key. REQUIRES: `valid()`.
    pub fn next(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Reverse {
            self.direction = Direction::Forward;
            // The inner iterator is before the entries of saved_key: step into them, then skip.
            if self.inner.valid() {
                self.inner.next();
            } else {
                self.inner.seek_to_first();
            }
        } else {
            // Into the buffer it already has: a step allocates nothing.
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(key::user_key(self.inner.key()));
            self.inner.next();
        }
        self.find_next_user_entry(true);
    }

    /// Moves to the previous key. REQUIRES: `valid()`.
    pub fn prev(&mut self) {
        if !self.valid {
            return;
        }
        if self.direction == Direction::Forward {
            self.saved_key.clear();
            self.saved_key
                .extend_from_slice(key::user_key(self.inner.key()));
            loop {
                self.inner.prev();
                if !self.inner.valid() {
                    self.valid = false;
                    self.saved_key.clear();
                    self.saved_value.clear();
                    return;
                }
                if self
                    .ucmp
                    .compare(key::user_key(self.inner.key()), &self.saved_key)
                    == Ordering::Less
                {
                    break;
                }
            }
            self.direction = Direction::Reverse;
        }
        self.find_prev_user_entry();
    }

    fn parse_current(&mut self) -> Option<(SequenceNumber, ValueKind)> {
        match key::parse_internal_key(self.inner.key()) {
            Some(p) => Some((p.seq, p.kind)),
            None => {
                self.error.get_or_insert_with(|| {
                    Error::corruption("iterator", 0, "internal key with a bad trailer")
                });
                None
            }
        }
    }

    /// Forward: from the inner position, finds the first visible, non-deleted key, skipping
    /// entries of `saved_key` when `skipping`.
    fn find_next_user_entry(&mut self, mut skipping: bool) {
        while self.inner.valid() {
            if let Some((seq, kind)) = self.parse_current() {
                if seq <= self.sequence {
                    let ukey = key::user_key(self.inner.key());
                    match kind {
                        ValueKind::Deletion => {
                            self.saved_key.clear();
                            self.saved_key.extend_from_slice(ukey);
                            skipping = true;
                        }
                        ValueKind::Value => {
                            let hidden = skipping
                                && self.ucmp.compare(ukey, &self.saved_key) != Ordering::Greater;
                            if !hidden {
                                self.valid = true;
                                self.saved_key.clear();
                                return;
                            }
                        }
                    }
                }
            } else {
                break;
            }
            self.inner.next();
        }
        self.valid = false;
        self.saved_key.clear();
    }

    /// Backward: from the inner position, finds the newest visible version of the previous key
    /// that is not deleted, leaving the inner iterator before all its entries.
    fn find_prev_user_entry(&mut self) {
        let mut kind_found = ValueKind::Deletion;
        while self.inner.valid() {
            let Some((seq, kind)) = self.parse_current() else {
                break;
            };
            if seq <= self.sequence {
                let ukey = key::user_key(self.inner.key());
                if kind_found != ValueKind::Deletion
                    && self.ucmp.compare(ukey, &self.saved_key) == Ordering::Less
                {
                    break; // reached the entries of an earlier key
                }
                kind_found = kind;
                self.saved_key.clear();
                self.saved_value.clear();
                if kind == ValueKind::Value {
                    self.saved_key.extend_from_slice(ukey);
                    self.saved_value.extend_from_slice(self.inner.value());
                }
            }
            self.inner.prev();
        }
        if kind_found == ValueKind::Deletion || self.error.is_some() {
            self.valid = false;
            self.saved_key.clear();
            self.saved_value.clear();
            self.direction = Direction::Forward;
        } else {
            self.valid = true;
        }
    }

    /// Turns this cursor into a Rust iterator over `(key, value)` pairs within `range`, in
    /// ascending order. Errors end the iteration with one `Err` item.
    pub fn into_range(mut self, start: Bound<Vec<u8>>, end: Bound<Vec<u8>>) -> RangeIter {
        match &start {
            Bound::Included(k) => self.seek(k),
            Bound::Excluded(k) => {
                self.seek(k);
                if self.valid && self.ucmp.compare(self.key(), k) == Ordering::Equal {
                    self.next();
                }
            }
            Bound::Unbounded => self.seek_to_first(),
        }
        RangeIter {
            cursor: self,
            end,
            done: false,
            advance: false,
        }
    }
}

/// A Rust iterator over `(key, value)` pairs of a key range; see [`crate::Db::range`].
#[derive(Debug)]
pub struct RangeIter {
    cursor: DbIterator,
    end: Bound<Vec<u8>>,
    done: bool,
    /// The cursor is still on the entry [`RangeIter::next_ref`] returned.
    advance: bool,
}

impl RangeIter {
    /// The next pair without copying it: the key and value are borrowed until the next call
    /// (a scan that only looks at its entries allocates nothing). Mixes with `next`.
    pub fn next_ref(&mut self) -> Option<Result<(&[u8], &[u8])>> {
        if !self.position()? {
            return self.cursor.status().err().map(Err);
        }
        self.advance = true;
        Some(Ok((self.cursor.key(), self.cursor.value())))
    }

    /// Moves past the entry `next_ref` returned, if any; `Some(true)` on an entry in range,
    /// `Some(false)` at the end (the cursor's status may hold an error), `None` once done.
    fn position(&mut self) -> Option<bool> {
        if self.done {
            return None;
        }
        if std::mem::take(&mut self.advance) {
            self.cursor.next();
        }
        if !self.cursor.valid() {
            self.done = true;
            return Some(false);
        }
        let key = self.cursor.key();
        let in_range = match &self.end {
            Bound::Included(e) => self.cursor.ucmp.compare(key, e) != Ordering::Greater,
            Bound::Excluded(e) => self.cursor.ucmp.compare(key, e) == Ordering::Less,
            Bound::Unbounded => true,
        };
        if !in_range {
            self.done = true;
            return None;
        }
        Some(true)
    }
}

impl Iterator for RangeIter {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if !self.position()? {
            return self.cursor.status().err().map(Err);
        }
        let item = (self.cursor.key().to_vec(), self.cursor.value().to_vec());
        self.cursor.next();
        Some(Ok(item))
    }
}
