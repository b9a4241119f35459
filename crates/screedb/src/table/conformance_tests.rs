//! The conformance suite every table format passes: whatever a [`TableWriter`] of a format
//! writes, the [`TableReader`] that [`TableCache`] opens for it must give back, through every
//! method the engine uses (probe at any snapshot, ordered iteration and seeks, offsets,
//! verification), and no flipped byte may ever come back as data. A new format joins by being
//! listed in [`TableFormat::ALL`].

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use proptest::prelude::*;

use super::*;
use crate::comparator::{InternalKeyComparator, default_comparator};
use crate::error::Error;
use crate::fs::{Fs, MemFs};
use crate::key::{ValueKind, make_internal_key};

/// User key -> versions, newest first: `(sequence, value or None for a tombstone)`.
type Model = BTreeMap<Vec<u8>, Vec<(u64, Option<Vec<u8>>)>>;

fn icmp() -> InternalKeyComparator {
    InternalKeyComparator::new(default_comparator())
}

/// Small blocks, a small HTable (61 buckets of 512 bytes, about 30 KiB) and small tree nodes, so
/// every table spans many blocks, buckets or nodes and a byte-flip sweep stays quick.
fn small_blocks() -> TableOptions {
    TableOptions {
        block_size: 256,
        htable: HTableOptions {
            bucket_bytes: 512,
            num_buckets: 61,
            ..HTableOptions::default()
        },
        tree: TreeOptions {
            node_bytes: 512,
            inline_value_max: 8,
            ..TreeOptions::default()
        },
        ..TableOptions::default()
    }
}

/// The model's entries in internal-key order.
fn entries(model: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    for (key, versions) in model {
        for (seq, value) in versions {
            let kind = match value {
                Some(_) => ValueKind::Value,
                None => ValueKind::Deletion,
            };
            out.push((
                make_internal_key(key, *seq, kind),
                value.clone().unwrap_or_default(),
            ));
        }
    }
    out
}

/// Writes the model as a table of `format` at `path` of `fs`; returns its size.
fn write(fs: &MemFs, path: &Path, format: TableFormat, model: &Model) -> u64 {
    let count = model.values().map(Vec::len).sum::<usize>();
    if format == TableFormat::Tree {
        // Trees grow by segments and are written by the Jungle job, not by a TableWriter.
        let commit = write_tree(
            &small_blocks().tree,
            &icmp(),
            fs.create(path).unwrap(),
            path,
            entries(model).into_iter().map(Ok),
        )
        .unwrap();
        assert_eq!(commit.entries, count as u64, "{format}");
        return commit.len;
    }
    let mut w = create_writer(fs, path, format, &small_blocks(), &icmp()).unwrap();
    for (k, v) in entries(model) {
        w.add(&k, &v).unwrap();
    }
    let (size, props) = w.finish().unwrap();
    assert_eq!(props.num_entries, count as u64, "{format}");
    size
}

fn open(fs: &MemFs, path: &Path) -> crate::error::Result<Arc<dyn TableReader>> {
    TableCache::open_path(fs, path, 9, &small_blocks(), &icmp())
}

/// What a probe of `key` at `snapshot` must find.
fn expected(model: &Model, key: &[u8], snapshot: u64) -> Option<(Lookup, u64)> {
    let versions = model.get(key)?;
    let (seq, value) = versions.iter().find(|(seq, _)| *seq <= snapshot)?;
    Some((value.clone().map_or(Lookup::Deleted, Lookup::Found), *seq))
}

/// Every read of `table` against `model`: probes of every key at several snapshots and of
/// absent keys, a forward and a backward scan, and a seek to every key.
fn reads_match(table: &Arc<dyn TableReader>, model: &Model) -> crate::error::Result<bool> {
    for key in model.keys() {
        for snapshot in [1, 5, 50, 500, crate::key::MAX_SEQUENCE] {
            let target = make_internal_key(key, snapshot, ValueKind::FOR_SEEK);
            let got = match table.probe(key, &target)? {
                Probe::Hit(found, seq) => Some((found, seq)),
                Probe::Missed | Probe::Filtered => None,
            };
            if got != expected(model, key, snapshot) {
                return Ok(false);
            }
        }
        let mut absent = key.clone();
        absent.push(0xff);
        if !model.contains_key(&absent) {
            let target = make_internal_key(&absent, crate::key::MAX_SEQUENCE, ValueKind::FOR_SEEK);
            if matches!(table.probe(&absent, &target)?, Probe::Hit(..)) {
                return Ok(false);
            }
        }
    }
    let want = entries(model);
    let mut it = Arc::clone(table).iter()?;
    let mut forward = Vec::new();
    it.seek_to_first();
    while it.valid() {
        forward.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status()?;
    let mut backward = Vec::new();
    it.seek_to_last();
    while it.valid() {
        backward.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status()?;
    backward.reverse();
    if forward != want || backward != want {
        return Ok(false);
    }
    for (k, v) in &want {
        it.seek(k);
        it.status()?;
        if !it.valid() || it.key() != k.as_slice() || it.value() != v.as_slice() {
            return Ok(false);
        }
    }
    Ok(true)
}

fn arb_model() -> impl Strategy<Value = Model> {
    let versions = proptest::collection::vec(
        (
            1u64..1000,
            proptest::option::weighted(0.8, proptest::collection::vec(any::<u8>(), 0..40)),
        ),
        1..4,
    )
    .prop_map(|mut vs| {
        vs.sort_by_key(|v| std::cmp::Reverse(v.0));
        vs.dedup_by_key(|v| v.0);
        vs
    });
    proptest::collection::btree_map(
        proptest::collection::vec(any::<u8>(), 1..12),
        versions,
        1..120,
    )
}

/// A corruption or I/O error that names the table file.
fn names_the_file(e: &Error, file: &str) -> bool {
    e.to_string().contains(file)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn every_format_gives_back_what_it_was_given(model in arb_model()) {
        for format in TableFormat::ALL {
            let fs = MemFs::new();
            let path = Path::new("/t/000009.sst");
            fs.create_dir_all(Path::new("/t")).unwrap();
            let size = write(&fs, path, format, &model);
            let table = open(&fs, path).unwrap();
            prop_assert_eq!(table.format(), format);
            prop_assert_eq!(table.extent(), size);
            prop_assert_eq!(table.file_number(), 9);
            table.verify().unwrap();
            prop_assert!(reads_match(&table, &model).unwrap(), "{}", format);
            if format.keeps_key_order() {
                // Offsets never go backwards and stay inside the file.
                let mut last = 0;
                for (k, _) in entries(&model) {
                    let at = table.approximate_offset_of(&k);
                    prop_assert!(at >= last && at <= size, "{}", format);
                    last = at;
                }
            }
            prop_assert!(table.metadata_bytes() > 0);
        }
    }
}

#[test]
fn no_flipped_byte_of_any_format_comes_back_as_data() {
    let mut model = Model::new();
    for i in 0..300u32 {
        let key = format!("key{i:05}").into_bytes();
        let mut versions = vec![(
            u64::from(i) * 3 + 10,
            Some(vec![i as u8; 1 + (i % 23) as usize]),
        )];
        if i % 7 == 0 {
            versions.insert(0, (u64::from(i) * 3 + 11, None));
        }
        model.insert(key, versions);
    }
    for format in TableFormat::ALL {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/t")).unwrap();
        let path = Path::new("/t/000009.sst");
        let size = write(&fs, path, format, &model);
        let clean = crate::fs::read_all(&fs, path).unwrap();
        let (mut detected, mut harmless) = (0, 0);
        // Every 7th byte, and every byte of the last 64 (footer and trailing metadata).
        let offsets = (0..size).step_by(7).chain(size.saturating_sub(64)..size);
        for offset in offsets {
            let mut bytes = clean.clone();
            bytes[offset as usize] ^= 0x5a;
            crate::fs::write_all_synced(&fs, path, &bytes).unwrap();
            let outcome = open(&fs, path).map(|t| (t.verify(), reads_match(&t, &model)));
            match outcome {
                Err(e) => {
                    assert!(names_the_file(&e, "000009.sst"), "{format} @{offset}: {e}");
                    detected += 1;
                }
                Ok((verified, reads)) => {
                    if let Err(e) = &verified {
                        assert!(names_the_file(e, "000009.sst"), "{format} @{offset}: {e}");
                    }
                    match reads {
                        // A read that completes must be right.
                        Ok(right) => {
                            assert!(right, "{format} @{offset}: flipped byte read as data")
                        }
                        Err(e) => {
                            assert!(names_the_file(&e, "000009.sst"), "{format} @{offset}: {e}")
                        }
                    }
                    if verified.is_ok() {
                        harmless += 1;
                    } else {
                        detected += 1;
                    }
                }
            }
        }
        // Nearly every byte is covered by a checksum or a structural check.
        assert!(
            detected > 20 * harmless,
            "{format}: {detected} detected, {harmless} harmless"
        );
    }
}
