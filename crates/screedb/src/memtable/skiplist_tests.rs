//! Unit tests of the skiplist: ordering, multi-insert, tower structure, concurrent readers.
use super::*;
use crate::comparator::default_comparator;
use crate::key::{make_internal_key, parse_internal_key};
use std::sync::atomic::AtomicBool;
use std::thread;

fn list() -> Arc<SkipList> {
    list_sharing(&[])
}

/// A list whose key windows start after `shared` ([`SkipList::set_shared_prefix`]).
fn list_sharing(shared: &[u8]) -> Arc<SkipList> {
    let mut list = SkipList::new(InternalKeyComparator::new(default_comparator()));
    list.set_shared_prefix(shared);
    Arc::new(list)
}

/// The value the writer stores for key `i`: long enough that a torn read would show.
fn value_for(i: u64) -> Vec<u8> {
    let len = (i % 7) as usize * 5 + 1;
    i.to_le_bytes().iter().copied().cycle().take(len).collect()
}

#[test]
fn heights_follow_branching_four() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let n = if cfg!(miri) { 2_000 } else { 100_000 };
    let tall = (0..n).filter(|_| rng.height() >= 2).count();
    // About a quarter of nodes reach level 2.
    assert!(tall > n / 5 && tall < n * 3 / 10, "{tall} of {n}");
    assert!((0..n).all(|_| (1..=MAX_HEIGHT).contains(&rng.height())));
}

#[test]
fn entries_decode_with_lengths_of_one_and_several_varint_bytes() {
    for (key_len, value_len) in [(0, 0), (9, 1), (127, 128), (200, 70_000)] {
        let (key, value) = (vec![7u8; key_len], vec![9u8; value_len]);
        let ((k, kn), (v, vn)) = (varint(key_len as u64), varint(value_len as u64));
        let entry = [&k[..kn], &key, &v[..vn], &value].concat();
        // SAFETY: `entry` is a complete entry and outlives the slices.
        let (k, v) = unsafe { entry_parts(NonNull::from(&entry[..]).cast::<u8>()) };
        assert_eq!((k, v), (&key[..], &value[..]));
    }
}

/// A list whose entries follow their towers (the layout for an address a header cannot hold)
/// reads as one whose entries live apart: same order, same point reads, same seeks.
#[test]
fn entries_kept_after_their_towers_read_as_entries_kept_apart() {
    let lists: Vec<SkipList> = (0..2)
        .map(|i| {
            let mut list = SkipList::new(InternalKeyComparator::new(default_comparator()));
            list.set_point_index(1 << 16, None);
            if i == 1 {
                list.keep_entries_inline();
            }
            list
        })
        .collect();
    let keys: Vec<u64> = (0..2_000u64)
        .map(|i| i.wrapping_mul(0x9e37_79b9) % 5_000)
        .collect();
    for (seq, &k) in keys.iter().enumerate() {
        // Every tenth value takes a two-byte length.
        let value = if seq % 10 == 0 {
            vec![3u8; 300]
        } else {
            value_for(k)
        };
        for list in &lists {
            list.insert(&k.to_be_bytes(), seq as u64 + 1, ValueKind::Value, &value);
        }
    }
    assert_eq!(
        lists[1].entries.allocated_bytes(),
        0,
        "inline entries took the entries arena"
    );
    assert!(lists[0].entries.allocated_bytes() > 0);
    let [apart, inline] = [0, 1].map(|i| {
        let mut seen = Vec::new();
        let mut x = lists[i].head().next(0);
        while let Some(node) = x {
            seen.push((node.key().to_vec(), node.value().to_vec()));
            x = node.next(0);
        }
        check_levels(&lists[i]);
        seen
    });
    assert_eq!(apart, inline);
    for &k in &keys {
        let user = k.to_be_bytes();
        let found: Vec<_> = lists.iter().map(|l| l.newest(&user)).collect();
        assert!(matches!(found[0], Newest::Entry(key, _) if key::user_key(key) == user));
        assert_eq!(found[0], found[1]);
        let target = make_internal_key(&user, key::MAX_SEQUENCE, ValueKind::FOR_SEEK);
        assert_eq!(lists[0].seek(&target), lists[1].seek(&target));
    }
}

#[test]
fn readers_see_sorted_complete_lists_while_one_writer_inserts() {
    let n: u64 = if cfg!(miri) { 60 } else { 20_000 };
    let list = list();
    let published = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    // Insert keys in a scrambled order so that inserts land all over the list.
    let order: Vec<u64> = (0..n).map(|i| (i * 7919) % n).collect();
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (list, published, done) = (list.clone(), published.clone(), done.clone());
            let order = order.clone();
            thread::spawn(move || {
                let mut passes = 0;
                loop {
                    let finished = done.load(Ordering::Acquire);
                    let before = published.load(Ordering::Acquire);
                    let mut seen = vec![false; n as usize];
                    let mut it = Iter::new(list.clone());
                    it.seek_to_first();
                    let mut last: Option<Vec<u8>> = None;
                    while it.valid() {
                        let p = parse_internal_key(it.key()).expect("torn key");
                        let i = u64::from_be_bytes(p.user_key.try_into().expect("torn key"));
                        assert_eq!(p.seq, i + 1, "torn trailer");
                        assert_eq!(it.value(), value_for(i), "torn value");
                        if let Some(l) = &last {
                            assert!(list.cmp.compare(l, it.key()).is_lt(), "out of order");
                        }
                        seen[i as usize] = true;
                        last = Some(it.key().to_vec());
                        it.next();
                    }
                    for &i in &order[..before] {
                        assert!(seen[i as usize], "key {i} was published but not seen");
                    }
                    passes += 1;
                    if finished {
                        return passes;
                    }
                }
            })
        })
        .collect();
    for (count, &i) in order.iter().enumerate() {
        list.insert(&i.to_be_bytes(), i + 1, ValueKind::Value, &value_for(i));
        published.store(count + 1, Ordering::Release);
    }
    done.store(true, Ordering::Release);
    for r in readers {
        assert!(r.join().expect("reader panicked") >= 1);
    }
    assert_eq!(list.len(), n as usize);
}

#[test]
fn readers_find_each_keys_newest_entry_by_the_point_index_while_one_writer_inserts() {
    let rounds: u64 = if cfg!(miri) { 3 } else { 200 };
    let keys = 64u64;
    // A large index, and one of eight slots (six keys, then incomplete).
    for index_bytes in [64 << 10, 64] {
        let mut list = SkipList::new(InternalKeyComparator::new(default_comparator()));
        list.set_point_index(index_bytes, None);
        let list = Arc::new(list);
        // The newest sequence written of each key, published after its insert.
        let published: Arc<Vec<AtomicUsize>> =
            Arc::new((0..keys).map(|_| AtomicUsize::new(0)).collect());
        let done = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (list, published, done) = (list.clone(), published.clone(), done.clone());
                thread::spawn(move || {
                    let mut hits = 0u64;
                    loop {
                        let finished = done.load(Ordering::Acquire);
                        for k in 0..keys {
                            let before = published[k as usize].load(Ordering::Acquire) as u64;
                            match list.newest(&k.to_be_bytes()) {
                                Newest::Entry(ikey, value) => {
                                    let p = parse_internal_key(ikey).expect("torn key");
                                    assert_eq!(p.user_key, k.to_be_bytes(), "another key's node");
                                    assert!(p.seq >= before, "key {k}: {} < {before}", p.seq);
                                    assert_eq!(value, value_for(p.seq), "torn value");
                                    hits += 1;
                                }
                                Newest::Absent => assert_eq!(before, 0, "key {k} lost"),
                                Newest::Unknown => {}
                            }
                        }
                        if finished {
                            return hits;
                        }
                    }
                })
            })
            .collect();
        for round in 0..rounds {
            for k in 0..keys {
                let seq = round * keys + k + 1;
                list.insert(&k.to_be_bytes(), seq, ValueKind::Value, &value_for(seq));
                published[k as usize].store(seq as usize, Ordering::Release);
            }
        }
        done.store(true, Ordering::Release);
        for r in readers {
            assert!(r.join().expect("reader panicked") > 0);
        }
        // Entries inserted out of sequence order (as a drain may) leave the newest indexed.
        let stale = BatchEntry {
            user_key: &0u64.to_be_bytes(),
            seq: 0,
            kind: ValueKind::Deletion,
            value: b"",
        };
        list.insert_sorted(&[stale], Search::Finger);
        let Newest::Entry(ikey, _) = list.newest(&0u64.to_be_bytes()) else {
            panic!("key 0 is among the first six indexed");
        };
        assert_eq!(
            parse_internal_key(ikey).unwrap().seq,
            (rounds - 1) * keys + 1
        );
    }
}

#[test]
fn concurrent_writers_are_serialized() {
    let per: u64 = if cfg!(miri) { 20 } else { 2_000 };
    let list = list();
    let writers: Vec<_> = (0..4u64)
        .map(|t| {
            let list = list.clone();
            thread::spawn(move || {
                for i in 0..per {
                    let seq = t * per + i + 1;
                    list.insert(&(i * 4 + t).to_be_bytes(), seq, ValueKind::Value, b"v");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer panicked");
    }
    assert_eq!(list.len(), (4 * per) as usize);
    let mut it = Iter::new(list.clone());
    it.seek_to_first();
    let mut count = 0u64;
    while it.valid() {
        let want = make_internal_key(&count.to_be_bytes(), 0, ValueKind::Value);
        assert_eq!(list.cmp.compare_user(it.key(), &want), CmpOrdering::Equal);
        count += 1;
        it.next();
    }
    assert_eq!(count, 4 * per);
    // And backwards.
    it.seek_to_last();
    while it.valid() {
        count -= 1;
        it.prev();
    }
    assert_eq!(count, 0);
}

/// Every entry as (internal key, value), walking forward.
fn contents(list: &Arc<SkipList>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut it = Iter::new(list.clone());
    it.seek_to_first();
    let mut out = Vec::new();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    out
}

/// Checks the tower structure: every level is sorted, and holds exactly the nodes whose
/// height reaches it (so no node was lost from, or linked out of order into, any level).
fn check_levels(list: &SkipList) {
    let mut tall = [0usize; MAX_HEIGHT];
    let mut n = list.head().next(0);
    while let Some(node) = n {
        for t in tall.iter_mut().take(node.height()) {
            *t += 1;
        }
        n = node.next(0);
    }
    for (level, want) in tall.iter().enumerate() {
        let (mut count, mut x) = (0, list.head());
        while let Some(next) = x.next(level) {
            if !list.is_head(x) {
                assert!(
                    list.cmp.compare(x.key(), next.key()).is_lt(),
                    "level {level} unsorted"
                );
            }
            count += 1;
            x = next;
        }
        assert_eq!(count, *want, "nodes on level {level}");
    }
}

/// A multi-insert batch of `keys` (sorted by the caller), each at sequence 1 with value "m".
fn batch_of(keys: &[[u8; 8]]) -> Vec<BatchEntry<'_>> {
    keys.iter()
        .map(|k| BatchEntry {
            user_key: k,
            seq: 1,
            kind: ValueKind::Value,
            value: b"m",
        })
        .collect()
}

#[test]
fn multi_insert_into_a_large_list_keeps_every_level_sorted() {
    for search in [Search::Finger, Search::Together] {
        let list = list();
        let n: u64 = if cfg!(miri) { 300 } else { 20_000 };
        let key = |i: u64| (i * 2654435761 % (4 * n)).to_be_bytes();
        // Single inserts first, then sorted batches of other keys falling between them.
        for i in 0..n {
            list.insert(&key(i), i + 1, ValueKind::Value, b"s");
        }
        for batch in 0..4u64 {
            let mut keys: Vec<[u8; 8]> = (0..n / 4).map(|j| key(n + batch * n / 4 + j)).collect();
            keys.sort_unstable();
            let entries = batch_of(&keys);
            assert_eq!(list.insert_sorted(&entries, search), entries.len());
            check_levels(&list);
        }
        assert_eq!(list.len() as u64, 2 * n, "{search:?}");
    }
}

#[test]
fn single_inserts_between_the_chunks_of_a_multi_insert_keep_every_level_sorted() {
    // The multi-insert lets go of the writer mutex between chunks; a single writer inserting
    // keys among the batch's meanwhile must not leave a level out of order or lose a node.
    // (Keeping the batch's predecessors across chunks failed here in about a third of rounds.)
    for _ in 0..if cfg!(miri) { 1 } else { 10 } {
        for search in [Search::Finger, Search::Together] {
            chunks_of_a_multi_insert_with_single_inserts_between(search);
        }
    }
}

fn chunks_of_a_multi_insert_with_single_inserts_between(search: Search) {
    let list = list();
    let n: u64 = if cfg!(miri) {
        600
    } else {
        40 * INSERT_SORTED_CHUNK as u64
    };
    let batch: Vec<[u8; 8]> = (0..n).map(|i| (2 * i).to_be_bytes()).collect();
    let entries = batch_of(&batch);
    let ikey = |k: u64| make_internal_key(&k.to_be_bytes(), 1, ValueKind::Value);
    thread::scope(|s| {
        // The follower inserts each odd key as soon as the batch has passed it: right behind
        // the batch's frontier, where the predecessors the batch keeps for its upper levels lie.
        s.spawn(|| {
            for i in 0..n {
                let next = ikey(2 * i + 2);
                while i + 1 < n && list.seek(&next).is_none_or(|(k, _)| k != next.as_slice()) {
                    std::hint::spin_loop();
                }
                list.insert(&(2 * i + 1).to_be_bytes(), 2, ValueKind::Value, b"s");
            }
        });
        assert_eq!(list.insert_sorted(&entries, search), entries.len());
    });
    check_levels(&list);
    let keys: Vec<u64> = contents(&list)
        .iter()
        .map(|(k, _)| u64::from_be_bytes(k[..8].try_into().unwrap()))
        .collect();
    assert_eq!(keys, (0..2 * n).collect::<Vec<_>>());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        failure_persistence: if cfg!(miri) { None } else { proptest::prelude::ProptestConfig::default().failure_persistence },
        ..proptest::prelude::ProptestConfig::with_cases(if cfg!(miri) { 3 } else { 64 })
    })]
    /// Multi-insert of sorted batches builds the same list as one-by-one inserts, skips
    /// entries already present, and keeps every level sorted (checked by `seek`). Short keys
    /// of a few small bytes (zeros among them) and long ones of two byte values both tie on
    /// the nodes' eight-byte key windows, which searches compare first; with a shared prefix
    /// some keys have windows and others are compared whole.
    #[test]
    fn multi_insert_matches_single_inserts(
        batches in proptest::collection::vec(
            proptest::collection::vec(
                (
                    proptest::prop_oneof![
                        proptest::collection::vec(0u8..6, 0..3),
                        proptest::collection::vec(0u8..2, 7..10),
                    ],
                    0u64..40,
                ),
                0..30,
            ),
            1..6,
        ),
        shared in proptest::collection::vec(0u8..2, 0..3),
    ) {
        let (multi, together, single) =
            (list_sharing(&shared), list_sharing(&shared), list_sharing(&shared));
        let mut seen = std::collections::BTreeSet::new();
        for batch in &batches {
            let mut entries: Vec<(Vec<u8>, u64)> = batch.clone();
            entries.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
            entries.dedup();
            let refs: Vec<BatchEntry<'_>> = entries
                .iter()
                .map(|(k, s)| BatchEntry { user_key: k, seq: *s, kind: ValueKind::Value, value: k })
                .collect();
            let fresh = entries.iter().filter(|e| !seen.contains(*e)).count();
            proptest::prop_assert_eq!(multi.insert_sorted(&refs, Search::Finger), fresh);
            proptest::prop_assert_eq!(together.insert_sorted(&refs, Search::Together), fresh);
            for e in &entries {
                if seen.insert(e.clone()) {
                    single.insert(&e.0, e.1, ValueKind::Value, &e.0);
                }
            }
        }
        let want = contents(&single);
        check_levels(&single);
        for list in [&multi, &together] {
            proptest::prop_assert_eq!(&contents(list), &want);
            proptest::prop_assert_eq!(list.len(), want.len());
            for (k, _) in &want {
                proptest::prop_assert_eq!(list.seek(k).map(|(k, _)| k.to_vec()), Some(k.clone()));
            }
            check_levels(list);
        }
    }
}
