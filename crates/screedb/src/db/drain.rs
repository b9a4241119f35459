//! The drain thread of the FloDB memory component (`Memory::Flodb`, see `docs/memory.md`).
//!
//! One thread moves entries from the live memtable's membuffer into its skiplist whenever the
//! membuffer is over half full, by multi-insert, a batch of neighbourhoods at a time, until it
//! is a quarter full. Once the live memtable is half full it also samples its keys for the
//! next memtable's key-range neighbourhoods (`MemTable::sample_for_successor`: tens of
//! milliseconds, which the writer would otherwise spend at the switch). It takes no database
//! lock: it reads the live memtable from the super version.
//!
//! Once no write has arrived for [`QUIET_ROUNDS`] idle rounds it drains the live membuffer
//! whole: the buffer only pays off while writes come, and a point read skips an empty one
//! (no neighbourhood search, no bucket lock), so a read-only phase after a load reads as fast
//! as with the skiplist alone. An immutable memtable's membuffer is drained by its flush, and
//! iterators drain what they read.

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::DbInner;
use crate::key::SequenceNumber;

/// How long the thread sleeps when there is nothing to drain.
const IDLE: Duration = Duration::from_micros(500);

/// Idle rounds (of [`IDLE`] each, 50 ms in all) without a new write after which the live
/// membuffer is drained whole: reads then skip it (`MemTable::get_latest`).
const QUIET_ROUNDS: u32 = 100;

/// Body of the drain thread; returns at shutdown.
pub(super) fn run(inner: &DbInner) {
    let mut cursor = 0;
    let mut quiet: u32 = 0;
    let mut last_seq = inner.visible_sequence.load(Ordering::Acquire);
    while !inner.shutting_down.load(Ordering::Acquire) {
        let mem = std::sync::Arc::clone(&inner.super_version.load().mem);
        if mem.approximate_memory_usage() >= inner.options.write_buffer_size / 2 {
            mem.sample_for_successor();
        }
        if mem.drain_some(&mut cursor) == 0 {
            let seq = inner.visible_sequence.load(Ordering::Acquire);
            quiet = if seq == last_seq {
                quiet.saturating_add(1)
            } else {
                0
            };
            last_seq = seq;
            if quiet >= QUIET_ROUNDS && mem.buffered_len() > 0 {
                mem.drain(crate::key::MAX_SEQUENCE);
            }
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
