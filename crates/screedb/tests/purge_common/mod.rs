//! Helpers shared by the tests that check a dropped reader's tables are deleted
//! (`compaction_deletes_inputs.rs`, `db_snapshots.rs`, `model_regression_3.rs`).

use std::time::{Duration, Instant};

/// Waits (up to 5 s) until `count()` (table files on disk) is `live`, and returns the last
/// count. Dropping a reader deletes what it released, unless a background purge took those
/// tables from the queue first and is still deleting them: a reader does not wait for another
/// thread's purge. Nothing else runs when these tests call it, so a table still there at the
/// deadline is one the drop did not release.
pub fn tables_settle(live: usize, mut count: impl FnMut() -> usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let n = count();
        if n == live || Instant::now() >= deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
