//! Parsing an arbitrary WAL record as a write batch never panics.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use screedb::WriteBatch;

fuzz_target!(|data: &[u8]| {
    if let Ok(batch) = WriteBatch::from_record(data.to_vec(), Path::new("/000001.log"), 0) {
        assert_eq!(batch.iter().count(), batch.count() as usize);
    }
});
