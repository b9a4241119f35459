//! A sorted table read through a memory map (`Options::mmap_reads`): uncompressed blocks are
//! used in place and remembered as plain once their trailer and checksum were read; compressed
//! blocks go through the cache. Both kinds mixed in one table read back right, twice over (the
//! second pass through the remembered blocks), and a flipped byte in a plain block is reported;
//! a seek announced by `prefetch_seek` lands where a plain one does.

use std::path::Path;
use std::sync::Arc;

use super::Table;
use crate::comparator::{InternalKeyComparator, default_comparator};
use crate::fs::{Fs, OsFs};
use crate::iter::InternalIterator;
use crate::key::{ValueKind, make_internal_key};
use crate::table::compression::incompressible;
use crate::table::{BlockCache, CompressionType, TableBuilder, TableOptions};

fn icmp() -> InternalKeyComparator {
    InternalKeyComparator::new(default_comparator())
}

/// Entries whose values alternate, block by block, between compressible text and bytes LZ4
/// cannot shrink, so the table holds both kinds of block.
fn entries() -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..3000u32)
        .map(|i| {
            let key = make_internal_key(format!("key{i:06}").as_bytes(), 7, ValueKind::Value);
            let value = if (i / 20) % 2 == 0 {
                format!("compressible {i} ").repeat(6).into_bytes()
            } else {
                incompressible(u64::from(i), 100)
            };
            (key, value)
        })
        .collect()
}

fn write(path: &Path, opts: &TableOptions, es: &[(Vec<u8>, Vec<u8>)]) {
    let file = OsFs.create(path).unwrap();
    let mut b = TableBuilder::new(opts.clone(), icmp(), file, path.to_path_buf());
    for (k, v) in es {
        b.add(k, v).unwrap();
    }
    b.finish().unwrap();
}

fn open_mapped(path: &Path, opts: &TableOptions) -> Arc<Table> {
    let file = OsFs.open_mapped(path).unwrap();
    assert!(file.is_mapped());
    let cache = Some(Arc::new(BlockCache::new(1 << 20)));
    Arc::new(Table::open(file, path.into(), 1, opts.clone(), icmp(), cache).unwrap())
}

fn opts() -> TableOptions {
    TableOptions {
        block_size: 1024,
        compression: CompressionType::Lz4,
        ..TableOptions::default()
    }
}

#[test]
fn plain_and_compressed_blocks_of_a_mapped_table_read_back_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.sst");
    let es = entries();
    write(&path, &opts(), &es);
    let table = open_mapped(&path, &opts());
    for pass in 0..2 {
        let mut it = table.table_iter();
        it.seek_to_first();
        for (k, v) in &es {
            assert!(it.valid(), "pass {pass}: {:?}", it.status());
            assert_eq!((it.key(), it.value()), (&k[..], &v[..]), "pass {pass}");
            it.next();
        }
        assert!(!it.valid());
        it.status().unwrap();
        // Seeks and gets in an order that visits blocks out of index order.
        for i in (0..es.len()).rev().step_by(7) {
            it.seek(&es[i].0);
            assert_eq!(it.value(), &es[i].1[..], "pass {pass}: seek {i}");
            let (k, v) = table.get(&es[i].0).unwrap().unwrap();
            assert_eq!((k, v), es[i].clone(), "pass {pass}: get {i}");
        }
    }
}

#[test]
fn a_flipped_byte_in_a_plain_block_of_a_mapped_table_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.sst");
    let es = entries();
    let opts = TableOptions {
        compression: CompressionType::None,
        ..opts()
    };
    write(&path, &opts, &es);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[1500] ^= 0x10; // inside the second data block
    std::fs::write(&path, bytes).unwrap();
    let table = open_mapped(&path, &opts);
    let mut it = table.table_iter();
    it.seek_to_first();
    let mut read = 0;
    while it.valid() {
        read += 1;
        it.next();
    }
    let err = it.status().unwrap_err();
    assert!(
        err.is_corruption() && err.to_string().contains("000001.sst at offset"),
        "{err}"
    );
    assert!(
        read > 0 && read < es.len(),
        "{read} entries before the damage"
    );
    // Reported again on the next read of the damaged block: a block whose checksum failed is
    // never taken as plain.
    for _ in 0..2 {
        let mut it = table.table_iter();
        it.seek(&es[read].0);
        assert!(!it.valid());
        assert!(it.status().unwrap_err().is_corruption());
        assert!(table.get(&es[read].0).unwrap_err().is_corruption());
    }
}

/// `prefetch_seek` (a merging iterator's hint before it seeks every child) leaves the index
/// positioned for the seek that follows: that seek, and a seek to another target or after
/// another move, land where a plain seek does, in a mapped table and in one read by `pread`.
#[test]
fn a_seek_announced_by_prefetch_seek_lands_where_a_plain_seek_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000001.sst");
    let es = entries();
    write(&path, &opts(), &es);
    let mapped = open_mapped(&path, &opts());
    let file = OsFs.open(&path).unwrap();
    let read = Arc::new(Table::open(file, path.clone(), 1, opts(), icmp(), None).unwrap());
    let between =
        |i: usize| make_internal_key(format!("key{i:06}x").as_bytes(), 7, ValueKind::Value);
    let mut targets: Vec<Vec<u8>> = vec![b"a".to_vec(), b"z".to_vec()];
    for i in (0..es.len()).step_by(97) {
        targets.push(es[i].0.clone());
        targets.push(between(i));
    }
    for table in [mapped, read] {
        let mut plain = table.table_iter();
        let mut hinted = table.table_iter();
        let at = |it: &super::TableIterator| {
            it.valid().then(|| (it.key().to_vec(), it.value().to_vec()))
        };
        for (n, t) in targets.iter().enumerate() {
            plain.seek(t);
            hinted.prefetch_seek(t);
            hinted.seek(t);
            assert_eq!(at(&hinted), at(&plain), "target {n}");
            // A hint for one target, then a seek to another.
            let other = &targets[(n * 7 + 3) % targets.len()];
            hinted.prefetch_seek(other);
            hinted.seek(t);
            assert_eq!(
                at(&hinted),
                at(&plain),
                "target {n} after a hint for another"
            );
            // A hint, a move, then a seek to the hinted target.
            hinted.prefetch_seek(t);
            hinted.seek_to_first();
            hinted.seek(t);
            assert_eq!(
                at(&hinted),
                at(&plain),
                "target {n} after a hint and a move"
            );
            if plain.valid() {
                plain.next();
                hinted.next();
                assert_eq!(at(&hinted), at(&plain), "the entry after target {n}");
            }
        }
        hinted.status().unwrap();
    }
}
