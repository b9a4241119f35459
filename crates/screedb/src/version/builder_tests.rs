//! Tables that grow: a "table grew" edit gives the table a larger extent in the new version,
//! the old version keeps reading its own, and the file lives until neither needs it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::compaction::test_support::file;
use crate::comparator::{InternalKeyComparator, default_comparator};
use crate::fs::{Fs, MemFs};
use crate::layout::LayoutKind;
use crate::manifest::FileMeta;
use crate::table::{TableCache, TableOptions};
use crate::version::obsolete::ObsoleteFiles;

fn setup() -> (Arc<MemFs>, Arc<ObsoleteFiles>, Version) {
    let fs = Arc::new(MemFs::new());
    fs.create_dir_all(Path::new("/db")).unwrap();
    let icmp = InternalKeyComparator::new(default_comparator());
    let tables = Arc::new(TableCache::new(
        fs.clone(),
        PathBuf::from("/db"),
        TableOptions::default(),
        icmp.clone(),
        16,
        None,
    ));
    let obsolete = Arc::new(ObsoleteFiles::new(fs.clone(), PathBuf::from("/db"), tables));
    let empty = Version::empty(icmp, LayoutKind::Leveled, 4, Arc::clone(&obsolete));
    (fs, obsolete, empty)
}

fn apply(base: &Version, edit: VersionEdit) -> std::result::Result<Version, String> {
    let mut b = VersionBuilder::new(base);
    b.apply(&edit)?;
    Ok(b.build())
}

fn grown(meta: &FileMeta, size: u64) -> FileMeta {
    FileMeta {
        file_size: size,
        end_checksum: Some(0xabcd),
        ..meta.clone()
    }
}

#[test]
fn a_grown_table_has_its_new_extent_and_the_old_version_keeps_its_own() {
    let (_fs, _obsolete, empty) = setup();
    let meta = file(5, "a", "m", 100);
    let v1 = apply(
        &empty,
        VersionEdit {
            new_files: vec![(1, meta.clone())],
            ..VersionEdit::default()
        },
    )
    .unwrap();
    let v2 = apply(
        &v1,
        VersionEdit {
            grown_files: vec![(1, grown(&meta, 250))],
            ..VersionEdit::default()
        },
    )
    .unwrap();
    assert_eq!(v1.files(1)[0].file_size, 100);
    assert_eq!(v2.files(1)[0].file_size, 250);
    assert_eq!(v2.files(1)[0].end_checksum, Some(0xabcd));
    assert_eq!(v2.files(1).len(), 1);
    assert_eq!(v2.level_bytes(1), 250);
    v2.check_invariants().unwrap();
}

#[test]
fn a_grown_table_is_deleted_only_when_no_version_of_any_extent_holds_it() {
    let (fs, obsolete, empty) = setup();
    let path = Path::new("/db/000005.sst");
    crate::fs::write_all_synced(fs.as_ref(), path, b"table bytes").unwrap();
    let meta = file(5, "a", "m", 100);
    let v1 = apply(
        &empty,
        VersionEdit {
            new_files: vec![(1, meta.clone())],
            ..VersionEdit::default()
        },
    )
    .unwrap();
    let v2 = apply(
        &v1,
        VersionEdit {
            grown_files: vec![(1, grown(&meta, 250))],
            ..VersionEdit::default()
        },
    )
    .unwrap();
    let v3 = apply(
        &v2,
        VersionEdit {
            deleted_files: vec![(1, 5)],
            ..VersionEdit::default()
        },
    )
    .unwrap();
    obsolete.mark(5);
    drop(v2);
    obsolete.purge();
    assert!(
        fs.exists(path),
        "v1 still reads the table at its old extent"
    );
    drop(v1);
    assert!(fs.exists(path), "deletion waits for a purge");
    obsolete.purge();
    assert!(!fs.exists(path), "nothing holds the table any more");
    assert!(v3.files(1).is_empty());
}

#[test]
fn growing_a_missing_table_or_shrinking_one_is_refused() {
    let (_fs, _obsolete, empty) = setup();
    let meta = file(5, "a", "m", 100);
    let err = apply(
        &empty,
        VersionEdit {
            grown_files: vec![(1, meta.clone())],
            ..VersionEdit::default()
        },
    )
    .err()
    .unwrap();
    assert!(err.contains("grows table 5 at level 1"), "{err}");
    let v1 = apply(
        &empty,
        VersionEdit {
            new_files: vec![(1, meta.clone())],
            ..VersionEdit::default()
        },
    )
    .unwrap();
    let err = apply(
        &v1,
        VersionEdit {
            grown_files: vec![(1, grown(&meta, 99))],
            ..VersionEdit::default()
        },
    )
    .err()
    .unwrap();
    assert!(err.contains("shrinks table 5 from 100 to 99"), "{err}");
}
