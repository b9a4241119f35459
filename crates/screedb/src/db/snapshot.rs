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
    /// Registers a snapshot at the sequence `current()` returns. `current` is read while the list
    /// is locked, so a compaction reading the list either sees this snapshot or started before
    /// the sequence was read (and then keeps everything it can see anyway).
    pub(crate) fn new(list: Arc<SnapshotList>, current: impl FnOnce() -> SequenceNumber) -> Self {
        let seq = {
            let mut live = lock(&list.live);
            let seq = current();
            *live.entry(seq).or_insert(0) += 1;
            seq
        };
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
