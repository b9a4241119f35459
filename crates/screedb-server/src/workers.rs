//! Connection threads: one single-threaded tokio runtime per thread, each serving the
//! connections placed on it (thread per core, as Redis's event loop or memcached's workers).
//!
//! A work-stealing runtime wakes an idle worker to look for work whenever one finds some; with
//! many connections each sending one request at a time (`redis-benchmark -P 1`), those wake-ups
//! cost more than the requests. Here a connection stays on the thread it was placed on and
//! nothing wakes another thread for it.
//!
//! Which thread serves a connection is [`crate::placement`]'s choice.

use std::thread::JoinHandle;

use tokio::runtime::{Builder, Handle};
use tokio::sync::oneshot;

/// Threads running a single-threaded runtime each, until [`Workers::stop`].
#[derive(Debug, Default)]
pub(crate) struct Workers {
    handles: Vec<Handle>,
    stops: Vec<oneshot::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl Workers {
    /// Starts `n` threads.
    pub(crate) fn start(n: usize) -> std::io::Result<Workers> {
        let mut workers = Workers::default();
        for i in 0..n {
            let rt = Builder::new_current_thread().enable_all().build()?;
            let (stop, stopped) = oneshot::channel::<()>();
            workers.handles.push(rt.handle().clone());
            workers.stops.push(stop);
            workers.threads.push(
                std::thread::Builder::new()
                    .name(format!("screedb-conn-{i}"))
                    .spawn(move || {
                        // Runs the connections spawned on this runtime until told to stop.
                        let _ = rt.block_on(stopped);
                    })?,
            );
        }
        Ok(workers)
    }

    /// The runtimes' handles, to spawn connections on.
    pub(crate) fn handles(&self) -> &[Handle] {
        &self.handles
    }

    /// Stops every thread (tasks still on them are dropped) and waits for them.
    pub(crate) fn stop(self) {
        drop(self.stops);
        for t in self.threads {
            let _ = t.join();
        }
    }
}
