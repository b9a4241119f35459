//! Point reads: one key ([`Db::get_with`](super::Db::get_with)) or many at one point in time
//! ([`Db::multi_get_with`](super::Db::multi_get_with)).
//!
//! A read looks in each memtable, newest first, then in the version's tables. A read of many
//! keys pins one super version and one sequence for all of them (RocksDB's `MultiGet` gives
//! the same consistency), and before reading any key it runs two passes of prefetch hints over
//! them in each memtable: the point-index slots, then the entries those slots name. A read of
//! a key the memtable holds is two dependent cache misses (slot, entry); sixteen keys read one
//! after another wait for thirty-two, read this way for about two. Tables are read key by key.

use std::sync::atomic::Ordering;

use super::{DbInner, SuperVersion, drain};
use crate::error::Result;
use crate::key::SequenceNumber;
use crate::memtable::LookupResult;
use crate::version::Lookup;

/// The value of `key` in `sv` as of `snapshot` (`None`: the latest state), `seq` being the
/// snapshot or the visible sequence loaded before `sv`.
pub(super) fn get_in(
    inner: &DbInner,
    sv: &SuperVersion,
    snapshot: Option<SequenceNumber>,
    seq: SequenceNumber,
    key: &[u8],
) -> Result<Option<Vec<u8>>> {
    for mem in sv.memtables() {
        if snapshot.is_none() && mem.has_membuffer() {
            // A version older than the newest may have been overwritten in place, so a read of
            // the latest state takes the newest, once its write group is published (the
            // leader does that right after inserting). See `docs/memory.md`.
            let Some((newest, found)) = mem.get_latest(key) else {
                continue;
            };
            drain::wait_visible(inner, newest);
            return Ok(match found {
                LookupResult::Found(v) => Some(v),
                LookupResult::Deleted | LookupResult::NotFound => None,
            });
        }
        match mem.get(key, seq) {
            LookupResult::Found(v) => return Ok(Some(v)),
            LookupResult::Deleted => return Ok(None),
            LookupResult::NotFound => {}
        }
    }
    let threshold = inner.seek_threshold();
    let (found, cost) = sv
        .version
        .get_counting(&inner.tables, key, seq, threshold)?;
    inner.count_read_cost(cost);
    match found {
        Lookup::Found(v) => Ok(Some(v)),
        Lookup::Deleted | Lookup::NotFound => Ok(None),
    }
}

/// Starts loading, in every memtable of `sv`, what reads of `keys` will touch first (two passes:
/// point-index slots, then the entries they name), so that their cache misses overlap.
pub(super) fn prefetch<K: AsRef<[u8]>>(sv: &SuperVersion, keys: &[K]) {
    if keys.len() < 2 {
        return;
    }
    for stage in 0..2 {
        for mem in sv.memtables() {
            for key in keys {
                mem.prefetch_point(key.as_ref(), stage);
            }
        }
    }
}

/// The sequence a read sees: the snapshot's, or the visible one (loaded before the super
/// version, so every write it covers is in a memtable of that super version or in its tables).
pub(super) fn read_sequence(inner: &DbInner, snapshot: Option<SequenceNumber>) -> SequenceNumber {
    snapshot.unwrap_or_else(|| inner.visible_sequence.load(Ordering::Acquire))
}
