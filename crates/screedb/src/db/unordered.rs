//! Scans in no particular order ([`Db::scan_unordered`](super::Db::scan_unordered)): every live
//! key once, as of one point in time, for layouts that keep no key order (the trie).
//!
//! A hashed layout cannot merge its tables by key without reading and sorting the whole store at
//! once. This scan visits one source at a time instead (the memtables newest first, then every
//! table of the version, each through its own sorted view) and keeps an entry only if it is the
//! newest version of its key visible at the scan's sequence: the first visible entry of its key
//! in the source, and the one a point read at that sequence finds (sequence numbers are unique,
//! so the lookup's sequence says which entry answers). A key is therefore returned once, from the
//! source that holds its answer, and a deleted key never. It costs a point lookup per entry and
//! holds one table's sorted view at a time.

use std::sync::Arc;

use super::{RangeIter, SuperVersion};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;
use crate::key::{self, SequenceNumber, ValueKind};
use crate::memtable::MemTable;
use crate::table::TableCache;
use crate::version::FileRef;
use crate::version::obsolete::{ObsoleteFiles, PurgeOnDrop};

/// What the scan reads next.
#[derive(Debug)]
enum Source {
    Memtable(Arc<MemTable>),
    Table(FileRef),
}

/// `(key, value)` pairs of every live key, in no particular order; see
/// [`Db::scan_unordered`](super::Db::scan_unordered).
#[derive(Debug)]
pub struct UnorderedScan(Scan);

#[derive(Debug)]
enum Scan {
    /// A layout that keeps key order: its iterator.
    Ordered(RangeIter),
    /// Source by source.
    Sources(SourceScan),
}

impl UnorderedScan {
    /// A scan of a layout that keeps key order: `range` over every key.
    pub(super) fn ordered(range: RangeIter) -> UnorderedScan {
        UnorderedScan(Scan::Ordered(range))
    }

    /// A scan of `sv` at `sequence`, source by source (the memtables already hold every
    /// visible buffered entry in their skiplists, as for an iterator).
    pub(super) fn by_source(
        sv: Arc<SuperVersion>,
        sequence: SequenceNumber,
        tables: Arc<TableCache>,
        obsolete: Arc<ObsoleteFiles>,
    ) -> UnorderedScan {
        UnorderedScan(Scan::Sources(SourceScan::new(
            sv, sequence, tables, obsolete,
        )))
    }
}

impl Iterator for UnorderedScan {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            Scan::Ordered(range) => range.next(),
            Scan::Sources(scan) => scan.next(),
        }
    }
}

/// The scan of a layout without key order.
struct SourceScan {
    // Field order matters: the open source drops before the pinned super version, which drops
    // before the purge (tables are deleted when their last holder drops).
    current: Option<Box<dyn InternalIterator>>,
    /// The user key of the last entry taken from `current` (its older versions are skipped).
    last_key: Option<Vec<u8>>,
    sources: std::vec::IntoIter<Source>,
    tables: Arc<TableCache>,
    sequence: SequenceNumber,
    failed: bool,
    sv: Arc<SuperVersion>,
    _purge: PurgeOnDrop<Arc<ObsoleteFiles>>,
}

impl std::fmt::Debug for SourceScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceScan")
            .field("sequence", &self.sequence)
            .field("sources_left", &self.sources.len())
            .finish_non_exhaustive()
    }
}

impl SourceScan {
    fn new(
        sv: Arc<SuperVersion>,
        sequence: SequenceNumber,
        tables: Arc<TableCache>,
        obsolete: Arc<ObsoleteFiles>,
    ) -> SourceScan {
        let mut sources: Vec<Source> = sv
            .memtables()
            .map(|m| Source::Memtable(Arc::clone(m)))
            .collect();
        for level in 0..sv.version.num_levels() {
            sources.extend(sv.version.files(level).iter().cloned().map(Source::Table));
        }
        SourceScan {
            current: None,
            last_key: None,
            sources: sources.into_iter(),
            tables,
            sequence,
            failed: false,
            sv,
            _purge: PurgeOnDrop(obsolete),
        }
    }

    fn open(&self, source: Source) -> Result<Box<dyn InternalIterator>> {
        let mut it: Box<dyn InternalIterator> = match source {
            Source::Memtable(mem) => Box::new(mem.iter()),
            Source::Table(f) => f.reader(&self.tables)?.into_owned().iter()?,
        };
        it.seek_to_first();
        Ok(it)
    }

    /// Whether the entry of `user_key` with sequence `seq` is the newest one visible at the
    /// scan's sequence, across every memtable and table.
    fn answers(&self, user_key: &[u8], seq: SequenceNumber) -> Result<bool> {
        for mem in self.sv.memtables() {
            if let Some((found, _)) = mem.get_entry(user_key, self.sequence) {
                return Ok(found == seq);
            }
        }
        let found = self
            .sv
            .version
            .get_entry(&self.tables, user_key, self.sequence)?;
        Ok(found.is_some_and(|(_, s)| s == seq))
    }

    /// The next live pair of the open source, if any; moves past it.
    fn next_in_current(&mut self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        loop {
            let Some(it) = self.current.as_mut() else {
                return Ok(None);
            };
            if !it.valid() {
                it.status()?;
                return Ok(None);
            }
            let parsed = key::parse_internal_key(it.key())
                .ok_or_else(|| Error::invalid("scan: an entry without a valid internal key"))?;
            if parsed.seq > self.sequence || self.last_key.as_deref() == Some(parsed.user_key) {
                it.next();
                continue;
            }
            self.last_key = Some(parsed.user_key.to_vec());
            let seq = parsed.seq;
            let pair = (parsed.kind == ValueKind::Value)
                .then(|| (parsed.user_key.to_vec(), it.value().to_vec()));
            it.next();
            if let Some((k, v)) = pair
                && self.answers(&k, seq)?
            {
                return Ok(Some((k, v)));
            }
        }
    }
}

impl Iterator for SourceScan {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        loop {
            if self.current.is_some() {
                match self.next_in_current() {
                    Ok(Some(pair)) => return Some(Ok(pair)),
                    Ok(None) => self.current = None,
                    Err(e) => {
                        self.failed = true;
                        return Some(Err(e));
                    }
                }
            }
            let source = self.sources.next()?;
            match self.open(source) {
                Ok(it) => {
                    self.current = Some(it);
                    self.last_key = None;
                }
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
    }
}
