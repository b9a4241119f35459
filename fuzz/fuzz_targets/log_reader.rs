//! The log reader never panics, and in tolerate-torn-tail mode ends cleanly or with an error.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use screedb::fs::{Fs, MemFs};
use screedb::wal::{LogReader, RecoveryMode};

fuzz_target!(|data: &[u8]| {
    let fs = MemFs::new();
    let path = Path::new("/fuzz.log");
    screedb::fs::write_all_synced(&fs, path, data).expect("memfs write");
    for mode in [RecoveryMode::Strict, RecoveryMode::TolerateTornTail] {
        let mut reader = LogReader::new(fs.open(path).expect("memfs open"), path.into(), mode);
        for _ in 0..10_000 {
            match reader.read_record() {
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
    }
});
