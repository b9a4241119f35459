//! The writer thread: runs of plain SETs that pipelining clients send are written by one
//! thread, while the connection threads go on serving.
//!
//! Why: the engine admits one write group at a time. When two connection threads each wrote
//! their runs themselves, one led a group and the other waited in the engine for it to finish,
//! and with it every other connection of the waiting thread. Handed to one thread, the runs
//! reach the engine one after another with nobody blocked; a connection thread only awaits the
//! reply. A lone SET (a client that waits for each reply) is written in place: handing it over
//! would cost a wake-up of the writer thread and one of the connection thread afterwards, more
//! than the write. Under `--sync always` runs wait for an fsync on the blocking pool instead, so
//! that concurrent runs share one (group commit).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

/// Runs of this many plain SETs or more go to the writer thread.
pub(crate) const HANDED_OVER_RUN: usize = 4;

type Job = Box<dyn FnOnce() + Send>;

/// One thread running the writes handed to it, in the order they arrive, until dropped.
#[derive(Debug)]
pub(crate) struct Writer {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    /// Starts the thread.
    pub(crate) fn start() -> std::io::Result<Writer> {
        let (jobs, received) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("screedb-writer".to_string())
            .spawn(move || {
                while let Ok(job) = received.recv() {
                    // A job that panics drops its reply channel, and its connection answers
                    // with an error; the thread goes on with the next.
                    let _ = catch_unwind(AssertUnwindSafe(job));
                }
            })?;
        Ok(Writer {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Runs `write` on the writer thread and returns its result; `None` if it panicked.
    pub(crate) async fn run<T: Send + 'static>(
        &self,
        write: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let (reply, replied) = oneshot::channel();
        let job: Job = Box::new(move || {
            let _ = reply.send(write());
        });
        self.jobs.as_ref()?.send(job).ok()?;
        replied.await.ok()
    }
}

impl Drop for Writer {
    /// Lets the thread finish what it was handed, then waits for it. A job may hold the last
    /// reference to the server's state (its connection cut off at shutdown), so the writer can
    /// be dropped on its own thread: that one cannot wait for itself, and ends once the job
    /// returns since no job is left to come.
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take()
            && thread.thread().id() != std::thread::current().id()
        {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn writes_run_in_order_on_one_thread_and_a_panic_is_an_answer() {
        let writer = Writer::start().unwrap();
        let mut threads = Vec::new();
        for i in 0..10 {
            let (n, name) = writer
                .run(move || (i, std::thread::current().name().map(str::to_string)))
                .await
                .unwrap();
            assert_eq!(n, i);
            threads.push(name);
        }
        assert!(
            threads
                .iter()
                .all(|t| t.as_deref() == Some("screedb-writer"))
        );
        assert_eq!(
            writer.run(|| -> u8 { panic!("a write failed") }).await,
            None
        );
        assert_eq!(writer.run(|| 7).await, Some(7));
    }

    #[test]
    fn a_writer_dropped_on_its_own_thread_does_not_wait_for_itself() {
        use std::sync::{Arc, Mutex};
        let slot: Arc<Mutex<Option<Writer>>> = Arc::default();
        let writer = Writer::start().unwrap();
        let jobs = writer.jobs.clone().unwrap();
        *slot.lock().unwrap() = Some(writer);
        // The job drops the writer on the writer thread (as the last holder of the server's
        // state does), then reports: waiting there for itself would panic before the report.
        let (done, finished) = mpsc::channel();
        let held = Arc::clone(&slot);
        let job: Job = Box::new(move || {
            drop(held.lock().unwrap().take());
            let _ = done.send(());
        });
        jobs.send(job).unwrap();
        drop(jobs);
        finished
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the job went on after dropping its writer");
    }
}
