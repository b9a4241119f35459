//! Hand-built versions (no table files) for the compaction unit tests.

use std::path::PathBuf;
use std::sync::Arc;

use crate::comparator::{InternalKeyComparator, default_comparator};
use crate::fs::MemFs;
use crate::key::{ValueKind, make_internal_key};
use crate::layout::LayoutKind;
use crate::manifest::{FileMeta, VersionEdit};
use crate::table::{TableCache, TableOptions};
use crate::version::obsolete::ObsoleteFiles;
use crate::version::{Version, VersionBuilder};

/// A table `number` (its sequence number too) holding `smallest..=largest`, `size` bytes.
pub fn file(number: u64, smallest: &str, largest: &str, size: u64) -> FileMeta {
    FileMeta {
        number,
        file_size: size,
        smallest: make_internal_key(smallest.as_bytes(), number, ValueKind::Value),
        largest: make_internal_key(largest.as_bytes(), number, ValueKind::Value),
        smallest_seq: number,
        largest_seq: number,
        num_entries: 10,
        num_deletions: 0,

        ..FileMeta::default()
    }
}

/// An FLSM version with 4 levels, `guards` as `(level, key)` and `files` as `(level, meta)`.
pub fn version(guards: &[(u32, &str)], files: Vec<(u32, FileMeta)>) -> Version {
    version_of(LayoutKind::Flsm, guards, files)
}

/// A version of `layout` with 4 levels, `guards` as `(level, key)` and `files` as
/// `(level, meta)`; its invariants are checked.
pub fn version_of(
    layout: LayoutKind,
    guards: &[(u32, &str)],
    files: Vec<(u32, FileMeta)>,
) -> Version {
    let base = empty_version(layout);
    let mut b = VersionBuilder::new(&base);
    b.apply(&VersionEdit {
        new_files: files,
        added_guards: guards
            .iter()
            .map(|(l, k)| (*l, k.as_bytes().to_vec()))
            .collect(),
        ..VersionEdit::default()
    })
    .unwrap();
    let v = b.build();
    v.check_invariants().unwrap();
    v
}

/// An empty version of `layout` with 4 levels.
pub fn empty_version(layout: LayoutKind) -> Version {
    let icmp = InternalKeyComparator::new(default_comparator());
    let fs = Arc::new(MemFs::new());
    let tables = Arc::new(TableCache::new(
        fs.clone(),
        PathBuf::from("/db"),
        TableOptions::default(),
        icmp.clone(),
        16,
        None,
    ));
    let obsolete = Arc::new(ObsoleteFiles::new(fs, PathBuf::from("/db"), tables));
    Version::empty(icmp, layout, 4, obsolete)
}

/// Guards "m" at levels 1-3, "f" and "t" at levels 2-3 (skip-list property).
pub const GUARDS: &[(u32, &str)] = &[
    (1, "m"),
    (2, "f"),
    (2, "m"),
    (2, "t"),
    (3, "f"),
    (3, "m"),
    (3, "t"),
];
