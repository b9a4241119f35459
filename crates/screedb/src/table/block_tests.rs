//! Unit tests of block decoding and seeking, including the bytewise search aid.
use super::*;
use crate::comparator::default_comparator;
use crate::key::{ValueKind, make_internal_key};
use crate::table::BlockBuilder;
use proptest::prelude::*;

fn icmp() -> InternalKeyComparator {
    InternalKeyComparator::new(default_comparator())
}

fn entries(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let k = make_internal_key(format!("key{:05}", i * 2).as_bytes(), 7, ValueKind::Value);
            (k, format!("value-{i}").into_bytes())
        })
        .collect()
}

fn build(es: &[(Vec<u8>, Vec<u8>)], interval: usize) -> Arc<Block> {
    let mut b = BlockBuilder::new(interval);
    for (k, v) in es {
        b.add(k, v);
    }
    let data = b.finish().to_vec();
    Arc::new(Block::new(data, Arc::from(Path::new("t.sst")), 0).unwrap())
}

fn collect_forward(it: &mut BlockIter) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    out
}

#[test]
fn iterate_seek_and_prev_with_various_restart_intervals() {
    for interval in [1, 2, 3, 16, 1000] {
        for n in [0, 1, 2, 15, 16, 17, 100] {
            let es = entries(n);
            let block = build(&es, interval);
            assert_eq!(block.entries().unwrap(), es);
            let mut it = block.iter(icmp());
            assert_eq!(collect_forward(&mut it), es, "interval {interval} n {n}");
            // Backwards.
            let mut back = Vec::new();
            it.seek_to_last();
            while it.valid() {
                back.push((it.key().to_vec(), it.value().to_vec()));
                it.prev();
            }
            back.reverse();
            assert_eq!(back, es);
            // Seeks to present keys, to gaps, and past the end.
            for i in 0..n {
                it.seek(&es[i].0);
                assert!(it.valid());
                assert_eq!(it.key(), &es[i].0[..]);
                let gap = make_internal_key(
                    format!("key{:05}", i * 2 + 1).as_bytes(),
                    7,
                    ValueKind::Value,
                );
                it.seek(&gap);
                assert_eq!(it.valid(), i + 1 < n);
                if i + 1 < n {
                    assert_eq!(it.key(), &es[i + 1].0[..]);
                    it.prev();
                    assert_eq!(it.key(), &es[i].0[..]);
                }
            }
            it.seek(b"");
            assert_eq!(it.valid(), n > 0);
            assert!(it.status().is_ok());
        }
    }
}

#[test]
fn bad_restart_arrays_are_rejected() {
    let origin: Arc<Path> = Arc::from(Path::new("t.sst"));
    for data in [
        vec![],
        vec![1, 0, 0],
        vec![0, 0, 0, 0],                                     // zero restarts
        vec![0, 0, 0, 0, 2, 0, 0, 0],                         // two restarts, room for one
        vec![9, 9, 9, 9, 1, 0, 0, 0],                         // first restart not 0
        vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3f], // n * 4 overflows
    ] {
        let err = Block::new(data.clone(), origin.clone(), 77).unwrap_err();
        assert!(err.is_corruption(), "{data:?}: {err}");
        assert!(err.to_string().contains("offset 77"), "{err}");
    }
}

#[test]
fn corrupt_entries_surface_in_status() {
    let es = entries(40);
    let mut b = BlockBuilder::new(4);
    for (k, v) in &es {
        b.add(k, v);
    }
    let mut data = b.finish().to_vec();
    data[1] = 0xff; // non_shared of the first entry: now runs past the entries
    let block = Arc::new(Block::new(data, Arc::from(Path::new("t.sst")), 5).unwrap());
    let mut it = block.iter(icmp());
    it.seek_to_first();
    assert!(!it.valid());
    let err = it.status().unwrap_err();
    assert!(
        err.is_corruption() && err.to_string().contains("t.sst"),
        "{err}"
    );
    assert!(block.entries().is_err());
}

proptest! {
    #[test]
    fn block_decoder_never_panics(
        data in proptest::collection::vec(any::<u8>(), 0..120),
        target in proptest::collection::vec(any::<u8>(), 0..12),
    ) {
        if let Ok(block) = Block::new(data, Arc::from(Path::new("f")), 0) {
            let block = Arc::new(block);
            let _ = block.entries();
            let mut it = block.iter(icmp());
            it.seek_to_first();
            for _ in 0..50 { if !it.valid() { break; } it.next(); }
            it.seek_to_last();
            for _ in 0..50 { if !it.valid() { break; } it.prev(); }
            it.seek(&target);
            let _ = (it.key(), it.value(), it.status());
        }
    }

    /// With the bytewise search aid, every seek lands where the plain binary search does.
    #[test]
    fn bytewise_search_seeks_like_the_plain_search(
        keys in proptest::collection::btree_set(
            proptest::collection::vec(prop_oneof![Just(0u8), Just(b'k'), any::<u8>()], 0..12),
            1..300,
        ),
        targets in proptest::collection::vec(
            (proptest::collection::vec(prop_oneof![Just(0u8), Just(b'k'), any::<u8>()], 0..12), 0u64..4),
            1..40,
        ),
        interval in prop_oneof![Just(1usize), 2usize..20],
    ) {
        let es: Vec<_> = keys
            .iter()
            .map(|k| (make_internal_key(k, 2, ValueKind::Value), k.clone()))
            .collect();
        let plain = build(&es, interval);
        let data = plain.data.clone();
        let aided = Arc::new(
            Block::new(data, Arc::from(Path::new("t.sst")), 0).unwrap().with_bytewise_search(),
        );
        prop_assert!(aided.windows.is_some());
        let (mut a, mut b) = (plain.iter(icmp()), aided.iter(icmp()));
        let probes = targets
            .iter()
            .map(|(k, seq)| make_internal_key(k, *seq, ValueKind::Value))
            .chain(es.iter().map(|(k, _)| k.clone()));
        for t in probes {
            a.seek(&t);
            b.seek(&t);
            prop_assert_eq!(a.valid(), b.valid());
            if a.valid() {
                prop_assert_eq!(a.key(), b.key());
            }
        }
    }

    #[test]
    fn block_round_trips(
        keys in proptest::collection::btree_set(proptest::collection::vec(any::<u8>(), 0..20), 0..60),
        interval in 1usize..20,
    ) {
        let es: Vec<_> = keys
            .iter()
            .map(|k| (make_internal_key(k, 1, ValueKind::Value), k.repeat(2)))
            .collect();
        let block = build(&es, interval);
        let mut it = block.iter(icmp());
        prop_assert_eq!(collect_forward(&mut it), es.clone());
        for (k, v) in &es {
            it.seek(k);
            prop_assert!(it.valid());
            prop_assert_eq!(it.value(), &v[..]);
        }
    }
}

/// In a block with one entry per restart point (an index block), the iterator's restart index
/// is the current entry's position after every move: tables key per-block state by it.
#[test]
fn restart_index_is_the_entry_position_with_one_entry_per_restart() {
    let es = entries(50);
    let block = build(&es, 1);
    let mut it = block.iter(icmp());
    it.seek_to_first();
    for i in 0..es.len() {
        assert_eq!(it.restart_index(), i, "next");
        it.next();
    }
    it.seek_to_last();
    for i in (0..es.len()).rev() {
        assert_eq!(it.restart_index(), i, "prev");
        it.prev();
    }
    for (i, (k, _)) in es.iter().enumerate() {
        it.seek(k);
        assert_eq!(it.restart_index(), i, "seek to entry {i}");
        // Between entries `i - 1` and `i`: lands on `i`.
        let before = make_internal_key(
            format!("key{:05}", i * 2 - usize::from(i > 0)).as_bytes(),
            7,
            ValueKind::Value,
        );
        it.seek(&before);
        assert_eq!(it.restart_index(), i, "seek before entry {i}");
    }
}

#[derive(Debug, Clone)]
enum Move {
    First,
    Last,
    Seek(usize),
    Next,
    Prev,
}

fn arb_move() -> impl Strategy<Value = Move> {
    prop_oneof![
        Just(Move::First),
        Just(Move::Last),
        (0usize..250).prop_map(Move::Seek),
        Just(Move::Next),
        Just(Move::Next),
        Just(Move::Prev),
        Just(Move::Prev),
        Just(Move::Prev),
    ]
}

proptest! {
    /// Any mix of moves lands where a model (a position in the sorted entries) says: backward
    /// steps served from the decoded interval and those that decode one agree with forward
    /// decoding, whatever the restart interval and wherever a seek or a forward step left off.
    #[test]
    fn moves_in_any_order_match_the_model(
        n in 0usize..120,
        interval in prop_oneof![Just(1usize), Just(2), Just(3), Just(16), Just(1000)],
        moves in proptest::collection::vec(arb_move(), 1..80),
    ) {
        let es = entries(n);
        let block = build(&es, interval);
        let mut it = block.iter(icmp());
        let mut at: Option<usize> = None;
        for m in moves {
            match m {
                Move::First => { it.seek_to_first(); at = (n > 0).then_some(0); }
                Move::Last => { it.seek_to_last(); at = n.checked_sub(1); }
                Move::Seek(k) => {
                    // Keys are key{2i}: an odd k falls in a gap.
                    let t = make_internal_key(format!("key{k:05}").as_bytes(), 7, ValueKind::Value);
                    it.seek(&t);
                    at = Some(k.div_ceil(2)).filter(|&i| i < n);
                }
                Move::Next if at.is_some() => {
                    it.next();
                    at = at.map(|i| i + 1).filter(|&i| i < n);
                }
                Move::Prev if at.is_some() => {
                    it.prev();
                    at = at.and_then(|i| i.checked_sub(1));
                }
                Move::Next | Move::Prev => {}
            }
            prop_assert_eq!(it.valid(), at.is_some());
            if let Some(i) = at {
                prop_assert_eq!(it.key(), &es[i].0[..]);
                prop_assert_eq!(it.value(), &es[i].1[..]);
            }
        }
        prop_assert!(it.status().is_ok());
    }
}
