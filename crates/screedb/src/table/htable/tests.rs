//! HTable round trips against a BTreeMap model, and the balance targets of issue 17.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::fs::{Fs, MemFs};
use crate::iter::InternalIterator;
use crate::key::{MAX_SEQUENCE, ValueKind, make_internal_key};
use crate::table::BlockCache;

/// One entry of a test table.
pub(super) type Item = (Vec<u8>, u64, ValueKind, Vec<u8>);

/// Builds `items` (in the given order) into `path` on `fs`.
pub(super) fn build(
    fs: &MemFs,
    path: &Path,
    opts: &HTableOptions,
    items: &[Item],
) -> HTableProperties {
    let file = fs.create(path).unwrap();
    let mut b = HTableBuilder::new(opts.clone(), file, path.to_path_buf());
    for (k, seq, kind, v) in items {
        b.add(&make_internal_key(k, *seq, *kind), v).unwrap();
    }
    assert_eq!(b.num_entries(), items.len() as u64);
    b.finish().unwrap()
}

pub(super) fn open(
    fs: &MemFs,
    path: &Path,
    opts: &HTableOptions,
    cache: Option<Arc<BlockCache>>,
) -> crate::error::Result<Arc<HTable>> {
    HTable::open(fs.open(path)?, path.to_path_buf(), 7, opts.clone(), cache).map(Arc::new)
}

pub(super) fn probe(t: &HTable, seed: u64, key: &[u8], snap: u64) -> crate::error::Result<HProbe> {
    t.probe(&KeyHash::of(seed, key), key, snap)
}

/// The model: user key -> versions newest first.
pub(super) type Model = BTreeMap<Vec<u8>, Vec<(u64, ValueKind, Vec<u8>)>>;

pub(super) fn model_of(items: &[Item]) -> Model {
    let mut m = Model::new();
    for (k, s, kind, v) in items {
        m.entry(k.clone()).or_default().push((*s, *kind, v.clone()));
    }
    for versions in m.values_mut() {
        versions.sort_by_key(|v| Reverse(v.0));
    }
    m
}

pub(super) fn expected(m: &Model, key: &[u8], snap: u64) -> HProbe {
    let found = m.get(key).and_then(|vs| vs.iter().find(|v| v.0 <= snap));
    match found {
        Some((seq, kind, v)) => HProbe::Hit {
            kind: *kind,
            value: if *kind == ValueKind::Value {
                v.clone()
            } else {
                Vec::new()
            },
            seq: *seq,
        },
        None => HProbe::Missed,
    }
}

/// A small deterministic generator (splitmix64).
pub(super) struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn items_strategy() -> impl Strategy<Value = Vec<Item>> {
    let key = proptest::collection::vec(any::<u8>(), 0..12);
    let version = (any::<bool>(), 0usize..700);
    let group = (key, proptest::collection::vec(version, 1..5));
    (
        proptest::collection::btree_map(group.0, group.1, 0..80),
        any::<u64>(),
    )
        .prop_map(|(groups, shuffle)| {
            let mut items = Vec::new();
            let mut seq = 1u64;
            for (k, versions) in groups {
                for (del, vlen) in versions {
                    let kind = if del {
                        ValueKind::Deletion
                    } else {
                        ValueKind::Value
                    };
                    let value = if del {
                        Vec::new()
                    } else {
                        vec![(seq % 251) as u8; vlen]
                    };
                    items.push((k.clone(), seq, kind, value));
                    seq += 1 + seq % 3;
                }
            }
            let mut rng = Rng(shuffle);
            for i in (1..items.len()).rev() {
                items.swap(i, (rng.next() % (i as u64 + 1)) as usize);
            }
            items
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn round_trips_against_a_model(
        items in items_strategy(),
        buckets in prop::sample::select(vec![2u32, 3, 5, 11, 31]),
        bucket_bytes in prop::sample::select(vec![512usize, 4096]),
        seed in any::<u64>(),
        cached in any::<bool>(),
    ) {
        let fs = MemFs::new();
        let path = PathBuf::from("000001.ht");
        let opts = HTableOptions {
            num_buckets: buckets,
            bucket_bytes,
            hash_seed: seed,
            ..HTableOptions::default()
        };
        let props = build(&fs, &path, &opts, &items);
        let cache = cached.then(|| Arc::new(BlockCache::new(1 << 20)));
        let t = open(&fs, &path, &opts, cache).unwrap();
        prop_assert_eq!(t.properties(), &props);
        t.verify().unwrap();
        let model = model_of(&items);
        for (k, versions) in &model {
            let mut snaps = vec![0, MAX_SEQUENCE];
            for v in versions {
                snaps.extend([v.0, v.0 - 1, v.0 + 1]);
            }
            for snap in snaps {
                prop_assert_eq!(probe(&t, seed, k, snap).unwrap(), expected(&model, k, snap), "key {:?} snap {}", k, snap);
            }
        }
        for i in 0..50u32 {
            let absent = [b"absent-".as_slice(), &i.to_le_bytes()].concat();
            let got = probe(&t, seed, &absent, MAX_SEQUENCE).unwrap();
            prop_assert!(matches!(got, HProbe::Missed | HProbe::Filtered), "{:?}", got);
        }
        // The sorted view is exactly the model in internal-key order, both ways.
        let want: Vec<(Vec<u8>, Vec<u8>)> = model
            .iter()
            .flat_map(|(k, vs)| vs.iter().map(move |(s, kind, v)| (make_internal_key(k, *s, *kind), v.clone())))
            .collect();
        let mut it = t.sorted_iter().unwrap();
        let mut got = Vec::new();
        it.seek_to_first();
        while it.valid() {
            got.push((it.key().to_vec(), it.value().to_vec()));
            it.next();
        }
        it.status().unwrap();
        prop_assert_eq!(&got, &want);
        let mut back = Vec::new();
        it.seek_to_last();
        while it.valid() {
            back.push(it.key().to_vec());
            it.prev();
        }
        back.reverse();
        prop_assert_eq!(back, want.iter().map(|w| w.0.clone()).collect::<Vec<_>>());
        if let Some((k, _)) = want.get(want.len() / 2) {
            it.seek(k);
            prop_assert_eq!(it.key(), &k[..]);
        }
        // Cut by route (a hash split's children): each part is the sorted view's entries of
        // its route, in order; the routes ascend and together hold every entry once.
        let route = |user_key: &[u8]| u64::from(user_key.first().copied().unwrap_or(0) % 3) * 10;
        let parts = t.sorted_parts(&route).unwrap();
        let routes: Vec<u64> = parts.iter().map(|(r, _)| *r).collect();
        prop_assert!(routes.windows(2).all(|w| w[0] < w[1]), "{:?}", routes);
        let mut total = 0;
        for (r, mut part) in parts {
            let mine: Vec<&(Vec<u8>, Vec<u8>)> = want
                .iter()
                .filter(|(ik, _)| route(crate::key::user_key(ik)) == r)
                .collect();
            part.seek_to_first();
            let mut got = Vec::new();
            while part.valid() {
                got.push((part.key().to_vec(), part.value().to_vec()));
                part.next();
            }
            prop_assert!(!got.is_empty());
            prop_assert_eq!(got.iter().collect::<Vec<_>>(), mine);
            total += got.len();
        }
        prop_assert_eq!(total, want.len());
    }
}

#[test]
fn properties_count_what_was_added() {
    let fs = MemFs::new();
    let path = PathBuf::from("p.ht");
    let opts = HTableOptions {
        num_buckets: 3,
        ..HTableOptions::default()
    };
    let items = vec![
        (b"b".to_vec(), 5, ValueKind::Value, b"v5".to_vec()),
        (b"a".to_vec(), 9, ValueKind::Deletion, Vec::new()),
        (b"b".to_vec(), 7, ValueKind::Value, vec![1; 600]), // group > 512 B: overflow
        (b"c".to_vec(), 2, ValueKind::Value, b"c".to_vec()),
    ];
    let p = build(&fs, &path, &opts, &items);
    assert_eq!((p.num_entries, p.num_deletions, p.distinct_keys), (4, 1, 3));
    assert_eq!((p.smallest_seq, p.largest_seq), (2, 9));
    assert_eq!(
        p.smallest_key,
        make_internal_key(b"a", 9, ValueKind::Deletion)
    );
    assert_eq!(p.largest_key, make_internal_key(b"c", 2, ValueKind::Value));
    assert_eq!((p.overflow_entries, p.overflow_groups), (2, 1));
    assert_eq!(p.file_size, fs.file_size(&path).unwrap());
    assert_eq!(p.raw_value_bytes, 2 + 600 + 1);
    let t = open(&fs, &path, &opts, None).unwrap();
    assert!(t.metadata_bytes() > 0);
    // The sketch counts each distinct key once and is read back as written.
    let sketch = p.sketch.as_ref().expect("a new table has a sketch");
    assert_eq!(sketch.estimate().round(), 3.0);
    assert_eq!(t.properties().sketch.as_ref(), Some(sketch));
    t.verify().unwrap();
    assert_eq!(
        probe(&t, 0, b"b", 6).unwrap(),
        HProbe::Hit {
            kind: ValueKind::Value,
            value: b"v5".to_vec(),
            seq: 5
        }
    );
    assert_eq!(t.stats().overflow_reads, 1);
    assert_eq!(t.stats().bucket_reads, 0);
    let mut footer_tail = vec![0u8; 8];
    t.raw_file()
        .read_exact_at(&mut footer_tail, p.file_size - 8)
        .unwrap();
    assert!(is_htable(&footer_tail));
    assert!(!is_htable(&crate::table::TABLE_MAGIC.to_le_bytes()));
    assert!(!is_htable(b"short"));
    // The magic is the documented digest prefix: SHA-1("screedb.htable") = 96ef4aedaa6960ac...
    assert_eq!(
        HTABLE_MAGIC.to_be_bytes(),
        [0x96, 0xef, 0x4a, 0xed, 0xaa, 0x69, 0x60, 0xac]
    );
    // The table says its seed, whatever the options given to open.
    let other = HTableOptions {
        hash_seed: 1,
        ..opts.clone()
    };
    let t = open(&fs, &path, &other, None).unwrap();
    assert_eq!(t.hash_seed(), opts.hash_seed);
    // Bad options and keys are refused.
    let bad = HTableOptions {
        bucket_bytes: 1000,
        ..opts
    };
    let mut b = HTableBuilder::new(bad, fs.create(Path::new("x")).unwrap(), "x".into());
    assert!(b.add(b"short", b"").is_err());
    assert!(b.finish().is_err());
}

/// What [`balance`] measured over its tables.
#[derive(Debug)]
struct Balance {
    /// Buckets and overflow groups read per lookup of a present key.
    per_lookup: f64,
    /// Share of absent keys the filters let through.
    false_positives: f64,
    migrated: u64,
    overflow: u64,
    /// Keys looked up (every one present).
    keys: u64,
    /// Items' share of the buckets' capacity, over all tables.
    fill: f64,
    /// Bytes of table metadata held in memory per key.
    metadata_per_key: f64,
    /// The largest bucket any of the tables got.
    bucket_bytes: u32,
}

/// Builds 20 tables (seeds 0..20) of random 16-byte keys with values of `values` bytes at
/// `fill_percent`, each filled to `part_percent` of a full table (100: until `is_full`; less:
/// `finish` shrinks the table to the items it got), looks up every key and three times as
/// many absent ones.
fn balance(
    fill_percent: u32,
    values: std::ops::RangeInclusive<usize>,
    part_percent: u64,
) -> Balance {
    let (mut present, mut reads, mut absent, mut passed) = (0u64, 0u64, 0u64, 0u64);
    let (mut migrations, mut migrated, mut metadata, mut overflow) = (0u64, 0u64, 0u64, 0u64);
    let (mut items, mut capacity, mut bucket_bytes) = (0u64, 0u64, 0u32);
    for seed in 0..20u64 {
        let fs = MemFs::new();
        let path = PathBuf::from("b.ht");
        // HTABLE_TEST_BUCKETS=8191 measures at the paper's 32 MiB table size.
        let buckets = std::env::var("HTABLE_TEST_BUCKETS")
            .ok()
            .and_then(|b| b.parse().ok());
        let opts = HTableOptions {
            num_buckets: buckets.unwrap_or(1021),
            hash_seed: seed,
            fill_percent,
            ..HTableOptions::default()
        };
        let mut rng = Rng(seed);
        let mut b = HTableBuilder::new(opts.clone(), fs.create(&path).unwrap(), path.clone());
        let stop = b.capacity_bytes() * u64::from(fill_percent) / 100 * part_percent / 100;
        let mut keys = Vec::new();
        while !b.is_full() && b.estimated_bytes() < stop {
            let key = rng.bytes(16);
            let span = (values.end() - values.start() + 1) as u64;
            let vlen = values.start() + (rng.next() % span) as usize;
            b.add(
                &make_internal_key(&key, keys.len() as u64 + 1, ValueKind::Value),
                &rng.bytes(vlen),
            )
            .unwrap();
            keys.push(key);
        }
        items += b.estimated_bytes();
        let p = b.finish().unwrap();
        overflow += p.overflow_entries;
        migrations += p.num_migrations;
        migrated += p.migrated_entries;
        let t = open(&fs, &path, &opts, None).unwrap();
        let bucket = t.properties().bucket_bytes;
        bucket_bytes = bucket_bytes.max(bucket);
        capacity += u64::from(t.num_buckets()) * u64::from(bucket - BUCKET_TAIL_LEN as u32);
        for k in &keys {
            assert!(matches!(
                probe(&t, seed, k, MAX_SEQUENCE).unwrap(),
                HProbe::Hit { .. }
            ));
        }
        present += keys.len() as u64;
        metadata += t.metadata_bytes();
        reads += t.stats().bucket_reads + t.stats().overflow_reads;
        let before = t.stats();
        for _ in 0..keys.len() * 3 {
            let got = probe(&t, seed, &rng.bytes(17), MAX_SEQUENCE).unwrap();
            assert!(matches!(got, HProbe::Missed | HProbe::Filtered));
        }
        let after = t.stats();
        absent += after.probes - before.probes;
        passed +=
            (after.probes - before.probes) - (after.filter_rejections - before.filter_rejections);
    }
    let measured = Balance {
        per_lookup: reads as f64 / present as f64,
        false_positives: passed as f64 / absent as f64,
        migrated,
        overflow,
        keys: present,
        fill: items as f64 / capacity as f64,
        metadata_per_key: metadata as f64 / present as f64,
        bucket_bytes,
    };
    eprintln!(
        "balance at {fill_percent}% ({part_percent}% of a full table, values {values:?}): \
         {measured:?}, {migrations} migration records"
    );
    measured
}

/// Issue 17's balance targets: 1-200 B values, 16 B keys, 90% fill, 20 seeds.
#[test]
fn balanced_at_90_percent_with_one_bucket_read_and_rare_false_positives() {
    let b = balance(90, 1..=200, 100);
    assert_eq!(b.overflow, 0, "{b:?}");
    assert!(b.per_lookup <= 1.01, "{b:?}");
    assert!(b.false_positives <= 0.001, "{b:?}");
    assert!(b.migrated > 0, "the test should exercise migration");
}

/// The default fill (the paper's 95%), for full tables and for the smaller ones `finish`
/// shrinks to their items (a flush, a container's last output): every item in a bucket, one
/// bucket read per lookup, and the small tables as full as the large ones, less the rounding
/// up to a prime (what a table writes beyond its items is write amplification).
#[test]
fn balanced_at_95_percent_in_full_and_shrunk_tables() {
    let fill = HTableOptions::default().fill_percent;
    assert_eq!(fill, 95);
    for values in [1..=200, 100..=100] {
        for part in [100, 50, 10] {
            let b = balance(fill, values.clone(), part);
            assert_eq!(b.overflow, 0, "{b:?}");
            assert!(b.per_lookup <= 1.01, "{b:?}");
            assert!(b.false_positives <= 0.001, "{b:?}");
            assert!(b.fill >= 0.93, "{part}% of a table filled only {b:?}");
        }
    }
}

/// Large items: a table whose keys take more than a twelfth of a 4 KiB bucket each gets
/// larger buckets, up to 16 KiB, so its keys are placed in buckets instead of all being
/// indexed in memory, and a lookup still reads one bucket. Items of over 2 KiB stay in the
/// overflow area, one read each, and their table has next to no buckets.
#[test]
fn large_values_get_larger_buckets_not_the_overflow_area() {
    let fill = HTableOptions::default().fill_percent;
    for (values, bucket) in [
        (100..=100, 4096),
        (400..=400, 8192),
        (1000..=1000, 16384),
        (1..=2000, 16384),
        (4000..=4000, 4096),
    ] {
        for part in [100, 10] {
            let b = balance(fill, values.clone(), part);
            assert_eq!(b.bucket_bytes, bucket, "{values:?}: {b:?}");
            assert!(b.per_lookup <= 1.01, "{b:?}");
            assert!(b.false_positives <= 0.001, "{b:?}");
            if *values.end() > 2048 {
                assert_eq!(b.overflow, b.keys, "{b:?}");
                // and no area of empty buckets: two per table, 1/40 of the items or less.
                assert!(b.fill >= 40.0, "{b:?}");
                continue;
            }
            assert!(b.overflow * 50 <= b.keys, "over 2% in overflow: {b:?}");
            // 27 bytes per key when every 1,000-byte item was in overflow; the smaller
            // tables hold fewer keys for their fixed metadata.
            assert!(b.metadata_per_key <= 6.0, "{b:?}");
            // A tenth of these tables is 25-50 large buckets, rounded up to a prime.
            assert!(b.fill >= 0.83, "{part}% of a table filled only {b:?}");
        }
    }
}

#[test]
fn shared_between_threads_and_served_from_the_block_cache() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<HTable>();
    send_sync::<HTableIterator>();
    let fs = MemFs::new();
    let path = PathBuf::from("c.ht");
    let opts = HTableOptions {
        num_buckets: 7,
        ..HTableOptions::default()
    };
    let items: Vec<Item> = (0..50u64)
        .map(|i| {
            (
                format!("k{i}").into_bytes(),
                i + 1,
                ValueKind::Value,
                vec![i as u8; 40],
            )
        })
        .collect();
    build(&fs, &path, &opts, &items);
    let cache = Arc::new(BlockCache::new(1 << 20));
    let t = open(&fs, &path, &opts, Some(Arc::clone(&cache))).unwrap();
    let model = model_of(&items);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for k in model.keys() {
                    let got = probe(&t, 0, k, MAX_SEQUENCE).unwrap();
                    assert_eq!(got, expected(&model, k, MAX_SEQUENCE));
                }
            });
        }
    });
    assert_eq!(t.stats().bucket_reads, 100);
    assert!(cache.hits() >= 50, "{cache:?}");
    // Properties, migration records and overflow index of a 50-item table, with the 256
    // registers of its distinct-key sketch.
    assert!(t.metadata_bytes() < 1300, "{}", t.metadata_bytes());
}

/// Keys that share their first eight bytes, or differ only by trailing zero bytes, are ordered
/// by the whole key (the sorted view sorts by eight bytes first: those after the prefix all keys
/// share, here none or eleven); adding entries in internal-key order (the builder's counting sort)
/// writes the same file as adding them shuffled, or by key with each key's versions oldest first.
#[test]
fn sorted_view_orders_keys_past_their_first_eight_bytes() {
    let tails: Vec<Vec<u8>> = vec![
        b"".to_vec(),
        vec![0],
        vec![0, 0],
        b"a".to_vec(),
        b"a\0".to_vec(),
        b"a\0\0\0\0\0\0\0".to_vec(),
        b"a\0\0\0\0\0\0\0\0".to_vec(),
        b"a\0\0\0\0\0\0\0\x01".to_vec(),
        b"ab".to_vec(),
        b"abcdefgh".to_vec(),
        b"abcdefgh\0".to_vec(),
        b"abcdefghA".to_vec(),
        b"abcdefghB".to_vec(),
        b"abcdefghBB".to_vec(),
        b"b".to_vec(),
        b"ba".to_vec(),
        vec![0xff; 9],
    ];
    for lead in [b"".as_slice(), b"user0000000"] {
        let keys: Vec<Vec<u8>> = tails.iter().map(|t| [lead, t].concat()).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]));
        let mut sorted: Vec<Item> = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            for seq in [30 + i as u64, 10 + i as u64] {
                sorted.push((k.clone(), seq, ValueKind::Value, vec![i as u8; 3]));
            }
        }
        let mut shuffled = sorted.clone();
        let mut rng = Rng(5);
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, (rng.next() % (i as u64 + 1)) as usize);
        }
        assert_ne!(shuffled, sorted);
        let fs = MemFs::new();
        let opts = HTableOptions {
            num_buckets: 5,
            bucket_bytes: 512,
            ..HTableOptions::default()
        };
        // Keys ascending but each key's versions oldest first: not internal-key order either.
        let mut oldest_first = sorted.clone();
        for versions in oldest_first.chunks_mut(2) {
            versions.swap(0, 1);
        }
        let (a, b, c) = (
            PathBuf::from("a.ht"),
            PathBuf::from("b.ht"),
            PathBuf::from("c.ht"),
        );
        build(&fs, &a, &opts, &sorted);
        build(&fs, &b, &opts, &shuffled);
        build(&fs, &c, &opts, &oldest_first);
        let read = |p: &Path| {
            let f = fs.open(p).unwrap();
            let mut buf = vec![0u8; f.size() as usize];
            f.read_exact_at(&mut buf, 0).unwrap();
            buf
        };
        assert_eq!(read(&a), read(&b));
        assert_eq!(read(&a), read(&c));
        let mut it = open(&fs, &a, &opts, None).unwrap().sorted_iter().unwrap();
        let mut got = Vec::new();
        it.seek_to_first();
        while it.valid() {
            got.push(it.key().to_vec());
            it.next();
        }
        let want: Vec<Vec<u8>> = sorted
            .iter()
            .map(|(k, s, kind, _)| make_internal_key(k, *s, *kind))
            .collect();
        assert_eq!(got, want);
    }
}
