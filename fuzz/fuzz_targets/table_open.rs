//! Opening and reading an arbitrary file as a table never panics.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use screedb::comparator::{InternalKeyComparator, default_comparator};
use screedb::fs::{Fs, MemFs};
use screedb::iter::InternalIterator;
use screedb::table::{Table, TableOptions};

fuzz_target!(|data: &[u8]| {
    let fs = MemFs::new();
    let path = Path::new("/000001.sst");
    screedb::fs::write_all_synced(&fs, path, data).expect("memfs write");
    let icmp = InternalKeyComparator::new(default_comparator());
    let file = fs.open(path).expect("memfs open");
    let Ok(table) = Table::open(file, path.into(), 1, TableOptions::default(), icmp, None) else {
        return;
    };
    let table = Arc::new(table);
    let _ = table.verify_all_blocks();
    let mut it = table.iter();
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && n < 10_000 {
        let _ = table.get(it.key());
        it.next();
        n += 1;
    }
    it.seek_to_last();
    while it.valid() && n < 20_000 {
        it.prev();
        n += 1;
    }
    let _ = it.status();
});
