//! Snapshots: a sequence number that compaction must keep readable while registered.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::key::SequenceNumber;
use crate::sync::lock;

/// Live snapshots: sequence number -> how many handles hold it.
#[derive(Debug, Default)]
pub struct SnapshotList {
    live: Mutex<BTreeMap<SequenceNumber, usize>>,
}

impl SnapshotList {
    fn acquire(&self, seq: SequenceNumber) {
        *lock(&self.live).entry(seq).or_insert(0) += 1;
    }

    fn release(&self, seq: SequenceNumber) {
        let mut live = lock(&self.live);
        if let Some(n) = live.get_mut(&seq) {
            *n -= 1;
            if *n == 0 {
                live.remove(&seq);
            }
        }
    }

    /// Sequence numbers of live snapshots, ascending.
    pub fn sequences(&self) -> Vec<SequenceNumber> {
        lock(&self.live).keys().copied().collect()
    }
}

/// A point-in-time view of the database, released when dropped. Pass its sequence in
/// [`crate::ReadOptions::snapshot`] to read as of that moment.
#[derive(Debug)]
pub struct Snapshot {
    seq: SequenceNumber,
    list: Arc<SnapshotList>,
}

impl Snapshot {
    pub(crate) fn new(list: Arc<SnapshotList>, seq: SequenceNumber) -> Self {
        list.acquire(seq);
        Snapshot { seq, list }
    }

    /// The sequence number this snapshot reads at.
    pub fn sequence(&self) -> SequenceNumber {
        self.seq
    }
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        self.list.release(self.seq);
    }
}
