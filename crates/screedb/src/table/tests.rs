//! Table-level tests: builder + reader + caches against a model.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use proptest::prelude::*;

use super::*;
use crate::comparator::{InternalKeyComparator, default_comparator};
use crate::error::{Error, Result};
use crate::fs::{Fs, OsFs, RandomAccessFile, WritableFile};
use crate::iter::InternalIterator;
use crate::key::{ValueKind, make_internal_key, user_key};
use crate::manifest::FileMeta;
use crate::table::compression::incompressible;

/// An in-memory writable file whose bytes stay readable through the shared buffer.
#[derive(Clone, Default)]
pub(super) struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl WritableFile for SharedBuf {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0.lock().unwrap().len() as u64
    }
}

struct MemFile(Vec<u8>);

impl RandomAccessFile for MemFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| self.0.get(o..o.checked_add(buf.len())?))
            .ok_or_else(|| Error::io("read", "mem", io::ErrorKind::UnexpectedEof.into()))?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

pub(super) fn icmp() -> InternalKeyComparator {
    InternalKeyComparator::new(default_comparator())
}

pub(super) fn build(
    opts: &TableOptions,
    entries: &[(Vec<u8>, Vec<u8>)],
) -> (Vec<u8>, TableProperties) {
    let buf = SharedBuf::default();
    let mut b = TableBuilder::new(opts.clone(), icmp(), Box::new(buf.clone()), "t.sst".into());
    for (k, v) in entries {
        b.add(k, v).unwrap();
    }
    assert_eq!(b.num_entries(), entries.len() as u64);
    let (size, props) = b.finish().unwrap();
    let bytes = buf.0.lock().unwrap().clone();
    assert_eq!(size, bytes.len() as u64);
    (bytes, props)
}

pub(super) fn open(
    bytes: Vec<u8>,
    opts: &TableOptions,
    cache: Option<Arc<BlockCache>>,
) -> Result<Arc<Table>> {
    Table::open(
        Arc::new(MemFile(bytes)),
        "t.sst".into(),
        1,
        opts.clone(),
        icmp(),
        cache,
    )
    .map(Arc::new)
}

fn scan(t: &Arc<Table>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = t.table_iter();
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

fn scan_back(t: &Arc<Table>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = t.table_iter();
    let mut out = Vec::new();
    it.seek_to_last();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    out.reverse();
    out
}

pub(super) fn sample(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let kind = if i % 5 == 0 {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            let k = make_internal_key(format!("user-key-{i:06}").as_bytes(), 100 + i as u64, kind);
            (k, format!("value {i} ").repeat(i % 7).into_bytes())
        })
        .collect()
}

pub(super) fn opts(compression: CompressionType) -> TableOptions {
    TableOptions {
        block_size: 256,
        compression,
        ..TableOptions::default()
    }
}

/// A key-value model: distinct (user key, seq) pairs with a kind and a value.
type Model = BTreeMap<(Vec<u8>, u64), (bool, Vec<u8>)>;

fn model_entries(model: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut es: Vec<_> = model
        .iter()
        .map(|((k, seq), (del, v))| {
            let kind = if *del {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            (make_internal_key(k, *seq, kind), v.clone())
        })
        .collect();
    es.sort_by(|a, b| icmp().compare(&a.0, &b.0));
    es
}

fn user_keys() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => proptest::collection::vec(0u8..4, 0..10),
        2 => proptest::collection::vec(any::<u8>(), 0..24),
        1 => proptest::collection::vec(any::<u8>(), 200..600),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn tables_match_a_btreemap(
        model in proptest::collection::btree_map(
            (user_keys(), 0u64..50),
            (any::<bool>(), proptest::collection::vec(0u8..3, 0..120)),
            0..250,
        ),
        seeks in proptest::collection::vec((user_keys(), 0u64..60), 0..40),
        block_size in 32usize..1024,
        restart_interval in 1usize..20,
        lz4 in any::<bool>(),
        bloom_bits in prop_oneof![Just(0u32), 1u32..16],
        prefix_len in 0usize..4,
    ) {
        let es = model_entries(&model);
        let opts = TableOptions {
            block_size,
            block_restart_interval: restart_interval,
            bloom_bits_per_key: bloom_bits,
            filter_policy: None,
            compression: if lz4 { CompressionType::Lz4 } else { CompressionType::None },
            verify_checksums: true,
            mmap_reads: true,
            bytes_per_sync: 0,
            htable: HTableOptions::default(),
            tree: crate::table::TreeOptions::default(),
            prefix_bloom_len: prefix_len,
        };
        let (bytes, props) = build(&opts, &es);
        prop_assert_eq!(props.num_entries, es.len() as u64);
        let t = open(bytes, &opts, Some(Arc::new(BlockCache::new(1 << 16)))).unwrap();
        prop_assert_eq!(t.properties(), &props);
        prop_assert_eq!(scan(&t), es.clone());
        prop_assert_eq!(scan_back(&t), es.clone());
        t.verify_all_blocks().unwrap();
        for (k, _) in &es {
            prop_assert!(t.may_contain(user_key(k)));
            // The prefix filter has no false negatives either, for the key and its extensions.
            prop_assert!(TableReader::may_contain_prefix(&*t, user_key(k)));
        }
        let mut it = t.table_iter();
        for (uk, seq) in &seeks {
            let target = make_internal_key(uk, *seq, ValueKind::FOR_SEEK);
            let i = es.partition_point(|(k, _)| icmp().compare(k, &target).is_lt());
            let want = es.get(i);
            it.seek(&target);
            prop_assert_eq!(it.valid(), want.is_some());
            if let Some((k, v)) = want {
                prop_assert_eq!((it.key(), it.value()), (&k[..], &v[..]));
                it.prev();
                prop_assert_eq!(it.valid(), i > 0);
                if i > 0 {
                    prop_assert_eq!(it.key(), &es[i - 1].0[..]);
                    it.next();
                    prop_assert_eq!(it.key(), &k[..]);
                }
            }
            let got = t.get(&target).unwrap();
            if t.may_contain(uk) {
                prop_assert_eq!(got.as_ref(), want);
            } else {
                prop_assert!(got.is_none());
                prop_assert!(want.is_none_or(|(k, _)| user_key(k) != &uk[..]));
            }
        }
    }
}

#[test]
fn properties_describe_the_table() {
    let es = sample(200);
    for c in [CompressionType::None, CompressionType::Lz4] {
        let (bytes, p) = build(&opts(c), &es);
        assert_eq!(p.num_entries, 200);
        assert_eq!(p.num_deletions, 40);
        assert_eq!(p.smallest_key, es[0].0);
        assert_eq!(p.largest_key, es[199].0);
        assert_eq!((p.smallest_seq, p.largest_seq), (100, 299));
        assert_eq!(
            p.raw_key_bytes,
            es.iter().map(|e| e.0.len() as u64).sum::<u64>()
        );
        assert_eq!(
            p.raw_value_bytes,
            es.iter().map(|e| e.1.len() as u64).sum::<u64>()
        );
        assert!(p.num_data_blocks > 5, "{p:?}");
        assert_eq!(p.compression, c);
        // 200 keys x 10 bits in whole 64-byte blocks (4), the tag byte, the block trailer.
        assert_eq!(p.filter_bytes, 4 * 64 + 1 + 5);
        assert!(p.data_bytes + p.filter_bytes + p.index_bytes < bytes.len() as u64);
        let t = open(bytes, &opts(c), None).unwrap();
        assert_eq!(t.properties(), &p);
    }
}

#[test]
fn lz4_shrinks_compressible_tables() {
    let es = sample(300);
    let (raw, _) = build(&opts(CompressionType::None), &es);
    let (lz4, _) = build(&opts(CompressionType::Lz4), &es);
    assert!(
        lz4.len() < raw.len() * 3 / 4,
        "{} vs {}",
        lz4.len(),
        raw.len()
    );
}

#[test]
fn empty_table_round_trips() {
    let (bytes, p) = build(&TableOptions::default(), &[]);
    assert_eq!(p.num_entries, 0);
    let t = open(bytes, &TableOptions::default(), None).unwrap();
    assert!(scan(&t).is_empty());
    assert_eq!(
        t.get(&make_internal_key(b"a", 1, ValueKind::Value))
            .unwrap(),
        None
    );
    t.verify_all_blocks().unwrap();
}

#[test]
fn huge_values_round_trip() {
    let es = vec![
        (
            make_internal_key(b"a", 3, ValueKind::Value),
            b"small".to_vec(),
        ),
        (
            make_internal_key(b"b", 2, ValueKind::Value),
            incompressible(1, 1 << 20),
        ),
        (
            make_internal_key(b"c", 9, ValueKind::Value),
            vec![7u8; 1 << 20],
        ),
        (
            make_internal_key(b"d", 1, ValueKind::Value),
            incompressible(2, 64 << 20),
        ),
        (make_internal_key(b"e", 4, ValueKind::Value), Vec::new()),
    ];
    let o = TableOptions::default();
    let (bytes, p) = build(&o, &es);
    assert_eq!(p.num_data_blocks, 4); // "a"+"b" share the first block
    let t = open(bytes, &o, None).unwrap();
    let got = t
        .get(&make_internal_key(b"d", 5, ValueKind::Value))
        .unwrap()
        .unwrap();
    assert!(got == es[3], "64 MiB value differs");
    assert!(scan(&t) == es, "scan differs");
    t.verify_all_blocks().unwrap();
}

#[test]
fn approximate_offsets_grow_with_keys() {
    let es = sample(300);
    let (bytes, p) = build(&opts(CompressionType::None), &es);
    let t = open(bytes, &opts(CompressionType::None), None).unwrap();
    let offs: Vec<u64> = es.iter().map(|(k, _)| t.approximate_offset_of(k)).collect();
    assert_eq!(offs[0], 0);
    assert!(offs.windows(2).all(|w| w[0] <= w[1]));
    assert!(*offs.last().unwrap() > p.data_bytes / 2);
    let past = t.approximate_offset_of(&make_internal_key(b"zzzz", 1, ValueKind::Value));
    assert!(past >= p.data_bytes);
}

#[test]
fn block_cache_counts_hits_and_stays_bounded() {
    let es = sample(300);
    let o = opts(CompressionType::Lz4);
    let (bytes, p) = build(&o, &es);
    let cache = Arc::new(BlockCache::new(4096));
    let t = open(bytes, &o, Some(cache.clone())).unwrap();
    assert_eq!(scan(&t), es);
    assert_eq!(cache.misses(), p.num_data_blocks);
    assert!(cache.usage_bytes() <= 4096, "{}", cache.usage_bytes());
    let before = cache.hits();
    for _ in 0..3 {
        t.get(&es[299].0).unwrap();
    }
    assert!(cache.hits() >= before + 2);
    assert!(format!("{cache:?}").contains("hits"));
}

#[test]
fn table_cache_opens_once_and_evicts() {
    let dir = tempfile::tempdir().unwrap();
    let fs: Arc<dyn Fs> = Arc::new(OsFs);
    let o = opts(CompressionType::Lz4);
    let mut metas = std::collections::HashMap::new();
    for n in [5u64, 6] {
        let path = table_file_name(dir.path(), n);
        let mut b = TableBuilder::new(o.clone(), icmp(), fs.create(&path).unwrap(), path.clone());
        for (k, v) in sample(20) {
            b.add(&k, &v).unwrap();
        }
        let (size, _) = b.finish().unwrap();
        assert_eq!(fs.file_size(&path).unwrap(), size);
        let meta = FileMeta {
            number: n,
            file_size: size,
            ..FileMeta::default()
        };
        metas.insert(n, meta);
    }
    let tc = TableCache::new(fs, dir.path().to_path_buf(), o, icmp(), 1, None);
    let a = tc.get(&metas[&5]).unwrap();
    assert!(Arc::ptr_eq(&a, &tc.get(&metas[&5]).unwrap()));
    assert_eq!(a.file_number(), 5);
    assert_eq!(a.format(), TableFormat::Sorted);
    let mut it = Arc::clone(&a).iter().unwrap();
    it.seek_to_first();
    let mut entries = Vec::new();
    while it.valid() {
        entries.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    assert_eq!(entries, sample(20));
    let b = tc.get(&metas[&6]).unwrap();
    assert_eq!(b.path(), table_file_name(dir.path(), 6));
    tc.evict(6);
    assert!(!Arc::ptr_eq(&b, &tc.get(&metas[&6]).unwrap()));
    // A manifest length that disagrees with the file is corruption, named with the path.
    let short = FileMeta {
        file_size: metas[&6].file_size - 1,
        ..metas[&6].clone()
    };
    tc.evict(6);
    let err = tc.get(&short).unwrap_err().to_string();
    assert!(
        err.contains("000006.sst") && err.contains("manifest says"),
        "{err}"
    );
    let missing = FileMeta {
        number: 7,
        ..FileMeta::default()
    };
    assert!(tc.get(&missing).unwrap_err().io_kind().is_some());
}

#[test]
fn file_names_are_zero_padded() {
    assert_eq!(
        table_file_name(Path::new("/db"), 7),
        PathBuf::from("/db/000007.sst")
    );
    assert_eq!(
        table_file_name(Path::new("d"), 12_345_678),
        PathBuf::from("d/12345678.sst")
    );
}

#[test]
fn tables_and_iterators_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    fn assert_send_static<T: Send + 'static>() {}
    assert_send_sync::<Table>();
    assert_send_sync::<BlockCache>();
    assert_send_sync::<TableCache>();
    assert_send_static::<TableIterator>();
}

#[test]
fn zero_capacity_block_cache_keeps_nothing() {
    let es = sample(50);
    let o = opts(CompressionType::None);
    let (bytes, _) = build(&o, &es);
    let cache = Arc::new(BlockCache::new(0));
    let t = open(bytes, &o, Some(cache.clone())).unwrap();
    assert_eq!(scan(&t), es);
    assert_eq!(scan(&t), es);
    assert_eq!(cache.usage_bytes(), 0);
    assert_eq!(cache.hits(), 0);
}
