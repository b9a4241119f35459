//! The model test's helpers: its random choices (keys, values, options, bounds), scans of a
//! `DbIterator` and the comparisons of what the database returned with the `BTreeMap` model.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use screedb::fs::MemFs;
use screedb::table::CompressionType;
use screedb::{DbIterator, Layout, Memory, Options};

use crate::crash_common;

pub type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// crash_common's SplitMix64 generator, with the `usize` helpers the model test draws with.
pub struct Rng(crash_common::Rng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(crash_common::Rng::new(seed))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        self.0.below(n as u64) as usize
    }
    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }
    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.0.percent(percent as u64)
    }
}

/// A key space small enough that overwrites and deletes hit: the empty key, single bytes
/// (including 0x00 and 0xff), and keys up to 24 bytes sharing prefixes.
pub fn key_space(rng: &mut Rng) -> Vec<Vec<u8>> {
    let mut keys: Vec<Vec<u8>> = vec![
        Vec::new(),
        vec![0x00],
        vec![0xff],
        vec![0xff, 0xff],
        vec![0x00, 0x00],
    ];
    let prefixes: [&[u8]; 4] = [b"a", b"ab", b"user/", b"\xfe"];
    while keys.len() < 160 {
        let mut k = prefixes[rng.below(prefixes.len())].to_vec();
        let extra = rng.range(0, 20);
        for _ in 0..extra {
            k.push(b"abcxyz\x00\xff"[rng.below(8)]);
        }
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.sort();
    keys
}

pub fn random_value(rng: &mut Rng) -> Vec<u8> {
    let len = if rng.chance(3) {
        10 << 10
    } else {
        rng.range(0, 300)
    };
    let tag = rng.next_u64().to_le_bytes();
    (0..len)
        .map(|i| tag[i % 8].wrapping_add((i / 8) as u8))
        .collect()
}

pub fn random_options(rng: &mut Rng, fs: Option<Arc<MemFs>>, layout: &Layout) -> Options {
    // Mostly the tiny trigger; sometimes a larger one so level 0 holds several tables when a
    // manual compaction picks some of them.
    let l0_trigger = [2, 2, 4][rng.below(3)];
    let mut o = Options {
        create_if_missing: true,
        write_buffer_size: rng.range(16, 64) << 10,
        target_file_size: (rng.range(8, 16) as u64) << 10,
        block_size: [256, 512, 1024][rng.below(3)],
        l0_compaction_trigger: l0_trigger,
        l0_slowdown_trigger: l0_trigger * 2,
        l0_stop_trigger: 8,
        max_bytes_for_level_base: 32 << 10,
        num_levels: rng.range(4, 7),
        max_background_jobs: rng.range(1, 2),
        block_cache_bytes: [0, 16 << 10][rng.below(2)],
        bloom_bits_per_key: [0, 10][rng.below(2)],
        compression: [CompressionType::None, CompressionType::Lz4][rng.below(2)],
        layout: layout.clone(),
        ..Options::default()
    };
    // Memtables in runs of 4 KiB for half the write buffer sizes (derived, not drawn, so that
    // each seed's later draws, which the regression tests replay, stay what they were).
    o.memtable_run_size = [0, 4 << 10][(o.write_buffer_size >> 10) % 2];
    // Both memory components, derived the same way: FloDB (the default) for half the table
    // sizes, the skiplist alone for the other half.
    o.memory = [Memory::Flodb, Memory::Skiplist][(o.target_file_size >> 10) as usize % 2];
    if let Some(fs) = fs {
        o.fs = fs;
    }
    o
}

pub fn in_range(k: &[u8], start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> bool {
    let after_start = match start {
        Bound::Included(s) => k >= s.as_slice(),
        Bound::Excluded(s) => k > s.as_slice(),
        Bound::Unbounded => true,
    };
    let before_end = match end {
        Bound::Included(e) => k <= e.as_slice(),
        Bound::Excluded(e) => k < e.as_slice(),
        Bound::Unbounded => true,
    };
    after_start && before_end
}

pub fn scan_forward(it: &mut DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_first();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status().unwrap();
    out
}

pub fn scan_backward(it: &mut DbIterator) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    it.seek_to_last();
    while it.valid() {
        out.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status().unwrap();
    out.reverse();
    out
}

pub fn model_pairs(m: &Model) -> Vec<(Vec<u8>, Vec<u8>)> {
    m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Short rendering of a key for failure messages.
pub fn show(k: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(k))
}

/// Asserts two optional values are equal, printing lengths and heads rather than whole values.
pub fn assert_value(got: Option<Vec<u8>>, want: Option<&Vec<u8>>, what: &str) {
    let brief =
        |v: Option<&Vec<u8>>| v.map(|v| (v.len(), v.iter().take(8).copied().collect::<Vec<u8>>()));
    assert!(
        got.as_ref() == want,
        "{what}: db has {:?}, model has {:?} (length, first bytes)",
        brief(got.as_ref()),
        brief(want)
    );
}

/// Asserts two lists of pairs are equal, naming the first difference.
pub fn assert_pairs(got: &[(Vec<u8>, Vec<u8>)], want: &[(Vec<u8>, Vec<u8>)], what: &str) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(show(&g.0), show(&w.0), "{what}: key #{i}");
        assert_value(
            Some(g.1.clone()),
            Some(&w.1),
            &format!("{what}: value of {}", show(&g.0)),
        );
    }
    assert_eq!(got.len(), want.len(), "{what}: number of pairs");
}

/// Compares the iterator's position with the model's.
fn check_position(it: &DbIterator, model: &Model, pos: &Option<Vec<u8>>, what: &str) {
    match pos {
        None => assert!(
            !it.valid(),
            "{what}: model is off the end, db at {}",
            show(it.key())
        ),
        Some(k) => {
            assert!(
                it.valid(),
                "{what}: db is off the end, model at {}",
                show(k)
            );
            assert_eq!(show(it.key()), show(k), "{what}: key");
            assert_value(
                Some(it.value().to_vec()),
                model.get(k),
                &format!("{what}: value of {}", show(k)),
            );
        }
    }
    it.status().unwrap();
}

/// Seeks to a random target, then walks next/prev at random, checking every position.
pub fn seek_and_walk(rng: &mut Rng, it: &mut DbIterator, model: &Model, keys: &[Vec<u8>]) {
    let mut pos: Option<Vec<u8>> = match rng.below(4) {
        0 => {
            it.seek_to_first();
            model.keys().next().cloned()
        }
        1 => {
            it.seek_to_last();
            model.keys().next_back().cloned()
        }
        _ => {
            // A key of the space, sometimes extended or past everything.
            let mut target = keys[rng.below(keys.len())].clone();
            match rng.below(4) {
                0 => target.push(0),
                1 => target = vec![0xff; 3],
                _ => {}
            }
            it.seek(&target);
            model.range(target.clone()..).next().map(|(k, _)| k.clone())
        }
    };
    check_position(it, model, &pos, "seek");
    for step in 0..rng.range(1, 30) {
        let Some(cur) = pos.clone() else {
            // Walked off an end: re-enter from one side.
            if rng.chance(50) {
                it.seek_to_first();
                pos = model.keys().next().cloned();
            } else {
                it.seek_to_last();
                pos = model.keys().next_back().cloned();
            }
            check_position(it, model, &pos, "re-enter");
            continue;
        };
        if rng.chance(50) {
            it.next();
            pos = model
                .range((Bound::Excluded(cur), Bound::Unbounded))
                .next()
                .map(|(k, _)| k.clone());
            check_position(it, model, &pos, &format!("next #{step}"));
        } else {
            it.prev();
            pos = model.range(..cur).next_back().map(|(k, _)| k.clone());
            check_position(it, model, &pos, &format!("prev #{step}"));
        }
    }
}

pub fn random_bound(rng: &mut Rng, keys: &[Vec<u8>]) -> Bound<Vec<u8>> {
    let k = keys[rng.below(keys.len())].clone();
    match rng.below(3) {
        0 => Bound::Included(k),
        1 => Bound::Excluded(k),
        _ => Bound::Unbounded,
    }
}
