//! Damaged HTables: byte flips, truncation and garbage are reported as corruption naming the
//! file (and, from `verify`, the damaged bucket's offset), never returned as data or panics.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::tests::{Item, Rng, build, expected, model_of, open, probe};
use super::*;
use crate::error::Error;
use std::sync::Arc;

use crate::fs::{Fs, MemFs, OsFs, read_all, write_all_synced};
use crate::key::{MAX_SEQUENCE, ValueKind};
use crate::table::BlockCache;

/// Items of `count` keys: 1-200 B values, every 37th 600 B (overflow), every 5th key deleted
/// again.
fn items(count: u64) -> Vec<Item> {
    let mut rng = Rng(42);
    let mut items = Vec::new();
    for i in 0..count {
        let key = format!("key-{i:04}").into_bytes();
        let vlen = if i % 37 == 0 {
            600
        } else {
            1 + (rng.next() % 200) as usize
        };
        items.push((key.clone(), 10 + 3 * i, ValueKind::Value, rng.bytes(vlen)));
        if i % 5 == 0 {
            items.push((key, 11 + 3 * i, ValueKind::Deletion, Vec::new()));
        }
    }
    items
}

/// A 3-bucket table with migration records, overflow groups and several versions: the
/// smallest such key count.
fn sample() -> (Vec<Item>, HTableOptions) {
    let opts = HTableOptions {
        num_buckets: 3,
        hash_seed: 3,
        ..HTableOptions::default()
    };
    for count in 60..200 {
        let items = items(count);
        let p = build(&MemFs::new(), Path::new("s.ht"), &opts, &items);
        if p.num_migrations > 0 && p.overflow_groups > 0 {
            return (items, opts);
        }
    }
    panic!("no sample with migrations");
}

fn is_corruption_of(err: &Error, path: &Path) -> bool {
    matches!(err, Error::Corruption { file, .. } if file == path)
}

#[test]
fn every_byte_flip_is_caught_by_probe_or_verify() {
    let (items, opts) = sample();
    let fs = MemFs::new();
    let good = PathBuf::from("good.ht");
    let p = build(&fs, &good, &opts, &items);
    assert!(p.num_migrations > 0 && p.overflow_groups > 0, "{p:?}");
    let bytes = read_all(&fs, &good).unwrap();
    let model = model_of(&items);
    let path = PathBuf::from("flip.ht");
    let bucket_area = u64::from(p.num_buckets) * u64::from(p.bucket_bytes);
    let mut offsets: Vec<usize> = (0..bytes.len()).step_by(7).collect();
    offsets.extend(bytes.len().saturating_sub(200)..bytes.len());
    for at in offsets {
        let mut bad = bytes.clone();
        bad[at] ^= 0x10;
        write_all_synced(&fs, &path, &bad).unwrap();
        let t = match open(&fs, &path, &opts, None) {
            Ok(t) => t,
            Err(e) => {
                assert!(is_corruption_of(&e, &path), "flip at {at}: {e}");
                continue;
            }
        };
        for k in model.keys() {
            match probe(&t, opts.hash_seed, k, MAX_SEQUENCE) {
                Ok(got) => assert_eq!(got, expected(&model, k, MAX_SEQUENCE), "flip at {at}"),
                Err(e) => assert!(is_corruption_of(&e, &path), "flip at {at}: {e}"),
            }
        }
        let err = t
            .verify()
            .expect_err(&format!("verify missed the flip at {at}"));
        assert!(is_corruption_of(&err, &path), "flip at {at}: {err}");
        if (at as u64) < bucket_area {
            let bucket_start = at as u64 / u64::from(p.bucket_bytes) * u64::from(p.bucket_bytes);
            assert!(
                matches!(err, Error::Corruption { offset, .. } if offset == bucket_start),
                "flip at {at}: {err}"
            );
        }
        let sorted = t.sorted_iter();
        assert!(
            sorted.is_err() || (at as u64) >= bucket_area,
            "flip at {at}"
        );
    }
}

/// Buckets and overflow groups used in place from a mapped file: every key reads back twice
/// over (the second time through ones already checked), and a flip in a bucket or a group is
/// reported by the first probe that reads it, never returned as data.
#[test]
fn mapped_buckets_are_checked_on_first_read() {
    let (items, opts) = sample();
    let fs = MemFs::new();
    let built = PathBuf::from("m.ht");
    let p = build(&fs, &built, &opts, &items);
    let bytes = read_all(&fs, &built).unwrap();
    let model = model_of(&items);
    let dir = tempfile::tempdir().unwrap();
    let open_mapped = |name: &str, data: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, data).unwrap();
        let file = OsFs.open_mapped(&path).unwrap();
        assert!(file.is_mapped());
        let cache = Some(Arc::new(BlockCache::new(1 << 20)));
        (
            HTable::open(file, path.clone(), 7, opts.clone(), cache).unwrap(),
            path,
        )
    };
    let (t, _) = open_mapped("good.ht", &bytes);
    for _ in 0..2 {
        for k in model.keys() {
            let got = probe(&t, opts.hash_seed, k, MAX_SEQUENCE).unwrap();
            assert_eq!(got, expected(&model, k, MAX_SEQUENCE));
        }
    }
    let bucket = p.bucket_bytes as usize;
    let overflow = p.num_buckets as usize * bucket;
    assert!(p.overflow_groups > 0, "{p:?}");
    for at in [1, bucket + 2, 2 * bucket + 3, overflow + 40] {
        let mut bad = bytes.clone();
        bad[at] ^= 0x10;
        let (t, path) = open_mapped("flip.ht", &bad);
        let mut caught = 0;
        for _ in 0..2 {
            for k in model.keys() {
                match probe(&t, opts.hash_seed, k, MAX_SEQUENCE) {
                    Ok(got) => assert_eq!(got, expected(&model, k, MAX_SEQUENCE), "flip at {at}"),
                    Err(e) => {
                        assert!(is_corruption_of(&e, &path), "flip at {at}: {e}");
                        caught += 1;
                    }
                }
            }
        }
        assert!(caught > 0, "no probe reported the flip at {at}");
    }
}

#[test]
fn bucket_flips_without_checksums_still_fail_verify() {
    let (items, opts) = sample();
    let opts = HTableOptions {
        verify_checksums: false,
        ..opts
    };
    let fs = MemFs::new();
    let path = PathBuf::from("nock.ht");
    build(&fs, &path, &opts, &items);
    let mut bytes = read_all(&fs, &path).unwrap();
    bytes[4096 + 1] ^= 1;
    write_all_synced(&fs, &path, &bytes).unwrap();
    let t = open(&fs, &path, &opts, None).unwrap();
    let err = t.verify().unwrap_err();
    assert!(err.to_string().contains("offset 4096"), "{err}");
    assert!(
        err.to_string().contains("flip") || err.to_string().contains("checksum"),
        "{err}"
    );
}

#[test]
fn truncated_files_are_refused() {
    let (items, opts) = sample();
    let fs = MemFs::new();
    let good = PathBuf::from("good.ht");
    build(&fs, &good, &opts, &items);
    let bytes = read_all(&fs, &good).unwrap();
    let path = PathBuf::from("cut.ht");
    for len in (0..bytes.len())
        .step_by(97)
        .chain(bytes.len() - 120..bytes.len())
    {
        write_all_synced(&fs, &path, &bytes[..len]).unwrap();
        let err = open(&fs, &path, &opts, None).unwrap_err();
        assert!(is_corruption_of(&err, &path), "length {len}: {err}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn garbage_around_a_valid_footer_is_refused(
        garbage in proptest::collection::vec(any::<u8>(), 0..9000),
        keep in 0usize..3,
    ) {
        let fs = MemFs::new();
        let good = PathBuf::from("g.ht");
        let opts = HTableOptions { num_buckets: 2, ..HTableOptions::default() };
        build(&fs, &good, &opts, &[(b"k".to_vec(), 1, ValueKind::Value, b"v".to_vec())]);
        let bytes = read_all(&fs, &good).unwrap();
        let footer = &bytes[bytes.len() - HTABLE_FOOTER_LEN..];
        let file = match keep {
            // Random bytes, then a valid footer.
            0 => [garbage.as_slice(), footer].concat(),
            // Random bytes ending in the magic.
            1 => [garbage.as_slice(), &HTABLE_MAGIC.to_le_bytes()].concat(),
            // A valid table with random bytes overwriting its start.
            _ => {
                let mut b = bytes.clone();
                let n = garbage.len().min(b.len() - HTABLE_FOOTER_LEN);
                b[..n].copy_from_slice(&garbage[..n]);
                b
            }
        };
        let path = PathBuf::from("x.ht");
        write_all_synced(&fs, &path, &file).unwrap();
        match open(&fs, &path, &opts, None) {
            Err(e) => prop_assert!(is_corruption_of(&e, &path), "{}", e),
            Ok(t) => {
                // Only the third shape can open (the footer and blocks are intact): the
                // damaged buckets must then be reported, not returned.
                prop_assert_eq!(keep, 2);
                let p = probe(&t, 0, b"k", MAX_SEQUENCE);
                let want = HProbe::Hit { kind: ValueKind::Value, value: b"v".to_vec(), seq: 1 };
                match p {
                    Ok(got) => prop_assert!(got == want || got == HProbe::Filtered),
                    Err(e) => prop_assert!(is_corruption_of(&e, &path), "{}", e),
                }
                prop_assert_eq!(t.verify().is_ok(), file == bytes);
            }
        }
    }
}
