//! A distinct-count sketch (HyperLogLog, Flajolet et al. 2007) over 64-bit key hashes.
//!
//! The trie layout keeps one per HTable, built from the hashes of the table's distinct user
//! keys, so its strategy can estimate how many distinct keys a container's tables hold
//! together (the union of their sketches) and hence how much of the container is garbage:
//! shadowed versions that a merge in place would drop (docs/lsm-trie.md, "Garbage").
//!
//! Format: [`REGISTERS`] one-byte registers. A hash `x` goes to register `x >> 56` (its top 8
//! bits), which keeps the largest `rho` seen: one plus the number of leading zeros of the other
//! 56 bits (`x << 8`), at most 57. The estimate has a standard error of about
//! `1.04 / sqrt(256)`, 6.5%; two sketches of the same keys are equal, and the union of two
//! sketches (register-wise maximum) is the sketch of the union of their keys.

/// Registers in a sketch (2^8).
pub const REGISTERS: usize = 256;

/// Largest register value: 56 bits of zeros, plus one.
const MAX_RHO: u8 = 57;

/// A HyperLogLog sketch of [`REGISTERS`] registers.
#[derive(Clone, PartialEq, Eq)]
pub struct DistinctSketch {
    registers: [u8; REGISTERS],
}

impl std::fmt::Debug for DistinctSketch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DistinctSketch")
            .field("estimate", &self.estimate().round())
            .finish()
    }
}

impl Default for DistinctSketch {
    fn default() -> Self {
        DistinctSketch::new()
    }
}

impl DistinctSketch {
    /// An empty sketch (estimate 0).
    pub fn new() -> DistinctSketch {
        DistinctSketch {
            registers: [0; REGISTERS],
        }
    }

    /// Counts a key by its hash (any 64 uniformly distributed bits).
    pub fn add(&mut self, hash: u64) {
        let register = (hash >> 56) as usize;
        let rho = ((hash << 8).leading_zeros() + 1).min(u32::from(MAX_RHO)) as u8;
        let r = &mut self.registers[register];
        *r = (*r).max(rho);
    }

    /// Makes this the sketch of the union of both sketches' keys.
    pub fn union(&mut self, other: &DistinctSketch) {
        for (r, o) in self.registers.iter_mut().zip(other.registers.iter()) {
            *r = (*r).max(*o);
        }
    }

    /// The estimated number of distinct keys counted.
    pub fn estimate(&self) -> f64 {
        let m = REGISTERS as f64;
        let alpha = 0.7213 / (1.0 + 1.079 / m);
        let sum: f64 = self
            .registers
            .iter()
            .map(|&r| 2f64.powi(-i32::from(r)))
            .sum();
        let raw = alpha * m * m / sum;
        let zeros = self.registers.iter().filter(|&&r| r == 0).count();
        if raw <= 2.5 * m && zeros > 0 {
            // Few keys: linear counting over the empty registers is the better estimate.
            m * (m / zeros as f64).ln()
        } else {
            raw
        }
    }

    /// The registers, as stored.
    pub fn as_bytes(&self) -> &[u8] {
        &self.registers
    }

    /// Reads what [`DistinctSketch::as_bytes`] wrote; `None` for the wrong length or a register
    /// over its largest possible value.
    pub fn from_bytes(bytes: &[u8]) -> Option<DistinctSketch> {
        let registers: [u8; REGISTERS] = bytes.try_into().ok()?;
        registers
            .iter()
            .all(|&r| r <= MAX_RHO)
            .then_some(DistinctSketch { registers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(i: u64) -> u64 {
        xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes())
    }

    fn sketch_of(keys: std::ops::Range<u64>) -> DistinctSketch {
        let mut s = DistinctSketch::new();
        keys.for_each(|i| s.add(hash(i)));
        s
    }

    #[test]
    fn estimates_are_within_a_few_standard_errors() {
        assert_eq!(DistinctSketch::new().estimate(), 0.0);
        for n in [10u64, 100, 1_000, 10_000, 100_000, 1_000_000] {
            let estimate = sketch_of(0..n).estimate();
            let error = (estimate - n as f64).abs() / n as f64;
            assert!(error < 0.2, "{n} keys estimated as {estimate}");
        }
    }

    #[test]
    fn counting_a_key_again_changes_nothing() {
        let mut s = sketch_of(0..5000);
        let before = s.clone();
        (0..5000).for_each(|i| s.add(hash(i)));
        assert_eq!(s, before);
    }

    #[test]
    fn a_union_is_the_sketch_of_the_union() {
        let mut a = sketch_of(0..30_000);
        a.union(&sketch_of(20_000..50_000));
        assert_eq!(a, sketch_of(0..50_000));
        let error = (a.estimate() - 50_000.0).abs() / 50_000.0;
        assert!(error < 0.2, "{}", a.estimate());
    }

    #[test]
    fn bytes_round_trip_and_bad_bytes_are_refused() {
        let s = sketch_of(0..1000);
        assert_eq!(DistinctSketch::from_bytes(s.as_bytes()), Some(s.clone()));
        assert_eq!(DistinctSketch::from_bytes(&s.as_bytes()[1..]), None);
        let mut bad = s.as_bytes().to_vec();
        bad[3] = MAX_RHO + 1;
        assert_eq!(DistinctSketch::from_bytes(&bad), None);
    }
}
