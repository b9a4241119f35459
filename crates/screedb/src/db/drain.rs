//! The drain thread of the FloDB memory component (`Memory::Flodb`, see `docs/memory.md`).
//!
//! One thread moves entries from the live memtable's membuffer into its skiplist whenever the
//! membuffer is over half full, by multi-insert, a batch of neighbourhoods at a time, until it
//! is a quarter full. Once the live memtable is half full it also samples its keys for the
//! next memtable's key-range neighbourhoods (`MemTable::sample_for_successor`: tens of
//! milliseconds, which the writer would otherwise spend at the switch). It takes no database
//! lock: it reads the live memtable from the super version.
//! An immutable memtable's membuffer is drained by its flush, and iterators drain what they
//! read, so this thread only keeps room free for writers.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::DbInner;
use crate::key::SequenceNumber;

/// How long the thread sleeps when there is nothing to drain.
const IDLE: Duration = Duration::from_micros(500);

/// Body of the drain thread; returns at shutdown.
pub(super) fn run(inner: &DbInner) {
    let mut cursor = 0;
    while !inner.shutting_down.load(Ordering::Acquire) {
        let mem = std::sync::Arc::clone(&inner.super_version.load().mem);
        if mem.approximate_memory_usage() >= inner.options.write_buffer_size / 2 {
            mem.sample_for_successor();
        }
        if mem.drain_some(&mut cursor) == 0 {
            std::thread::sleep(IDLE);
        }
    }
}

/// Waits until `seq` is visible to readers. The write leader publishes its group right after
/// inserting it into the membuffer, without waiting for anything else, so this is short.
pub(super) fn wait_visible(inner: &DbInner, seq: SequenceNumber) {
    while inner.visible_sequence.load(Ordering::Acquire) < seq {
        std::thread::yield_now();
    }
}
