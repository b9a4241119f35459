//! Snapshots: a sequence number that compaction must keep readable while registered.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::key::SequenceNumber;
use crate::sync::lock;

/// Live snapshots: sequence number -> how many handles hold it.
#[derive(Debug, Default)]
pub struct SnapshotList {
    live: Mutex<BTreeMap<SequenceNumber, usize>>,
}

impl SnapshotList {
    fn release(&self, seq: SequenceNumber) {
        let mut live = lock(&self.live);
        if let Some(n) = live.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                live.remove(&seq);
            }
        }
    }

    /// A snapshot at the current value of `visible`, read under the list lock: a write leader
    /// that takes [`SnapshotList::hold`] before its first in-place overwrite and holds it until
    /// it publishes its group therefore sees every snapshot that can read a version it
    /// overwrites.
    pub(super) fn acquire_current(self: &Arc<Self>, visible: &AtomicU64) -> Snapshot {
        let mut live = lock(&self.live);
        let seq = visible.load(Ordering::Acquire);
        *live.entry(seq).or_insert(0) += 1;
        drop(live);
        Snapshot {
            seq,
            list: Arc::clone(self),
        }
    }

    /// Locks the list: no snapshot is taken or released until the guard drops.
    pub(super) fn hold(&self) -> MutexGuard<'_, BTreeMap<SequenceNumber, usize>> {
        lock(&self.live)
    }

    /// Sequence numbers of live snapshots, ascending.
    pub fn sequences(&self) -> Vec<SequenceNumber> {
        lock(&self.live).keys().copied().collect()
    }
}

/// A point-in-time view of the database, released when dropped. Name it in
/// [`crate::ReadOptions::snapshot`] (or use [`crate::ReadOptions::at`]) to read as of that
/// moment; only the database that took it accepts it.
#[derive(Debug)]
pub struct Snapshot {
    seq: SequenceNumber,
    list: Arc<SnapshotList>,
}

impl Snapshot {
    /// The sequence number this snapshot reads at.
    pub fn sequence(&self) -> SequenceNumber {
        self.seq
    }

    /// True iff this snapshot was taken from the database whose list is `list`.
    pub(super) fn is_of(&self, list: &Arc<SnapshotList>) -> bool {
        Arc::ptr_eq(&self.list, list)
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        self.list.release(self.seq);
    }
}
