//! A writer waiting in the write queue, and how it waits.
//!
//! A writer waits for one of two things, both announced by another writer holding the database
//! mutex: its group was committed by a leader (`done` is set), or it reached the front of the
//! queue and leads the next group. With a few writer threads the wait is short (one leader's
//! WAL append and memtable insert, a few microseconds), and sleeping on a condition variable
//! costs more than that: a futex wait and a context switch for the writer, a futex wake for the
//! leader on every writer it releases (a third of a two-thread 1 KB load's CPU). So a writer
//! first polls a flag without the mutex, spinning briefly and then yielding the CPU, for at
//! most [`POLL_LIMIT`]; only then does it sleep, and only a sleeping writer is notified.
//! RocksDB's write thread waits the same way (`WriteThread::AwaitState`: spin, then yield for
//! up to `write_thread_max_yield_usec`, then block).
//!
//! No wake-up is lost: `signaled` is cleared and the writer's conditions are checked under the
//! mutex, a waker sets `signaled` under the mutex, and a writer goes to sleep only after
//! checking `signaled` under the mutex with `sleeping` set, which the waker reads under it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::Result;
use crate::sync::{lock, wait};
use crate::wal::Packed;
use crate::write_batch::WriteBatch;

/// Longest a writer polls before it sleeps.
const POLL_LIMIT: Duration = Duration::from_micros(50);

/// Spins before the writer starts yielding its CPU instead.
const SPINS: u32 = 64;

/// A writer waiting in the queue.
pub(super) struct Writer {
    /// The batch, until a leader takes it into a group (`None` from the start for a writer
    /// that only makes room: groups stop in front of it).
    pub(super) batch: Mutex<Option<WriteBatch>>,
    /// The batch's records (its encoding after the header), compressed for the WAL by the
    /// writer's own thread before it queued (`Options::wal_compression`), if that paid.
    pub(super) packed: Option<Packed>,
    pub(super) sync: bool,
    /// The group's result, once a leader committed it.
    pub(super) done: Mutex<Option<Result<()>>>,
    /// Set under the database mutex by [`Writer::wake`].
    signaled: AtomicBool,
    /// True while the writer sleeps on `cv` (changed under the database mutex).
    sleeping: AtomicBool,
    cv: Condvar,
}

impl Writer {
    pub(super) fn new(batch: Option<WriteBatch>, packed: Option<Packed>, sync: bool) -> Writer {
        Writer {
            batch: Mutex::new(batch),
            packed,
            sync,
            done: Mutex::new(None),
            signaled: AtomicBool::new(false),
            sleeping: AtomicBool::new(false),
            cv: Condvar::new(),
        }
    }

    /// Tells the writer its state changed (done, or at the front). REQUIRES: the caller holds
    /// the database mutex.
    pub(super) fn wake(&self) {
        self.signaled.store(true, Ordering::Release);
        if self.sleeping.load(Ordering::Relaxed) {
            self.cv.notify_one();
        }
    }

    /// Waits, with the database mutex `st` (released meanwhile and handed back), until `ready`
    /// holds; `ready` is checked under the mutex, first at once.
    pub(super) fn wait_until<'a, T>(
        &self,
        state: &'a Mutex<T>,
        mut st: MutexGuard<'a, T>,
        mut ready: impl FnMut(&T) -> bool,
    ) -> MutexGuard<'a, T> {
        loop {
            self.signaled.store(false, Ordering::Relaxed);
            if ready(&st) {
                return st;
            }
            drop(st);
            self.poll();
            st = lock(state);
            if self.signaled.load(Ordering::Acquire) {
                continue;
            }
            self.sleeping.store(true, Ordering::Relaxed);
            st = wait(&self.cv, st);
            self.sleeping.store(false, Ordering::Relaxed);
        }
    }

    /// Polls `signaled` without the mutex for at most [`POLL_LIMIT`].
    fn poll(&self) {
        let signaled = || self.signaled.load(Ordering::Acquire);
        for _ in 0..SPINS {
            if signaled() {
                return;
            }
            std::hint::spin_loop();
        }
        let start = Instant::now();
        while !signaled() && start.elapsed() < POLL_LIMIT {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::mpsc;

    /// Two threads hand a turn back and forth through `wake` and `wait_until`, some of the
    /// hand-overs landing while the other polls and some while it sleeps: a lost wake-up
    /// would stall the ping-pong (the test then fails on its deadline instead of hanging).
    #[test]
    fn no_wake_up_is_lost_between_polling_and_sleeping() {
        const ROUNDS: u64 = 20_000;
        let state = Arc::new(Mutex::new(0u64));
        let writers = Arc::new([
            Writer::new(None, None, false),
            Writer::new(None, None, false),
        ]);
        let (tx, rx) = mpsc::channel();
        for me in 0..2u64 {
            let (state, writers, tx) = (Arc::clone(&state), Arc::clone(&writers), tx.clone());
            std::thread::spawn(move || {
                let mine = &writers[me as usize];
                let other = &writers[1 - me as usize];
                let mut st = lock(&state);
                for round in 0.. {
                    st = mine.wait_until(&state, st, |turn| *turn % 2 == me || *turn >= ROUNDS);
                    if *st >= ROUNDS {
                        break;
                    }
                    *st += 1;
                    other.wake();
                    if round % 64 == 0 {
                        // Let the other side fall asleep now and then.
                        drop(st);
                        std::thread::sleep(Duration::from_micros(200));
                        st = lock(&state);
                    }
                }
                other.wake();
                tx.send(()).unwrap();
            });
        }
        for _ in 0..2 {
            rx.recv_timeout(Duration::from_secs(60))
                .expect("a writer missed its wake-up");
        }
        assert_eq!(*lock(&state), ROUNDS);
    }
}
