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
//!
//! With the membuffer empty and still no write, the thread parks on the [`DrainBell`] until
//! the next write group rings it: an idle database costs no wake-ups (it woke 250 times a
//! second before), and a read-only phase has the second core to itself.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use super::DbInner;
use crate::key::SequenceNumber;
use crate::sync::{lock, wait};

/// How much lower than the thread that opened the database the drain thread runs: the lowest
/// priority there is (a nice value of 19), below flushes and compactions, whatever
/// `Options::background_nice` says. Its work can wait: while it is starved the membuffer fills,
/// and a put that finds its bucket full goes to the skiplist itself, as with `Memory::Skiplist`.
/// At the same priority it took a reader's core as often as the writer's: with one reader
/// and one writer on two cores, readers ran 1.19x as fast at the lowest priority (the writer
/// 0.83-0.95x), and loads alone ran as fast (docs/memory.md, "The drain thread's priority").
pub(super) const NICE: i32 = 19;

/// The shortest sleep between rounds, and the first after a round that drained.
const IDLE: Duration = Duration::from_micros(500);

/// The longest it sleeps while writes come. A round that finds nothing to drain doubles the
/// sleep up to this; one that finds the buffer fuller than the round before sleeps half the
/// time the buffer would take at that pace to reach one half (where a drain starts), within
/// [`IDLE`] and this: a small buffer filling fast is watched closely, a trickle of writes
/// into the default one is not. Waking every 500 us while a load in key order bypassed the
/// buffer (`MemTable::put`) cost the writer context switches on two cores (`fillseq` 0.91x
/// the skiplist's, 0.95x with this), and so did waking every 500 us for YCSB D's 5% of
/// inserts (2 threads: 7% of the readers' samples in task switches). The default buffer takes
/// tens of milliseconds to fill from a quarter to half at full speed, so a few milliseconds
/// before a drain starts cost no room.
const MAX_IDLE: Duration = Duration::from_millis(4);

/// Time without a new write after which the live membuffer is drained whole: reads then skip
/// it (`MemTable::get_latest`).
const QUIET: Duration = Duration::from_millis(50);

/// Where the drain thread sleeps while the database is idle, and what wakes it.
///
/// The protocol is a store-then-load on each side with a `SeqCst` fence between: the writer
/// publishes its group's sequence, then looks whether the thread is parked; the thread marks
/// itself parked, then looks whether a sequence was published since its last round. At least
/// one of them sees the other's store, so a write never leaves the thread asleep: either the
/// thread sees the new sequence and does not sleep, or the writer sees it parked and rings
/// (under the mutex, so the ring cannot fall between the thread's last check and its wait).
#[derive(Debug, Default)]
pub(super) struct DrainBell {
    parked: AtomicBool,
    lock: Mutex<()>,
    cv: Condvar,
    /// Rounds the thread has run (a statistic for tests).
    rounds: AtomicU64,
}

impl DrainBell {
    /// Called by a write leader after it published a group's sequence (`visible_sequence`).
    pub(super) fn ring(&self) {
        fence(Ordering::SeqCst);
        if self.parked.load(Ordering::Relaxed) {
            self.wake();
        }
    }

    /// Wakes the thread whatever it is doing (a write, or shutdown after `shutting_down`).
    pub(super) fn wake(&self) {
        let _guard = lock(&self.lock);
        self.parked.store(false, Ordering::Relaxed);
        self.cv.notify_all();
    }

    /// Parks the calling thread until [`DrainBell::ring`] or [`DrainBell::wake`]; returns at
    /// once if `woken` (evaluated after marking the thread parked) says it already happened.
    fn park(&self, woken: impl Fn() -> bool) {
        let mut guard = lock(&self.lock);
        self.parked.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        while self.parked.load(Ordering::Relaxed) && !woken() {
            guard = wait(&self.cv, guard);
        }
        self.parked.store(false, Ordering::Relaxed);
    }
}

/// Body of the drain thread; returns at shutdown.
pub(super) fn run(inner: &DbInner) {
    let mut cursor = 0;
    let mut idle = IDLE;
    let mut last_seq = inner.visible_sequence.load(Ordering::Acquire);
    let mut last_write = Instant::now();
    let (mut last_fill, mut last_round) = (0.0, Instant::now());
    while !inner.shutting_down.load(Ordering::Acquire) {
        inner.drain_bell.rounds.fetch_add(1, Ordering::Relaxed);
        let mem = std::sync::Arc::clone(&inner.super_version.load().mem);
        if mem.approximate_memory_usage() >= inner.options.write_buffer_size / 2 {
            mem.sample_for_successor();
        }
        if mem.drain_some(&mut cursor) > 0 {
            idle = IDLE;
            continue;
        }
        let buffered = mem.buffered_len();
        let fill = mem.membuffer_fill();
        if fill > last_fill {
            idle = sleep_until_half(fill - last_fill, last_round.elapsed(), fill);
        }
        (last_fill, last_round) = (fill, Instant::now());
        let seq = inner.visible_sequence.load(Ordering::Acquire);
        if seq != last_seq {
            (last_seq, last_write) = (seq, Instant::now());
        } else if last_write.elapsed() >= QUIET {
            if buffered > 0 {
                mem.drain(crate::key::MAX_SEQUENCE);
            } else {
                // Idle and empty: nothing to do until the next write group.
                drop(mem);
                inner.drain_bell.park(|| {
                    inner.visible_sequence.load(Ordering::Acquire) != last_seq
                        || inner.shutting_down.load(Ordering::Acquire)
                });
                // It parked with the buffer empty: the pace starts over from now.
                (idle, last_write) = (IDLE, Instant::now());
                (last_fill, last_round) = (0.0, Instant::now());
                continue;
            }
        }
        std::thread::sleep(idle);
        idle = (idle * 2).min(MAX_IDLE);
    }
}

/// Half the time a membuffer at `fill` (0 to 1) takes to reach one half if it keeps growing by
/// `grew` per `elapsed`, within [`IDLE`] and [`MAX_IDLE`].
fn sleep_until_half(grew: f64, elapsed: Duration, fill: f64) -> Duration {
    let per_second = grew / elapsed.as_secs_f64().max(1e-6);
    let until_half = (0.5 - fill).max(0.0) / per_second;
    // Clamped before the conversion, which panics on what it cannot represent.
    let secs = (until_half / 2.0).clamp(IDLE.as_secs_f64(), MAX_IDLE.as_secs_f64());
    Duration::try_from_secs_f64(secs).unwrap_or(MAX_IDLE)
}

/// Waits until `seq` is visible to readers. The write leader publishes its group right after
/// inserting it into the membuffer, without waiting for anything else, so this is short.
pub(super) fn wait_visible(inner: &DbInner, seq: SequenceNumber) {
    while inner.visible_sequence.load(Ordering::Acquire) < seq {
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    use crate::{Db, Memory, Options};

    /// Polls `done` for up to ten seconds.
    fn eventually(what: &str, done: impl Fn() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "timed out: {what}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn the_sleep_follows_the_pace_at_which_the_buffer_fills() {
        use super::{IDLE, MAX_IDLE, sleep_until_half};
        let ms = Duration::from_millis;
        // 1% a millisecond from 10%: 40 ms to a half, so the longest sleep.
        assert_eq!(sleep_until_half(0.01, ms(1), 0.1), MAX_IDLE);
        // 10% a millisecond from 10%: 4 ms to a half, a sleep of 2 ms.
        let two = sleep_until_half(0.1, ms(1), 0.1);
        assert!(two > ms(1) && two < ms(3), "{two:?}");
        // Already at a half, or filling within a millisecond: the shortest.
        assert_eq!(sleep_until_half(0.01, ms(1), 0.5), IDLE);
        assert_eq!(sleep_until_half(0.4, ms(1), 0.1), IDLE);
        // Growth too slow to represent as a sleep: the longest.
        let year = Duration::from_secs(365 * 24 * 3600);
        assert_eq!(sleep_until_half(1e-30, year, 0.0), MAX_IDLE);
    }

    #[test]
    fn an_idle_database_parks_the_drain_thread_until_a_write_rings() {
        let dir = tempfile::tempdir().unwrap();
        let options = Options {
            create_if_missing: true,
            memory: Memory::Flodb,
            ..Options::default()
        };
        let db = Db::open(dir.path(), options).unwrap();
        let inner = &db.inner;
        let mem = || std::sync::Arc::clone(&inner.super_version.load().mem);
        let buffered = || mem().buffered_len();
        let parked = || inner.drain_bell.parked.load(Ordering::Relaxed);
        for round in 0..3u32 {
            db.put(format!("key{round}").as_bytes(), b"value").unwrap();
            assert_eq!(
                mem().membuffer_admitted(),
                round as usize + 1,
                "round {round}: the put was buffered"
            );
            // The write rang: the thread wakes, drains the key once the database is quiet, and
            // parks again.
            eventually("drained", || buffered() == 0);
            eventually("parked", parked);
            let rounds = inner.drain_bell.rounds.load(Ordering::Relaxed);
            std::thread::sleep(super::QUIET * 4);
            // Sleeping with a backoff instead, it would have run 50 rounds by now.
            assert_eq!(
                inner.drain_bell.rounds.load(Ordering::Relaxed),
                rounds,
                "round {round}: an idle database's drain thread ran"
            );
        }
        // Shutdown wakes it: close would hang otherwise.
        let (done, closed) = std::sync::mpsc::channel();
        std::thread::spawn(move || done.send(db.close()));
        let result = closed.recv_timeout(Duration::from_secs(10));
        assert!(matches!(result, Ok(Ok(()))), "close: {result:?}");
    }
}
