//! `compare`: the same workloads on several engines in turn, one markdown table with ratios.
//!
//! Each engine runs the whole `--benchmarks` list on a fresh directory with the same flags
//! (seed included, so the same keys in the same order). The table has one row per workload and
//! measure, one column per engine with the absolute figure and its ratio to the baseline engine
//! (`--baseline`, default the first): `x1.50` means 1.5 times the baseline's figure, whichever
//! way is better for that measure (higher for ops/s and for `bg writes/s`, the puts per second
//! of the *whilewriting workloads' writer; lower for the rest).

use std::fmt::Write as _;

use screedb::{Error, Result};

use crate::engine::EngineKind;
use crate::report::{format_bytes, opt_ratio};
use crate::workload::PhaseResult;
use crate::{BenchArgs, BenchReport};

/// The flags of `compare`: every benchmark flag, plus the engines. A flag given twice takes
/// the last value (so scripts can append overrides).
#[derive(Debug, Clone, clap::Args)]
#[command(rename_all = "snake_case", args_override_self = true)]
pub struct CompareArgs {
    /// Comma-separated engines, run in this order (see `--engine`). `screedb:layout=leveled`,
    /// `screedb:memory=flodb`, `screedb:layout=leveled:memory=flodb` run ScreeDB with those
    /// options (over `--layout`/`--memory`); the column is headed by the spec.
    #[arg(long, value_delimiter = ',', default_value = "screedb")]
    pub engines: Vec<String>,
    /// The engine the ratios are relative to. Default: the first of `--engines`.
    #[arg(long)]
    pub baseline: Option<String>,
    /// Also write the markdown table to this file.
    #[arg(long)]
    pub markdown: Option<std::path::PathBuf>,
    /// The benchmark flags, applied to every engine.
    #[command(flatten)]
    pub bench: BenchArgs,
}

/// The outcome of a comparison.
#[derive(Debug)]
pub struct Comparison {
    /// The engines' reports, in run order.
    pub reports: Vec<BenchReport>,
    /// Engines that failed, with the error.
    pub failed: Vec<(String, String)>,
    /// The baseline engine's label.
    pub baseline: String,
}

/// Runs every engine of `args` in turn; an engine that fails is reported and skipped.
pub fn run(args: CompareArgs) -> Result<Comparison> {
    if args.engines.is_empty() {
        return Err(Error::invalid("--engines needs at least one engine"));
    }
    if args.bench.use_existing_db {
        return Err(Error::invalid(
            "compare runs every engine on a fresh database: drop --use_existing_db",
        ));
    }
    // Every name is checked before the first engine runs, and written the way the columns are
    // headed (a ScreeDB spec's options in a fixed order).
    let engines = args
        .engines
        .iter()
        .map(|e| EngineKind::parse(e.trim()).map(|k| k.label()))
        .collect::<Result<Vec<_>>>()?;
    let baseline = match &args.baseline {
        Some(b) => EngineKind::parse(b.trim())?.label(),
        None => engines[0].clone(),
    };
    if !engines.contains(&baseline) {
        return Err(Error::invalid(format!(
            "--baseline {baseline} is not one of --engines"
        )));
    }
    let mut out = Comparison {
        reports: Vec::new(),
        failed: Vec::new(),
        baseline,
    };
    for engine in &engines {
        let mut bench = args.bench.clone();
        bench.engine = engine.clone();
        // `--json out.json` writes one file per engine: out-<engine>.json.
        bench.json = args.bench.json.as_deref().map(|p| per_engine(p, engine));
        if let Some(parent) = &args.bench.db {
            bench.db = Some(parent.join(engine.replace(['/', ':'], "_")));
        }
        eprintln!("== {engine}");
        match crate::run(bench) {
            Ok(r) => out.reports.push(r),
            Err(e) => {
                eprintln!("== {engine} failed: {e}");
                out.failed.push((engine.clone(), e.to_string()));
            }
        }
    }
    if let Some(path) = &args.markdown {
        std::fs::write(path, out.markdown()).map_err(|e| Error::io("write", path, e))?;
    }
    Ok(out)
}

/// `path` with `-<engine>` before its extension (the engine's spec made a file name).
fn per_engine(path: &std::path::Path, engine: &str) -> std::path::PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy())
        .unwrap_or_default();
    let tag = engine.replace(['/', ':', '='], "_");
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{tag}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{tag}"),
    };
    path.with_file_name(name)
}

type Measure = (
    &'static str,
    fn(&PhaseResult) -> Option<f64>,
    fn(f64) -> String,
);

const MEASURES: [Measure; 10] = [
    ("ops/s", |r| Some(r.ops_per_sec()), |v| format!("{v:.0}")),
    (
        "bg writes/s",
        |r| {
            r.background_writes
                .map(|w| w as f64 / r.elapsed.as_secs_f64().max(1e-9))
        },
        |v| format!("{v:.0}"),
    ),
    (
        "p99 µs",
        |r| Some(r.latency.percentile(99.0) as f64 / 1000.0),
        |v| format!("{v:.1}"),
    ),
    (
        "WA (settled)",
        |r| r.process_wa_settled().or_else(|| r.process_wa()),
        |v| format!("{v:.2}"),
    ),
    ("cpu s", |r| r.cpu_seconds, |v| format!("{v:.2}")),
    (
        "op cpu µs",
        |r| r.cpu_micros_per_op(),
        |v| format!("{v:.3}"),
    ),
    (
        "disk",
        |r| Some(r.disk_bytes as f64),
        |v| format_bytes(v as u64),
    ),
    ("space amp", |r| r.space_amp(), |v| format!("{v:.2}")),
    (
        "space amp mean (sampled)",
        |r| r.space_amp_sampled_mean(),
        |v| format!("{v:.2}"),
    ),
    (
        "space amp max (sampled)",
        |r| r.space_amp_sampled_max(),
        |v| format!("{v:.2}"),
    ),
];

impl Comparison {
    /// The markdown table: one row per workload and measure, one column per engine.
    pub fn markdown(&self) -> String {
        let base = self.reports.iter().find(|r| r.engine == self.baseline);
        let mut out = String::from("| benchmark | measure |");
        for r in &self.reports {
            let _ = write!(out, " {} |", r.engine);
        }
        out.push_str("\n|---|---|");
        out.push_str(&"---:|".repeat(self.reports.len()));
        out.push('\n');
        let Some(first) = self.reports.first() else {
            return out;
        };
        for (i, phase) in first.results.iter().enumerate() {
            let name = phase.benchmark.name();
            for (measure, get, fmt) in MEASURES {
                let writes = phase.user_bytes_written > 0;
                if !writes && measure == "WA (settled)" {
                    continue;
                }
                let base_v = base.and_then(|b| b.results.get(i)).and_then(get);
                let mut row = format!("| {name} | {measure} |");
                let mut any = false;
                for r in &self.reports {
                    let v = r
                        .results
                        .get(i)
                        .filter(|p| p.benchmark.name() == name)
                        .and_then(get);
                    any |= v.is_some();
                    let cell = match (v, base_v) {
                        (Some(v), Some(b)) if r.engine != self.baseline && b > 0.0 => {
                            format!("{} (x{})", fmt(v), opt_ratio(Some(v / b)))
                        }
                        (Some(v), _) => fmt(v),
                        (None, _) => "-".into(),
                    };
                    let _ = write!(row, " {cell} |");
                }
                if any {
                    out.push_str(&row);
                    out.push('\n');
                }
            }
        }
        for (engine, err) in &self.failed {
            let _ = writeln!(out, "\n{engine} failed: {err}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_runs_make_one_table_with_ratios() {
        let mut bench =
            BenchArgs::from_flags(["--num=300", "--benchmarks=fillrandom,readrandom"]).unwrap();
        bench.settle = false;
        let args = CompareArgs {
            // A name that parses but fails when opened, after screedb ran.
            engines: vec!["screedb".into(), "leveldb-c:/nonexistent/lib.so".into()],
            baseline: None,
            markdown: None,
            bench,
        };
        let c = run(args).unwrap();
        assert_eq!(c.reports.len(), 1);
        assert_eq!(c.failed.len(), 1);
        let mut c = c;
        let again = crate::run(
            BenchArgs::from_flags(["--num=300", "--benchmarks=fillrandom,readrandom"]).unwrap(),
        )
        .unwrap();
        c.reports.push(BenchReport {
            engine: "screedb-2".into(),
            ..again
        });
        let md = c.markdown();
        assert!(
            md.starts_with("| benchmark | measure | screedb | screedb-2 |"),
            "{md}"
        );
        assert!(md.contains("| fillrandom | ops/s |"), "{md}");
        assert!(md.contains("| readrandom | p99 µs |"), "{md}");
        assert!(md.contains("(x"), "ratios to the baseline: {md}");
        assert!(
            md.contains("leveldb-c:/nonexistent/lib.so failed: "),
            "{md}"
        );
        assert!(
            !md.contains("| readrandom | WA"),
            "reads have no WA row: {md}"
        );
        assert!(
            !md.contains("(sampled)"),
            "no sampled rows unless --space_sample_secs: {md}"
        );
    }

    #[test]
    fn sampled_space_amp_gets_rows_for_write_workloads_only() {
        let bench = BenchArgs::from_flags([
            "--num=3000",
            "--benchmarks=fillrandom,readrandom",
            "--space_sample_secs=0.01",
        ])
        .unwrap();
        let args = CompareArgs {
            engines: vec!["screedb".into()],
            baseline: None,
            markdown: None,
            bench,
        };
        let c = run(args).unwrap();
        let results = &c.reports[0].results;
        assert!(!results[0].space_samples.is_empty());
        assert!(results[0].space_samples.iter().all(|s| *s > 0.0));
        assert!(results[1].space_samples.is_empty(), "reads are not sampled");
        let md = c.markdown();
        assert!(
            md.contains("| fillrandom | space amp mean (sampled) |"),
            "{md}"
        );
        assert!(
            md.contains("| fillrandom | space amp max (sampled) |"),
            "{md}"
        );
        assert!(!md.contains("| readrandom | space amp mean"), "{md}");
        for bad in ["-1", "0.001", "nan", "x"] {
            let err = BenchArgs::from_flags([format!("--space_sample_secs={bad}")])
                .unwrap_err()
                .to_string();
            assert!(err.contains("number of seconds"), "{bad}: {err}");
        }
    }

    #[test]
    fn screedb_specs_head_their_columns_and_bad_ones_stop_the_run_first() {
        let bench =
            BenchArgs::from_flags(["--num=200", "--benchmarks=fillrandom", "--settle=0"]).unwrap();
        let args = CompareArgs {
            engines: vec![
                "screedb".into(),
                "screedb:memory=flodb:layout=leveled".into(),
            ],
            baseline: Some("screedb:layout=leveled:memory=flodb".into()),
            markdown: None,
            bench: bench.clone(),
        };
        let md = run(args).unwrap().markdown();
        assert!(
            md.starts_with(
                "| benchmark | measure | screedb | screedb:layout=leveled:memory=flodb |"
            ),
            "{md}"
        );
        assert!(md.contains("(x"), "the baseline is found by its spec: {md}");
        let args = CompareArgs {
            engines: vec![
                "screedb".into(),
                "screedb:layout=tiered".into(),
                "nope".into(),
            ],
            baseline: None,
            markdown: None,
            bench,
        };
        let err = run(args).unwrap_err().to_string();
        assert!(err.contains("screedb:layout=tiered"), "{err}");
    }

    #[test]
    fn the_baseline_must_be_one_of_the_engines() {
        let args = CompareArgs {
            engines: vec!["screedb".into()],
            baseline: Some("fjall".into()),
            markdown: None,
            bench: BenchArgs::default(),
        };
        assert!(run(args).unwrap_err().to_string().contains("--baseline"));
    }
}
