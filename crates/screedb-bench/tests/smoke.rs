#![allow(clippy::unwrap_used, reason = "test code")]
//! Every benchmark name runs at a tiny size against ScreeDB and reports what it did.

use screedb_bench::workload::ALL;
use screedb_bench::{BenchArgs, run};

#[test]
fn every_benchmark_runs_at_a_tiny_size() {
    let names: Vec<&str> = ALL.iter().map(|(n, _)| *n).collect();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let args = BenchArgs::from_flags([
        "--num=400".to_string(),
        "--reads=300".to_string(),
        "--threads=2".to_string(),
        "--seek_nexts=3".to_string(),
        "--write_buffer_size=65536".to_string(),
        format!("--benchmarks={}", names.join(",")),
        format!("--json={}", json.display()),
    ])
    .unwrap();
    let report = run(args).unwrap();
    let timed: Vec<&str> = names.iter().copied().filter(|n| *n != "stats").collect();
    let ran: Vec<&str> = report.results.iter().map(|r| r.benchmark.name()).collect();
    assert_eq!(ran, timed);
    for r in &report.results {
        assert!(r.ops > 0, "{} did nothing", r.benchmark.name());
        assert!(
            r.latency.count() > 0,
            "{} recorded no latency",
            r.benchmark.name()
        );
    }
    let by_name = |n: &str| {
        report
            .results
            .iter()
            .find(|r| r.benchmark.name() == n)
            .unwrap()
    };
    // Two reader threads each do --reads.
    assert_eq!(by_name("readrandom").ops, 600);
    assert_eq!(by_name("ycsb_load").ops, 400);
    assert_eq!(by_name("ycsb_a").ops, 300);
    assert_eq!(by_name("ycsb_c").per_op.len(), 1);
    assert_eq!(
        by_name("ycsb_c").per_op[0].not_found,
        0,
        "every YCSB record is found"
    );
    let e = by_name("ycsb_e");
    assert!(e.per_op.iter().any(|o| o.name == "SCAN"));
    let f = by_name("ycsb_f");
    assert!(f.per_op.iter().any(|o| o.name == "READ-MODIFY-WRITE"));
    assert!(by_name("readwhilewriting").background_writes.is_some());
    assert!(by_name("ycsb_load").space_amp().is_some());
    let text = report.render();
    for needle in [
        "[OVERALL], Throughput(ops/sec)",
        "[READ], 99thPercentileLatency(us)",
        "space amp",
        "cpu s",
    ] {
        assert!(text.contains(needle), "{needle} missing from\n{text}");
    }
    let json = std::fs::read_to_string(&json).unwrap();
    assert_eq!(json.matches("\"ops\":").count(), timed.len());
    assert!(json.contains("\"READ-MODIFY-WRITE\""));
}

#[test]
fn zipfian_reads_find_keys_after_a_zipfian_fill() {
    let report = run(BenchArgs::from_flags([
        "--num=2000",
        "--distribution=zipfian",
        "--benchmarks=fillrandom,readrandom",
    ])
    .unwrap())
    .unwrap();
    let fill = &report.results[0];
    let live = fill.live_bytes.unwrap() / 116;
    // A skewed fill with replacement leaves far fewer distinct keys than a uniform one (63%).
    // (uniform: 2000 * (1 - 1/e) = 1264, within about 20)
    assert!(live < 1200, "{live} distinct keys");
    let found = report.results[1].found.unwrap();
    // Uniform reads would find the share of keys that exist (56%); skewed ones find more.
    assert!(found > live + 100, "hot keys are found: {found}");
}

/// `compare --json out.json` writes each engine's results beside it (out-<engine>.json).
#[test]
fn compare_writes_one_json_file_per_engine() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        compare: screedb_bench::compare::CompareArgs,
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let cli = Cli::try_parse_from([
        "compare".to_string(),
        "--engines=screedb,screedb:layout=leveled".to_string(),
        "--num=300".to_string(),
        "--benchmarks=fillrandom".to_string(),
        format!("--json={}", json.display()),
    ])
    .unwrap();
    let comparison = screedb_bench::compare::run(cli.compare).unwrap();
    assert_eq!(comparison.reports.len(), 2);
    for name in ["out-screedb.json", "out-screedb_layout_leveled.json"] {
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert!(text.contains("\"fillrandom\""), "{name}: {text}");
    }
}
