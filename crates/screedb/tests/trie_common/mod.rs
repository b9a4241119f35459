//! What the trie model tests share: options so small that every mechanism of the layout runs
//! within a few thousand writes, and the keys and values they write.

use std::sync::Arc;

use screedb::fs::MemFs;
use screedb::{Layout, Options, TrieOptions};

/// Tiny tables (a few KiB of buckets), two-table piles and four levels: every level of the trie
/// fills, splits and is merged in place within a few thousand writes.
pub fn options(fs: Arc<MemFs>) -> Options {
    Options {
        create_if_missing: true,
        fs,
        layout: Layout::Trie(TrieOptions {
            bucket_bytes: 512,
            split_tables: 2,
            max_tables_per_container: 2,
            ..TrieOptions::default()
        }),
        write_buffer_size: 8 << 10,
        target_file_size: 8 << 10,
        l0_compaction_trigger: 2,
        num_levels: 4,
        block_cache_bytes: 32 << 10,
        ..Options::default()
    }
}

pub fn key(i: u64) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

/// The value written to key `i` at `step`: 8 to 67 bytes.
pub fn value(i: u64, step: u64) -> Vec<u8> {
    let mut v = format!("v{i}.{step}.").into_bytes();
    v.resize(8 + (step % 60) as usize, b'x');
    v
}
