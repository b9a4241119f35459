//! Trees read through memory maps of real files: a mapped reader keeps its commit across an
//! append, and the leaf-offset cache of a mapped tree reads what a search reads.

use std::sync::Arc;

use super::tests::{
    Entries, Model, entries, icmp, ik, keep_visible, model_insert, ok_iter, open, scan, small_opts,
};
use super::*;
use crate::fs::Fs;
use crate::key::ValueKind;

#[test]
fn a_mapped_reader_on_the_real_file_system_keeps_its_commit_across_an_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000007.tree");
    let fs = crate::fs::OsFs;
    let opts = small_opts();
    let first: Entries = (0..200u64)
        .map(|i| {
            (
                ik(format!("k{i:04}").as_bytes(), i + 1, ValueKind::Value),
                vec![1u8; 40],
            )
        })
        .collect();
    let c1 = write_tree(
        &opts,
        &icmp(),
        fs.create(&path).unwrap(),
        &path,
        ok_iter(first.clone()),
    )
    .unwrap();
    let mapped = fs.open_mapped(&path).unwrap();
    let old =
        Arc::new(TreeReader::open(mapped, path.clone(), 7, c1.len, opts.clone(), icmp()).unwrap());
    let batch: Entries = (0..200u64)
        .step_by(3)
        .map(|i| {
            (
                ik(format!("k{i:04}").as_bytes(), i + 1000, ValueKind::Value),
                vec![2u8; 40],
            )
        })
        .collect();
    let file = fs.open_appendable(&path, c1.len).unwrap();
    let c2 = append_segment(
        &opts,
        &icmp(),
        &old,
        file,
        ok_iter(batch),
        &mut keep_visible(u64::MAX),
    )
    .unwrap();
    assert_eq!(
        scan(&old).unwrap(),
        first,
        "the old reader still sees its commit"
    );
    let new = open(&fs, &path, c2.len, &opts).unwrap();
    new.verify().unwrap();
    let got = scan(&new).unwrap();
    assert_eq!(got.len(), 200);
    assert_eq!(got.iter().filter(|(_, v)| v[0] == 2).count(), 67);
}

/// Through a node cache, a mapped tree's leaves are cached as their key offsets only and read
/// in place again: every lookup and scan gives the same answers on the first read, on reads from
/// the cache, and from a second reader of the file sharing the cache; a tree read without a map
/// through the same cache too.
#[test]
fn cached_leaf_indexes_of_a_mapped_tree_read_the_same_entries() {
    use crate::fs::OsFs;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000007.sst");
    let fs = OsFs;
    let opts = small_opts();
    let mut m = Model::new();
    for i in 0..400u32 {
        let value = vec![b'v'; (i % 40) as usize];
        model_insert(
            &mut m,
            ik(format!("key{i:05}").as_bytes(), 1, ValueKind::Value),
            value,
        );
    }
    let c = write_tree(
        &opts,
        &icmp(),
        fs.create(&path).unwrap(),
        &path,
        ok_iter(entries(&m)),
    )
    .unwrap();
    let cache = Arc::new(NodeCache::new(1 << 20));
    let reader = |mapped: bool| {
        let file = if mapped {
            fs.open_mapped(&path).unwrap()
        } else {
            fs.open(&path).unwrap()
        };
        assert_eq!(file.is_mapped(), mapped);
        Arc::new(
            TreeReader::open(file, path.clone(), 7, c.len, opts.clone(), icmp())
                .unwrap()
                .with_node_cache(Some(Arc::clone(&cache))),
        )
    };
    for t in [reader(true), reader(true), reader(false), reader(true)] {
        for _ in 0..2 {
            for (ikey, v) in entries(&m) {
                assert_eq!(t.get(&ikey).unwrap(), Some((ikey.clone(), v)));
            }
            assert_eq!(scan(&t).unwrap(), entries(&m));
        }
    }
}
