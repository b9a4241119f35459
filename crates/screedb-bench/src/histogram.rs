//! A latency histogram with logarithmic buckets (about 12% wide), in nanoseconds.
//!
//! Values below 16 ns get one bucket each; above, every power of two is split into 8 buckets by
//! the three bits after the leading one. Percentiles report the middle of their bucket, clamped
//! to the exact minimum and maximum, so they are within about 6% of the true value.

use std::fmt::Write as _;
use std::time::Duration;

const LINEAR: usize = 16;
const SUB_BITS: u32 = 3;
const SUB: usize = 1 << SUB_BITS;
const BUCKETS: usize = LINEAR + (64 - 4) * SUB;

/// Counts of latencies per logarithmic bucket.
#[derive(Clone)]
pub struct Histogram {
    buckets: Box<[u64; BUCKETS]>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count)
            .field("min", &self.min)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: Box::new([0; BUCKETS]),
            count: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

fn bucket_of(nanos: u64) -> usize {
    if nanos < LINEAR as u64 {
        return nanos as usize;
    }
    let exp = 63 - nanos.leading_zeros(); // >= 4
    let sub = (nanos >> (exp - SUB_BITS)) as usize & (SUB - 1);
    LINEAR + (exp as usize - 4) * SUB + sub
}

/// `[low, high)` of bucket `i`.
fn bucket_bounds(i: usize) -> (u64, u64) {
    if i < LINEAR {
        return (i as u64, i as u64 + 1);
    }
    let exp = ((i - LINEAR) / SUB + 4) as u32;
    let sub = ((i - LINEAR) % SUB) as u64;
    let unit = 1u64 << (exp - SUB_BITS);
    let low = (SUB as u64 + sub) * unit;
    (low, low.saturating_add(unit))
}

impl Histogram {
    /// Records one latency.
    pub fn record(&mut self, d: Duration) {
        self.record_nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Records one latency in nanoseconds.
    pub fn record_nanos(&mut self, nanos: u64) {
        self.record_nanos_n(nanos, 1);
    }

    /// Records `n` latencies of `nanos` each (a batch's mean, per operation).
    pub fn record_nanos_n(&mut self, nanos: u64, n: u64) {
        if n == 0 {
            return;
        }
        self.buckets[bucket_of(nanos)] += n;
        self.count += n;
        self.sum += u128::from(nanos) * u128::from(n);
        self.min = self.min.min(nanos);
        self.max = self.max.max(nanos);
    }

    /// Adds every latency `other` recorded.
    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *a += b;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    /// Smallest latency, in nanoseconds (0 when empty).
    pub fn min(&self) -> u64 {
        if self.count == 0 { 0 } else { self.min }
    }

    /// Number of latencies recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Largest latency, in nanoseconds (0 when empty).
    pub fn max(&self) -> u64 {
        self.max
    }

    /// Mean latency in nanoseconds (0 when empty).
    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The latency below which `p` percent of the recorded ones lie, in nanoseconds.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((p / 100.0) * self.count as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let (low, high) = bucket_bounds(i);
                return (low + (high - low) / 2).clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// The non-empty buckets as text lines: range, count, percent, cumulative percent.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut seen = 0u64;
        for (i, &n) in self.buckets.iter().enumerate() {
            if n == 0 {
                continue;
            }
            seen += n;
            let (low, high) = bucket_bounds(i);
            let _ = writeln!(
                out,
                "  [{:>9}, {:>9})  {:>10}  {:>6.2}%  {:>7.2}%",
                format_nanos(low),
                format_nanos(high),
                n,
                100.0 * n as f64 / self.count as f64,
                100.0 * seen as f64 / self.count as f64
            );
        }
        out
    }
}

/// `1234` -> `1.23µs`, and so on.
pub fn format_nanos(nanos: u64) -> String {
    let n = nanos as f64;
    if nanos < 1_000 {
        format!("{nanos}ns")
    } else if nanos < 1_000_000 {
        format!("{:.2}µs", n / 1e3)
    } else if nanos < 1_000_000_000 {
        format!("{:.2}ms", n / 1e6)
    } else {
        format!("{:.2}s", n / 1e9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut prev_high = 0;
        for i in 0..BUCKETS {
            let (low, high) = bucket_bounds(i);
            assert_eq!(low, prev_high, "bucket {i}");
            assert!(high > low);
            assert_eq!(bucket_of(low), i);
            assert_eq!(bucket_of(high - 1), i);
            prev_high = high;
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn percentiles_are_close_to_the_truth() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record_nanos(v);
        }
        for (p, want) in [(50.0, 50_000.0), (99.0, 99_000.0), (99.9, 99_900.0)] {
            let got = h.percentile(p) as f64;
            assert!((got - want).abs() / want < 0.07, "p{p}: {got} vs {want}");
        }
        assert_eq!(h.percentile(100.0), 100_000);
        assert_eq!(h.max(), 100_000);
        assert!((h.mean() - 50_000.5).abs() < 1e-6);
        assert_eq!(Histogram::default().percentile(50.0), 0);
    }

    #[test]
    fn merged_histograms_count_both() {
        let (mut a, mut b) = (Histogram::default(), Histogram::default());
        (1..=10).for_each(|v| a.record_nanos(v * 1000));
        (11..=20).for_each(|v| b.record_nanos(v * 1000));
        a.merge(&b);
        assert_eq!((a.count(), a.min(), a.max()), (20, 1000, 20_000));
        assert!((a.mean() - 10_500.0).abs() < 1e-6);
        assert_eq!(Histogram::default().min(), 0);
    }

    #[test]
    fn nanos_are_formatted_in_readable_units() {
        assert_eq!(format_nanos(999), "999ns");
        assert_eq!(format_nanos(1_500), "1.50µs");
        assert_eq!(format_nanos(2_500_000), "2.50ms");
    }
}
