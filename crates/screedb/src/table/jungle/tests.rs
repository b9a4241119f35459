//! Tree files round trip: build, append, lookup, iteration, rewrite, old commits and space
//! accounting; the helpers the model and damage tests share.

use std::cmp::{Ordering, Reverse};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::node::RECORD_TRAILER_LEN;
use super::*;
use crate::comparator::{InternalKeyComparator, default_comparator};
use crate::error::{Error, Result};
use crate::fs::{Fs, MemFs, WritableFile};
use crate::iter::InternalIterator;
use crate::key::{self, ValueKind, make_internal_key};
use crate::table::compression::incompressible;

/// The model: (user key, Reverse(trailer)) -> (internal key, value), in internal-key order.
pub(super) type Model = BTreeMap<(Vec<u8>, Reverse<u64>), (Vec<u8>, Vec<u8>)>;

/// Entries as (internal key, value) pairs.
pub(super) type Entries = Vec<(Vec<u8>, Vec<u8>)>;

pub(super) fn icmp() -> InternalKeyComparator {
    InternalKeyComparator::new(default_comparator())
}

/// Small nodes and inline values, so a few hundred entries make a tree of several levels.
pub(super) fn small_opts() -> TreeOptions {
    TreeOptions {
        node_bytes: 256,
        inline_value_max: 16,
        ..TreeOptions::default()
    }
}

pub(super) fn ik(user: &[u8], seq: u64, kind: ValueKind) -> Vec<u8> {
    make_internal_key(user, seq, kind)
}

pub(super) fn model_insert(m: &mut Model, ikey: Vec<u8>, value: Vec<u8>) {
    let sort = (key::user_key(&ikey).to_vec(), Reverse(key::trailer(&ikey)));
    m.insert(sort, (ikey, value));
}

pub(super) fn entries(m: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.values().cloned().collect()
}

pub(super) fn ok_iter(
    v: Vec<(Vec<u8>, Vec<u8>)>,
) -> impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>> {
    v.into_iter().map(Ok)
}

pub(super) fn open(
    fs: &dyn Fs,
    path: &Path,
    len: u64,
    opts: &TreeOptions,
) -> Result<Arc<TreeReader>> {
    let file = fs.open(path)?;
    TreeReader::open(file, path.to_path_buf(), 7, len, opts.clone(), icmp()).map(Arc::new)
}

/// Every entry forward, checked against the same walk backward.
pub(super) fn scan(tree: &Arc<TreeReader>) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut it = tree.iter();
    let mut fwd = Vec::new();
    it.seek_to_first();
    while it.valid() {
        fwd.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status()?;
    let mut back = Vec::new();
    it.seek_to_last();
    while it.valid() {
        back.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status()?;
    back.reverse();
    assert_eq!(fwd, back, "backward walk differs");
    Ok(fwd)
}

pub(super) fn value_for(user: &[u8], seq: u64, len: usize) -> Vec<u8> {
    let mut v = format!("{}@{seq}:", String::from_utf8_lossy(user)).into_bytes();
    v.resize(len.max(v.len()), b'v');
    v
}

pub(super) fn keep_all() -> impl FnMut(&[u8], Option<u64>) -> bool {
    |_: &[u8], _: Option<u64>| true
}

/// The compaction survivor rule with smallest snapshot `s`.
pub(super) fn keep_visible(s: u64) -> impl FnMut(&[u8], Option<u64>) -> bool {
    move |_: &[u8], prev: Option<u64>| prev.is_none_or(|p| p > s)
}

#[test]
fn build_lookup_iterate_verify() {
    let fs = MemFs::new();
    let path = PathBuf::from("/t1");
    let opts = small_opts();
    let mut m = Model::new();
    for i in 0..300u64 {
        let user = format!("key{:05}", i * 3).into_bytes();
        for seq in [i + 1000, i + 1] {
            let kind = if seq % 7 == 0 {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            let v = if kind == ValueKind::Value {
                value_for(&user, seq, (seq % 90) as usize)
            } else {
                Vec::new()
            };
            model_insert(&mut m, ik(&user, seq, kind), v);
        }
    }
    let c = write_tree(
        &opts,
        &icmp(),
        fs.create(&path).unwrap(),
        &path,
        ok_iter(entries(&m)),
    )
    .unwrap();
    assert_eq!(c.len, fs.file_size(&path).unwrap());
    assert!(c.height >= 3, "height {}", c.height);
    assert_eq!(c.entries, 600);
    assert_eq!((c.prev, c.smallest_seq, c.largest_seq), (None, 1, 1299));
    let t = open(&fs, &path, c.len, &opts).unwrap();
    assert_eq!(t.commit(), &c);
    assert_eq!(scan(&t).unwrap(), entries(&m));
    t.verify().unwrap();
    // Point lookups: every key, and targets between keys.
    for (ikey, v) in entries(&m) {
        assert_eq!(t.get(&ikey).unwrap(), Some((ikey.clone(), v)));
        assert!(t.may_contain(key::user_key(&ikey)));
    }
    let probe = ik(b"key00004", u64::MAX >> 8, ValueKind::Value);
    assert_eq!(
        t.get(&probe).unwrap().unwrap().0,
        ik(b"key00006", 1002, ValueKind::Value)
    );
    assert_eq!(t.get(&ik(b"zzz", 1, ValueKind::Value)).unwrap(), None);
    let absent = (0..1000)
        .filter(|i| t.may_contain(format!("nope{i}").as_bytes()))
        .count();
    assert!(absent < 60, "{absent} false positives in 1000");
    assert!(t.metadata_bytes() > 0);
}

#[test]
fn empty_tree_and_append_into_it() {
    let fs = MemFs::new();
    let path = PathBuf::from("/t0");
    let opts = small_opts();
    let c = write_tree(
        &opts,
        &icmp(),
        fs.create(&path).unwrap(),
        &path,
        ok_iter(Vec::new()),
    )
    .unwrap();
    assert_eq!((c.height, c.entries, c.live_bytes), (0, 0, 0));
    let t = open(&fs, &path, c.len, &opts).unwrap();
    assert!(scan(&t).unwrap().is_empty());
    assert_eq!(t.get(&ik(b"a", 1, ValueKind::Value)).unwrap(), None);
    t.verify().unwrap();
    let batch = vec![(ik(b"a", 5, ValueKind::Value), b"x".to_vec())];
    let file = fs.open_appendable(&path, c.len).unwrap();
    let c2 = append_segment(
        &opts,
        &icmp(),
        &t,
        file,
        ok_iter(batch.clone()),
        &mut keep_all(),
    )
    .unwrap();
    let t2 = open(&fs, &path, c2.len, &opts).unwrap();
    assert_eq!(scan(&t2).unwrap(), batch);
    assert_eq!(c2.prev, Some(c.offset));
    t2.verify().unwrap();
    // An empty batch still commits: same root, same entries.
    let file = fs.open_appendable(&path, c2.len).unwrap();
    let c3 = append_segment(
        &opts,
        &icmp(),
        &t2,
        file,
        ok_iter(Vec::new()),
        &mut keep_all(),
    )
    .unwrap();
    assert_eq!(
        (c3.root, c3.entries, c3.prev),
        (c2.root, 1, Some(c2.offset))
    );
    let t3 = open(&fs, &path, c3.len, &opts).unwrap();
    assert_eq!(scan(&t3).unwrap(), batch);
    t3.verify().unwrap();
}

#[test]
fn readers_and_iterators_can_be_shared_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<TreeReader>();
    send::<TreeIterator>();
}

#[test]
fn unsorted_input_is_refused() {
    let fs = MemFs::new();
    let path = PathBuf::from("/bad");
    let e = vec![
        (ik(b"b", 1, ValueKind::Value), vec![]),
        (ik(b"a", 1, ValueKind::Value), vec![]),
    ];
    let err = write_tree(
        &small_opts(),
        &icmp(),
        fs.create(&path).unwrap(),
        &path,
        ok_iter(e),
    )
    .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}

/// A tree built, then overwritten by appends: returns the file system, path, commits.
pub(super) fn overwritten_tree(
    opts: &TreeOptions,
    keys: u64,
    passes: u64,
    value_len: usize,
) -> (MemFs, PathBuf, Vec<Commit>) {
    let fs = MemFs::new();
    let path = PathBuf::from("/grown");
    let pass_entries = |pass: u64| -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..keys)
            .map(|i| {
                let user = format!("k{i:06}").into_bytes();
                let seq = pass * keys + i + 1;
                (
                    ik(&user, seq, ValueKind::Value),
                    value_for(&user, seq, value_len),
                )
            })
            .collect()
    };
    let mut commits = vec![
        write_tree(
            opts,
            &icmp(),
            fs.create(&path).unwrap(),
            &path,
            ok_iter(pass_entries(0)),
        )
        .unwrap(),
    ];
    for pass in 1..=passes {
        let base = open(&fs, &path, commits[commits.len() - 1].len, opts).unwrap();
        let file = fs.open_appendable(&path, base.commit().len).unwrap();
        let c = append_segment(
            opts,
            &icmp(),
            &base,
            file,
            ok_iter(pass_entries(pass)),
            &mut keep_visible(u64::MAX),
        )
        .unwrap();
        commits.push(c);
    }
    (fs, path, commits)
}

#[test]
fn garbage_grows_with_overwrites_and_a_rewrite_drops_it() {
    // Raw values, so the file's bytes are the values' and the ratios below are exact.
    let opts = TreeOptions {
        compression: CompressionType::None,
        ..TreeOptions::default()
    };
    let (fs, path, commits) = overwritten_tree(&opts, 400, 4, 1024);
    let ratios: Vec<f64> = commits.iter().map(Commit::space_ratio).collect();
    assert!(ratios[0] < 1.1, "{ratios:?}");
    assert!(ratios.windows(2).all(|w| w[1] > w[0] + 0.5), "{ratios:?}");
    let last = commits.last().unwrap();
    assert_eq!(
        last.entries, 400,
        "older versions were dropped by the survivor rule"
    );
    assert!(last.segment.value_bytes >= 400 * 1024);
    assert!(
        last.segment.node_bytes < last.segment.value_bytes / 5,
        "{:?}",
        last.segment
    );
    let t = open(&fs, &path, last.len, &opts).unwrap();
    t.verify().unwrap();
    let before = scan(&t).unwrap();
    let new_path = PathBuf::from("/rewritten");
    let c = rewrite_tree(
        &opts,
        &icmp(),
        &t,
        fs.create(&new_path).unwrap(),
        &new_path,
        &mut keep_all(),
    )
    .unwrap();
    assert!(c.space_ratio() < 1.1, "{}", c.space_ratio());
    assert_eq!(c.live_bytes, last.live_bytes);
    let r = open(&fs, &new_path, c.len, &opts).unwrap();
    assert_eq!(scan(&r).unwrap(), before);
    r.verify().unwrap();
}

#[test]
fn an_append_writes_only_the_touched_leaves_and_their_path() {
    let opts = TreeOptions {
        compression: CompressionType::None,
        ..small_opts()
    };
    let (fs, path, commits) = overwritten_tree(&opts, 2000, 0, 100);
    let base = open(&fs, &path, commits[0].len, &opts).unwrap();
    assert!(base.commit().height >= 3, "height {}", base.commit().height);
    let batch = vec![
        (ik(b"k000100", 9000, ValueKind::Value), vec![1u8; 500]),
        (ik(b"k000101", 9001, ValueKind::Value), vec![2u8; 10]),
    ];
    let file = fs.open_appendable(&path, base.commit().len).unwrap();
    let c = append_segment(&opts, &icmp(), &base, file, ok_iter(batch), &mut keep_all()).unwrap();
    assert_eq!(c.segment.value_bytes, 505, "one long value, one inline");
    // At most the path to the root, with one split on the way.
    let path_bytes = u64::from(c.height + 2) * opts.node_bytes as u64;
    assert!(
        c.segment.node_bytes <= path_bytes,
        "{:?} for height {}",
        c.segment,
        c.height
    );
    assert_eq!(c.entries, 2002);
    let t = open(&fs, &path, c.len, &opts).unwrap();
    t.verify().unwrap();
    let hit = t.get(&ik(b"k000100", 9000, ValueKind::Value)).unwrap();
    assert_eq!(hit.map(|(_, v)| v), Some(vec![1u8; 500]));
}

#[test]
fn values_are_compressed_where_it_pays_and_read_back_either_way() {
    let fs = MemFs::new();
    let mut m = Model::new();
    for i in 0..200u64 {
        let user = format!("key{i:05}").into_bytes();
        let v = match i % 3 {
            0 => value_for(&user, i + 1, 1000),
            1 => incompressible(i, 1000),
            _ => value_for(&user, i + 1, 10),
        };
        model_insert(&mut m, ik(&user, i + 1, ValueKind::Value), v);
    }
    let want = entries(&m);
    let mut written = Vec::new();
    for compression in [CompressionType::Lz4, CompressionType::None] {
        let opts = TreeOptions {
            compression,
            ..small_opts()
        };
        let path = PathBuf::from(format!("/{compression:?}"));
        let c = write_tree(
            &opts,
            &icmp(),
            fs.create(&path).unwrap(),
            &path,
            ok_iter(want.clone()),
        )
        .unwrap();
        let t = open(&fs, &path, c.len, &opts).unwrap();
        t.verify().unwrap();
        assert_eq!(scan(&t).unwrap(), want);
        for (ikey, v) in &want {
            assert_eq!(t.get(ikey).unwrap(), Some((ikey.clone(), v.clone())));
        }
        written.push(c);
    }
    let (lz4, raw) = (&written[0], &written[1]);
    // 134 value records (the short values are inline): the 67 incompressible ones stay raw in
    // both files, the 67 compressible ones shrink to a few dozen bytes each, and live bytes
    // count what is stored.
    let raw_values = 134 * (1000 + RECORD_TRAILER_LEN as u64);
    assert_eq!(raw.segment.value_bytes, raw_values, "{raw:?}");
    assert!(lz4.segment.value_bytes < raw_values - 67 * 900, "{lz4:?}");
    assert!(lz4.segment.value_bytes > 67 * 1005, "{lz4:?}");
    assert!(lz4.live_bytes + 60 * 900 < raw.live_bytes);
    assert!(lz4.space_ratio() < 1.2, "{}", lz4.space_ratio());
}

#[test]
fn old_commits_stay_readable_after_appends() {
    let opts = small_opts();
    let (fs, path, commits) = overwritten_tree(&opts, 60, 3, 40);
    for (pass, c) in commits.iter().enumerate() {
        let t = open(&fs, &path, c.len, &opts).unwrap();
        t.verify().unwrap();
        let got = scan(&t).unwrap();
        assert_eq!(got.len(), 60);
        for (ikey, v) in &got {
            let seq = key::trailer(ikey) >> 8;
            assert_eq!(
                (seq - 1) / 60,
                pass as u64,
                "commit {pass} sees its own pass"
            );
            assert_eq!(v, &value_for(key::user_key(ikey), seq, 40));
        }
    }
}

/// Rewrites the entries of `base` that survive `keep` into the new, empty `file`, as the
/// engine's rewrite does (a tree job with `rewrite`, which merges the tree's iterator into
/// `write_tree`): values are copied, garbage is left behind. Syncs `file`.
pub(super) fn rewrite_tree(
    opts: &TreeOptions,
    icmp: &InternalKeyComparator,
    base: &Arc<TreeReader>,
    file: Box<dyn WritableFile>,
    path: &Path,
    keep: &mut KeepFn<'_>,
) -> Result<Commit> {
    let mut it: TreeIterator = base.iter();
    it.seek_to_first();
    let mut prev: Option<(Vec<u8>, u64)> = None;
    let mut done = false;
    let entries = std::iter::from_fn(|| {
        while !done {
            if !it.valid() {
                done = true;
                return it.status().err().map(Err);
            }
            let (ikey, value) = (it.key().to_vec(), it.value().to_vec());
            it.next();
            let (uk, seq) = (key::user_key(&ikey), key::trailer(&ikey) >> 8);
            let prev_seq = match &prev {
                Some((pk, ps)) if icmp.user().compare(pk, uk) == Ordering::Equal => Some(*ps),
                _ => None,
            };
            prev = Some((uk.to_vec(), seq));
            if keep(&ikey, prev_seq) {
                return Some(Ok((ikey, value)));
            }
        }
        None
    });
    write_tree(opts, icmp, file, path, entries)
}
