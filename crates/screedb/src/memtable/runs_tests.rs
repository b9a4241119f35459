//! Unit tests of a memtable kept in several runs (`runs.rs`).
use super::*;
use crate::comparator::default_comparator;
use crate::iter::InternalIterator;
use crate::key::parse_internal_key;
use std::collections::BTreeMap;

fn icmp() -> InternalKeyComparator {
    InternalKeyComparator::new(default_comparator())
}

/// Every entry as (user key, seq), walking forward or backward (then reversed).
fn entries(m: &MemTable, forward: bool) -> Vec<(Vec<u8>, u64)> {
    let mut it = m.iter();
    let mut out = Vec::new();
    if forward {
        it.seek_to_first();
    } else {
        it.seek_to_last();
    }
    while it.valid() {
        let p = parse_internal_key(it.key()).unwrap();
        out.push((p.user_key.to_vec(), p.seq));
        if forward {
            it.next();
        } else {
            it.prev();
        }
    }
    if !forward {
        out.reverse();
    }
    out
}

#[test]
fn a_memtable_over_its_run_size_starts_new_runs_and_reads_across_them() {
    let m = MemTable::new(icmp())
        .with_runs_of(4 << 10)
        .with_key_filter(256)
        .with_point_index(256);
    let mut model = BTreeMap::new();
    for seq in 1..=2000u64 {
        let key = format!("key{:04}", seq * 7919 % 500).into_bytes();
        m.add(seq, ValueKind::Value, &key, &seq.to_le_bytes());
        model.insert((key, std::cmp::Reverse(seq)), ());
    }
    assert!(m.runs() > 10, "{} runs", m.runs());
    assert_eq!(m.len(), 2000);
    let want: Vec<_> = model.keys().map(|(k, s)| (k.clone(), s.0)).collect();
    assert_eq!(entries(&m, true), want);
    assert_eq!(entries(&m, false), want);
    for i in 0..500u64 {
        let key = format!("key{i:04}").into_bytes();
        let newest = model
            .range((key.clone(), std::cmp::Reverse(u64::MAX))..)
            .next()
            .map(|((_, s), _)| s.0)
            .unwrap();
        assert_eq!(
            m.get_latest(&key),
            Some((newest, LookupResult::Found(newest.to_le_bytes().to_vec())))
        );
        // An older snapshot finds its version in an older run.
        let at = newest - 1;
        let old = model
            .range((key.clone(), std::cmp::Reverse(at))..)
            .next()
            .filter(|((k, _), _)| *k == key)
            .map(|((_, s), _)| s.0);
        assert_eq!(m.get_entry(&key, at).map(|(s, _)| s), old);
    }
    assert_eq!(m.get(b"absent", u64::MAX), LookupResult::NotFound);
    // Every run is charged to the memtable's size.
    assert!(m.approximate_memory_usage() >= m.runs() * (4 << 10) / 2);
}

/// Adds filler entries from sequence `seq + 1` on until `m` starts a new run.
fn fill_until_a_new_run(m: &MemTable, mut seq: u64) {
    let runs = m.runs();
    while m.runs() == runs {
        seq += 1;
        let key = format!("fill{seq}");
        m.add(seq, ValueKind::Value, key.as_bytes(), &[0; 64]);
    }
}

/// A version found in a newer run is not the answer when an older run holds a newer one: a
/// read goes on while the older run's bound is above what it found.
#[test]
fn a_newer_run_holding_an_older_version_does_not_hide_the_newest() {
    let m = MemTable::new(icmp()).with_runs_of(4 << 10);
    m.add(10, ValueKind::Value, b"k", b"ten");
    fill_until_a_new_run(&m, 100);
    m.add(5, ValueKind::Value, b"k", b"five"); // into the second run
    assert_eq!(
        m.get(b"k", MAX_SEQUENCE),
        LookupResult::Found(b"ten".to_vec())
    );
    assert_eq!(m.get(b"k", 9), LookupResult::Found(b"five".to_vec()));
    assert_eq!(m.get(b"k", 4), LookupResult::NotFound);
}

/// The same entry in two runs (a drain and the writer's move for a snapshot can both insert
/// it) is yielded once, going either way.
#[test]
fn an_entry_in_two_runs_is_iterated_once() {
    let m = MemTable::new(icmp()).with_runs_of(4 << 10);
    m.add(1, ValueKind::Value, b"b", b"v");
    fill_until_a_new_run(&m, 100);
    let mut again = [BatchEntry {
        user_key: b"b",
        seq: 1,
        kind: ValueKind::Value,
        value: b"v",
    }];
    m.add_batch(&mut again);
    m.add(2, ValueKind::Value, b"a", b"v");
    m.add(3, ValueKind::Value, b"c", b"v");
    assert_eq!(m.runs(), 2);
    let fwd = entries(&m, true);
    let keys: Vec<&[u8]> = fwd.iter().map(|(k, _)| k.as_slice()).collect();
    assert_eq!(&keys[..2], [&b"a"[..], b"b"]);
    assert_eq!(keys[2], b"c");
    assert_eq!(entries(&m, false), fwd);
    // Changing direction on the duplicate.
    let mut it = m.iter();
    it.seek(&crate::key::make_internal_key(b"b", 1, ValueKind::Value));
    it.prev();
    assert_eq!(parse_internal_key(it.key()).unwrap().user_key, b"a");
    it.next();
    assert_eq!(parse_internal_key(it.key()).unwrap().user_key, b"b");
    it.next();
    assert_eq!(parse_internal_key(it.key()).unwrap().user_key, b"c");
}

/// With a membuffer, runs and a drain thread, every write is found after the writer stops and
/// a final drain, each version once, and reads during the writes never go back.
#[test]
fn a_membuffer_over_runs_keeps_every_write_under_a_concurrent_drain() {
    keeps_every_write_under_a_concurrent_drain(|i| format!("k{:03}", i * 37 % 300).into_bytes());
}

/// As above with keys in order for a hundred writes at a time (after a streak they skip the
/// membuffer, `ascending.rs`), then a hundred re-puts of keys written before, appended or
/// buffered, some under a snapshot.
#[test]
fn keys_in_order_over_runs_keep_every_write_under_a_concurrent_drain() {
    let m = keeps_every_write_under_a_concurrent_drain(|i| {
        let phase = i - i % 100;
        let k = if phase % 200 == 0 {
            i
        } else {
            i * 37 % phase.max(1)
        };
        format!("k{k:05}").into_bytes()
    });
    // 30 phases in order, each past its streak for most of its hundred puts.
    let appended = m.membuffer_appended_puts();
    assert!(appended > 30 * 50, "{appended} appended");
}

fn keeps_every_write_under_a_concurrent_drain(key: impl Fn(u64) -> Vec<u8>) -> Arc<MemTable> {
    let m = Arc::new(MemTable::with_membuffer(icmp(), 2 << 10, 4).with_runs_of(8 << 10));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let drainer = {
        let (m, stop) = (Arc::clone(&m), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut cursor = 0;
            while !stop.load(Ordering::Relaxed) {
                m.drain_some(&mut cursor);
                std::thread::yield_now();
            }
        })
    };
    let mut newest = BTreeMap::new();
    let mut kept = Vec::new();
    for seq in 1..=6000u64 {
        let k = key(seq);
        // Every 50th write holds a snapshot just below itself, so the key's buffered older
        // version moves to the skiplist, perhaps while a drain is copying it.
        let snapshot = (seq % 50 == 0).then(|| seq - 1);
        m.put(seq, ValueKind::Value, &k, &seq.to_le_bytes(), || snapshot);
        assert_eq!(m.get_latest(&k).map(|(s, _)| s), Some(seq), "key {k:?}");
        if let Some(old) = newest.insert(k.clone(), seq)
            && snapshot.is_some()
        {
            kept.push((k, old));
        }
    }
    stop.store(true, Ordering::Relaxed);
    drainer.join().unwrap();
    m.drain(MAX_SEQUENCE);
    assert!(m.runs() > 2, "{} runs", m.runs());
    for (k, seq) in &newest {
        assert_eq!(
            m.get(k, MAX_SEQUENCE),
            LookupResult::Found(seq.to_le_bytes().to_vec())
        );
    }
    // The skiplist holds each key's newest version and every version a snapshot kept, once.
    let got = entries(&m, true);
    let mut dedup = got.clone();
    dedup.dedup();
    assert_eq!(got, dedup);
    for (k, seq) in &newest {
        assert!(got.contains(&(k.clone(), *seq)));
    }
    for entry in &kept {
        assert!(got.contains(entry), "kept {entry:?}");
    }
    m
}

/// A successor's key windows and neighbourhoods come from every run, not the first alone.
#[test]
fn the_shared_prefix_and_the_sample_span_every_run() {
    let m = MemTable::new(icmp()).with_runs_of(4 << 10);
    let mut seq = 0;
    for prefix in ["user0", "user1"] {
        let runs = m.runs();
        while m.runs() == runs {
            seq += 1;
            m.add(
                seq,
                ValueKind::Value,
                format!("{prefix}{seq:06}").as_bytes(),
                &[0; 64],
            );
        }
    }
    assert_eq!(m.runs(), 3);
    assert_eq!(m.runs.common_prefix(), b"user");
    let sample = m.runs.sample_user_keys(1000);
    assert!(sample.is_sorted(), "the sample is ascending");
    assert!(sample.iter().any(|k| k.starts_with(b"user0")));
    assert!(sample.iter().any(|k| k.starts_with(b"user1")));
}
