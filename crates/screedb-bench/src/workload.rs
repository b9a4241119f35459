//! The db_bench workloads: what each one does and what it measures.
//!
//! Every workload runs in one thread against an [`Engine`]. Write workloads use `batch_size`
//! updates per write call; random ones draw key numbers uniformly from `[0, num)`. A latency is
//! recorded per call (per batch for batched writes; per entry for scans). After a write
//! workload the engine is settled (its background work waited for), and the process I/O and
//! write amplification are read before and after.

use std::io::{IsTerminal, Write as _};
use std::path::Path;
use std::time::{Duration, Instant};

use screedb::{Error, Result};

use crate::engine::{Engine, Op};
use crate::histogram::Histogram;
use crate::keys::{Rng, ValueGen, make_key};
use crate::sysinfo::{IoCounters, disk_usage};

/// A named workload (db_bench's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Benchmark {
    /// Writes keys `0..num` in order into a fresh database.
    FillSeq,
    /// Writes `num` random keys into a fresh database.
    FillRandom,
    /// Writes `num` random keys over the existing database.
    Overwrite,
    /// Reads `reads` random keys (about 63% exist after fillrandom).
    ReadRandom,
    /// Reads `reads` random keys that do not exist (a key with "." appended).
    ReadMissing,
    /// Reads `reads` entries in ascending order.
    ReadSeq,
    /// Reads `reads` entries in descending order.
    ReadReverse,
    /// Seeks `reads` times to a random key and reads the entry there.
    SeekRandom,
    /// Deletes `num` random keys.
    DeleteRandom,
    /// Prints the engine's statistics (not timed).
    Stats,
}

const ALL: [(&str, Benchmark); 10] = [
    ("fillseq", Benchmark::FillSeq),
    ("fillrandom", Benchmark::FillRandom),
    ("overwrite", Benchmark::Overwrite),
    ("readrandom", Benchmark::ReadRandom),
    ("readmissing", Benchmark::ReadMissing),
    ("readseq", Benchmark::ReadSeq),
    ("readreverse", Benchmark::ReadReverse),
    ("seekrandom", Benchmark::SeekRandom),
    ("deleterandom", Benchmark::DeleteRandom),
    ("stats", Benchmark::Stats),
];

impl Benchmark {
    /// The benchmark called `name`.
    pub fn parse(name: &str) -> Result<Benchmark> {
        ALL.iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, b)| b)
            .ok_or_else(|| {
                let known: Vec<&str> = ALL.iter().map(|(n, _)| *n).collect();
                Error::invalid(format!(
                    "unknown benchmark {name:?}; known ones are {}",
                    known.join(", ")
                ))
            })
    }

    /// db_bench's name.
    pub fn name(self) -> &'static str {
        ALL.iter().find(|(_, b)| *b == self).map_or("?", |(n, _)| n)
    }

    /// True for workloads that start from an empty database.
    pub fn fresh_db(self) -> bool {
        matches!(self, Benchmark::FillSeq | Benchmark::FillRandom)
    }

    /// True for workloads that write.
    pub fn writes(self) -> bool {
        matches!(
            self,
            Benchmark::FillSeq
                | Benchmark::FillRandom
                | Benchmark::Overwrite
                | Benchmark::DeleteRandom
        )
    }
}

/// The sizes and counts every workload uses.
#[derive(Debug, Clone)]
pub struct Shape {
    /// Keys in the key space, and updates per write workload.
    pub num: u64,
    /// Operations per read workload.
    pub reads: u64,
    /// Bytes per key.
    pub key_size: usize,
    /// Bytes per value.
    pub value_size: usize,
    /// Updates per write call.
    pub batch_size: usize,
    /// Sync every write.
    pub sync: bool,
}

/// The state after background work settled, for write workloads.
#[derive(Debug, Clone)]
pub struct Settled {
    /// Time `Engine::settle` took.
    pub elapsed: Duration,
    /// Process I/O from the start of the workload to the end of settling.
    pub io: Option<IoCounters>,
    /// The engine's write amplification after settling.
    pub engine_wa: Option<f64>,
}

/// What one workload measured.
#[derive(Debug, Clone)]
pub struct PhaseResult {
    /// The workload.
    pub benchmark: Benchmark,
    /// Operations done (updates for writes, entries for scans).
    pub ops: u64,
    /// Wall time of the operations (settling excluded).
    pub elapsed: Duration,
    /// Bytes of keys and values written or read.
    pub bytes: u64,
    /// Bytes of keys and values written (0 for reads).
    pub user_bytes_written: u64,
    /// For point reads and seeks: how many found their key.
    pub found: Option<u64>,
    /// Latency per call.
    pub latency: Histogram,
    /// Process I/O during the operations.
    pub io: Option<IoCounters>,
    /// The engine's write amplification right after the operations.
    pub engine_wa: Option<f64>,
    /// For write workloads: after settling.
    pub settled: Option<Settled>,
    /// Bytes the database directory occupies at the end (after settling).
    pub disk_bytes: u64,
}

impl PhaseResult {
    /// Operations per second.
    pub fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Microseconds per operation.
    pub fn micros_per_op(&self) -> f64 {
        self.elapsed.as_secs_f64() * 1e6 / (self.ops.max(1) as f64)
    }

    /// Megabytes (2^20) of keys and values per second.
    pub fn mb_per_sec(&self) -> f64 {
        self.bytes as f64 / 1_048_576.0 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Bytes the process wrote to storage per user byte, during the operations.
    pub fn process_wa(&self) -> Option<f64> {
        ratio(self.io?.write_bytes, self.user_bytes_written)
    }

    /// The same, including settling.
    pub fn process_wa_settled(&self) -> Option<f64> {
        ratio(
            self.settled.as_ref()?.io?.write_bytes,
            self.user_bytes_written,
        )
    }
}

fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}

/// Counts operations, records latencies and shows progress on a terminal.
struct Meter {
    name: &'static str,
    hist: Histogram,
    ops: u64,
    expected: u64,
    next_report: u64,
    tty: bool,
}

impl Meter {
    fn new(name: &'static str, expected: u64) -> Self {
        Meter {
            name,
            hist: Histogram::default(),
            ops: 0,
            expected: expected.max(1),
            next_report: 0,
            tty: std::io::stderr().is_terminal(),
        }
    }

    /// One call of `ops` operations that started at `start`.
    fn done(&mut self, start: Instant, ops: u64) {
        self.hist.record(start.elapsed());
        self.ops += ops;
        if self.tty && self.ops >= self.next_report {
            let pct = self.ops * 100 / self.expected;
            eprint!("\r{:<14} {pct:>3}%", self.name);
            let _ = std::io::stderr().flush();
            self.next_report = self.ops + self.expected / 100 + 1;
        }
    }

    fn finish(self) -> (u64, Histogram) {
        if self.tty {
            eprint!("\r{:<20}\r", "");
        }
        (self.ops, self.hist)
    }
}

/// Runs one workload (not [`Benchmark::Stats`]) and measures it; `dir` is the database
/// directory, measured for space on disk.
pub fn run_phase(
    benchmark: Benchmark,
    engine: &dyn Engine,
    shape: &Shape,
    rng: &mut Rng,
    values: &mut ValueGen,
    dir: &Path,
) -> Result<PhaseResult> {
    let io_start = IoCounters::now();
    let start = Instant::now();
    let mut out = Counts::default();
    let meter = match benchmark {
        Benchmark::FillSeq => write(engine, shape, values, &mut out, Keys::Seq, false)?,
        Benchmark::FillRandom | Benchmark::Overwrite => {
            write(engine, shape, values, &mut out, Keys::Random(rng), false)?
        }
        Benchmark::DeleteRandom => write(engine, shape, values, &mut out, Keys::Random(rng), true)?,
        Benchmark::ReadRandom => point_reads(engine, shape, rng, &mut out, false)?,
        Benchmark::ReadMissing => point_reads(engine, shape, rng, &mut out, true)?,
        Benchmark::SeekRandom => seeks(engine, shape, rng, &mut out)?,
        Benchmark::ReadSeq => scan(engine, shape, &mut out, false)?,
        Benchmark::ReadReverse => scan(engine, shape, &mut out, true)?,
        Benchmark::Stats => Meter::new("stats", 0),
    };
    let elapsed = start.elapsed();
    let io_end = IoCounters::now();
    let engine_wa = engine.write_amplification();
    let settled = if benchmark.writes() {
        let t = Instant::now();
        engine.settle()?;
        let elapsed = t.elapsed();
        Some(Settled {
            elapsed,
            io: IoCounters::now().zip(io_start).map(|(e, s)| e.since(&s)),
            engine_wa: engine.write_amplification(),
        })
    } else {
        None
    };
    let (ops, latency) = meter.finish();
    Ok(PhaseResult {
        benchmark,
        ops,
        elapsed,
        bytes: out.bytes,
        user_bytes_written: out.user_bytes_written,
        found: out.found,
        latency,
        io: io_end.zip(io_start).map(|(e, s)| e.since(&s)),
        engine_wa,
        settled,
        disk_bytes: disk_usage(dir),
    })
}

#[derive(Default)]
struct Counts {
    bytes: u64,
    user_bytes_written: u64,
    found: Option<u64>,
}

enum Keys<'a> {
    Seq,
    Random(&'a mut Rng),
}

fn write(
    engine: &dyn Engine,
    shape: &Shape,
    values: &mut ValueGen,
    out: &mut Counts,
    mut keys: Keys<'_>,
    delete: bool,
) -> Result<Meter> {
    let name = if delete { "deleterandom" } else { "write" };
    let mut meter = Meter::new(name, shape.num);
    let (ks, vs) = (shape.key_size, if delete { 0 } else { shape.value_size });
    let batch = shape.batch_size.max(1) as u64;
    let mut key_buf = Vec::new();
    let mut key_arena = Vec::with_capacity(ks * batch as usize);
    let mut value_arena = Vec::with_capacity(vs * batch as usize);
    let mut i = 0;
    while i < shape.num {
        let n = batch.min(shape.num - i);
        key_arena.clear();
        value_arena.clear();
        for j in 0..n {
            let number = match &mut keys {
                Keys::Seq => i + j,
                Keys::Random(rng) => rng.uniform(shape.num),
            };
            make_key(&mut key_buf, number, ks);
            key_arena.extend_from_slice(&key_buf);
            if !delete {
                value_arena.extend_from_slice(values.next(vs));
            }
        }
        let ops: Vec<Op<'_>> = (0..n as usize)
            .map(|j| {
                let k = &key_arena[j * ks..(j + 1) * ks];
                if delete {
                    Op::Delete(k)
                } else {
                    Op::Put(k, &value_arena[j * vs..(j + 1) * vs])
                }
            })
            .collect();
        let t = Instant::now();
        match ops.as_slice() {
            [Op::Put(k, v)] => engine.put(k, v, shape.sync)?,
            [Op::Delete(k)] => engine.delete(k, shape.sync)?,
            _ => engine.write_batch(&ops, shape.sync)?,
        }
        meter.done(t, n);
        i += n;
    }
    out.bytes = shape.num * (ks + vs) as u64;
    out.user_bytes_written = out.bytes;
    Ok(meter)
}

fn point_reads(
    engine: &dyn Engine,
    shape: &Shape,
    rng: &mut Rng,
    out: &mut Counts,
    missing: bool,
) -> Result<Meter> {
    let mut meter = Meter::new(
        if missing { "readmissing" } else { "readrandom" },
        shape.reads,
    );
    let mut key = Vec::new();
    let mut found = 0;
    for _ in 0..shape.reads {
        make_key(&mut key, rng.uniform(shape.num), shape.key_size);
        if missing {
            key.push(b'.');
        }
        let t = Instant::now();
        let got = engine.get(&key)?;
        meter.done(t, 1);
        if let Some(v) = got {
            found += 1;
            out.bytes += (key.len() + v.len()) as u64;
        }
    }
    out.found = Some(found);
    Ok(meter)
}

fn seeks(engine: &dyn Engine, shape: &Shape, rng: &mut Rng, out: &mut Counts) -> Result<Meter> {
    let mut meter = Meter::new("seekrandom", shape.reads);
    let mut key = Vec::new();
    let mut found = 0;
    for _ in 0..shape.reads {
        make_key(&mut key, rng.uniform(shape.num), shape.key_size);
        let t = Instant::now();
        let mut hit = false;
        engine.scan(Some(&key), false, 1, &mut |k, v| {
            hit = k == key.as_slice();
            out.bytes += (k.len() + v.len()) as u64;
        })?;
        meter.done(t, 1);
        found += u64::from(hit);
    }
    out.found = Some(found);
    Ok(meter)
}

fn scan(engine: &dyn Engine, shape: &Shape, out: &mut Counts, reverse: bool) -> Result<Meter> {
    let mut meter = Meter::new(if reverse { "readreverse" } else { "readseq" }, shape.reads);
    let mut last = Instant::now();
    engine.scan(None, reverse, shape.reads, &mut |k, v| {
        out.bytes += (k.len() + v.len()) as u64;
        meter.done(last, 1);
        last = Instant::now();
    })?;
    Ok(meter)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Compression, EngineConfig, EngineKind};

    #[test]
    fn names_parse_back_and_unknown_names_are_listed() {
        for (name, b) in ALL {
            assert_eq!(Benchmark::parse(name).unwrap(), b);
            assert_eq!(b.name(), name);
        }
        let err = Benchmark::parse("fillsequential").unwrap_err().to_string();
        assert!(err.contains("fillseq, fillrandom"), "{err}");
    }

    #[test]
    fn workloads_write_then_find_what_they_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let config = EngineConfig {
            write_buffer_size: Some(64 << 10),
            cache_size: None,
            bloom_bits: 10,
            compression: Compression::Lz4,
            layout: None,
        };
        let engine = EngineKind::ScreeDb.open(dir.path(), &config).unwrap();
        let shape = Shape {
            num: 3000,
            reads: 3000,
            key_size: 16,
            value_size: 100,
            batch_size: 7,
            sync: false,
        };
        let mut rng = Rng::new(1);
        let mut values = ValueGen::new(1, 100);
        let mut run =
            |b| run_phase(b, &*engine, &shape, &mut rng, &mut values, dir.path()).unwrap();
        let fill = run(Benchmark::FillSeq);
        assert_eq!(fill.ops, 3000);
        assert_eq!(fill.latency.count(), 3000_u64.div_ceil(7));
        assert_eq!(fill.user_bytes_written, 3000 * 116);
        assert!(fill.settled.is_some());
        assert!(fill.disk_bytes > 0);
        assert_eq!(run(Benchmark::ReadRandom).found, Some(3000));
        assert_eq!(run(Benchmark::SeekRandom).found, Some(3000));
        assert_eq!(run(Benchmark::ReadMissing).found, Some(0));
        assert_eq!(run(Benchmark::ReadSeq).ops, 3000);
        assert_eq!(run(Benchmark::ReadReverse).ops, 3000);
        run(Benchmark::DeleteRandom);
        let after = run(Benchmark::ReadRandom).found.unwrap();
        assert!(
            after > 500 && after < 2000,
            "{after} of 3000 left after random deletes"
        );
        engine.close().unwrap();
    }
}
