//! Decoding and iterating an arbitrary block never panics.
#![no_main]

use std::path::Path;
use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use screedb::comparator::{InternalKeyComparator, default_comparator};
use screedb::iter::InternalIterator;
use screedb::table::Block;

fuzz_target!(|data: &[u8]| {
    let Ok(block) = Block::new(data.to_vec(), Arc::from(Path::new("/fuzz.sst")), 0) else { return };
    let block = Arc::new(block);
    let _ = block.entries();
    let mut it = block.iter(InternalKeyComparator::new(default_comparator()));
    it.seek_to_first();
    let mut n = 0;
    while it.valid() && n < 10_000 {
        it.next();
        n += 1;
    }
    it.seek_to_last();
    while it.valid() && n < 20_000 {
        it.prev();
        n += 1;
    }
    it.seek(data.get(..data.len().min(16)).unwrap_or_default());
    let _ = it.status();
});
