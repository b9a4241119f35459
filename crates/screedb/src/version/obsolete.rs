//! Deleting tables as soon as nothing references them.
//!
//! Every [`super::Version`] registers the table numbers it holds here when it is built
//! ([`ObsoleteFiles::acquire`]) and unregisters them when it is dropped
//! ([`ObsoleteFiles::release`]); readers and iterators keep tables alive by holding a version.
//! When an edit removes a table from the current version, its number is marked obsolete; the file
//! is deleted when the last version holding that number is dropped. Counting by number (not by
//! `Arc<FileMeta>`) matters: a table moved to another level appears in two versions as two
//! different `FileMeta` values, and compaction jobs hold `Arc<FileMeta>` clones of their inputs
//! outside any version. A table that is dropped without being marked (the database closing, a
//! table moved to another level under the same number) is kept.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::filename;
use crate::fs::Fs;
use crate::sync::lock;
use crate::table::TableCache;

/// How many versions hold each table, and the tables waiting for their last holder.
#[derive(Debug, Default)]
struct Refs {
    held: HashMap<u64, usize>,
    marked: HashSet<u64>,
}

/// Tables removed from the current version, waiting for their last reader.
pub struct ObsoleteFiles {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    tables: Arc<TableCache>,
    state: Mutex<Refs>,
    deleted: AtomicU64,
    failed: AtomicU64,
}

impl std::fmt::Debug for ObsoleteFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObsoleteFiles")
            .field("marked", &lock(&self.state).marked.len())
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
            state: Mutex::new(Refs::default()),
            deleted: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    /// Marks `number` for deletion once no version holds it.
    /// REQUIRES: called before the version that dropped the table is installed.
    pub fn mark(&self, number: u64) {
        lock(&self.state).marked.insert(number);
    }

    /// Registers a version holding the tables `numbers`.
    pub fn acquire(&self, numbers: impl IntoIterator<Item = u64>) {
        let mut state = lock(&self.state);
        for n in numbers {
            *state.held.entry(n).or_insert(0) += 1;
        }
    }

    /// Called when a version holding the tables `numbers` is dropped: deletes each marked table
    /// no other version holds.
    pub fn release(&self, numbers: impl IntoIterator<Item = u64>) {
        let mut unused = Vec::new();
        {
            let mut state = lock(&self.state);
            for n in numbers {
                let Some(count) = state.held.get_mut(&n) else {
                    continue;
                };
                *count -= 1;
                if *count == 0 {
                    state.held.remove(&n);
                    if state.marked.remove(&n) {
                        unused.push(n);
                    }
                }
            }
        }
        for number in unused {
            self.tables.evict(number);
            match self.fs.remove(&filename::table_file(&self.dir, number)) {
                Ok(()) => self.deleted.fetch_add(1, Ordering::Relaxed),
                // The file will be found and removed by the sweep at the next open.
                Err(_) => self.failed.fetch_add(1, Ordering::Relaxed),
            };
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
