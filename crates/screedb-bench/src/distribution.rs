//! Key-number distributions: uniform, zipfian, YCSB's scrambled zipfian and latest.
//!
//! The zipfian generator is YCSB's `ZipfianGenerator` (Gray et al., "Quickly Generating
//! Billion-Record Synthetic Databases", SIGMOD 1994): item `i` (0-based) is drawn with probability
//! proportional to `1 / (i + 1)^theta`, so item 0 is the most popular. It can grow its item count
//! cheaply (zeta is extended incrementally), which the latest distribution needs as inserts land.
//! The scrambled zipfian spreads the popular items over the key space with FNV-1a 64, as YCSB does,
//! over YCSB's fixed 10^10 items (with YCSB's precomputed zeta) so the skew does not depend on the
//! record count.

use crate::keys::Rng;

/// YCSB's zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;

/// YCSB's item count for the scrambled zipfian, and zeta(10^10, 0.99) as YCSB precomputes it.
const SCRAMBLED_ITEMS: u64 = 10_000_000_000;
const SCRAMBLED_ZETAN: f64 = 26.469_028_201_783_02;

/// FNV-1a 64 of the 8 little-endian bytes of `v`, made non-negative as a Java long (YCSB's
/// `Utils.fnvhash64`, which returns `Math.abs` of the hash).
pub fn fnv_hash64(mut v: u64) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for _ in 0..8 {
        let octet = v & 0xff;
        v >>= 8;
        hash ^= octet;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (hash as i64).wrapping_abs() as u64
}

fn zeta(from: u64, to: u64, theta: f64, start: f64) -> f64 {
    (from..to).fold(start, |sum, i| sum + 1.0 / ((i + 1) as f64).powf(theta))
}

/// Zipfian over `[0, items)`: 0 is the most popular item.
#[derive(Debug, Clone)]
pub struct Zipfian {
    items: u64,
    theta: f64,
    alpha: f64,
    zeta2: f64,
    zetan: f64,
    eta: f64,
}

impl Zipfian {
    /// Over `items` items (at least 1) with exponent `theta` (0 < theta < 1).
    pub fn new(items: u64, theta: f64) -> Self {
        let items = items.max(1);
        let zetan = zeta(0, items, theta, 0.0);
        Self::with_zetan(items, theta, zetan)
    }

    fn with_zetan(items: u64, theta: f64, zetan: f64) -> Self {
        let zeta2 = zeta(0, 2, theta, 0.0);
        let mut z = Zipfian {
            items,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2,
            zetan,
            eta: 0.0,
        };
        z.eta = z.eta_for(items);
        z
    }

    fn eta_for(&self, items: u64) -> f64 {
        (1.0 - (2.0 / items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan)
    }

    /// Grows (never shrinks) the item count to `items`.
    pub fn grow_to(&mut self, items: u64) {
        if items > self.items {
            self.zetan = zeta(self.items, items, self.theta, self.zetan);
            self.items = items;
            self.eta = self.eta_for(items);
        }
    }

    /// The number of items.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The next item.
    pub fn next(&self, rng: &mut Rng) -> u64 {
        let u = rng.next_f64();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1.min(self.items - 1);
        }
        let v = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        v.min(self.items - 1)
    }
}

/// YCSB's scrambled zipfian over `[0, items)`: zipfian popularity, popular items scattered.
#[derive(Debug, Clone)]
pub struct ScrambledZipfian {
    items: u64,
    zipf: Zipfian,
}

impl ScrambledZipfian {
    /// Over `items` items (at least 1), with YCSB's constant 0.99.
    pub fn new(items: u64) -> Self {
        ScrambledZipfian {
            items: items.max(1),
            zipf: Zipfian::with_zetan(SCRAMBLED_ITEMS, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN),
        }
    }

    /// The next item.
    pub fn next(&self, rng: &mut Rng) -> u64 {
        fnv_hash64(self.zipf.next(rng)) % self.items
    }
}

/// YCSB's skewed-latest: the most recently inserted item is the most popular.
#[derive(Debug, Clone)]
pub struct Latest {
    zipf: Zipfian,
}

impl Latest {
    /// For a key space that currently holds `items` items.
    pub fn new(items: u64) -> Self {
        Latest {
            zipf: Zipfian::new(items, ZIPFIAN_CONSTANT),
        }
    }

    /// The next item when items `[0, items)` exist: `items - 1 - zipfian(items)`.
    pub fn next(&mut self, rng: &mut Rng, items: u64) -> u64 {
        let items = items.max(1);
        self.zipf.grow_to(items);
        let back = loop {
            let b = self.zipf.next(rng);
            if b < items {
                break b;
            }
        };
        items - 1 - back
    }
}

/// How `--distribution` draws the key numbers of random db_bench workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Distribution {
    /// Every key equally likely (db_bench's default).
    Uniform,
    /// YCSB's scrambled zipfian (constant 0.99).
    Zipfian,
}

/// A key-number chooser over `[0, n)` for one thread.
#[derive(Debug, Clone)]
pub enum KeyChooser {
    /// Uniform.
    Uniform(u64),
    /// Scrambled zipfian.
    Zipfian(ScrambledZipfian),
}

impl KeyChooser {
    /// A chooser over `[0, n)`.
    pub fn new(d: Distribution, n: u64) -> Self {
        match d {
            Distribution::Uniform => KeyChooser::Uniform(n.max(1)),
            Distribution::Zipfian => KeyChooser::Zipfian(ScrambledZipfian::new(n)),
        }
    }

    /// The next key number.
    pub fn next(&self, rng: &mut Rng) -> u64 {
        match self {
            KeyChooser::Uniform(n) => rng.uniform(*n),
            KeyChooser::Zipfian(z) => z.next(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(n: u64, draws: usize, mut f: impl FnMut() -> u64) -> Vec<u64> {
        let mut c = vec![0u64; n as usize];
        for _ in 0..draws {
            let x = f();
            assert!(x < n, "{x} out of [0, {n})");
            c[x as usize] += 1;
        }
        c
    }

    #[test]
    fn fnv_matches_ycsb() {
        // FNV-1a 64 of eight zero bytes is 0xa8c7f832281a39c5; YCSB takes Math.abs of it as
        // a Java long.
        assert_eq!(
            fnv_hash64(0),
            (0xa8c7_f832_281a_39c5_u64 as i64).wrapping_abs() as u64
        );
        assert!(fnv_hash64(u64::MAX) < 1 << 63);
        assert_ne!(fnv_hash64(1), fnv_hash64(2));
    }

    #[test]
    fn zipfian_is_skewed_towards_the_first_items() {
        let z = Zipfian::new(1000, ZIPFIAN_CONSTANT);
        let mut rng = Rng::new(1);
        let c = counts(1000, 200_000, || z.next(&mut rng));
        // P(0) = 1 / zeta(1000, 0.99), about 13.4%; P(1) about half of that.
        let p0 = c[0] as f64 / 200_000.0;
        assert!((p0 - 0.134).abs() < 0.01, "P(0) = {p0}");
        assert!(c[0] > c[1] && c[1] > c[2] && c[2] > c[9], "{:?}", &c[..10]);
        let top10: u64 = c[..10].iter().sum();
        assert!(top10 as f64 / 200_000.0 > 0.35, "top 1% drew {top10}");
    }

    #[test]
    fn zipfian_grows_like_a_fresh_one() {
        let mut grown = Zipfian::new(10, ZIPFIAN_CONSTANT);
        grown.grow_to(5000);
        let fresh = Zipfian::new(5000, ZIPFIAN_CONSTANT);
        assert_eq!(grown.items(), 5000);
        assert!((grown.zetan - fresh.zetan).abs() < 1e-9);
        assert!((grown.eta - fresh.eta).abs() < 1e-12);
    }

    #[test]
    fn scrambled_zipfian_is_skewed_but_scattered() {
        let n = 10_000;
        let z = ScrambledZipfian::new(n);
        let mut rng = Rng::new(2);
        let c = counts(n, 200_000, || z.next(&mut rng));
        let mut sorted = c.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let top1pct: u64 = sorted[..100].iter().sum();
        // About zeta(100) / zeta(10^10) = 19.6% of draws go to YCSB's 100 most popular items
        // (uniform draws would give the top 1% of keys about 1.2%).
        assert!(
            top1pct > 200_000 * 15 / 100,
            "top 1% of keys drew {top1pct}"
        );
        let hottest = c.iter().position(|&x| x == sorted[0]).unwrap();
        assert_ne!(hottest, 0, "the hottest key is not the first one");
        let untouched = c.iter().filter(|&&x| x == 0).count();
        assert!(untouched < n as usize, "some keys are drawn");
    }

    #[test]
    fn latest_prefers_the_newest_items() {
        let mut l = Latest::new(1000);
        let mut rng = Rng::new(3);
        let c = counts(1000, 100_000, || l.next(&mut rng, 1000));
        assert!(c[999] > c[998] && c[998] > c[990], "{:?}", &c[990..]);
        assert!(c[999] > 10_000, "newest drawn {} times", c[999]);
        // After inserts, the new last item becomes the favourite.
        let c = counts(1500, 50_000, || l.next(&mut rng, 1500));
        assert!(c[1499] > c[999] * 10);
    }

    #[test]
    fn uniform_chooser_covers_the_range_evenly() {
        let k = KeyChooser::new(Distribution::Uniform, 10);
        let mut rng = Rng::new(4);
        let c = counts(10, 100_000, || k.next(&mut rng));
        assert!(c.iter().all(|&x| (9_000..11_000).contains(&x)), "{c:?}");
    }
}
