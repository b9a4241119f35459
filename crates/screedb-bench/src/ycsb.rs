//! YCSB's core workloads A-F with YCSB's own semantics, on the engines behind [`Engine`].
//!
//! - Records: `--num` of them (YCSB's `recordcount`), each a key `user` + the record number's
//!   FNV-1a 64 hash in 19 zero-padded digits (YCSB's hashed insert order: `orderedinserts=false`;
//!   padded so every key is [`KEY_SIZE`] bytes) and one `--value_size`-byte value (YCSB's ten
//!   100-byte fields are one 1000-byte value: run with `--value_size=1000` to match it), or one
//!   of a length drawn from `--value_size_dist`.
//! - Operations: `--reads` in all (YCSB's `operationcount`), split over `--threads`.
//! - Request distribution: scrambled zipfian (constant 0.99) for A, B, C, E, F, over the records
//!   plus the inserts the run expects (as YCSB sizes it), redrawn while beyond the last
//!   acknowledged insert; latest for D. Scan lengths of E: uniform in 1-100. F reads a record,
//!   then writes it back (read-modify-write). Updates replace the whole value (YCSB's
//!   `writeallfields=true`).
//! - Each operation's latency is recorded by kind; [`summary`] prints YCSB's `[OVERALL]` and
//!   per-operation lines.
//!
//! [`Engine`]: crate::engine::Engine

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use screedb::{Error, Result};

use crate::distribution::{Latest, ScrambledZipfian, fnv_hash64};
use crate::histogram::Histogram;
use crate::keys::{Rng, ValueGen, ValueLengths};
use crate::progress::{Meter, Progress};
use crate::sysinfo::ThreadCpu;
use crate::workload::{Benchmark, OpStats, Outcome, PhaseResult, Shape, Target};

/// Bytes of a YCSB key: `user` and 19 digits.
pub const KEY_SIZE: usize = 23;

/// Writes the key of record `n` into `buf`.
pub fn record_key(buf: &mut Vec<u8>, n: u64) {
    buf.clear();
    let _ = write!(ByteWriter(buf), "user{:019}", fnv_hash64(n));
}

struct ByteWriter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for ByteWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// The operation mix of a workload, in YCSB's proportions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mix {
    /// Reads.
    pub read: f64,
    /// Updates.
    pub update: f64,
    /// Inserts.
    pub insert: f64,
    /// Scans.
    pub scan: f64,
    /// Read-modify-writes.
    pub rmw: f64,
    /// Requests follow the latest distribution (D) instead of the scrambled zipfian.
    pub latest: bool,
}

/// The mix of YCSB workload `b` (`None` for ycsb_load and non-YCSB workloads).
pub fn mix(b: Benchmark) -> Option<Mix> {
    let m = |read, update, insert, scan, rmw, latest| Mix {
        read,
        update,
        insert,
        scan,
        rmw,
        latest,
    };
    Some(match b {
        Benchmark::YcsbA => m(0.5, 0.5, 0.0, 0.0, 0.0, false),
        Benchmark::YcsbB => m(0.95, 0.05, 0.0, 0.0, 0.0, false),
        Benchmark::YcsbC => m(1.0, 0.0, 0.0, 0.0, 0.0, false),
        Benchmark::YcsbD => m(0.95, 0.0, 0.05, 0.0, 0.0, true),
        Benchmark::YcsbE => m(0.0, 0.0, 0.05, 0.95, 0.0, false),
        Benchmark::YcsbF => m(0.5, 0.0, 0.0, 0.0, 0.5, false),
        _ => return None,
    })
}

/// A uniform scan length in 1-100 (YCSB E's `maxscanlength=100`).
pub fn scan_length(rng: &mut Rng) -> u64 {
    1 + rng.uniform(100)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Update,
    Insert,
    Scan,
    Rmw,
}

const KINDS: [(Kind, &str); 5] = [
    (Kind::Read, "READ"),
    (Kind::Update, "UPDATE"),
    (Kind::Insert, "INSERT"),
    (Kind::Scan, "SCAN"),
    (Kind::Rmw, "READ-MODIFY-WRITE"),
];

/// Shared state of one workload run: the insert sequence and the last acknowledged insert.
struct Inserts {
    next: AtomicU64,
    acked: AtomicU64,
}

/// Runs YCSB workload `b` (`ycsb_load` or `ycsb_a` ... `ycsb_f`).
pub fn run(b: Benchmark, t: Target<'_>, shape: &Shape, seed: u64) -> Result<Outcome> {
    let threads = shape.threads.max(1) as u64;
    let total = if b == Benchmark::YcsbLoad {
        shape.num
    } else {
        shape.reads
    };
    let progress = Progress::new(b.name(), total);
    let mixture = mix(b);
    let expected_inserts = mixture.map_or(0, |m| (total as f64 * m.insert * 2.0) as u64);
    let records = shape.num;
    let inserts = Inserts {
        next: AtomicU64::new(records),
        acked: AtomicU64::new(records),
    };
    let zipf = ScrambledZipfian::new(records + expected_inserts);
    let outs = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (progress, inserts, zipf) = (&progress, &inserts, &zipf);
                let share = total / threads + u64::from(i < total % threads);
                let first = i * (total / threads) + i.min(total % threads);
                s.spawn(move || {
                    let cpu = ThreadCpu::start();
                    let mut rng = Rng::new(seed ^ (i + 1).wrapping_mul(0x2545_f491_4f6c_dd1d));
                    let mut th = Thread::new(t, shape, &mut rng, progress);
                    match mixture {
                        None => th.load(first, share)?,
                        Some(m) => th.transactions(m, share, zipf, inserts)?,
                    }
                    let (mut out, kinds) = th.finish();
                    out.op_cpu_seconds = cpu.seconds();
                    Ok::<_, Error>((out, kinds))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::invalid("a YCSB thread panicked")))
            })
            .collect::<Result<Vec<_>>>()
    })?;
    progress.finish();
    let mut total_out = Outcome {
        op_cpu_seconds: Some(0.0),
        ..Outcome::default()
    };
    let mut per_kind: Vec<(Histogram, u64)> = vec![(Histogram::default(), 0); KINDS.len()];
    for (o, kinds) in outs {
        total_out.ops += o.ops;
        total_out.latency.merge(&o.latency);
        total_out.bytes += o.bytes;
        total_out.user_bytes_written += o.user_bytes_written;
        total_out.add_op_cpu(o.op_cpu_seconds);
        for (acc, (h, nf)) in per_kind.iter_mut().zip(kinds) {
            acc.0.merge(&h);
            acc.1 += nf;
        }
    }
    total_out.per_op = KINDS
        .iter()
        .zip(per_kind)
        .filter(|(_, (h, _))| h.count() > 0)
        .map(|(&(_, name), (latency, not_found))| OpStats {
            name,
            latency,
            not_found,
        })
        .collect();
    Ok(total_out)
}

struct Thread<'a, 'r> {
    t: Target<'a>,
    shape: &'a Shape,
    rng: &'r mut Rng,
    values: ValueGen,
    lengths: ValueLengths,
    meter: Meter<'a>,
    out: Outcome,
    kinds: Vec<(Histogram, u64)>,
    key: Vec<u8>,
}

impl<'a, 'r> Thread<'a, 'r> {
    fn new(t: Target<'a>, shape: &'a Shape, rng: &'r mut Rng, progress: &'a Progress) -> Self {
        let values = ValueGen::new(rng.next_u64(), shape.value_sizes.max);
        let lengths = shape.value_sizes.lengths(rng);
        Thread {
            t,
            shape,
            rng,
            values,
            lengths,
            meter: progress.meter(),
            out: Outcome::default(),
            kinds: vec![(Histogram::default(), 0); KINDS.len()],
            key: Vec::with_capacity(KEY_SIZE),
        }
    }

    fn record(&mut self, kind: Kind, start: Instant, found: bool) {
        let i = KINDS.iter().position(|(k, _)| *k == kind).unwrap_or(0);
        self.kinds[i].0.record(start.elapsed());
        self.kinds[i].1 += u64::from(!found);
    }

    fn put(&mut self, n: u64) -> Result<()> {
        record_key(&mut self.key, n);
        let vs = self.lengths.next_len();
        self.t
            .engine
            .put(&self.key, self.values.next(vs), self.shape.sync)?;
        self.out.user_bytes_written += (KEY_SIZE + vs) as u64;
        self.out.bytes += (KEY_SIZE + vs) as u64;
        Ok(())
    }

    fn get(&mut self, n: u64) -> Result<bool> {
        record_key(&mut self.key, n);
        let got = self.t.engine.get(&self.key)?;
        if let Some(v) = &got {
            self.out.bytes += (KEY_SIZE + v.len()) as u64;
        }
        Ok(got.is_some())
    }

    fn load(&mut self, first: u64, count: u64) -> Result<()> {
        for n in first..first + count {
            let start = Instant::now();
            self.put(n)?;
            self.record(Kind::Insert, start, true);
            self.meter.done(start, 1);
            self.t.live.add_ycsb(1);
        }
        Ok(())
    }

    fn transactions(
        &mut self,
        m: Mix,
        count: u64,
        zipf: &ScrambledZipfian,
        inserts: &Inserts,
    ) -> Result<()> {
        let mut latest = Latest::new(inserts.acked.load(Ordering::Relaxed));
        for _ in 0..count {
            let acked = inserts.acked.load(Ordering::Relaxed);
            let mut choose = |rng: &mut Rng| {
                if m.latest {
                    return latest.next(rng, acked);
                }
                loop {
                    let n = zipf.next(rng);
                    if n < acked {
                        break n;
                    }
                }
            };
            let p = self.rng.next_f64();
            let start = Instant::now();
            if p < m.read {
                let n = choose(self.rng);
                let found = self.get(n)?;
                self.record(Kind::Read, start, found);
            } else if p < m.read + m.update {
                let n = choose(self.rng);
                self.put(n)?;
                self.record(Kind::Update, start, true);
            } else if p < m.read + m.update + m.insert {
                let n = inserts.next.fetch_add(1, Ordering::Relaxed);
                self.put(n)?;
                self.t.live.add_ycsb(1);
                inserts.acked.fetch_max(n + 1, Ordering::Relaxed);
                self.record(Kind::Insert, start, true);
            } else if p < m.read + m.update + m.insert + m.scan {
                let n = choose(self.rng);
                let len = scan_length(self.rng);
                record_key(&mut self.key, n);
                let mut bytes = 0;
                let seen = self
                    .t
                    .engine
                    .scan(Some(&self.key), false, len, &mut |k, v| {
                        bytes += (k.len() + v.len()) as u64;
                        true
                    })?;
                self.out.bytes += bytes;
                self.record(Kind::Scan, start, seen > 0);
            } else {
                let n = choose(self.rng);
                let found = self.get(n)?;
                self.record(Kind::Read, start, found);
                let write_start = Instant::now();
                self.put(n)?;
                self.record(Kind::Update, write_start, true);
                self.record(Kind::Rmw, start, found);
            }
            self.meter.done(start, 1);
        }
        Ok(())
    }

    fn finish(self) -> (Outcome, Vec<(Histogram, u64)>) {
        let mut out = self.out;
        (out.ops, out.latency) = self.meter.finish();
        (out, self.kinds)
    }
}

/// YCSB's summary lines for one workload: `[OVERALL]` and, per operation kind, count, average,
/// min, max and percentile latencies in microseconds, and `Return=OK` / `Return=NOT_FOUND`.
pub fn summary(r: &PhaseResult) -> String {
    let mut out = String::new();
    let us = |ns: f64| ns / 1000.0;
    let _ = writeln!(
        out,
        "[OVERALL], RunTime(ms), {:.0}",
        r.elapsed.as_secs_f64() * 1000.0
    );
    let _ = writeln!(
        out,
        "[OVERALL], Throughput(ops/sec), {:.1}",
        r.ops_per_sec()
    );
    for op in &r.per_op {
        let h = &op.latency;
        let n = op.name;
        let _ = writeln!(out, "[{n}], Operations, {}", h.count());
        let _ = writeln!(out, "[{n}], AverageLatency(us), {:.3}", us(h.mean()));
        let _ = writeln!(out, "[{n}], MinLatency(us), {:.3}", us(h.min() as f64));
        let _ = writeln!(out, "[{n}], MaxLatency(us), {:.3}", us(h.max() as f64));
        for (label, p) in [
            ("50th", 50.0),
            ("95th", 95.0),
            ("99th", 99.0),
            ("99.9th", 99.9),
        ] {
            let _ = writeln!(
                out,
                "[{n}], {label}PercentileLatency(us), {:.3}",
                us(h.percentile(p) as f64)
            );
        }
        let _ = writeln!(out, "[{n}], Return=OK, {}", h.count() - op.not_found);
        if op.not_found > 0 {
            let _ = writeln!(out, "[{n}], Return=NOT_FOUND, {}", op.not_found);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_keys_are_hashed_and_fixed_width() {
        let mut k = Vec::new();
        record_key(&mut k, 0);
        assert_eq!(k.len(), KEY_SIZE);
        assert!(k.starts_with(b"user"));
        let first = k.clone();
        record_key(&mut k, 1);
        assert_eq!(k.len(), KEY_SIZE);
        assert_ne!(k, first);
        let mut keys: Vec<Vec<u8>> = (0..1000)
            .map(|n| {
                record_key(&mut k, n);
                k.clone()
            })
            .collect();
        let sorted = {
            let mut s = keys.clone();
            s.sort();
            s
        };
        assert_ne!(keys, sorted, "insert order is not key order");
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 1000);
    }

    #[test]
    fn scan_lengths_are_uniform_in_1_to_100() {
        let mut rng = Rng::new(5);
        let mut seen = [0u64; 101];
        for _ in 0..100_000 {
            let l = scan_length(&mut rng) as usize;
            assert!((1..=100).contains(&l), "{l}");
            seen[l] += 1;
        }
        assert_eq!(seen[0], 0);
        assert!(
            seen[1..].iter().all(|&c| (700..1300).contains(&c)),
            "{seen:?}"
        );
    }

    #[test]
    fn mixes_add_up_and_match_ycsb() {
        for b in [
            Benchmark::YcsbA,
            Benchmark::YcsbB,
            Benchmark::YcsbC,
            Benchmark::YcsbD,
            Benchmark::YcsbE,
            Benchmark::YcsbF,
        ] {
            let m = mix(b).unwrap();
            let sum = m.read + m.update + m.insert + m.scan + m.rmw;
            assert!((sum - 1.0).abs() < 1e-9, "{b:?}");
            assert_eq!(m.latest, b == Benchmark::YcsbD);
        }
        assert_eq!(mix(Benchmark::YcsbE).unwrap().scan, 0.95);
        assert!(mix(Benchmark::YcsbLoad).is_none());
    }
}
