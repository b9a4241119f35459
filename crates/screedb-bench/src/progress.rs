//! Counting operations: per-thread latency meters feeding one progress bar.
//!
//! The bar (indicatif) is drawn on standard error only when it is a terminal, so pipes and log
//! files get the plain one-line summary per workload and nothing else. Threads add to it in
//! steps of [`STEP`] operations to keep its atomic counter off the measured path.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::histogram::Histogram;

/// Operations a thread counts before it advances the shared bar.
const STEP: u64 = 1024;

/// The progress bar of one workload, shared by its threads.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar for `name` expecting `expected` operations; hidden unless standard error is a
    /// terminal.
    pub fn new(name: &str, expected: u64) -> Self {
        let bar = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::with_draw_target(Some(expected), ProgressDrawTarget::stderr());
            if let Ok(style) = ProgressStyle::with_template(
                "{prefix:<16} [{bar:30}] {percent:>3}% {per_sec:>12} eta {eta}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(name.to_string());
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        } else {
            ProgressBar::hidden()
        };
        Progress { bar }
    }

    /// A meter for one thread.
    pub fn meter(&self) -> Meter<'_> {
        Meter {
            hist: Histogram::default(),
            ops: 0,
            pending: 0,
            progress: self,
        }
    }

    /// Removes the bar from the terminal.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// One thread's count of operations and latencies.
#[derive(Debug)]
pub struct Meter<'a> {
    hist: Histogram,
    ops: u64,
    pending: u64,
    progress: &'a Progress,
}

impl Meter<'_> {
    /// One call of `ops` operations that started at `start`.
    pub fn done(&mut self, start: Instant, ops: u64) {
        self.hist.record(start.elapsed());
        self.count(ops);
    }

    /// `ops` operations done back to back since `start`, each counted in the latencies at
    /// their mean: for scans, whose entries take a few hundred nanoseconds, reading the clock
    /// around each one would be a tenth of what is measured.
    pub fn done_batch(&mut self, start: Instant, ops: u64) {
        let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.hist.record_nanos_n(nanos / ops.max(1), ops);
        self.count(ops);
    }

    /// Adds `ops` to the count, and to the shared bar every [`STEP`] operations.
    fn count(&mut self, ops: u64) {
        self.ops += ops;
        self.pending += ops;
        if self.pending >= STEP {
            self.progress.bar.inc(self.pending);
            self.pending = 0;
        }
    }

    /// Operations counted so far.
    pub fn ops(&self) -> u64 {
        self.ops
    }

    /// The operations and latencies counted.
    pub fn finish(self) -> (u64, Histogram) {
        self.progress.bar.inc(self.pending);
        (self.ops, self.hist)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meters_count_operations_and_calls() {
        let p = Progress::new("test", 10);
        let mut m = p.meter();
        m.done(Instant::now(), 3);
        m.done(Instant::now(), 2);
        assert_eq!(m.ops(), 5);
        let (ops, hist) = m.finish();
        assert_eq!((ops, hist.count()), (5, 2));
        p.finish();
    }

    #[test]
    fn a_batch_counts_each_operation_at_its_mean_latency() {
        let p = Progress::new("test", 64);
        let mut m = p.meter();
        let start = Instant::now();
        std::thread::sleep(Duration::from_millis(8));
        m.done_batch(start, 4);
        m.done_batch(Instant::now(), 0);
        let (ops, hist) = m.finish();
        assert_eq!((ops, hist.count()), (4, 4));
        // Each of the four took a quarter of the batch's 8 ms or more, none the whole of it.
        assert!(hist.min() >= 2_000_000, "{}", hist.min());
        assert_eq!(hist.min(), hist.max());
        p.finish();
    }
}
