//! Helpers shared by the iterator tests (`db_iter_refresh.rs`, `db_iter_reuse.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use screedb::fs::MemFs;
use screedb::{Db, DbIterator, Memory, Options};

/// A small database in memory: 16 KiB memtables, so a few hundred writes flush.
pub fn options(memory: Memory) -> Options {
    Options {
        create_if_missing: true,
        fs: Arc::new(MemFs::new()),
        memory,
        write_buffer_size: 16 << 10,
        ..Options::default()
    }
}

/// A memtable of 4 MiB in runs of 64 KiB (`Options::memtable_run_size`): a few thousand
/// writes start several runs and flush nothing.
pub fn runs_options(memory: Memory) -> Options {
    Options {
        write_buffer_size: 4 << 20,
        memtable_run_size: 64 << 10,
        ..options(memory)
    }
}

pub fn key(i: u32) -> Vec<u8> {
    format!("key{i:04}").into_bytes()
}

/// Puts keys `range` with 100-byte values, in `db` and in `model`.
pub fn put_range(db: &Db, model: &mut BTreeMap<Vec<u8>, Vec<u8>>, range: std::ops::Range<u32>) {
    let value = vec![b'v'; 100];
    for i in range {
        db.put(key(i), &value).unwrap();
        model.insert(key(i), value.clone());
    }
}

/// Everything `it` reads from the first key on.
pub fn all(it: &mut DbIterator) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut got = BTreeMap::new();
    it.seek_to_first();
    while it.valid() {
        got.insert(it.key().to_vec(), it.value().to_vec());
        it.next();
    }
    it.status().unwrap();
    got
}
