//! Unit tests of the memtable over both memory components.
use super::*;
use crate::comparator::default_comparator;
use crate::iter::InternalIterator;
use crate::key::{make_internal_key, parse_internal_key};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn mem() -> Arc<MemTable> {
    Arc::new(MemTable::new(InternalKeyComparator::new(
        default_comparator(),
    )))
}

/// Every entry as (user key, seq, kind, value), walking forward.
fn forward(m: &Arc<MemTable>) -> Vec<(Vec<u8>, u64, ValueKind, Vec<u8>)> {
    let mut it = m.iter();
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        let p = parse_internal_key(it.key()).unwrap();
        out.push((p.user_key.to_vec(), p.seq, p.kind, it.value().to_vec()));
        it.next();
    }
    out
}

fn backward(m: &Arc<MemTable>) -> Vec<(Vec<u8>, u64, ValueKind, Vec<u8>)> {
    let mut it = m.iter();
    let mut out = Vec::new();
    it.seek_to_last();
    while it.valid() {
        let p = parse_internal_key(it.key()).unwrap();
        out.push((p.user_key.to_vec(), p.seq, p.kind, it.value().to_vec()));
        it.prev();
    }
    out.reverse();
    out
}

#[test]
fn get_sees_the_newest_version_at_each_snapshot() {
    let m = mem();
    m.add(1, ValueKind::Value, b"k", b"v1");
    m.add(3, ValueKind::Value, b"k", b"v3");
    m.add(5, ValueKind::Deletion, b"k", b"");
    m.add(7, ValueKind::Value, b"k", b"v7");
    m.add(2, ValueKind::Value, b"other", b"o2");
    assert_eq!(m.get(b"k", 0), LookupResult::NotFound);
    assert_eq!(m.get(b"k", 1), LookupResult::Found(b"v1".to_vec()));
    assert_eq!(m.get(b"k", 2), LookupResult::Found(b"v1".to_vec()));
    assert_eq!(m.get(b"k", 4), LookupResult::Found(b"v3".to_vec()));
    assert_eq!(m.get(b"k", 5), LookupResult::Deleted);
    assert_eq!(m.get(b"k", 6), LookupResult::Deleted);
    assert_eq!(m.get(b"k", u64::MAX), LookupResult::Found(b"v7".to_vec()));
    assert_eq!(m.get(b"other", 1), LookupResult::NotFound);
    assert_eq!(m.get(b"other", 2), LookupResult::Found(b"o2".to_vec()));
    assert_eq!(m.get(b"j", 100), LookupResult::NotFound);
    assert_eq!(m.get(b"ka", 100), LookupResult::NotFound);
    assert_eq!(m.get(b"zzz", 100), LookupResult::NotFound);
    assert_eq!(m.len(), 5);
    assert!(!m.is_empty());
}

#[test]
fn puts_without_room_in_the_membuffer_are_counted() {
    let icmp = InternalKeyComparator::new(default_comparator());
    let m = MemTable::with_membuffer(icmp, 100, 2); // one bucket of two entries
    for (seq, k) in [(1, b"a"), (2, b"b"), (3, b"c"), (4, b"a")] {
        m.put(seq, ValueKind::Value, k, b"v", || None);
    }
    // "c" found the bucket full; "a" again replaced its slot.
    assert_eq!(m.membuffer_fallbacks(), 1);
    assert_eq!((m.buffered_len(), m.len()), (2, 3));
    assert_eq!(m.get(b"c", 9), LookupResult::Found(b"v".to_vec()));
    assert_eq!(mem().membuffer_fallbacks(), 0);
}

/// A plain memtable holding `keys`, to cut a membuffer's ranges from.
fn previous_with(keys: impl IntoIterator<Item = Vec<u8>>) -> MemTable {
    let previous = MemTable::new(InternalKeyComparator::new(default_comparator()));
    for (seq, k) in (1..).zip(keys) {
        previous.add(seq, ValueKind::Value, &k, b"");
    }
    previous.sample_for_successor();
    previous
}

fn flodb(buffer_bytes: usize) -> MemTable {
    MemTable::with_membuffer(
        InternalKeyComparator::new(default_comparator()),
        buffer_bytes,
        8,
    )
}

#[test]
fn a_membuffer_cut_into_key_ranges_keeps_every_write() {
    let key = |i: u64| format!("{:016}", i.wrapping_mul(0x9e37_79b9) % 100_000).into_bytes();
    let m = Arc::new(flodb(64 << 10).with_neighbourhoods_from(&previous_with((0..5000).map(key))));
    assert!(m.membuffer_by_range());
    let mut latest = BTreeMap::new();
    let mut cursor = 0;
    for seq in 1..=20_000u64 {
        let (k, v) = (key(seq % 7000), seq.to_le_bytes());
        m.put(seq, ValueKind::Value, &k, &v, || None);
        latest.insert(k, v.to_vec());
        if seq % 500 == 0 {
            m.drain_some(&mut cursor);
        }
    }
    for (k, v) in &latest {
        assert_eq!(
            m.get(k, u64::MAX >> 8),
            LookupResult::Found(v.clone()),
            "{k:?}"
        );
    }
    m.drain(u64::MAX >> 8);
    assert_eq!(m.buffered_len(), 0);
    let mut seen: Vec<Vec<u8>> = forward(&m).into_iter().map(|e| e.0).collect();
    seen.dedup();
    assert_eq!(seen, latest.keys().cloned().collect::<Vec<_>>());
}

#[test]
fn ranges_that_missed_the_keys_give_the_next_memtable_hash_neighbourhoods() {
    let key = |i: u64| format!("{i:016}").into_bytes();
    // No sample taken: by hash.
    let unsampled = flodb(16 << 10);
    unsampled.add(1, ValueKind::Value, b"k", b"v");
    assert!(
        !flodb(16 << 10)
            .with_neighbourhoods_from(&unsampled)
            .membuffer_by_range()
    );
    // Too few keys to cut into the 1024 parts a sample keeps: by hash.
    assert!(
        !flodb(16 << 10)
            .with_neighbourhoods_from(&previous_with((0..10).map(key)))
            .membuffer_by_range()
    );
    let first = flodb(16 << 10).with_neighbourhoods_from(&previous_with((0..4000).map(key)));
    assert!(first.membuffer_by_range());
    // Keys past every range fill the last one alone and then go to the skiplist. (Not in key
    // order: puts in order skip the membuffer altogether, `ascending.rs`.)
    for seq in 1..=400 {
        first.put(
            seq,
            ValueKind::Value,
            &key(10_000 + seq * 319 % 400),
            b"v",
            || None,
        );
    }
    assert_eq!(first.membuffer_appended_puts(), 0);
    assert!(first.membuffer_fallbacks() * 8 > first.len() as u64);
    first.sample_for_successor();
    let second = flodb(16 << 10).with_neighbourhoods_from(&first);
    assert!(!second.membuffer_by_range());
    // By hash, it takes no evidence against ranges: the one after it tries them again.
    assert!(
        flodb(16 << 10)
            .with_neighbourhoods_from(&previous_with((0..4000).map(key)))
            .membuffer_by_range()
    );
    for seq in 1..=2000 {
        second.put(seq, ValueKind::Value, &key(20_000 + seq), b"v", || None);
    }
    second.drain(u64::MAX >> 8); // the sample comes from the skiplist
    second.sample_for_successor();
    assert!(
        flodb(16 << 10)
            .with_neighbourhoods_from(&second)
            .membuffer_by_range()
    );
}

#[test]
fn a_scan_pauses_the_membuffer_for_new_keys_until_the_pause_runs_out() {
    let icmp = InternalKeyComparator::new(default_comparator());
    let m = Arc::new(MemTable::with_membuffer(icmp, 1 << 10, 8));
    m.put(1, ValueKind::Value, b"a", b"1", || None);
    assert_eq!(m.buffered_len(), 1);
    // An iterator drains everything and pauses admission for one put per bucket.
    assert_eq!(m.drain_for_scan(MAX_SEQUENCE), 1);
    let pause = m.buffer.as_ref().map_or(0, |b| b.bucket_count());
    assert!(pause >= 2, "{pause} buckets");
    for seq in 2..2 + pause as u64 {
        m.put(
            seq,
            ValueKind::Value,
            format!("k{seq}").as_bytes(),
            b"v",
            || None,
        );
    }
    assert_eq!(
        (m.buffered_len(), m.membuffer_paused_puts()),
        (0, pause as u64)
    );
    // The pause is over: new keys are buffered again, and a key buffered during a pause is
    // overwritten in place rather than left behind a newer skiplist version.
    let next = 2 + pause as u64;
    m.put(next, ValueKind::Value, b"a", b"2", || None);
    assert_eq!(m.buffered_len(), 1);
    m.drain_for_scan(0); // nothing at or below sequence 0: only the pause
    m.put(next + 1, ValueKind::Value, b"a", b"3", || None);
    m.put(next + 2, ValueKind::Value, b"b", b"4", || None);
    assert_eq!(m.buffered_len(), 1);
    assert_eq!(m.membuffer_paused_puts(), pause as u64 + 1);
    assert_eq!(
        m.get(b"a", MAX_SEQUENCE),
        LookupResult::Found(b"3".to_vec())
    );
    assert_eq!(
        m.get_latest(b"b"),
        Some((next + 2, LookupResult::Found(b"4".to_vec())))
    );
    // After a drain the skiplist holds "a" at 1 and at `next + 1` (the version at `next` was
    // overwritten in place), "b" and the keys written during the first pause.
    m.drain(MAX_SEQUENCE);
    let all = forward(&m);
    assert_eq!(all.len(), 3 + pause);
    let a: Vec<u64> = all.iter().filter(|e| e.0 == b"a").map(|e| e.1).collect();
    assert_eq!(a, [next + 1, 1]);
}

#[test]
fn empty_memtable_has_nothing() {
    let m = mem();
    assert!(m.is_empty());
    assert_eq!(m.get(b"", 10), LookupResult::NotFound);
    let mut it = m.iter();
    for seek in [0, 1, 2] {
        match seek {
            0 => it.seek_to_first(),
            1 => it.seek_to_last(),
            _ => it.seek(&make_internal_key(b"a", 1, ValueKind::Value)),
        }
        assert!(!it.valid());
        assert_eq!(it.key(), b"");
        assert!(it.status().is_ok());
    }
}

#[test]
fn a_batch_replayed_twice_is_stored_once() {
    // A lone operation takes the single insert, several the multi-insert: both skip an
    // internal key the skiplist already holds (a log record replayed twice).
    let m = mem();
    let mut one = crate::write_batch::WriteBatch::new();
    one.put(b"k", b"v1");
    one.set_sequence(7);
    let mut two = crate::write_batch::WriteBatch::new();
    two.put(b"a", b"v2").delete(b"k");
    two.set_sequence(8);
    for _ in 0..2 {
        m.add_write_batch(&one);
        m.add_write_batch(&two);
    }
    let got: Vec<(Vec<u8>, u64)> = forward(&m).into_iter().map(|e| (e.0, e.1)).collect();
    assert_eq!(
        got,
        vec![(b"a".to_vec(), 8), (b"k".to_vec(), 9), (b"k".to_vec(), 7)]
    );
    assert_eq!(m.get(b"k", 8), LookupResult::Found(b"v1".to_vec()));
}

#[test]
fn iteration_is_ordered_both_ways() {
    let m = mem();
    let keys: [&[u8]; 5] = [b"d", b"a", b"c", b"", b"b"];
    for (i, k) in keys.iter().enumerate() {
        m.add(10 + i as u64, ValueKind::Value, k, k);
        m.add(i as u64, ValueKind::Deletion, k, b"");
    }
    let fwd = forward(&m);
    assert_eq!(fwd.len(), 10);
    let order: Vec<(Vec<u8>, u64)> = fwd.iter().map(|e| (e.0.clone(), e.1)).collect();
    let mut want: Vec<(Vec<u8>, u64)> = keys
        .iter()
        .enumerate()
        .flat_map(|(i, k)| [(k.to_vec(), 10 + i as u64), (k.to_vec(), i as u64)])
        .collect();
    want.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    assert_eq!(order, want);
    assert_eq!(backward(&m), fwd);
    // The empty user key sorts first.
    assert_eq!(fwd[0].0, b"");
}

#[test]
fn seek_lands_on_first_entry_at_or_after_target() {
    let m = mem();
    for (seq, k) in [(1, b"b"), (2, b"d"), (3, b"b")] {
        m.add(seq, ValueKind::Value, k, b"x");
    }
    let mut it = m.iter();
    it.seek(&make_internal_key(b"b", 2, ValueKind::FOR_SEEK));
    assert_eq!(it.key(), make_internal_key(b"b", 1, ValueKind::Value));
    it.seek(&make_internal_key(b"a", 9, ValueKind::FOR_SEEK));
    assert_eq!(it.key(), make_internal_key(b"b", 3, ValueKind::Value));
    it.seek(&make_internal_key(b"c", 9, ValueKind::FOR_SEEK));
    assert_eq!(it.key(), make_internal_key(b"d", 2, ValueKind::Value));
    it.prev();
    assert_eq!(it.key(), make_internal_key(b"b", 1, ValueKind::Value));
    it.seek(&make_internal_key(b"e", 9, ValueKind::FOR_SEEK));
    assert!(!it.valid());
}

#[test]
fn empty_keys_and_large_values_round_trip() {
    let m = mem();
    let big: Vec<u8> = (0..if cfg!(miri) { 20_000 } else { 1 << 20 })
        .map(|i: u32| (i % 251) as u8)
        .collect();
    m.add(1, ValueKind::Value, b"", b"");
    m.add(2, ValueKind::Value, b"big", &big);
    m.add(3, ValueKind::Value, b"small", b"s");
    assert_eq!(m.get(b"", 5), LookupResult::Found(Vec::new()));
    assert_eq!(m.get(b"big", 5), LookupResult::Found(big.clone()));
    assert_eq!(m.get(b"small", 5), LookupResult::Found(b"s".to_vec()));
    let fwd = forward(&m);
    assert_eq!(fwd[1].3, big);
    assert!(m.approximate_memory_usage() > big.len());
}

#[test]
fn memory_usage_grows() {
    let m = mem();
    let start = m.approximate_memory_usage();
    let n = if cfg!(miri) { 200 } else { 20_000 };
    for i in 0..n {
        m.add(i, ValueKind::Value, &i.to_be_bytes(), &[7u8; 100]);
    }
    let end = m.approximate_memory_usage();
    assert!(end > start + n as usize * 100, "{start} -> {end}");
    assert!(end < start + n as usize * 400, "{start} -> {end}");
    assert!(format!("{m:?}").contains("len"));
}

#[test]
fn memtable_and_iterator_are_send_sync_static() {
    fn check<T: Send + Sync + 'static>() {}
    fn check_send<T: Send + 'static>() {}
    check::<MemTable>();
    check_send::<MemTableIterator>();
    // The iterator outlives every other handle to the memtable.
    let m = mem();
    m.add(1, ValueKind::Value, b"a", b"1");
    let mut it = m.iter();
    drop(m);
    it.seek_to_first();
    assert_eq!(it.value(), b"1");
}

type Model = BTreeMap<(Vec<u8>, std::cmp::Reverse<u64>), (ValueKind, Vec<u8>)>;

fn model_get(model: &Model, key: &[u8], snapshot: u64) -> LookupResult {
    let from = (key.to_vec(), std::cmp::Reverse(snapshot));
    match model.range(from..).next() {
        Some(((k, _), (kind, v))) if k == key => match kind {
            ValueKind::Value => LookupResult::Found(v.clone()),
            ValueKind::Deletion => LookupResult::Deleted,
        },
        _ => LookupResult::NotFound,
    }
}

fn ops() -> impl Strategy<Value = Vec<(Vec<u8>, bool, Vec<u8>, u64)>> {
    proptest::collection::vec(
        (
            proptest::collection::vec(0u8..4, 0..4),
            any::<bool>(),
            proptest::collection::vec(any::<u8>(), 0..8),
            any::<u64>(),
        ),
        0..if cfg!(miri) { 20 } else { 200 },
    )
}

proptest! {
    // Under Miri: few cases, and no failure file (Miri's isolation forbids the file system).
    #![proptest_config(ProptestConfig {
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 64 })
    })]
    #[test]
    fn matches_a_btreemap_model(
        ops in ops(),
        snapshots in proptest::collection::vec(0u64..300, 1..20),
        probes in proptest::collection::vec(proptest::collection::vec(0u8..4, 0..4), 1..20),
    ) {
        // Without a key filter, with one line of filter (it matches most keys) and with a
        // larger one (it rules most absent keys out); without a point index, with one of eight
        // slots (full after six keys) and with a larger one; in one run and in runs of about
        // 1 KiB (a dozen of them by the end; sequences are not in insertion order, so a newer
        // run often holds an older version): the same answers.
        let shapes = [(0, 0), (64, 0), (4096, 0), (0, 64), (64, 64), (0, 4096), (4096, 4096)];
        for ((filter_bytes, index_bytes), run_bytes) in
            shapes.into_iter().flat_map(|s| [(s, 0), (s, 1024)])
        {
            let m = Arc::new(
                MemTable::new(InternalKeyComparator::new(default_comparator()))
                    .with_runs_of(run_bytes)
                    .with_key_filter(filter_bytes)
                    .with_point_index(index_bytes),
            );
            let mut model = Model::new();
            // Unique sequence numbers, in an order unrelated to insertion order.
            let mut seqs: Vec<u64> = (1..=ops.len() as u64).collect();
            for i in (1..seqs.len()).rev() {
                seqs.swap(i, (ops[i].3 % (i as u64 + 1)) as usize);
            }
            for ((key, del, value, _), seq) in ops.iter().zip(&seqs) {
                let kind = if *del { ValueKind::Deletion } else { ValueKind::Value };
                m.add(*seq, kind, key, value);
                model.insert((key.clone(), std::cmp::Reverse(*seq)), (kind, value.clone()));
            }
            let want: Vec<_> = model
                .iter()
                .map(|((k, s), (kind, v))| (k.clone(), s.0, *kind, v.clone()))
                .collect();
            prop_assert_eq!(m.len(), want.len());
            prop_assert_eq!(&forward(&m), &want);
            prop_assert_eq!(&backward(&m), &want);
            for (probe, snap) in probes.iter().zip(snapshots.iter().cycle()) {
                prop_assert_eq!(m.get(probe, *snap), model_get(&model, probe, *snap));
                let latest = m.get_latest(probe).map(|(_, found)| found);
                let newest = model_get(&model, probe, u64::MAX);
                prop_assert_eq!(latest, (newest != LookupResult::NotFound).then_some(newest));
                // seek agrees with the model's lower bound.
                let mut it = m.iter();
                it.seek(&make_internal_key(probe, *snap, ValueKind::FOR_SEEK));
                let from = (probe.clone(), std::cmp::Reverse(*snap));
                match model.range(from..).next() {
                    Some(((k, s), _)) => {
                        prop_assert!(it.valid());
                        let p = parse_internal_key(it.key()).unwrap();
                        prop_assert_eq!((p.user_key, p.seq), (&k[..], s.0));
                    }
                    None => prop_assert!(!it.valid()),
                }
            }
        }
    }
}

/// A memtable takes as its shared prefix what every key of the one before it began with, and
/// orders keys with and without that prefix, and reads them back, as any memtable does.
#[test]
fn keys_with_and_without_the_previous_memtables_prefix_keep_their_order() {
    let previous = mem();
    for k in ["user0001", "user0420", "user0999"] {
        previous.add(1, ValueKind::Value, k.as_bytes(), b"p");
    }
    assert_eq!(previous.runs.common_prefix(), b"user0");
    let next = Arc::new(
        MemTable::new(InternalKeyComparator::new(default_comparator()))
            .with_shared_prefix_from(&previous),
    );
    let keys = [
        "user0",
        "user05",
        "user0500000000",
        "user0500000001",
        "user1",
        "apple",
        "zebra",
        "",
        "user0\u{0}",
        "user0\u{0}\u{0}1",
    ];
    for (seq, k) in (1..).zip(keys) {
        next.add(seq, ValueKind::Value, k.as_bytes(), k.as_bytes());
    }
    let mut want: Vec<&str> = keys.to_vec();
    want.sort();
    let got: Vec<Vec<u8>> = forward(&next).into_iter().map(|e| e.0).collect();
    let want_bytes: Vec<Vec<u8>> = want.iter().map(|k| k.as_bytes().to_vec()).collect();
    assert_eq!(got, want_bytes);
    for k in keys {
        assert!(
            matches!(next.get(k.as_bytes(), 100), LookupResult::Found(v) if v == k.as_bytes()),
            "{k:?}"
        );
    }
}

/// Puts in key order skip the membuffer once a streak of them has been seen; keys put again
/// later are buffered over their skiplist versions, and reads at every snapshot, the latest
/// state and iteration agree with a model throughout.
#[test]
fn keys_in_order_skip_the_membuffer_and_reads_stay_right() {
    let m = Arc::new(flodb(64 << 10));
    let key = |i: u64| format!("k{i:06}").into_bytes();
    let mut model = Model::new();
    let mut seq = 0u64;
    let mut put = |i: u64, kind: ValueKind, snapshot: Option<u64>, model: &mut Model| {
        seq += 1;
        let value = if kind == ValueKind::Value {
            seq.to_le_bytes().to_vec()
        } else {
            Vec::new()
        };
        m.put(seq, kind, &key(i), &value, || snapshot);
        model.insert((key(i), std::cmp::Reverse(seq)), (kind, value));
        seq
    };
    let streak = ascending::STREAK as usize;
    for i in 0..100 {
        put(i, ValueKind::Value, None, &mut model);
    }
    assert_eq!(
        (m.buffered_len(), m.membuffer_appended_puts()),
        (streak, 100 - streak as u64)
    );
    // Older keys again under a snapshot (buffered keys and appended ones, values and
    // deletions), then another run in order, which must build its streak anew.
    let snap = 100;
    for i in (0..100).step_by(7) {
        let kind = if i % 2 == 0 {
            ValueKind::Deletion
        } else {
            ValueKind::Value
        };
        put(i, kind, Some(snap), &mut model);
    }
    let last = (100..150)
        .map(|i| put(i, ValueKind::Value, Some(snap), &mut model))
        .last();
    assert_eq!(
        m.membuffer_appended_puts(),
        (100 - streak + 50 - streak) as u64
    );
    let last = last.unwrap_or_default();
    let check = |m: &Arc<MemTable>| {
        for i in 0..160 {
            for s in [5, 50, snap, snap + 7, last] {
                assert_eq!(
                    m.get(&key(i), s),
                    model_get(&model, &key(i), s),
                    "key {i} at {s}"
                );
            }
            let newest = model_get(&model, &key(i), u64::MAX);
            let latest = m.get_latest(&key(i)).map(|(_, found)| found);
            assert_eq!(
                latest,
                (newest != LookupResult::NotFound).then_some(newest),
                "key {i}"
            );
        }
    };
    check(&m);
    m.drain(MAX_SEQUENCE);
    assert_eq!(m.buffered_len(), 0);
    check(&m);
    let want: Vec<_> = model
        .iter()
        .map(|((k, s), (kind, v))| (k.clone(), s.0, *kind, v.clone()))
        .collect();
    assert_eq!(forward(&m), want);
}
