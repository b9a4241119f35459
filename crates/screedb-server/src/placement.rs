//! Which connection thread serves a connection.
//!
//! Every connection starts on the accepting thread and stays there while its requests are
//! light: a request and its reply are then mostly system calls and a wake-up, and one thread
//! that finds many such connections ready at each wake-up serves them at less cost than several
//! threads that each wake for a few. On two cores, under `redis-benchmark -P 1` (50 connections,
//! each waiting for every reply), the accepting thread alone answered 1.2-1.3 times as many
//! requests as two threads that split the connections (docs/server.md, "Connections placed by
//! the work they bring").
//!
//! A connection whose reads bring more work than a wake-up costs has a second core pay, so it
//! is placed for good, round robin over all the threads (the accepting one included), and
//! handed over when its thread is another ([`Handoff`]):
//! - at its first read that brings [`PIPELINED`] requests or more (`redis-benchmark -P 16`), or
//! - once most of its sampled reads cost the thread [`HEAVY_READ`] of CPU time or more (go-ycsb's
//!   hash workloads: about 29 µs of a thread's CPU a request, system calls included; a plain
//!   GET runs in about 1.6 µs, INFO commandstats).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use cpu_time::ThreadTime;
use tokio::sync::mpsc;

use crate::conn::Handoff;

/// Requests in one read that mark a connection as pipelining. A client that waits for each
/// reply sends one at a time.
pub(crate) const PIPELINED: usize = 4;

/// CPU time of the connection thread, running one read's requests, that marks the read as
/// heavy. Thread CPU time, not wall time: a thread preempted while it runs a request (as often
/// as not on a machine shared with the clients) would make light reads look heavy.
const HEAVY_READ: Duration = Duration::from_micros(8);

/// One read in this many is timed (reading the thread's CPU clock is a system call).
const SAMPLE_EVERY: u64 = 8;

/// A connection is placed once its sampled heavy reads outnumber its light ones by this many,
/// so a few reads slowed by something else (a memtable switch, a write stall) do not place it.
const HEAVY_SAMPLES: u32 = 8;

/// Deals connections due for placement over `threads` connection threads; 0 is the accepting
/// thread, which receives the others' [`Handoff`]s and spawns them on their thread.
#[derive(Debug)]
pub(crate) struct Placement {
    threads: usize,
    next: AtomicUsize,
    handoffs: mpsc::UnboundedSender<Handoff>,
}

impl Placement {
    /// A placement over `threads` threads, and the receiver of its handoffs.
    pub(crate) fn new(threads: usize) -> (Arc<Placement>, mpsc::UnboundedReceiver<Handoff>) {
        let (handoffs, received) = mpsc::unbounded_channel();
        let placement = Placement {
            threads: threads.max(1),
            next: AtomicUsize::new(0),
            handoffs,
        };
        (Arc::new(placement), received)
    }

    /// The thread the next connection due for placement goes to (0: it stays where it is).
    pub(crate) fn pick(&self) -> usize {
        self.next.fetch_add(1, Ordering::Relaxed) % self.threads
    }

    /// Sends a connection to the accepting thread to be spawned on its thread. Once the server
    /// stops accepting nobody takes it, and dropping it closes the connection (its replies are
    /// all sent, and it has nothing else in flight).
    pub(crate) fn hand_off(&self, handoff: Handoff) {
        let _ = self.handoffs.send(handoff);
    }
}

/// The calling thread's CPU time so far.
fn thread_cpu() -> Option<Duration> {
    ThreadTime::try_now().ok().map(|t| t.as_duration())
}

/// Watches one connection's reads for the moment it is due for placement.
#[derive(Debug, Default)]
pub(crate) struct Probe {
    reads: u64,
    /// Sampled heavy reads minus light ones, kept within `0..=HEAVY_SAMPLES`.
    score: u32,
    /// The thread's CPU clock when a sampled read's requests began to run (a duration: the
    /// clock's own type may not cross an await; a connection never changes threads while it
    /// is probed).
    started: Option<Duration>,
}

impl Probe {
    /// A read's requests begin to run.
    pub(crate) fn begin(&mut self) {
        self.reads += 1;
        self.started = if self.reads.is_multiple_of(SAMPLE_EVERY) {
            thread_cpu()
        } else {
            None
        };
    }

    /// They have run; the read brought `requests` of them. True when the connection is due
    /// for placement.
    pub(crate) fn end(&mut self, requests: usize) -> bool {
        if let Some(started) = self.started.take()
            && let Some(cpu) = thread_cpu().map(|now| now.saturating_sub(started))
        {
            self.score = if cpu >= HEAVY_READ {
                (self.score + 1).min(HEAVY_SAMPLES)
            } else {
                self.score.saturating_sub(1)
            };
        }
        requests >= PIPELINED || self.score >= HEAVY_SAMPLES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pipelining_read_places_at_once_and_light_reads_never() {
        let mut p = Probe::default();
        for _ in 0..1000 {
            p.begin();
            assert!(!p.end(1), "one cheap request a read is never placed");
        }
        p.begin();
        assert!(p.end(PIPELINED));
    }

    #[test]
    fn mostly_heavy_reads_place_the_connection() {
        let mut p = Probe::default();
        let mut reads = 0;
        loop {
            p.begin();
            let start = ThreadTime::now();
            while start.elapsed() < HEAVY_READ * 2 {}
            reads += 1;
            if p.end(1) {
                break;
            }
            assert!(reads < 1000, "never placed");
        }
        assert_eq!(reads, SAMPLE_EVERY * u64::from(HEAVY_SAMPLES));
    }
}
