//! Appends of random batches under a random survivor rule against a `BTreeMap` model.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use proptest::prelude::*;

use super::tests::{
    Entries, Model, entries, icmp, ik, keep_all, keep_visible, model_insert, ok_iter, open,
    rewrite_tree, scan, small_opts, value_for,
};
use super::*;
use crate::fs::{Fs, MemFs};
use crate::iter::InternalIterator;
use crate::key::{self, ValueKind};

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Appends of random batches under a random survivor rule, against a model: keys in a
    /// batch get exactly the rule's result; other keys keep their versions or get the rule's
    /// result (their leaf may not be touched). Every old commit reads back as it was, seeks
    /// land where the model says, and a rewrite reads back the same.
    #[test]
    fn appends_match_the_model(
        batches in prop::collection::vec(
            (prop::collection::btree_set(0u16..120, 1..40), 0u64..4, any::<bool>()), 1..6),
        long in 0usize..40,
        seeks in prop::collection::vec((0u16..130, 0u64..4000), 0..20),
    ) {
        let fs = MemFs::new();
        let path = PathBuf::from("/p");
        let opts = small_opts();
        let mut m = Model::new();
        let mut seq = 0u64;
        let mut snapshots: Vec<(u64, Entries)> = Vec::new();
        let mut tree: Option<Arc<TreeReader>> = None;
        for (keys, snap_back, delete) in batches {
            let mut batch = Vec::new();
            for k in keys {
                seq += 1;
                let user = format!("u{k:04}").into_bytes();
                let del = delete && k % 5 == 0;
                let kind = if del { ValueKind::Deletion } else { ValueKind::Value };
                let v = if del { Vec::new() } else { value_for(&user, seq, (seq as usize * 7) % (long + 1)) };
                batch.push((ik(&user, seq, kind), v));
            }
            let s = seq.saturating_sub(snap_back * 10);
            let c = match &tree {
                None => {
                    for (k, v) in &batch { model_insert(&mut m, k.clone(), v.clone()); }
                    write_tree(&opts, &icmp(), fs.create(&path).unwrap(), &path, ok_iter(batch.clone())).unwrap()
                }
                Some(base) => {
                    let file = fs.open_appendable(&path, base.commit().len).unwrap();
                    append_segment(&opts, &icmp(), base, file, ok_iter(batch.clone()), &mut keep_visible(s)).unwrap()
                }
            };
            let t = open(&fs, &path, c.len, &opts).unwrap();
            t.verify().unwrap();
            let got = scan(&t).unwrap();
            if tree.is_some() {
                m = check_append(&m, &batch, s, &got)?;
            }
            prop_assert_eq!(&got, &entries(&m));
            snapshots.push((c.len, got));
            tree = Some(t);
        }
        for (len, want) in &snapshots {
            let old = open(&fs, &path, *len, &opts).unwrap();
            prop_assert_eq!(&scan(&old).unwrap(), want);
        }
        let t = tree.unwrap();
        for (k, s) in seeks {
            let target = ik(format!("u{k:04}").as_bytes(), s, ValueKind::Value);
            let want = m.values().find(|(ikey, _)| icmp().compare(ikey, &target).is_ge()).cloned();
            prop_assert_eq!(t.get(&target).unwrap(), want.clone());
            let mut it = t.iter();
            it.seek(&target);
            prop_assert_eq!(it.valid().then(|| (it.key().to_vec(), it.value().to_vec())), want);
        }
        let rp = PathBuf::from("/p2");
        let c = rewrite_tree(&opts, &icmp(), &t, fs.create(&rp).unwrap(), &rp, &mut keep_all()).unwrap();
        prop_assert_eq!(scan(&open(&fs, &rp, c.len, &opts).unwrap()).unwrap(), entries(&m));
    }
}

/// Checks an append's result `got` against the model `m` (see `appends_match_the_model`) and
/// returns the model updated to it.
fn check_append(
    m: &Model,
    batch: &[(Vec<u8>, Vec<u8>)],
    s: u64,
    got: &[(Vec<u8>, Vec<u8>)],
) -> std::result::Result<Model, TestCaseError> {
    let mut all = m.clone();
    for (k, v) in batch {
        model_insert(&mut all, k.clone(), v.clone());
    }
    let by_user = |list: Vec<(Vec<u8>, Vec<u8>)>| {
        let mut out: BTreeMap<Vec<u8>, Entries> = BTreeMap::new();
        for (k, v) in list {
            out.entry(key::user_key(&k).to_vec())
                .or_default()
                .push((k, v));
        }
        out
    };
    let rule = |versions: &[(Vec<u8>, Vec<u8>)]| -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut keep = keep_visible(s);
        let mut prev = None;
        let mut out = Vec::new();
        for (k, v) in versions {
            if keep(k, prev) {
                out.push((k.clone(), v.clone()));
            }
            prev = Some(key::trailer(k) >> 8);
        }
        out
    };
    let batch_users: std::collections::BTreeSet<Vec<u8>> = batch
        .iter()
        .map(|(k, _)| key::user_key(k).to_vec())
        .collect();
    let (all, got_by) = (by_user(entries(&all)), by_user(got.to_vec()));
    prop_assert_eq!(all.len(), got_by.len());
    for (user, versions) in &all {
        let g = got_by.get(user).cloned().unwrap_or_default();
        let ruled = rule(versions);
        if batch_users.contains(user) {
            prop_assert_eq!(&g, &ruled, "batch key {:?}", user);
        } else {
            prop_assert!(g == *versions || g == ruled, "key {:?}", user);
        }
    }
    let mut next = Model::new();
    for (k, v) in got {
        model_insert(&mut next, k.clone(), v.clone());
    }
    Ok(next)
}
