//! Deleting tables as soon as nothing references them.
//!
//! When an edit removes a table from the current version, its number is marked obsolete here.
//! Versions and compaction choices hold tables as [`super::FileRef`]; when the last holder drops
//! (the last version, choice or iterator that could read the table), [`ObsoleteFiles::release`]
//! runs and, if the table was marked, queues it for deletion; [`ObsoleteFiles::purge`] deletes
//! the queued files. The last holder is often dropped under the database mutex (installing a
//! new super version) or by a reader, and unlinking a 64 MiB table took 13-30 ms there (the
//! write latency maxima of 10M fillrandom), so the database's background threads purge, with
//! no lock held, after each job and before they sleep, and a reader that released the last
//! reference purges as it finishes ([`PurgeOnDrop`]). A table that is dropped without being
//! marked (the database closing, a table moved to another level under the same number) is kept.
//! The trie layout's superseded BloomClusters (side files of tables that stay) are queued here
//! too, by the installed edit that superseded them, and go with the same purges.

use std::collections::HashSet;
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::filename;
use crate::fs::Fs;
use crate::sync::lock;
use crate::table::TableCache;

/// Tables removed from the current version, waiting for their last reader.
pub struct ObsoleteFiles {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    tables: Arc<TableCache>,
    marked: Mutex<HashSet<u64>>,
    /// Released marked tables not deleted yet.
    queued: Mutex<Vec<u64>>,
    /// Live tables whose BloomCluster was superseded (the trie layout), not deleted yet.
    superseded_clusters: Mutex<Vec<u64>>,
    /// Whether `queued` or `superseded_clusters` holds anything (changed under their locks;
    /// read without them, so readers can ask on every lookup).
    any_queued: AtomicBool,
    /// Held for a whole purge: a purge returns only once every table queued before it is gone,
    /// even those another thread's purge took.
    purging: Mutex<()>,
    deleted: AtomicU64,
    failed: AtomicU64,
}

impl std::fmt::Debug for ObsoleteFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObsoleteFiles")
            .field("marked", &lock(&self.marked).len())
            .field("queued", &lock(&self.queued).len())
            .finish()
    }
}

impl ObsoleteFiles {
    /// Tracks obsolete tables of the database in `dir`.
    pub fn new(fs: Arc<dyn Fs>, dir: PathBuf, tables: Arc<TableCache>) -> Self {
        ObsoleteFiles {
            fs,
            dir,
            tables,
            marked: Mutex::new(HashSet::new()),
            queued: Mutex::new(Vec::new()),
            superseded_clusters: Mutex::new(Vec::new()),
            any_queued: AtomicBool::new(false),
            purging: Mutex::new(()),
            deleted: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    /// Marks `number` for deletion once no version holds it.
    /// REQUIRES: called before the version that dropped the table is installed.
    pub fn mark(&self, number: u64) {
        lock(&self.marked).insert(number);
    }

    /// Called when the last reference to table `number` is dropped: queues it for
    /// [`ObsoleteFiles::purge`] if it was marked. Cheap: may run under the database mutex.
    pub fn release(&self, number: u64) {
        if lock(&self.marked).remove(&number) {
            let mut queued = lock(&self.queued);
            queued.push(number);
            self.any_queued.store(true, Ordering::Relaxed);
        }
    }

    /// Queues the BloomClusters of live tables `holders` for deletion: an installed version no
    /// longer reads them (`layout::trie::superseded_cluster_holders`). A reader of an older
    /// version that has the cluster open keeps it; one that opens it after the deletion finds
    /// none and asks the tables' own filters, as for any table without a cluster.
    pub fn supersede_clusters(&self, holders: Vec<u64>) {
        if holders.is_empty() {
            return;
        }
        lock(&self.superseded_clusters).extend(holders);
        self.any_queued.store(true, Ordering::Relaxed);
    }

    /// Whether released tables or superseded clusters wait for [`ObsoleteFiles::purge`]: one
    /// relaxed load.
    pub fn has_queued(&self) -> bool {
        self.any_queued.load(Ordering::Relaxed)
    }

    /// Deletes the queued tables (and their BloomClusters) and the superseded clusters: closes
    /// them in the table cache and removes the files. Call with no database lock held.
    pub fn purge(&self) {
        let _purging = lock(&self.purging);
        let (queued, clusters) = {
            let mut queued = lock(&self.queued);
            let mut clusters = lock(&self.superseded_clusters);
            self.any_queued.store(false, Ordering::Relaxed);
            (std::mem::take(&mut *queued), std::mem::take(&mut *clusters))
        };
        for holder in clusters {
            self.tables.forget_cluster(holder);
            // One left behind (a failed removal) goes at the next open's sweep.
            let _ = self.fs.remove(&filename::cluster_file(&self.dir, holder));
        }
        for number in queued {
            self.tables.evict(number);
            // The table's BloomCluster, if it holds one (the trie layout), goes with it.
            let cluster = filename::cluster_file(&self.dir, number);
            if self.fs.exists(&cluster) {
                let _ = self.fs.remove(&cluster);
            }
            match self.fs.remove(&filename::table_file(&self.dir, number)) {
                Ok(()) => self.deleted.fetch_add(1, Ordering::Relaxed),
                // The file will be found and removed by the sweep at the next open.
                Err(_) => self.failed.fetch_add(1, Ordering::Relaxed),
            };
        }
    }

    /// Deletes the queued tables if there are any ([`ObsoleteFiles::purge`]). Unlike `purge`,
    /// it does not wait for tables another thread's purge is deleting: for readers, which only
    /// owe the deletion of what they released, not a caller that must see the files gone.
    pub fn purge_if_queued(&self) {
        if self.has_queued() {
            self.purge();
        }
    }

    /// Tables deleted so far, and deletions that failed.
    pub fn counts(&self) -> (u64, u64) {
        (
            self.deleted.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
        )
    }

    /// The table cache (shared with the database).
    pub fn table_cache(&self) -> &Arc<TableCache> {
        &self.tables
    }
}

/// Purges `F`'s queue when dropped, if anything waits. A reader declares it before the super
/// version it pins, so that the reader that released the last reference to a replaced table
/// deletes it, as it did before deletion was queued, rather than leaving it to a background
/// thread that may be asleep until the next job.
#[derive(Debug)]
pub struct PurgeOnDrop<F: Deref<Target = ObsoleteFiles>>(pub F);

impl<F: Deref<Target = ObsoleteFiles>> Drop for PurgeOnDrop<F> {
    fn drop(&mut self) {
        self.0.purge_if_queued();
    }
}
