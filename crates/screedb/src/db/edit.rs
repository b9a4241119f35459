//! Installing a version edit without holding the database mutex over the MANIFEST's write and
//! sync (LevelDB's `LogAndApply` unlocks around the same I/O; RocksDB queues manifest writers).
//!
//! With the mutex held, a MANIFEST sync (milliseconds, or far more on a slow disk) stopped every
//! writer and reader that needed the mutex: the README job's write latency maxima of 45-52 ms
//! were those syncs. Now the version is built and the record encoded under the mutex, the mutex
//! is released for the append and the sync, and retaken to install the version. One edit is in
//! flight at a time (`DbState::manifest_busy`), so the version an edit was built on is still
//! current when it is installed; a job that wants to apply an edit meanwhile waits on `bg_cv`.
//! Until the install, the state the edit changes is the job's to guard: the flush keeps
//! `flush_running`, a compaction its busy files (`background.rs`), so no other job picks the
//! same memtable or tables in the window.

use std::sync::MutexGuard;

use super::{DbInner, DbState};
use crate::error::Result;
use crate::manifest::VersionEdit;
use crate::sync::{lock, wait};

/// Writes `edit` to the MANIFEST with `st` unlocked for the I/O, and installs its version.
/// Returns the result and the state, locked again. The super version is not republished: the
/// caller does that once its own bookkeeping is done.
pub(super) fn apply<'a>(
    inner: &'a DbInner,
    mut st: MutexGuard<'a, DbState>,
    edit: VersionEdit,
) -> (Result<()>, MutexGuard<'a, DbState>) {
    while st.manifest_busy {
        st = wait(&inner.bg_cv, st);
    }
    let before = st.versions.current();
    let mut prepared = match st.versions.prepare(edit) {
        Ok(p) => p,
        Err(e) => return (Err(e), st),
    };
    st.manifest_busy = true;
    drop(st);
    let written = prepared.write();
    let mut st = lock(&inner.state);
    let result = st.versions.install(prepared, written);
    if result.is_ok() {
        // The edit is durable: clusters it superseded go with the next purge.
        let after = st.versions.current();
        inner
            .obsolete
            .supersede_clusters(crate::layout::trie::superseded_cluster_holders(
                &before, &after,
            ));
    }
    st.manifest_busy = false;
    inner.bg_cv.notify_all();
    (result, st)
}
