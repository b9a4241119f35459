//! Benchmark harness for ScreeDB: db_bench's workloads, flags and report.
//!
//! [`run`] executes the workloads named by `--benchmarks` in order against one database (a
//! temporary directory unless `--db` is given) and returns a [`BenchReport`]; `screedb bench` is
//! the command-line front end. Each workload reports throughput, latency percentiles, the bytes
//! the process wrote and read (from `/proc/self/io`), write amplification before and after the
//! engine settles, and the space the database occupies.
//!
//! Engines sit behind the [`engine::Engine`] trait so that peer engines can run the same
//! workloads; ScreeDB is the first implementation.

pub mod cli;
pub mod compare;
pub mod dbbench;
pub mod distribution;
pub mod engine;
pub mod histogram;
pub mod keys;
pub mod live;
pub mod progress;
pub mod report;
pub mod space;
pub mod sysinfo;
pub mod workload;
pub mod ycsb;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use clap::builder::BoolishValueParser;
use screedb::{Error, Result};

use distribution::Distribution;
use engine::{Compression, Engine, EngineConfig, EngineKind};
use keys::{MAX_VALUE_SIZE, Rng, ValueSizeDist, decimal_digits};
use live::LiveKeys;
use workload::{Benchmark, PhaseResult, Shape, Target};

/// The workloads run when `--benchmarks` is not given: the README's main job, every workload once
/// with `--num=1000000`, then a YCSB load and workload A of as many records: 54 s measured on two
/// cores shared with other builds (load average 7); readwhilewriting, 23 s more there, is left
/// out to keep it near a minute.
pub const DEFAULT_BENCHMARKS: &str = "fillseq,fillrandom,overwrite,readrandom,readmissing,\
seekrandom,readseq,readreverse,deleterandom,ycsb_load,ycsb_a,stats";

/// Default `--write_buffer_size`, for every engine: 64 MiB (RocksDB's and ScreeDB's default).
pub const DEFAULT_WRITE_BUFFER: usize = 64 << 20;
/// Default `--cache_size`, for every engine: 32 MiB.
pub const DEFAULT_CACHE: usize = 32 << 20;

/// The flags of a benchmark run, named as db_bench names them (`--value_size=100`).
#[derive(Debug, Clone, clap::Args)]
#[command(rename_all = "snake_case")]
pub struct BenchArgs {
    /// Comma-separated workloads, run in order: fillseq, fillrandom, filluniquerandom, overwrite,
    /// readrandom, readmissing, readseq, readreverse, seekrandom, deleterandom, readwhilewriting,
    /// seekwhilewriting, stats, ycsb_load, ycsb_a ... ycsb_f.
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_BENCHMARKS)]
    pub benchmarks: Vec<String>,
    /// The engine: screedb, fjall, leveldb, rocksdb (peers need their cargo feature), or
    /// leveldb-c:PATH (a library exporting LevelDB's C API, loaded at run time).
    #[arg(long, default_value = "screedb")]
    pub engine: String,
    /// Keys in the key space; updates per write workload and thread; YCSB records.
    #[arg(long, default_value_t = 1_000_000)]
    pub num: u64,
    /// Operations per read workload and thread; YCSB operations in all. Default: `--num`.
    #[arg(long)]
    pub reads: Option<u64>,
    /// Threads of every workload but the full scans (readseq, readreverse), each doing the
    /// whole `--num`/`--reads` count as in db_bench (readwhilewriting and seekwhilewriting add
    /// one writer thread; YCSB splits its counts over the threads).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Entries read after each seek of seekrandom and seekwhilewriting (and after the first
    /// of each prefixscan).
    #[arg(long, default_value_t = 0)]
    pub seek_nexts: u64,
    /// Bytes of the prefixes prefixscan scans. Default: `--key_size` - 2 (keys are decimal
    /// numbers, so a prefix holds 100 consecutive key numbers).
    #[arg(long)]
    pub prefix_len: Option<usize>,
    /// ScreeDB's `Options::prefix_bloom_len`: tables get a Bloom filter over the first this
    /// many bytes of their keys, and prefix scans skip the tables it rules out. 0: none. Other
    /// engines ignore it (their prefix scans seek and stop past the prefix). Overridden by an
    /// engine spec's `prefix_bloom=`.
    #[arg(long, default_value_t = 0)]
    pub prefix_bloom_len: usize,
    /// How random db_bench workloads draw key numbers (YCSB workloads use their own).
    #[arg(long, value_enum, default_value_t = Distribution::Uniform)]
    pub distribution: Distribution,
    /// Bytes per key (zero-padded decimal key numbers).
    #[arg(long, default_value_t = 16)]
    pub key_size: usize,
    /// Bytes per value (half-compressible).
    #[arg(long, default_value_t = 100)]
    pub value_size: usize,
    /// Lengths of written values: fixed (`--value_size` bytes each) or uniform:MIN-MAX (each
    /// value's length drawn uniformly in MIN..=MAX from the seeded generators; uniform:1-200 is
    /// the LSM-trie paper's setup). Fill, overwrite, *whilewriting and YCSB writes use it.
    #[arg(long, default_value = "fixed", value_parser = ValueSizeDist::parse)]
    pub value_size_dist: ValueSizeDist,
    /// Before every read workload, wait for the engine's background work, then evict the page
    /// cache of the database directory's files (posix_fadvise DONTNEED; no root needed), so
    /// reads start cold. Pages the engine has mmap'd may stay resident.
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1,
          default_value = "false", default_missing_value = "true")]
    pub drop_cache: bool,
    /// Before every read workload (after `--drop_cache`), this many untimed random gets of
    /// existing keys, in `--threads` threads: the measured reads then start from the caches a
    /// running store has (the LSM-trie paper measures after such a warm-up). Default: 0.
    #[arg(long, default_value_t = 0)]
    pub warmup_reads: u64,
    /// Updates per write call.
    #[arg(long, default_value_t = 1)]
    pub batch_size: usize,
    /// Sync every write to disk.
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1,
          default_value = "false", default_missing_value = "true")]
    pub sync: bool,
    /// Bytes buffered in memory before a flush (every engine).
    #[arg(long, default_value_t = DEFAULT_WRITE_BUFFER)]
    pub write_buffer_size: usize,
    /// Bytes of block cache (every engine).
    #[arg(long, default_value_t = DEFAULT_CACHE)]
    pub cache_size: usize,
    /// Bloom filter bits per key (0: no filter).
    #[arg(long, default_value_t = 10)]
    pub bloom_bits: u32,
    /// Block compression (none by default, so engines compare alike).
    #[arg(long, value_enum, default_value_t = Compression::None)]
    pub compression: Compression,
    /// After each write workload, wait until the engine's background flushes and compactions
    /// are done, and measure again ("settled" columns).
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1,
          default_value = "true", default_missing_value = "true")]
    pub settle: bool,
    /// Size at which ScreeDB cuts tables (Jungle: the live bytes a tree aims at) and RocksDB's
    /// `target_file_size_base`. Default: the engine's (64 MiB). Other engines ignore it.
    #[arg(long)]
    pub target_file_size: Option<u64>,
    /// Bytes level 1 may hold before it is compacted (ScreeDB and RocksDB; each deeper level 10x
    /// more). Default: the engine's (256 MiB). Other engines ignore it.
    #[arg(long)]
    pub max_bytes_for_level_base: Option<u64>,
    /// Level-0 tables that start a compaction into level 1 (ScreeDB's `l0_compaction_trigger`,
    /// RocksDB's `level0_file_num_compaction_trigger`). Default: the engine's (ScreeDB: its
    /// layout's, 6 for FLSM and 4 for the others; RocksDB 4). LevelDB's is fixed at 4 and fjall
    /// has none: they ignore it.
    #[arg(long)]
    pub level0_file_num_compaction_trigger: Option<usize>,
    /// Bytes of pending compaction (as the engine estimates them) at which writes are slowed:
    /// ScreeDB's `soft_pending_compaction_bytes`, RocksDB's `soft_pending_compaction_bytes_limit`.
    /// Default: the engine's (64 GiB for both). LevelDB and fjall ignore it.
    #[arg(long)]
    pub soft_pending_compaction_bytes_limit: Option<u64>,
    /// Bytes of pending compaction at which writes stop: ScreeDB's
    /// `hard_pending_compaction_bytes`, RocksDB's `hard_pending_compaction_bytes_limit`.
    /// Default: the engine's (256 GiB for both). LevelDB and fjall ignore it.
    #[arg(long)]
    pub hard_pending_compaction_bytes_limit: Option<u64>,
    /// Bytes per second writes are paced to while compaction is behind: ScreeDB's
    /// `delayed_write_rate`. Default: the engine's (16 MiB/s). RocksDB's Rust binding does not
    /// expose its own (16 MB/s when unset); the other engines ignore it.
    #[arg(long)]
    pub delayed_write_rate: Option<u64>,
    /// Jungle's compaction factor C (a tree is rewritten once its file passes C times its live
    /// bytes). Default: the layout's (3). Overridden by an engine spec's `c=`.
    #[arg(long)]
    pub compaction_factor: Option<f64>,
    /// Jungle's node size in bytes (`JungleOptions::node_bytes`: a leaf or internal node is
    /// closed at about this many bytes). Default: the layout's (4096). Other layouts ignore it.
    #[arg(long)]
    pub jungle_node_bytes: Option<usize>,
    /// Jungle's `prune_guards`: join a level-1 guard range left without a tree to its
    /// neighbour. Default: the layout's (false). Other layouts ignore it.
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    pub jungle_prune_guards: Option<bool>,
    /// Compress ScreeDB's write-ahead log records (`Options::wal_compression`: true lz4, false
    /// none). Default: the engine's own (lz4). `--compression` leaves the log alone; the other
    /// engines write theirs uncompressed (RocksDB's `wal_compression` takes only zstd, which
    /// the bundled build leaves out).
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    pub wal_compression: Option<bool>,
    /// Read tables through memory maps (ScreeDB's `mmap_reads`, RocksDB's `allow_mmap_reads`).
    /// Default: each engine's own (ScreeDB true, RocksDB false). Maps make the kernel read
    /// around every fault, so device bytes per get are best measured with `false`.
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    pub mmap_reads: Option<bool>,
    /// ScreeDB: map each table a flush or compaction writes into memory as it opens
    /// (`Options::populate_new_tables`). Default: the engine's own (true). Other engines
    /// ignore it.
    #[arg(long, num_args = 0..=1, default_missing_value = "true")]
    pub populate_new_tables: Option<bool>,
    /// Start the write-back of table files every this many bytes as they are written
    /// (ScreeDB's `Options::bytes_per_sync`, RocksDB's `bytes_per_sync`; 0: at their sync only).
    /// Default: each engine's own (ScreeDB 1 MiB, RocksDB 0). LevelDB and fjall ignore it.
    #[arg(long)]
    pub bytes_per_sync: Option<u64>,
    /// RocksDB: keep index and filter blocks in the block cache (`cache_index_and_filter_blocks`)
    /// instead of the heap, so `--cache_size` bounds them. Other engines ignore it. Default:
    /// false (RocksDB's default).
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1,
          default_value = "false", default_missing_value = "true")]
    pub cache_index_and_filter_blocks: bool,
    /// Layout of levels >= 1: flsm, leveled, trie or jungle. Default: the engine's.
    #[arg(long, value_parser = parse_layout)]
    pub layout: Option<screedb::LayoutKind>,
    /// ScreeDB's memory component: flodb or skiplist (see docs/memory.md). Default: the
    /// engine's (flodb). Other engines ignore it.
    #[arg(long, value_parser = parse_memory)]
    pub memory: Option<screedb::Memory>,
    /// Use the database in `--db` as it is; fill workloads are skipped.
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1,
          default_value = "false", default_missing_value = "true")]
    pub use_existing_db: bool,
    /// Database directory. Default: a temporary directory removed at the end. An existing
    /// database there is destroyed first unless `--use_existing_db`.
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// While each write workload runs and settles, sample space amplification (bytes of the
    /// database directory over bytes of live keys and values) every this many seconds, and
    /// report the samples' mean and maximum ("space amp mean/max (sampled)"). 0: only at the
    /// end of each workload.
    #[arg(long, default_value_t = 0.0, value_parser = parse_seconds)]
    pub space_sample_secs: f64,
    /// Seed of the key and value generators.
    #[arg(long, default_value_t = 301)]
    pub seed: u64,
    /// Print each workload's latency histogram.
    #[arg(long, value_parser = BoolishValueParser::new(), num_args = 0..=1,
          default_value = "false", default_missing_value = "true")]
    pub histogram: bool,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[derive(Debug, Parser)]
#[command(name = "bench")]
struct Flags {
    #[command(flatten)]
    args: BenchArgs,
}

fn parse_seconds(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (v == 0.0 || (0.01..=3600.0).contains(&v)) => Ok(v),
        _ => Err(format!(
            "{s:?} is not 0 or a number of seconds from 0.01 to 3600"
        )),
    }
}

fn parse_memory(s: &str) -> std::result::Result<screedb::Memory, String> {
    s.parse().map_err(|e: Error| e.to_string())
}

fn parse_layout(s: &str) -> std::result::Result<screedb::LayoutKind, String> {
    s.parse().map_err(|e: screedb::Error| e.to_string())
}

impl BenchArgs {
    /// Parses db_bench-style flags (without a program name), e.g. `["--num=1000"]`.
    pub fn from_flags<I, T>(flags: I) -> std::result::Result<BenchArgs, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let all = std::iter::once(std::ffi::OsString::from("bench"))
            .chain(flags.into_iter().map(Into::into));
        Flags::try_parse_from(all).map(|f| f.args)
    }
}

impl Default for BenchArgs {
    fn default() -> Self {
        Flags::parse_from(["bench"]).args
    }
}

/// The outcome of a run.
#[derive(Debug)]
pub struct BenchReport {
    /// The engine's name.
    pub engine: String,
    /// The settings, as `(flag, value)` pairs.
    pub config: Vec<(&'static str, String)>,
    /// One result per timed workload, in order.
    pub results: Vec<PhaseResult>,
    /// What each `stats` workload printed, with the workload it followed.
    pub stats: Vec<(String, String)>,
    /// Workloads skipped, with the reason.
    pub skipped: Vec<String>,
    /// Print latency histograms.
    pub histogram: bool,
}

/// What the columns of the tables mean, printed under them.
pub const LEGEND: &str = "\
user write: bytes of keys and values written; proc write/read: write_bytes/read_bytes of
/proc/self/io while the workload ran (bytes sent to / fetched from storage, counted when pages
are dirtied); read B/op = proc read / ops (device bytes read per operation); WA proc = proc
write / user write; WA engine = the engine's own count of bytes written / user bytes since open
(ScreeDB, RocksDB: WAL + flush + compaction; LevelDB: flush + compaction, no WAL; see
docs/benchmarks.md); \"settled\" columns include the wait for background work after the
workload; cpu s: user + system CPU seconds of the whole process (background threads too) during
the operations; op cpu µs: CPU microseconds per operation of the threads that made them alone
(not the engine's threads, not a background writer's; Linux), which leaves out the time they
waited for a core; peak RSS: the process's peak resident memory during the workload, pages of
mapped files included; peak anon: the peak of its anonymous memory (heap, stacks), sampled every
20 ms while the workload runs and settles; disk: blocks the database's files occupy; space amp =
disk / bytes of live keys and values.
";

impl BenchReport {
    /// The report as text: settings, the speed table, the I/O table, YCSB summaries,
    /// statistics, histograms.
    pub fn render(&self) -> String {
        let mut out = format!("engine: {}\n", self.engine);
        for (name, value) in &self.config {
            let _ = writeln!(out, "{name:<18} {value}");
        }
        for s in &self.skipped {
            let _ = writeln!(out, "skipped: {s}");
        }
        out.push('\n');
        out.push_str(&report::speed_table(&self.results));
        out.push('\n');
        out.push_str(&report::io_table(&self.results));
        out.push('\n');
        out.push_str(LEGEND);
        for r in self.results.iter().filter(|r| !r.per_op.is_empty()) {
            let _ = write!(out, "\n{}:\n{}", r.benchmark.name(), ycsb::summary(r));
        }
        for (after, text) in &self.stats {
            let _ = write!(out, "\nstats after {after}:\n{text}");
        }
        if self.histogram {
            for r in &self.results {
                let _ = write!(
                    out,
                    "\n{} latency histogram (mean {}):\n{}",
                    r.benchmark.name(),
                    histogram::format_nanos(r.latency.mean() as u64),
                    r.latency.render()
                );
            }
        }
        out
    }
}

/// Checks the flags and derives the workload shape.
fn shape_of(args: &BenchArgs) -> Result<Shape> {
    if args.num == 0 {
        return Err(Error::invalid("--num must be at least 1"));
    }
    let digits = decimal_digits(args.num - 1);
    if args.key_size < digits || args.key_size > 1 << 20 {
        return Err(Error::invalid(format!(
            "--key_size must be between {digits} (the digits of --num - 1) and 1048576"
        )));
    }
    if args.value_size > MAX_VALUE_SIZE {
        return Err(Error::invalid("--value_size must be at most 64 MiB"));
    }
    if args.batch_size == 0 {
        return Err(Error::invalid("--batch_size must be at least 1"));
    }
    if args.threads == 0 || args.threads > 1024 {
        return Err(Error::invalid("--threads must be between 1 and 1024"));
    }
    if args.write_buffer_size < 64 << 10 {
        return Err(Error::invalid("--write_buffer_size must be at least 65536"));
    }
    let prefix_len = args.prefix_len.unwrap_or(args.key_size.saturating_sub(2));
    if prefix_len == 0 || prefix_len > args.key_size {
        return Err(Error::invalid(format!(
            "--prefix_len must be between 1 and --key_size ({})",
            args.key_size
        )));
    }
    if args.prefix_bloom_len > 4096 {
        return Err(Error::invalid("--prefix_bloom_len must be at most 4096"));
    }
    Ok(Shape {
        num: args.num,
        reads: args.reads.unwrap_or(args.num),
        key_size: args.key_size,
        value_sizes: args.value_size_dist.resolve(args.value_size),
        batch_size: args.batch_size,
        sync: args.sync,
        threads: args.threads,
        seek_nexts: args.seek_nexts,
        prefix_len,
        distribution: args.distribution,
    })
}

fn config_of(args: &BenchArgs, shape: &Shape, dir: &str) -> Vec<(&'static str, String)> {
    vec![
        ("benchmarks", args.benchmarks.join(",")),
        ("num", shape.num.to_string()),
        ("reads", shape.reads.to_string()),
        ("threads", shape.threads.to_string()),
        ("key_size", shape.key_size.to_string()),
        (
            "value_size",
            match args.value_size_dist {
                ValueSizeDist::Fixed => format!("{} (compressible to 50%)", args.value_size),
                d @ ValueSizeDist::Uniform { .. } => format!(
                    "{d} (uniform, mean {}; compressible to 50%)",
                    shape.value_sizes.mean()
                ),
            },
        ),
        ("batch_size", shape.batch_size.to_string()),
        ("sync", shape.sync.to_string()),
        (
            "distribution",
            format!("{:?}", shape.distribution).to_lowercase(),
        ),
        ("seek_nexts", shape.seek_nexts.to_string()),
        ("prefix_len", shape.prefix_len.to_string()),
        ("prefix_bloom_len", args.prefix_bloom_len.to_string()),
        ("write_buffer_size", args.write_buffer_size.to_string()),
        ("cache_size", args.cache_size.to_string()),
        ("bloom_bits", args.bloom_bits.to_string()),
        (
            "compression",
            format!("{:?}", args.compression).to_lowercase(),
        ),
        ("settle", args.settle.to_string()),
        (
            "space_sample_secs",
            if args.space_sample_secs > 0.0 {
                format!(
                    "{} (space amp sampled during write workloads)",
                    args.space_sample_secs
                )
            } else {
                "0 (space amp at the end of each workload)".into()
            },
        ),
        (
            "drop_cache",
            if args.drop_cache {
                "true (page cache of the db's files evicted before each read workload)".into()
            } else {
                "false".into()
            },
        ),
        ("warmup_reads", args.warmup_reads.to_string()),
        (
            "cache_index_and_filter_blocks",
            args.cache_index_and_filter_blocks.to_string(),
        ),
        (
            "wal_compression",
            args.wal_compression.map_or_else(
                || "the engine's default".into(),
                |c| if c { "lz4" } else { "none" }.to_owned(),
            ),
        ),
        (
            "mmap_reads",
            args.mmap_reads
                .map_or_else(|| "the engine's default".into(), |m| m.to_string()),
        ),
        (
            "populate_new_tables",
            args.populate_new_tables
                .map_or_else(|| "the engine's default".into(), |p| p.to_string()),
        ),
        (
            "bytes_per_sync",
            args.bytes_per_sync
                .map_or_else(|| "the engine's default".into(), |n| n.to_string()),
        ),
        (
            "pending_compaction_bytes_limit (soft, hard)",
            format!(
                "{}, {}",
                args.soft_pending_compaction_bytes_limit
                    .map_or_else(|| "the engine's default".into(), |n| n.to_string()),
                args.hard_pending_compaction_bytes_limit
                    .map_or_else(|| "the engine's default".into(), |n| n.to_string()),
            ),
        ),
        (
            "delayed_write_rate",
            args.delayed_write_rate
                .map_or_else(|| "the engine's default".into(), |n| n.to_string()),
        ),
        (
            "level0_file_num_compaction_trigger",
            args.level0_file_num_compaction_trigger
                .map_or_else(|| "the engine's default".into(), |n| n.to_string()),
        ),
        ("seed", args.seed.to_string()),
        ("db", dir.to_string()),
    ]
}

/// Runs the workloads `args` names and returns their results; writes the JSON file if asked.
pub fn run(args: BenchArgs) -> Result<BenchReport> {
    let shape = shape_of(&args)?;
    let benchmarks = args
        .benchmarks
        .iter()
        .map(|name| Benchmark::parse(name.trim()))
        .collect::<Result<Vec<_>>>()?;
    let kind = EngineKind::parse(&args.engine)?;
    let config = EngineConfig {
        write_buffer_size: args.write_buffer_size,
        cache_size: args.cache_size,
        bloom_bits: args.bloom_bits,
        compression: args.compression,
        layout: args.layout,
        memory: args.memory,
        target_file_size: args.target_file_size,
        max_bytes_for_level_base: args.max_bytes_for_level_base,
        l0_compaction_trigger: args.level0_file_num_compaction_trigger,
        compaction_factor: args.compaction_factor,
        soft_pending_compaction_bytes: args.soft_pending_compaction_bytes_limit,
        hard_pending_compaction_bytes: args.hard_pending_compaction_bytes_limit,
        delayed_write_rate: args.delayed_write_rate,
        create_if_missing: !args.use_existing_db,
        jungle_node_bytes: args.jungle_node_bytes,
        jungle_prune_guards: args.jungle_prune_guards,
        mmap_reads: args.mmap_reads,
        populate_new_tables: args.populate_new_tables,
        bytes_per_sync: args.bytes_per_sync,
        cache_index_and_filter_blocks: args.cache_index_and_filter_blocks,
        prefix_bloom_len: args.prefix_bloom_len,
        // The trie's garbage threshold is set by the engine spec (`screedb:layout=trie:gc=N`).
        gc_garbage_percent: None,
        // So is FLSM's level target scale (`screedb:level_scale=N`).
        flsm_level_target_scale: None,
        // And ScreeDB's memtable run size (`screedb:run_mib=N`).
        memtable_run_size: None,
        wal_compression: args.wal_compression,
        background_nice: 0,
    };
    let temp;
    let (dir, dir_label) = match &args.db {
        Some(d) => (d.clone(), d.display().to_string()),
        None => {
            if args.use_existing_db {
                return Err(Error::invalid("--use_existing_db needs --db PATH"));
            }
            temp = tempfile::Builder::new()
                .prefix("screedb-bench-")
                .tempdir()
                .map_err(|e| Error::io("create", std::env::temp_dir(), e))?;
            let d = temp.path().join(kind.label().replace(['/', ':'], "_"));
            let label = format!("{} (temporary)", d.display());
            (d, label)
        }
    };
    if args.use_existing_db {
        if !dir.is_dir() {
            return Err(Error::NotFound(dir));
        }
    } else {
        kind.destroy(&dir)?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;

    let mut report = BenchReport {
        engine: kind.label(),
        config: config_of(&args, &shape, &dir_label),
        results: Vec::new(),
        stats: Vec::new(),
        skipped: Vec::new(),
        histogram: args.histogram,
    };
    let mut engine: Box<dyn Engine> = kind.open(&dir, &config)?;
    let live = LiveKeys::new(shape.num);
    if args.use_existing_db {
        live.set_unknown();
    }
    let mut rng = Rng::new(args.seed);
    let mut dirty = args.use_existing_db;
    let mut previous = String::from("opening");
    for b in benchmarks {
        if b == Benchmark::Stats {
            report.stats.push((previous.clone(), engine.stats_text()));
            continue;
        }
        if b.fresh_db() {
            if args.use_existing_db {
                report
                    .skipped
                    .push(format!("{} (it needs a fresh database)", b.name()));
                continue;
            }
            if dirty {
                engine.close()?;
                kind.destroy(&dir)?;
                std::fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;
                engine = kind.open(&dir, &config)?;
                live.clear();
            }
        }
        if args.drop_cache && b.reads() {
            engine.settle()?;
            sysinfo::drop_page_cache(&dir)?;
        }
        let target = Target {
            engine: &*engine,
            dir: &dir,
            live: &live,
            space_sample: (args.space_sample_secs > 0.0)
                .then(|| Duration::from_secs_f64(args.space_sample_secs)),
        };
        if args.warmup_reads > 0 && b.reads() {
            let warm = Shape {
                reads: args.warmup_reads,
                ..shape.clone()
            };
            workload::run_phase(Benchmark::ReadRandom, target, &warm, rng.next_u64(), false)?;
        }
        let result = match workload::run_phase(b, target, &shape, rng.next_u64(), args.settle) {
            Ok(result) => result,
            // A layout that cannot serve the workload (the trie has no iterators) skips it.
            Err(e @ Error::NotSupported { .. }) => {
                report.skipped.push(format!("{} ({e})", b.name()));
                continue;
            }
            Err(e) => return Err(e),
        };
        eprintln!(
            "{:<16} {:>10} ops in {:>7.2} s ({:.0} ops/s){}",
            b.name(),
            result.ops,
            result.elapsed.as_secs_f64(),
            result.ops_per_sec(),
            result
                .settled
                .as_ref()
                .map_or_else(String::new, |s| format!(
                    ", settled in {:.2} s",
                    s.elapsed.as_secs_f64()
                )),
        );
        dirty = true;
        previous = b.name().to_string();
        report.results.push(result);
    }
    engine.close()?;
    if let Some(path) = &args.json {
        let json = report::to_json(&report.config, &report.engine, &report.results);
        std::fs::write(path, json).map_err(|e| Error::io("write", path, e))?;
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_use_db_bench_names_and_defaults() {
        let a = BenchArgs::default();
        assert_eq!(a.num, 1_000_000);
        assert_eq!(a.key_size, 16);
        assert!(!a.sync);
        assert_eq!(a.benchmarks.join(","), DEFAULT_BENCHMARKS);
        let a = BenchArgs::from_flags([
            "--num=10",
            "--benchmarks=fillrandom,readrandom",
            "--key_size",
            "8",
            "--sync",
            "--use_existing_db=0",
            "--compression=none",
            "--threads=3",
            "--distribution=zipfian",
            "--settle=false",
            "--engine=leveldb-c:/tmp/x.so",
            "--level0_file_num_compaction_trigger=8",
        ])
        .unwrap();
        assert_eq!(a.level0_file_num_compaction_trigger, Some(8));
        assert_eq!(a.num, 10);
        assert_eq!(a.benchmarks, ["fillrandom", "readrandom"]);
        assert_eq!(a.key_size, 8);
        assert!(a.sync);
        assert!(!a.use_existing_db);
        assert_eq!(a.compression, Compression::None);
        assert_eq!(a.threads, 3);
        assert_eq!(a.distribution, Distribution::Zipfian);
        assert!(!a.settle);
        assert_eq!(a.engine, "leveldb-c:/tmp/x.so");
        assert!(BenchArgs::default().settle);
        assert!(BenchArgs::from_flags(["--key-size=8"]).is_err());
    }

    #[test]
    fn fills_run_in_every_thread_as_in_db_bench() {
        let args = BenchArgs::from_flags([
            "--num=500",
            "--threads=2",
            "--settle=0",
            "--benchmarks=fillrandom,fillseq,readseq",
        ])
        .unwrap();
        let report = run(args).unwrap();
        let [random, seq, scan] = &report.results[..] else {
            panic!("three results: {:?}", report.results.len());
        };
        assert_eq!((seq.ops, seq.threads), (1000, 2));
        assert_eq!(seq.user_bytes_written, 1000 * 116);
        assert_eq!(random.ops, 1000);
        // Both fillseq threads wrote the same 500 keys; the scan runs in one thread.
        assert_eq!(scan.ops, 500);
    }

    #[test]
    fn bad_flags_are_refused_with_the_flag_named() {
        let run_with = |flags: &[&str]| run(BenchArgs::from_flags(flags).unwrap()).unwrap_err();
        assert!(run_with(&["--num=0"]).to_string().contains("--num"));
        assert!(
            run_with(&["--num=100000", "--key_size=4"])
                .to_string()
                .contains("--key_size")
        );
        assert!(
            run_with(&["--benchmarks=nope"])
                .to_string()
                .contains("unknown benchmark")
        );
        assert!(
            run_with(&["--use_existing_db"])
                .to_string()
                .contains("--db")
        );
        assert!(run_with(&["--threads=0"]).to_string().contains("--threads"));
        assert!(
            run_with(&["--engine=nope"])
                .to_string()
                .contains("unknown engine")
        );
    }

    #[test]
    fn a_small_run_reports_every_workload_and_writes_json() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("out.json");
        let args = BenchArgs::from_flags([
            "--num=2000".to_string(),
            "--benchmarks=fillseq,fillrandom,overwrite,readrandom,readmissing,readseq,\
             readreverse,seekrandom,deleterandom,stats"
                .to_string(),
            "--batch_size=10".to_string(),
            "--histogram".to_string(),
            format!("--json={}", json.display()),
        ])
        .unwrap();
        let report = run(args).unwrap();
        assert_eq!(report.results.len(), 9);
        assert_eq!(report.stats.len(), 1);
        let text = report.render();
        for name in [
            "fillseq",
            "readreverse",
            "deleterandom",
            "WA engine",
            "p99.9",
            "histogram",
        ] {
            assert!(text.contains(name), "{name} missing from\n{text}");
        }
        let json = std::fs::read_to_string(&json).unwrap();
        assert!(json.contains("\"benchmark\": \"seekrandom\""), "{json}");
        assert_eq!(json.matches("\"ops\":").count(), 9);
    }

    #[test]
    fn value_size_dist_flag_parses_and_bad_ranges_name_the_flag() {
        let a = BenchArgs::default();
        assert_eq!(a.value_size_dist, ValueSizeDist::Fixed);
        assert!(!a.drop_cache);
        let a = BenchArgs::from_flags(["--value_size_dist=uniform:1-200", "--drop_cache"]).unwrap();
        assert_eq!(
            a.value_size_dist,
            ValueSizeDist::Uniform { min: 1, max: 200 }
        );
        assert!(a.drop_cache);
        for bad in ["uniform:5-2", "uniform:x", "uniform:1-67108865", "normal"] {
            let err = BenchArgs::from_flags([format!("--value_size_dist={bad}")])
                .unwrap_err()
                .to_string();
            assert!(err.contains("--value_size_dist"), "{bad}: {err}");
        }
    }

    #[test]
    fn drop_cache_runs_before_reads_and_the_report_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let args = BenchArgs::from_flags([
            format!("--db={}", dir.path().join("db").display()),
            "--num=3000".into(),
            "--benchmarks=fillrandom,readrandom,ycsb_load,ycsb_c".into(),
            "--value_size_dist=uniform:1-200".into(),
            "--drop_cache".into(),
            "--write_buffer_size=65536".into(),
        ])
        .unwrap();
        let report = run(args).unwrap();
        assert_eq!(report.results.len(), 4);
        let fill = &report.results[0];
        let per_key = fill.user_bytes_written as f64 / fill.ops as f64;
        assert!(
            per_key > 16.0 + 80.0 && per_key < 16.0 + 120.0,
            "{per_key} bytes per key and value"
        );
        let text = report.render();
        for needle in [
            "uniform:1-200",
            "drop_cache",
            "evicted before each read workload",
            "read B/op",
        ] {
            assert!(text.contains(needle), "{needle} missing from\n{text}");
        }
    }

    #[test]
    fn write_stall_limits_reach_the_engine() {
        // Each flag reaches ScreeDB's options: a value its validation refuses is named back.
        let open = |extra: &[&str]| {
            let dir = tempfile::tempdir().unwrap();
            let mut f = vec![
                format!("--db={}", dir.path().join("db").display()),
                "--num=100".into(),
                "--benchmarks=fillseq".into(),
            ];
            f.extend(extra.iter().map(|s| s.to_string()));
            run(BenchArgs::from_flags(f).unwrap())
        };
        let err = open(&[
            "--soft_pending_compaction_bytes_limit=2000",
            "--hard_pending_compaction_bytes_limit=1000",
        ])
        .unwrap_err();
        assert!(
            err.to_string().contains("hard_pending_compaction_bytes"),
            "{err}"
        );
        let err = open(&["--delayed_write_rate=1000"]).unwrap_err();
        assert!(err.to_string().contains("delayed_write_rate"), "{err}");
        let report = open(&[
            "--soft_pending_compaction_bytes_limit=1000000",
            "--hard_pending_compaction_bytes_limit=2000000",
            "--delayed_write_rate=1000000",
        ])
        .unwrap();
        let text = report.render();
        assert!(text.contains("1000000, 2000000"), "{text}");
    }

    #[test]
    fn an_existing_database_is_reused_and_fills_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let flags = |extra: &[&str]| {
            let mut f = vec![format!("--db={}", db.display()), "--num=500".into()];
            f.extend(extra.iter().map(|s| s.to_string()));
            BenchArgs::from_flags(f).unwrap()
        };
        run(flags(&["--benchmarks=fillseq"])).unwrap();
        let report = run(flags(&[
            "--benchmarks=fillseq,readrandom",
            "--use_existing_db",
        ]))
        .unwrap();
        assert_eq!(report.skipped.len(), 1);
        assert_eq!(report.results[0].found, Some(500));
    }

    #[test]
    fn an_existing_database_that_is_not_there_is_an_error() {
        // A directory without a database (a mistyped store, a compare's subdirectory) must not
        // be read as a fresh empty database.
        let dir = tempfile::tempdir().unwrap();
        let args = BenchArgs::from_flags([
            format!("--db={}", dir.path().display()),
            "--benchmarks=readrandom".into(),
            "--use_existing_db".into(),
            "--num=100".into(),
        ])
        .unwrap();
        let err = run(args).unwrap_err().to_string();
        assert!(err.contains("create_if_missing"), "{err}");
        assert!(!dir.path().join("CURRENT").exists());
    }

    #[test]
    fn prefixscan_finds_what_fillrandom_left_with_or_without_prefix_filters() {
        for bloom in ["--prefix_bloom_len=0", "--prefix_bloom_len=16"] {
            let args = BenchArgs::from_flags([
                "--num=4000",
                "--benchmarks=fillrandom,prefixscan",
                "--reads=1000",
                "--seek_nexts=9",
                "--write_buffer_size=65536",
                bloom,
            ])
            .unwrap();
            let mut args = args;
            args.prefix_len = Some(16);
            let report = run(args).unwrap();
            // Whole keys as prefixes: about 63% of the key numbers were written.
            let found = report.results[1].found.unwrap();
            assert!((530..=730).contains(&found), "{bloom}: {found} of 1000");
            assert!(report.results[1].bytes > 0);
        }
        // Groups of 100 key numbers: every group has keys.
        let args = BenchArgs::from_flags([
            "--num=4000",
            "--benchmarks=fillrandom,prefixscan",
            "--reads=200",
            "--seek_nexts=99",
            "--prefix_bloom_len=14",
        ])
        .unwrap();
        assert_eq!(run(args).unwrap().results[1].found, Some(200));
        let err = BenchArgs::from_flags(["--prefix_len=17"]).map(|a| shape_of(&a));
        assert!(
            matches!(err, Ok(Err(ref e)) if e.to_string().contains("--prefix_len")),
            "{err:?}"
        );
    }
}
