//! The drain thread of the FloDB memory component (`Memory::Flodb`, see `docs/memory.md`).
//!
//! One thread moves entries from the live memtable's membuffer into its skiplist whenever the
//! membuffer is over half full, by multi-insert, a batch of neighbourhoods at a time, until it
//! is a quarter full. Once the live memtable is half full it also samples its keys for the
//! next memtable's key-range neighbourhoods (`MemTable::sample_for_successor`: tens of
//! milliseconds, which the writer would otherwise spend at the switch). It takes no database
//! lock: it reads the live memtable from the super version.
//!
//! Once no write has arrived for [`QUIET`] it drains the live membuffer
//! whole: the buffer only pays off while writes come, and a point read skips an empty one
//! (no neighbourhood search, no bucket lock), so a read-only phase after a load reads as fast
//! as with the skiplist alone. An immutable memtable's membuffer is drained by its flush, and
//! iterators drain what they read.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::DbInner;
use crate::key::SequenceNumber;

/// How long the thread first sleeps when there is nothing to drain.
const IDLE: Duration = Duration::from_micros(500);

/// The longest it sleeps: each idle round doubles the sleep up to this, and a round that
/// drains, or finds more entries buffered than the round before, starts over from [`IDLE`]
/// (a small buffer filling fast is then watched closely). Waking every 500 us while a load in key order bypassed
/// the buffer (`MemTable::put`) cost the writer context switches on two cores (`fillseq` 0.91x
/// the skiplist's, 0.95x with this); the default buffer takes tens of milliseconds to fill
/// from a quarter to half at full speed, so a few milliseconds before a drain starts cost
/// no room.
const MAX_IDLE: Duration = Duration::from_millis(4);

/// Time without a new write after which the live membuffer is drained whole: reads then skip
/// it (`MemTable::get_latest`).
const QUIET: Duration = Duration::from_millis(50);

/// Body of the drain thread; returns at shutdown.
pub(super) fn run(inner: &DbInner) {
    let mut cursor = 0;
    let mut idle = IDLE;
    let mut last_seq = inner.visible_sequence.load(Ordering::Acquire);
    let mut last_write = Instant::now();
    let mut last_buffered = 0;
    while !inner.shutting_down.load(Ordering::Acquire) {
        let mem = std::sync::Arc::clone(&inner.super_version.load().mem);
        if mem.approximate_memory_usage() >= inner.options.write_buffer_size / 2 {
            mem.sample_for_successor();
        }
        if mem.drain_some(&mut cursor) > 0 {
            idle = IDLE;
            continue;
        }
        let buffered = mem.buffered_len();
        if buffered > last_buffered {
            idle = IDLE;
        }
        last_buffered = buffered;
        let seq = inner.visible_sequence.load(Ordering::Acquire);
        if seq != last_seq {
            (last_seq, last_write) = (seq, Instant::now());
        } else if last_write.elapsed() >= QUIET && buffered > 0 {
            mem.drain(crate::key::MAX_SEQUENCE);
        }
        std::thread::sleep(idle);
        idle = (idle * 2).min(MAX_IDLE);
    }
}

/// Waits until `seq` is visible to readers. The write leader publishes its group right after
/// inserting it into the membuffer, without waiting for anything else, so this is short.
pub(super) fn wait_visible(inner: &DbInner, seq: SequenceNumber) {
    while inner.visible_sequence.load(Ordering::Acquire) < seq {
        std::thread::yield_now();
    }
}
