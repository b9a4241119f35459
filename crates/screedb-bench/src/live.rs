//! Which keys the database holds, so space amplification has a denominator.
//!
//! db_bench key numbers `[0, num)` are tracked in a bitmap (one bit per key, set by puts and
//! cleared by deletes, shared by the workload threads); YCSB records are only ever inserted, so
//! a count is enough. The live user bytes are the live keys times the bytes of a key and its
//! value. A database reused with `--use_existing_db` starts unknown, and so stays.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The live keys of the database under test.
#[derive(Debug)]
pub struct LiveKeys {
    bits: Vec<AtomicU64>,
    ycsb_records: AtomicU64,
    known: AtomicBool,
}

impl LiveKeys {
    /// An empty database with db_bench key numbers below `num`.
    pub fn new(num: u64) -> Self {
        LiveKeys {
            bits: (0..num.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
            ycsb_records: AtomicU64::new(0),
            known: AtomicBool::new(true),
        }
    }

    /// Forgets everything: the database is now empty.
    pub fn clear(&self) {
        for w in &self.bits {
            w.store(0, Ordering::Relaxed);
        }
        self.ycsb_records.store(0, Ordering::Relaxed);
        self.known.store(true, Ordering::Relaxed);
    }

    /// The contents are not known (a database that existed before the run).
    pub fn set_unknown(&self) {
        self.known.store(false, Ordering::Relaxed);
    }

    fn word(&self, key: u64) -> Option<(&AtomicU64, u64)> {
        let w = self.bits.get(usize::try_from(key / 64).ok()?)?;
        Some((w, 1u64 << (key % 64)))
    }

    /// db_bench key `key` was written.
    pub fn put(&self, key: u64) {
        if let Some((w, bit)) = self.word(key) {
            w.fetch_or(bit, Ordering::Relaxed);
        }
    }

    /// db_bench key `key` was deleted.
    pub fn delete(&self, key: u64) {
        if let Some((w, bit)) = self.word(key) {
            w.fetch_and(!bit, Ordering::Relaxed);
        }
    }

    /// `n` YCSB records were inserted.
    pub fn add_ycsb(&self, n: u64) {
        self.ycsb_records.fetch_add(n, Ordering::Relaxed);
    }

    /// Distinct db_bench keys live.
    pub fn db_bench_keys(&self) -> u64 {
        self.bits
            .iter()
            .map(|w| u64::from(w.load(Ordering::Relaxed).count_ones()))
            .sum()
    }

    /// Bytes of live keys and values, if known: db_bench keys of `key_size` bytes and YCSB keys
    /// of `ycsb_key_size`, each with a `value_size`-byte value.
    pub fn user_bytes(
        &self,
        key_size: usize,
        ycsb_key_size: usize,
        value_size: usize,
    ) -> Option<u64> {
        if !self.known.load(Ordering::Relaxed) {
            return None;
        }
        let ycsb = self.ycsb_records.load(Ordering::Relaxed);
        Some(
            self.db_bench_keys() * (key_size + value_size) as u64
                + ycsb * (ycsb_key_size + value_size) as u64,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn puts_and_deletes_count_distinct_keys() {
        let live = LiveKeys::new(130);
        for k in [0, 5, 5, 64, 129, 129, 500] {
            live.put(k);
        }
        assert_eq!(
            live.db_bench_keys(),
            4,
            "repeats count once, out-of-range keys not at all"
        );
        live.delete(5);
        live.delete(6);
        assert_eq!(live.db_bench_keys(), 3);
        live.add_ycsb(2);
        assert_eq!(live.user_bytes(16, 24, 100), Some(3 * 116 + 2 * 124));
        live.set_unknown();
        assert_eq!(live.user_bytes(16, 24, 100), None);
        live.clear();
        assert_eq!(live.user_bytes(16, 24, 100), Some(0));
    }
}
