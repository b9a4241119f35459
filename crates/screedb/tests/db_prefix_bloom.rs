//! Prefix Bloom filters (`Options::prefix_bloom_len`): `Db::prefix` leaves out the tables whose
//! filter rules the prefix out, returns exactly what a scan without filters returns (checked
//! against a model over random keys, flushes and compactions), and a database reopened with
//! another length, or none, reads its old tables without their prefix filters.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::collections::BTreeMap;
use std::path::Path;

use screedb::{Db, Options};

fn options(prefix_bloom_len: usize) -> Options {
    Options {
        prefix_bloom_len,
        write_buffer_size: 64 << 10,
        ..Options::default()
    }
    .create_if_missing(true)
}

fn prefix_keys(db: &Db, prefix: &[u8]) -> Vec<Vec<u8>> {
    db.prefix(prefix).unwrap().map(|kv| kv.unwrap().0).collect()
}

fn skips(db: &Db) -> u64 {
    db.stats().prefix_filter_skips
}

#[test]
fn tables_without_the_prefix_are_skipped_and_answers_stay_exact() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(4)).unwrap();
    // Two tables whose key ranges cover "bbbb" and "cccc"; neither holds "bbbb", the second
    // holds "cccc".
    for prefixes in [&[b"aaaa", b"zzzz"][..], &[b"aaab", b"cccc", b"yyyy"][..]] {
        for i in 0..100 {
            for p in prefixes {
                db.put([&p[..], format!("-{i:03}").as_bytes()].concat(), b"v")
                    .unwrap();
            }
        }
        db.flush().unwrap();
    }
    db.put(b"cccc-mem", b"v").unwrap();
    let before = skips(&db);
    assert!(prefix_keys(&db, b"bbbb").is_empty());
    assert_eq!(
        skips(&db) - before,
        2,
        "both tables cover bbbb and neither holds it"
    );
    // "cccc" is in the second table and the memtable: the first table is skipped.
    let before = skips(&db);
    let cccc = prefix_keys(&db, b"cccc");
    assert_eq!(cccc.len(), 101);
    assert_eq!(cccc.last().unwrap(), b"cccc-mem");
    assert_eq!(skips(&db) - before, 1);
    // Longer prefixes use their first four bytes; shorter ones cannot use the filter.
    assert_eq!(prefix_keys(&db, b"cccc-05").len(), 10);
    let before = skips(&db);
    assert_eq!(prefix_keys(&db, b"cc").len(), 101);
    assert_eq!(prefix_keys(&db, b"b").len(), 0);
    assert_eq!(
        skips(&db),
        before,
        "prefixes shorter than 4 bytes skip nothing"
    );
    db.close().unwrap();

    // Reopened with another length, or none: the old tables are read without their filters.
    for len in [3, 0] {
        let db = Db::open(dir.path(), options(len)).unwrap();
        let before = skips(&db);
        assert!(prefix_keys(&db, b"bbbb").is_empty());
        assert_eq!(prefix_keys(&db, b"cccc").len(), 101);
        assert_eq!(skips(&db), before, "length {len}: no table skipped");
        db.close().unwrap();
    }
}

/// A small deterministic generator (xorshift64*), so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// A key of 1..=6 bytes over an 8-letter alphabet: 512 three-byte prefixes, so a table
    /// of a few hundred keys lacks many of them and prefixes both hit and miss.
    fn key(&mut self) -> Vec<u8> {
        let len = 1 + (self.next() % 6) as usize;
        (0..len)
            .map(|_| b"abcdefgh"[(self.next() % 8) as usize])
            .collect()
    }
}

fn check_prefixes(db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, rng: &mut Rng) {
    for _ in 0..40 {
        let mut p = rng.key();
        p.truncate((rng.next() % 5) as usize);
        let want: Vec<(Vec<u8>, Vec<u8>)> = model
            .iter()
            .filter(|(k, _)| k.starts_with(&p))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let got: Vec<(Vec<u8>, Vec<u8>)> = db.prefix(&p).unwrap().map(|kv| kv.unwrap()).collect();
        assert_eq!(got, want, "prefix {:?}", String::from_utf8_lossy(&p));
    }
}

fn run_model(dir: &Path, seed: u64) {
    let mut rng = Rng(seed);
    let mut model = BTreeMap::new();
    let mut db = Db::open(dir, options(3)).unwrap();
    for round in 0..12 {
        for _ in 0..150 {
            let k = rng.key();
            if rng.next().is_multiple_of(5) {
                db.delete(&k).unwrap();
                model.remove(&k);
            } else {
                let v = format!("{round}-{}", rng.next() % 1000).into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
        }
        match round % 4 {
            0 => db.flush().unwrap(),
            1 => db.compact_range(None, None).unwrap(),
            2 => {
                // Reopen with the prefix filters off or at another length every other time.
                db.close().unwrap();
                let len = [3, 0, 2][(round / 4) % 3];
                db = Db::open(dir, options(len)).unwrap();
            }
            _ => {}
        }
        check_prefixes(&db, &model, &mut rng);
    }
    assert!(skips(&db) > 0, "some tables were skipped");
    db.close().unwrap();
}

#[test]
fn prefix_scans_match_a_model_across_flushes_compactions_and_reopens() {
    for seed in [1, 0x5eed, 0xdead_beef] {
        let dir = tempfile::tempdir().unwrap();
        run_model(dir.path(), seed);
    }
}
