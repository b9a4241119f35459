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
