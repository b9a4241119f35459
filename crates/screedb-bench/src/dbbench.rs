//! The db_bench workloads' operations, as LevelDB's db_bench runs them.
//!
//! Every workload but the full scans runs in `threads` threads, each doing the full count
//! (`num` updates or `reads` reads), as db_bench does: with `--threads=2`, fillseq writes keys
//! `0..num` twice, interleaved, and fillrandom draws `2 * num` keys; the scans use one thread. Random workloads draw key numbers from `[0, num)` with replacement, uniformly or from
//! YCSB's scrambled zipfian (`--distribution`). A latency is recorded per call: per batch for
//! batched writes, per seek (with its `seek_nexts` entries) for seeks, per entry for full scans.
//! readwhilewriting and seekwhilewriting add one writer thread that overwrites random keys until
//! the readers finish; only the readers' operations are counted as the workload's.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use screedb::{Error, Result};

use crate::distribution::KeyChooser;
use crate::engine::Op;
use crate::keys::{Rng, ValueGen, make_key};
use crate::progress::{Meter, Progress};
use crate::sysinfo::ThreadCpu;
use crate::workload::{Benchmark, Outcome, Shape, Target};

/// Runs the operations of db_bench workload `b` (not a YCSB one, not stats).
pub fn run(b: Benchmark, t: Target<'_>, shape: &Shape, seed: u64) -> Result<Outcome> {
    let threads = match b {
        Benchmark::ReadSeq | Benchmark::ReadReverse => 1,
        _ => shape.threads.max(1),
    };
    let per_thread =
        if b.writes() && !matches!(b, Benchmark::ReadWhileWriting | Benchmark::SeekWhileWriting) {
            shape.num
        } else {
            shape.reads
        };
    let progress = Progress::new(b.name(), per_thread * threads as u64);
    let stop = AtomicBool::new(false);
    let stop = &stop;
    let writer_ops = AtomicU64::new(0);
    let writer_bytes = AtomicU64::new(0);
    let background = matches!(b, Benchmark::ReadWhileWriting | Benchmark::SeekWhileWriting);
    let mut outs = std::thread::scope(|s| -> Result<Vec<Outcome>> {
        let writer = background.then(|| {
            s.spawn(|| {
                let mut rng = Rng::new(seed ^ 0xbac6_9e0d);
                let r = background_writer(t, shape, &mut rng, stop, &writer_ops, &writer_bytes);
                // A failed writer releases the readers waiting for its first write.
                stop.store(true, Ordering::Relaxed);
                r
            })
        });
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (progress, writer_ops) = (&progress, &writer_ops);
                s.spawn(move || {
                    // Readers start once the writer is writing, so they always overlap.
                    while background && writer_ops.load(Ordering::Relaxed) == 0 {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        std::thread::yield_now();
                    }
                    let mut rng = Rng::new(seed.wrapping_add(i as u64).wrapping_mul(0x9e37_79b9));
                    one_thread(b, t, shape, &mut rng, progress)
                })
            })
            .collect();
        let mut outs = Vec::new();
        let mut first_err = None;
        for h in handles {
            match h.join() {
                Ok(Ok(o)) => outs.push(o),
                Ok(Err(e)) => first_err = first_err.or(Some(e)),
                Err(_) => {
                    first_err = first_err.or(Some(Error::invalid("a benchmark thread panicked")))
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        if let Some(w) = writer {
            match w.join() {
                Ok(r) => r?,
                Err(_) => return Err(Error::invalid("the background writer panicked")),
            }
        }
        first_err.map_or(Ok(outs), Err)
    })?;
    progress.finish();
    let mut total = outs.pop().unwrap_or_default();
    for o in outs {
        total.ops += o.ops;
        total.latency.merge(&o.latency);
        total.bytes += o.bytes;
        total.user_bytes_written += o.user_bytes_written;
        total.found = match (total.found, o.found) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        total.add_op_cpu(o.op_cpu_seconds);
    }
    if background {
        total.background_writes = Some(writer_ops.load(Ordering::Relaxed));
        total.user_bytes_written += writer_bytes.load(Ordering::Relaxed);
    }
    Ok(total)
}

fn one_thread(
    b: Benchmark,
    t: Target<'_>,
    shape: &Shape,
    rng: &mut Rng,
    progress: &Progress,
) -> Result<Outcome> {
    let cpu = ThreadCpu::start();
    let mut out = Outcome::default();
    let mut meter = progress.meter();
    match b {
        Benchmark::FillSeq => write(t, shape, rng, &mut out, &mut meter, Keys::Seq, false)?,
        Benchmark::FillUniqueRandom => {
            let order = Permutation::new(shape.num, rng.next_u64());
            write(
                t,
                shape,
                rng,
                &mut out,
                &mut meter,
                Keys::Unique(order),
                false,
            )?;
        }
        Benchmark::FillRandom | Benchmark::Overwrite => {
            write(t, shape, rng, &mut out, &mut meter, Keys::Random, false)?;
        }
        Benchmark::DeleteRandom => write(t, shape, rng, &mut out, &mut meter, Keys::Random, true)?,
        Benchmark::ReadRandom | Benchmark::ReadWhileWriting => {
            point_reads(t, shape, rng, &mut out, &mut meter, false)?;
        }
        Benchmark::ReadMissing => point_reads(t, shape, rng, &mut out, &mut meter, true)?,
        Benchmark::SeekRandom | Benchmark::SeekWhileWriting => {
            seeks(t, shape, rng, &mut out, &mut meter)?;
        }
        Benchmark::PrefixScan => prefix_scans(t, shape, rng, &mut out, &mut meter)?,
        Benchmark::ReadSeq => scan(t, shape, &mut out, &mut meter, false)?,
        Benchmark::ReadReverse => scan(t, shape, &mut out, &mut meter, true)?,
        other => {
            return Err(Error::invalid(format!(
                "{} is not a db_bench workload",
                other.name()
            )));
        }
    }
    (out.ops, out.latency) = meter.finish();
    out.op_cpu_seconds = cpu.seconds();
    Ok(out)
}

#[derive(Clone, Copy)]
enum Keys {
    Seq,
    Random,
    /// Every number of `0..num` once, in the permutation's order.
    Unique(Permutation),
}

/// A pseudo-random bijection of `0..n`: an invertible mix of `bits` bits (xor-shift, multiply by
/// an odd constant, xor-shift, all modulo `2^bits`, with `2^bits >= n`), applied again while the
/// result is `>= n` (cycle walking keeps it a bijection of `0..n`; fewer than two rounds on
/// average, since `2^bits < 2n`).
#[derive(Debug, Clone, Copy)]
struct Permutation {
    n: u64,
    bits: u32,
    seed: u64,
}

impl Permutation {
    fn new(n: u64, seed: u64) -> Self {
        let bits = (64 - n.saturating_sub(1).leading_zeros()).max(2);
        Permutation { n, bits, seed }
    }

    fn round(&self, x: u64) -> u64 {
        let mask = if self.bits == 64 {
            u64::MAX
        } else {
            (1 << self.bits) - 1
        };
        let half = self.bits.div_ceil(2);
        let mut x = (x ^ self.seed) & mask;
        x ^= x >> half;
        x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15 | 1) & mask;
        x ^= x >> half;
        x = x.wrapping_mul(0xC2B2_AE3D_27D4_EB4F | 1) & mask;
        x ^ (x >> half)
    }

    fn at(&self, i: u64) -> u64 {
        let mut x = self.round(i);
        while x >= self.n {
            x = self.round(x);
        }
        x
    }
}

fn write(
    t: Target<'_>,
    shape: &Shape,
    rng: &mut Rng,
    out: &mut Counts,
    meter: &mut Meter<'_>,
    keys: Keys,
    delete: bool,
) -> Result<()> {
    let chooser = KeyChooser::new(shape.distribution, shape.num);
    let mut values = ValueGen::new(rng.next_u64(), shape.value_sizes.max);
    let mut lengths = shape.value_sizes.lengths(rng);
    let ks = shape.key_size;
    let batch = shape.batch_size.max(1) as u64;
    let mut key_buf = Vec::new();
    let mut numbers = Vec::with_capacity(batch as usize);
    let mut key_arena = Vec::with_capacity(ks * batch as usize);
    let mut value_arena = Vec::new();
    // Where each value of the batch ends in `value_arena`.
    let mut value_ends = Vec::with_capacity(batch as usize);
    let mut user_bytes = 0u64;
    let mut i = 0;
    while i < shape.num {
        let n = batch.min(shape.num - i);
        key_arena.clear();
        value_arena.clear();
        value_ends.clear();
        numbers.clear();
        for j in 0..n {
            let number = match keys {
                Keys::Seq => i + j,
                Keys::Random => chooser.next(rng),
                Keys::Unique(order) => order.at(i + j),
            };
            numbers.push(number);
            make_key(&mut key_buf, number, ks);
            key_arena.extend_from_slice(&key_buf);
            if !delete {
                value_arena.extend_from_slice(values.next(lengths.next_len()));
                value_ends.push(value_arena.len());
            }
        }
        user_bytes += n * ks as u64 + value_arena.len() as u64;
        let ops: Vec<Op<'_>> = (0..n as usize)
            .map(|j| {
                let k = &key_arena[j * ks..(j + 1) * ks];
                if delete {
                    Op::Delete(k)
                } else {
                    let start = if j == 0 { 0 } else { value_ends[j - 1] };
                    Op::Put(k, &value_arena[start..value_ends[j]])
                }
            })
            .collect();
        let start = Instant::now();
        match ops.as_slice() {
            [Op::Put(k, v)] => t.engine.put(k, v, shape.sync)?,
            [Op::Delete(k)] => t.engine.delete(k, shape.sync)?,
            _ => t.engine.write_batch(&ops, shape.sync)?,
        }
        meter.done(start, n);
        for &k in &numbers {
            if delete {
                t.live.delete(k);
            } else {
                t.live.put(k);
            }
        }
        i += n;
    }
    out.bytes += user_bytes;
    out.user_bytes_written += user_bytes;
    Ok(())
}

type Counts = Outcome;

fn background_writer(
    t: Target<'_>,
    shape: &Shape,
    rng: &mut Rng,
    stop: &AtomicBool,
    ops: &AtomicU64,
    bytes: &AtomicU64,
) -> Result<()> {
    let chooser = KeyChooser::new(shape.distribution, shape.num);
    let mut values = ValueGen::new(rng.next_u64(), shape.value_sizes.max);
    let mut lengths = shape.value_sizes.lengths(rng);
    let mut key = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let number = chooser.next(rng);
        make_key(&mut key, number, shape.key_size);
        let len = lengths.next_len();
        t.engine.put(&key, values.next(len), shape.sync)?;
        t.live.put(number);
        ops.fetch_add(1, Ordering::Relaxed);
        bytes.fetch_add((shape.key_size + len) as u64, Ordering::Relaxed);
    }
    Ok(())
}

fn point_reads(
    t: Target<'_>,
    shape: &Shape,
    rng: &mut Rng,
    out: &mut Counts,
    meter: &mut Meter<'_>,
    missing: bool,
) -> Result<()> {
    let chooser = KeyChooser::new(shape.distribution, shape.num);
    let mut key = Vec::new();
    let mut found = 0;
    for _ in 0..shape.reads {
        make_key(&mut key, chooser.next(rng), shape.key_size);
        if missing {
            key.push(b'.');
        }
        let start = Instant::now();
        let got = t.engine.get(&key)?;
        meter.done(start, 1);
        if let Some(v) = got {
            found += 1;
            out.bytes += (key.len() + v.len()) as u64;
        }
    }
    out.found = Some(found);
    Ok(())
}

fn seeks(
    t: Target<'_>,
    shape: &Shape,
    rng: &mut Rng,
    out: &mut Counts,
    meter: &mut Meter<'_>,
) -> Result<()> {
    let chooser = KeyChooser::new(shape.distribution, shape.num);
    let mut key = Vec::new();
    let mut found = 0;
    for _ in 0..shape.reads {
        make_key(&mut key, chooser.next(rng), shape.key_size);
        let start = Instant::now();
        let mut hit = false;
        let mut first = true;
        t.engine
            .scan(Some(&key), false, 1 + shape.seek_nexts, &mut |k, v| {
                if first {
                    hit = k == key.as_slice();
                    first = false;
                }
                out.bytes += (k.len() + v.len()) as u64;
                true
            })?;
        meter.done(start, 1);
        found += u64::from(hit);
    }
    out.found = Some(found);
    Ok(())
}

/// prefixscan: `reads` scans of the keys sharing their first `prefix_len` bytes with a random
/// key, up to `1 + seek_nexts` entries each; `found` counts the scans that found any.
fn prefix_scans(
    t: Target<'_>,
    shape: &Shape,
    rng: &mut Rng,
    out: &mut Counts,
    meter: &mut Meter<'_>,
) -> Result<()> {
    let chooser = KeyChooser::new(shape.distribution, shape.num);
    let mut key = Vec::new();
    let mut found = 0;
    for _ in 0..shape.reads {
        make_key(&mut key, chooser.next(rng), shape.key_size);
        let prefix = &key[..shape.prefix_len.min(key.len())];
        let start = Instant::now();
        let n = t
            .engine
            .prefix_scan(prefix, 1 + shape.seek_nexts, &mut |k, v| {
                out.bytes += (k.len() + v.len()) as u64;
            })?;
        meter.done(start, 1);
        found += u64::from(n > 0);
    }
    out.found = Some(found);
    Ok(())
}

fn scan(
    t: Target<'_>,
    shape: &Shape,
    out: &mut Counts,
    meter: &mut Meter<'_>,
    reverse: bool,
) -> Result<()> {
    let mut last = Instant::now();
    let mut unclocked = 0;
    t.engine.scan(None, reverse, shape.reads, &mut |k, v| {
        out.bytes += (k.len() + v.len()) as u64;
        unclocked += 1;
        if unclocked == SCAN_ENTRIES_PER_CLOCK {
            meter.done_batch(last, unclocked);
            last = Instant::now();
            unclocked = 0;
        }
        true
    })?;
    meter.done_batch(last, unclocked);
    Ok(())
}

/// Entries a full scan (readseq, readreverse) steps over between two readings of the clock: at
/// one reading (two calls) per entry, a tenth of a ScreeDB or LevelDB readseq was the clock
/// (LevelDB's db_bench reads it per entry only with `--histogram`). Latency percentiles of
/// these workloads are therefore of each batch's mean per entry.
const SCAN_ENTRIES_PER_CLOCK: u64 = 64;

#[cfg(test)]
mod tests {
    #[test]
    fn the_unique_order_is_a_permutation() {
        for n in [1u64, 2, 3, 10, 1000, 4097] {
            let p = super::Permutation::new(n, 77);
            let mut seen: Vec<u64> = (0..n).map(|i| p.at(i)).collect();
            let first: Vec<u64> = seen.iter().take(8).copied().collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n = {n}");
            if n >= 1000 {
                assert_ne!(first, (0..8).collect::<Vec<_>>(), "not in order");
            }
        }
    }
}
