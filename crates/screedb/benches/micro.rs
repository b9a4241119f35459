//! Micro-benchmarks of the format building blocks: block build and seek, Bloom filter build and
//! probe, CRC32C, and log append.
//!
//! Run: `cargo bench -p screedb --features micro-bench --bench micro`.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use screedb::comparator::{InternalKeyComparator, default_comparator};
use screedb::fs::{Fs, MemFs};
use screedb::iter::InternalIterator;
use screedb::key::{ValueKind, make_internal_key};
use screedb::table::{Block, BlockBuilder, BloomFilter, BloomFilterBuilder};
use screedb::wal::LogWriter;

fn keys(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| make_internal_key(format!("key{i:012}").as_bytes(), i as u64, ValueKind::Value))
        .collect()
}

fn block(c: &mut Criterion) {
    let ks = keys(100);
    let value = [7u8; 100];
    c.bench_function("block_build_100x100B", |b| {
        b.iter(|| {
            let mut bb = BlockBuilder::new(16);
            for k in &ks {
                bb.add(k, &value);
            }
            black_box(bb.finish().len())
        })
    });
    let mut bb = BlockBuilder::new(16);
    for k in &ks {
        bb.add(k, &value);
    }
    let data = bb.finish().to_vec();
    let block =
        Arc::new(Block::new(data, Arc::from(Path::new("bench.sst")), 0).expect("valid block"));
    let icmp = InternalKeyComparator::new(default_comparator());
    let mut it = block.iter(icmp);
    let mut i = 0usize;
    c.bench_function("block_seek", |b| {
        b.iter(|| {
            i = (i + 37) % ks.len();
            it.seek(&ks[i]);
            black_box(it.valid())
        })
    });
}

fn filter(c: &mut Criterion) {
    let user_keys: Vec<Vec<u8>> = (0..10_000)
        .map(|i| format!("user{i:012}").into_bytes())
        .collect();
    c.bench_function("bloom_build_10k_keys", |b| {
        b.iter(|| {
            let mut fb = BloomFilterBuilder::new(10);
            for k in &user_keys {
                fb.add_key(k);
            }
            black_box(fb.finish().len())
        })
    });
    let mut fb = BloomFilterBuilder::new(10);
    for k in &user_keys {
        fb.add_key(k);
    }
    let f = BloomFilter::new(fb.finish()).expect("valid filter");
    let mut i = 0usize;
    c.bench_function("bloom_probe", |b| {
        b.iter(|| {
            i = (i + 1) % user_keys.len();
            black_box(f.may_contain(&user_keys[i]))
        })
    });
}

fn crc(c: &mut Criterion) {
    let data = vec![0x5au8; 4096];
    let mut g = c.benchmark_group("crc32c");
    g.throughput(Throughput::Bytes(data.len() as u64));
    g.bench_function("4KiB", |b| {
        b.iter(|| black_box(screedb::checksum::crc32c(&data)))
    });
    g.finish();
}

fn log_append(c: &mut Criterion) {
    let record = vec![1u8; 128];
    let mut g = c.benchmark_group("log_append");
    g.throughput(Throughput::Bytes(record.len() as u64 * 1000));
    g.bench_function("1000x128B_memfs", |b| {
        b.iter_batched(
            || {
                let fs = MemFs::new();
                LogWriter::new(fs.create(Path::new("/bench.log")).expect("create"))
            },
            |mut w| {
                for _ in 0..1000 {
                    w.add_record(&record).expect("append");
                }
                black_box(w.size())
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

criterion_group!(benches, block, filter, crc, log_append);
criterion_main!(benches);
