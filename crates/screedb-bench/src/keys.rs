//! Keys, values and random numbers of the workloads, as db_bench makes them.
//!
//! Keys are the key number in zero-padded decimal, `key_size` bytes wide (`0000000000000042`).
//! Values come from a 1 MiB buffer of half-compressible bytes: each 100-byte piece is 50 random
//! printable bytes repeated, so a compressor halves it (db_bench's `compression_ratio = 0.5`).
//! The generator is SplitMix64 (Steele, Lea and Flood, 2014): small, fast, and seeded for
//! reproducible runs.

/// A seeded SplitMix64 generator.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform number in `[0, 1)` (53 random bits).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniform number in `[0, n)` (Lemire's multiply-shift; `n > 0`).
    pub fn uniform(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// Number of decimal digits of `n` (1 for 0).
pub fn decimal_digits(mut n: u64) -> usize {
    let mut digits = 1;
    while n >= 10 {
        n /= 10;
        digits += 1;
    }
    digits
}

/// Writes key number `n` into `buf` as `key_size` bytes: zero-padded decimal. REQUIRES:
/// `key_size >= decimal_digits(n)` (checked by the argument validation).
pub fn make_key(buf: &mut Vec<u8>, mut n: u64, key_size: usize) {
    buf.clear();
    buf.resize(key_size, b'0');
    for slot in buf.iter_mut().rev() {
        if n == 0 {
            break;
        }
        *slot = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// Largest value `--value_size` and `--value_size_dist` allow: 64 MiB.
pub const MAX_VALUE_SIZE: usize = 64 << 20;

/// How long written values are (`--value_size_dist`): all `--value_size` bytes, or uniform in
/// `min..=max` (the LSM-trie paper's setup is `uniform:1-200`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueSizeDist {
    /// Every value is `--value_size` bytes.
    Fixed,
    /// Each value's length is drawn uniformly from `min..=max`.
    Uniform {
        /// Shortest value.
        min: usize,
        /// Longest value.
        max: usize,
    },
}

impl ValueSizeDist {
    /// Parses `fixed` or `uniform:MIN-MAX` (`MIN <= MAX <= 64 MiB`); errors name the flag.
    pub fn parse(s: &str) -> Result<ValueSizeDist, String> {
        let bad = |why: &str| {
            format!(
                "--value_size_dist {s:?}: {why} (expected fixed or uniform:MIN-MAX, e.g. uniform:1-200)"
            )
        };
        let s = s.trim();
        if s == "fixed" {
            return Ok(ValueSizeDist::Fixed);
        }
        let Some(range) = s.strip_prefix("uniform:") else {
            return Err(bad("unknown distribution"));
        };
        let Some((lo, hi)) = range.split_once('-') else {
            return Err(bad("no MIN-MAX range"));
        };
        let num = |t: &str| {
            t.trim()
                .parse::<usize>()
                .map_err(|_| bad(&format!("{t:?} is not a byte count")))
        };
        let (min, max) = (num(lo)?, num(hi)?);
        if min > max {
            return Err(bad("MIN is greater than MAX"));
        }
        if max > MAX_VALUE_SIZE {
            return Err(bad("MAX must be at most 64 MiB (67108864)"));
        }
        Ok(ValueSizeDist::Uniform { min, max })
    }

    /// The lengths this distribution gives with `--value_size` = `fixed`.
    pub fn resolve(self, fixed: usize) -> ValueSizes {
        match self {
            ValueSizeDist::Fixed => ValueSizes {
                min: fixed,
                max: fixed,
            },
            ValueSizeDist::Uniform { min, max } => ValueSizes { min, max },
        }
    }
}

impl std::fmt::Display for ValueSizeDist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ValueSizeDist::Fixed => f.write_str("fixed"),
            ValueSizeDist::Uniform { min, max } => write!(f, "uniform:{min}-{max}"),
        }
    }
}

/// The value lengths of a run: uniform in `min..=max` (`min == max`: fixed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValueSizes {
    /// Shortest value.
    pub min: usize,
    /// Longest value.
    pub max: usize,
}

impl ValueSizes {
    /// Every value `len` bytes.
    pub fn fixed(len: usize) -> Self {
        ValueSizes { min: len, max: len }
    }

    /// The mean length (rounded down), for estimates such as the live bytes.
    pub fn mean(self) -> usize {
        self.min + (self.max - self.min) / 2
    }

    /// A generator of lengths. A fixed size draws nothing from `rng` (runs with fixed values
    /// keep their key sequences); a range seeds its own generator from `rng`, so the lengths
    /// are reproducible from `--seed`.
    pub fn lengths(self, rng: &mut Rng) -> ValueLengths {
        let rng = (self.min != self.max).then(|| Rng::new(rng.next_u64() ^ 0x7a1e_5e1d));
        ValueLengths { sizes: self, rng }
    }
}

/// Value lengths drawn from [`ValueSizes`].
#[derive(Debug, Clone)]
pub struct ValueLengths {
    sizes: ValueSizes,
    rng: Option<Rng>,
}

impl ValueLengths {
    /// The next value's length.
    pub fn next_len(&mut self) -> usize {
        match &mut self.rng {
            None => self.sizes.min,
            Some(rng) => {
                let span = (self.sizes.max - self.sizes.min) as u64 + 1;
                self.sizes.min + rng.uniform(span) as usize
            }
        }
    }
}

/// Half-compressible values, handed out round-robin from a fixed buffer.
#[derive(Debug)]
pub struct ValueGen {
    data: Vec<u8>,
    pos: usize,
}

impl ValueGen {
    /// Values of up to `max_len` bytes from a buffer seeded by `seed`.
    pub fn new(seed: u64, max_len: usize) -> Self {
        const PIECE: usize = 100;
        let size = (1 << 20).max(max_len);
        let mut rng = Rng::new(seed);
        let mut data = Vec::with_capacity(size + PIECE);
        while data.len() < size {
            let raw: Vec<u8> = (0..PIECE / 2)
                .map(|_| b' ' + rng.uniform(95) as u8)
                .collect();
            data.extend((0..PIECE).map(|i| raw[i % raw.len()]));
        }
        ValueGen { data, pos: 0 }
    }

    /// The next value of `len` bytes.
    pub fn next(&mut self, len: usize) -> &[u8] {
        if self.pos + len > self.data.len() {
            self.pos = 0;
        }
        let start = self.pos;
        self.pos += len;
        &self.data[start..start + len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_fixed_width_decimal() {
        let mut k = Vec::new();
        make_key(&mut k, 42, 16);
        assert_eq!(k, b"0000000000000042");
        make_key(&mut k, 0, 4);
        assert_eq!(k, b"0000");
        make_key(&mut k, 9999, 4);
        assert_eq!(k, b"9999");
        assert_eq!(decimal_digits(0), 1);
        assert_eq!(decimal_digits(999_999), 6);
        assert_eq!(decimal_digits(1_000_000), 7);
    }

    #[test]
    fn uniform_stays_in_range_and_is_reproducible() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..10_000 {
            let x = a.uniform(1000);
            assert!(x < 1000);
            assert_eq!(x, b.uniform(1000));
        }
        let mut c = Rng::new(8);
        assert_ne!(Rng::new(7).next_u64(), c.next_u64());
    }

    #[test]
    fn value_size_dists_parse_and_bad_ones_name_the_flag() {
        assert_eq!(ValueSizeDist::parse("fixed").unwrap(), ValueSizeDist::Fixed);
        assert_eq!(
            ValueSizeDist::parse("uniform:1-200").unwrap(),
            ValueSizeDist::Uniform { min: 1, max: 200 }
        );
        assert_eq!(
            ValueSizeDist::parse("uniform:0-67108864").unwrap(),
            ValueSizeDist::Uniform {
                min: 0,
                max: MAX_VALUE_SIZE
            }
        );
        assert_eq!(
            ValueSizeDist::parse("uniform:7-7").unwrap().to_string(),
            "uniform:7-7"
        );
        for bad in [
            "uniform:5-2",
            "uniform:x",
            "uniform:x-5",
            "uniform:1-",
            "uniform:1-67108865",
            "uniform:-1-5",
            "zipf:1-2",
            "",
        ] {
            let err = ValueSizeDist::parse(bad).unwrap_err();
            assert!(err.contains("--value_size_dist"), "{bad}: {err}");
        }
        assert!(
            ValueSizeDist::parse("uniform:5-2")
                .unwrap_err()
                .contains("MIN")
        );
        assert!(
            ValueSizeDist::parse("uniform:1-99999999")
                .unwrap_err()
                .contains("64 MiB")
        );
        assert_eq!(ValueSizeDist::Fixed.resolve(100), ValueSizes::fixed(100));
    }

    #[test]
    fn value_lengths_are_uniform_in_range_and_reproducible() {
        let sizes = ValueSizes { min: 1, max: 200 };
        let mut a = sizes.lengths(&mut Rng::new(3));
        let mut b = sizes.lengths(&mut Rng::new(3));
        let mut seen = [0u32; 201];
        for _ in 0..200_000 {
            let l = a.next_len();
            assert_eq!(l, b.next_len());
            seen[l] += 1;
        }
        assert_eq!(seen[0], 0);
        assert!(
            seen[1..].iter().all(|&c| (700..1300).contains(&c)),
            "{seen:?}"
        );
        let mut rng = Rng::new(9);
        let mut fixed = ValueSizes::fixed(100).lengths(&mut rng);
        assert_eq!(fixed.next_len(), 100);
        assert_eq!(
            rng.next_u64(),
            Rng::new(9).next_u64(),
            "fixed sizes draw nothing"
        );
        assert_eq!(sizes.mean(), 100);
    }

    #[test]
    fn values_are_half_random_half_repeated() {
        let mut g = ValueGen::new(301, 100);
        let v = g.next(100).to_vec();
        assert_eq!(v.len(), 100);
        assert_eq!(v[..50], v[50..], "a piece is its random half repeated");
        for _ in 0..20_000 {
            assert_eq!(g.next(100).len(), 100, "values wrap around the buffer");
        }
    }
}
