//! A job's work on two threads: its own and one helper (RocksDB splits a compaction into
//! subcompactions for the same reason).
//!
//! Only hash splits use it (the trie layout, [`OutputPlan::ByHash`](super::OutputPlan)): an
//! HTable does all its work in `finish` (placing every entry by hash, writing and syncing the
//! whole file, about half of a split's CPU) and every input is read whole and sorted before the
//! merge starts. A split's outputs are mostly finished together at its end, eight at a time, so
//! one thread left the second core idle once the writer stopped (and background threads keep
//! one job slot free for flushes). Sorted tables write their blocks as entries arrive; their
//! layouts keep one thread per job.

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{Scope, ScopedJoinHandle};

use crate::error::{Error, Result};
use crate::manifest::FileMeta;
use crate::table::TableWriter;

/// Runs `work` over `items` on this thread and one helper, each taking the next item as it
/// becomes free. Results come back in the order of `items`; after the first error neither
/// thread starts another item, and the first error (in the order of `items`) is returned.
pub(super) fn try_map_on_two_threads<I, T, F>(items: Vec<I>, work: F) -> Result<Vec<T>>
where
    I: Send,
    T: Send,
    F: Fn(I) -> Result<T> + Sync,
{
    if items.len() < 2 {
        return items.into_iter().map(work).collect();
    }
    let n = items.len();
    let queue = std::sync::Mutex::new(items.into_iter().enumerate());
    let failed = AtomicBool::new(false);
    let next = || {
        if failed.load(Ordering::Acquire) {
            return None;
        }
        crate::sync::lock(&queue).next()
    };
    let run = || {
        let mut done = Vec::new();
        while let Some((i, item)) = next() {
            let result = work(item);
            if result.is_err() {
                failed.store(true, Ordering::Release);
            }
            done.push((i, result));
        }
        done
    };
    let (mut mine, theirs) = std::thread::scope(|s| {
        // Without a helper (the system refused a thread) this thread does everything.
        let helper = helper_thread().spawn_scoped(s, run).ok();
        let mine = run();
        (mine, helper.map(|h| h.join()))
    });
    // The helper runs only `work`, so it panics only if `work` does: re-raise it then.
    if let Some(theirs) = theirs {
        mine.extend(theirs.unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
    }
    mine.sort_by_key(|&(i, _)| i);
    debug_assert!(mine.len() == n || failed.load(Ordering::Acquire));
    mine.into_iter().map(|(_, t)| t).collect()
}

/// A table that is full, to be finished: its writer, file number and route.
pub(super) type Full = (Box<dyn TableWriter>, u64, u64);

/// Finishes full output tables, on a helper thread when one is free (the job meanwhile goes on
/// writing the next tables), else on the job's own thread.
pub(super) struct Finisher<'scope, 'env> {
    /// None: every table is finished on the job's thread.
    scope: Option<&'scope Scope<'scope, 'env>>,
    helper: Option<ScopedJoinHandle<'scope, Result<FileMeta>>>,
    done: Vec<FileMeta>,
}

impl<'scope, 'env> Finisher<'scope, 'env> {
    /// A finisher using a helper thread of `scope`, or none.
    pub(super) fn new(scope: Option<&'scope Scope<'scope, 'env>>) -> Self {
        Finisher {
            scope,
            helper: None,
            done: Vec::new(),
        }
    }

    /// Finishes `table`: handed to the helper if it is idle, else here.
    pub(super) fn finish(&mut self, table: Full) -> Result<()> {
        let Some(scope) = self.scope else {
            self.done.push(finish(table)?);
            return Ok(());
        };
        if self.helper.as_ref().is_some_and(|h| !h.is_finished()) {
            self.done.push(finish(table)?);
            return Ok(());
        }
        self.join()?;
        // The table comes back if the system refuses a thread: then it is finished here.
        let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(table)));
        let theirs = std::sync::Arc::clone(&slot);
        let spawned = helper_thread().spawn_scoped(scope, move || match take(&theirs) {
            Some(table) => finish(table),
            None => Err(Error::invalid("a helper thread found no table to finish")),
        });
        match spawned {
            Ok(h) => self.helper = Some(h),
            Err(_) => {
                if let Some(table) = take(&slot) {
                    self.done.push(finish(table)?);
                }
            }
        }
        Ok(())
    }

    /// Waits for the helper's table.
    fn join(&mut self) -> Result<()> {
        if let Some(h) = self.helper.take() {
            let meta = h.join().map_err(|_| {
                Error::io(
                    "finish table",
                    "compaction output",
                    std::io::Error::other("the thread finishing it panicked"),
                )
            })??;
            self.done.push(meta);
        }
        Ok(())
    }

    /// Every finished table, once the helper is done (in no particular order).
    pub(super) fn into_finished(mut self) -> Result<Vec<FileMeta>> {
        self.join()?;
        Ok(std::mem::take(&mut self.done))
    }
}

impl Drop for Finisher<'_, '_> {
    /// A job that fails with the helper still running waits for it here (its table is named by
    /// no edit and removed at the next open); the helper's own result is moot then.
    fn drop(&mut self) {
        if let Some(h) = self.helper.take() {
            let _ = h.join();
        }
    }
}

/// The builder of a job's helper thread.
fn helper_thread() -> std::thread::Builder {
    std::thread::Builder::new().name("screedb-job-helper".to_string())
}

fn take(slot: &std::sync::Mutex<Option<Full>>) -> Option<Full> {
    crate::sync::lock(slot).take()
}

fn finish((writer, number, route): Full) -> Result<FileMeta> {
    Ok(FileMeta {
        route,
        ..super::job::finish_table(writer, number)?
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{TableFormat, TableProperties};

    /// A writer whose `finish` takes a while and reports `size`, or fails when `size` is 0.
    #[derive(Debug)]
    struct Slow(u64);

    impl TableWriter for Slow {
        fn format(&self) -> TableFormat {
            TableFormat::HTable
        }
        fn add(&mut self, _: &[u8], _: &[u8]) -> Result<()> {
            Ok(())
        }
        fn estimated_file_size(&self) -> u64 {
            self.0
        }
        fn finish(self: Box<Self>) -> Result<(u64, TableProperties)> {
            std::thread::sleep(std::time::Duration::from_millis(2));
            if self.0 == 0 {
                return Err(Error::invalid("a table that cannot be finished"));
            }
            Ok((self.0, TableProperties::default()))
        }
    }

    fn finish_all(sizes: &[u64], parallel: bool) -> Result<Vec<(u64, u64, u64)>> {
        std::thread::scope(|s| {
            let mut f = Finisher::new(parallel.then_some(s));
            for (i, &size) in sizes.iter().enumerate() {
                f.finish((Box::new(Slow(size)), 100 + i as u64, i as u64 % 8))?;
            }
            let mut done: Vec<_> = f
                .into_finished()?
                .iter()
                .map(|m| (m.number, m.route, m.file_size))
                .collect();
            done.sort_unstable();
            Ok(done)
        })
    }

    #[test]
    fn every_table_is_finished_once_with_or_without_the_helper() {
        let sizes: Vec<u64> = (1..=20).collect();
        let want: Vec<_> = (0..20u64).map(|i| (100 + i, i % 8, i + 1)).collect();
        assert_eq!(finish_all(&sizes, true).unwrap(), want);
        assert_eq!(finish_all(&sizes, false).unwrap(), want);
        // A failure on either thread fails the job.
        for at in [0, 1, 5, 19] {
            let mut bad = sizes.clone();
            bad[at] = 0;
            let err = finish_all(&bad, true).unwrap_err();
            assert!(err.to_string().contains("cannot be finished"), "{err}");
        }
    }

    #[test]
    fn results_keep_the_order_of_the_items_and_stop_at_an_error() {
        let items: Vec<u64> = (0..100).collect();
        let squares = try_map_on_two_threads(items, |i| {
            if i % 7 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            Ok(i * i)
        });
        assert_eq!(
            squares.unwrap(),
            (0..100u64).map(|i| i * i).collect::<Vec<_>>()
        );
        assert_eq!(
            try_map_on_two_threads(vec![3u8], |i| Ok(i + 1)).unwrap(),
            vec![4]
        );
        assert!(
            try_map_on_two_threads(Vec::<u8>::new(), Ok)
                .unwrap()
                .is_empty()
        );
        // Item 10 fails: the error comes back and few items after it are started.
        let started = std::sync::atomic::AtomicUsize::new(0);
        let err = try_map_on_two_threads((0..1000u64).collect(), |i| {
            started.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(std::time::Duration::from_micros(200));
            if i == 10 {
                return Err(Error::invalid("input 10 is corrupt"));
            }
            Ok(i)
        })
        .unwrap_err();
        assert!(err.to_string().contains("input 10"), "{err}");
        let started = started.load(Ordering::Relaxed);
        assert!(started < 100, "{started} items started");
    }
}
