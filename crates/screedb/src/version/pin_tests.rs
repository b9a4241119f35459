//! Tables pinned by the versions that hold them (`TableFile::reader`): point reads use the
//! pinned reader, at most `max_open_tables` are pinned, and a pin ends with its table.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::comparator::{InternalKeyComparator, default_comparator};
use crate::fs::{Fs, MemFs};
use crate::key::make_internal_key;
use crate::manifest::VersionEdit;
use crate::table::{TableBuilder, TableOptions, table_file_name};

/// Table `n` holding `key` -> `value` at sequence `n`, written to `/db`.
fn table(fs: &MemFs, n: u64, key: &str, value: &str) -> FileMeta {
    let icmp = InternalKeyComparator::new(default_comparator());
    let path = table_file_name(Path::new("/db"), n);
    let file = fs.create(&path).unwrap();
    let mut b = TableBuilder::new(TableOptions::default(), icmp, file, path);
    let ikey = make_internal_key(key.as_bytes(), n, ValueKind::Value);
    b.add(&ikey, value.as_bytes()).unwrap();
    let (file_size, _) = b.finish().unwrap();
    FileMeta {
        number: n,
        file_size,
        smallest: ikey.clone(),
        largest: ikey,
        smallest_seq: n,
        largest_seq: n,
        num_entries: 1,
        ..FileMeta::default()
    }
}

#[test]
fn point_reads_pin_their_tables_up_to_the_budget_and_the_pins_end_with_the_version() {
    let fs = Arc::new(MemFs::new());
    fs.create_dir_all(Path::new("/db")).unwrap();
    let icmp = InternalKeyComparator::new(default_comparator());
    // `max_open_tables` 2: two tables may be pinned, the third is read through the cache.
    let tables = Arc::new(TableCache::new(
        fs.clone(),
        PathBuf::from("/db"),
        TableOptions::default(),
        icmp.clone(),
        2,
        None,
    ));
    let obsolete = Arc::new(ObsoleteFiles::new(
        fs.clone(),
        PathBuf::from("/db"),
        Arc::clone(&tables),
    ));
    let empty = Version::empty(icmp, LayoutKind::Leveled, 4, obsolete);
    let edit = VersionEdit {
        new_files: vec![
            (1, table(&fs, 1, "a", "one")),
            (1, table(&fs, 2, "b", "two")),
            (1, table(&fs, 3, "c", "three")),
        ],
        ..VersionEdit::default()
    };
    let mut builder = VersionBuilder::new(&empty);
    builder.apply(&edit).unwrap();
    let version = builder.build();

    for (key, value) in [("a", "one"), ("b", "two"), ("c", "three"), ("a", "one")] {
        let (found, _) = version
            .get_counting(&tables, key.as_bytes(), 100, 0)
            .unwrap();
        assert_eq!(found, Lookup::Found(value.as_bytes().to_vec()), "{key}");
    }
    assert_eq!(tables.pinned(), 2, "the budget is max_open_tables");

    let files = version.files(1);
    let pinned = |f: &FileRef| matches!(f.reader(&tables).unwrap(), Cow::Borrowed(_));
    assert!(pinned(&files[0]) && pinned(&files[1]));
    assert!(
        !pinned(&files[2]),
        "past the budget a read goes through the cache"
    );
    let (first, again) = (
        files[0].reader(&tables).unwrap(),
        files[0].reader(&tables).unwrap(),
    );
    assert!(Arc::ptr_eq(&first, &again), "a pinned table is opened once");
    drop((first, again));

    drop(version);
    drop(empty);
    assert_eq!(
        tables.pinned(),
        0,
        "pins end with the tables that held them"
    );
}
