//! The benchmark report: two readable tables (speed and latency; I/O and space) and JSON.

use std::fmt::Write as _;

use crate::histogram::format_nanos;
use crate::workload::PhaseResult;

/// `1536` -> `1.5 KiB`, and so on.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A ratio with two decimals, or `-` when unknown.
pub fn opt_ratio(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.2}"))
}

/// Lays out rows under a header, each column as wide as its widest cell; the first column is
/// left-aligned, the others right-aligned.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.zip(&widths).enumerate() {
            let pad = w - cell.chars().count();
            if i == 0 {
                out.push_str(cell);
                out.push_str(&" ".repeat(pad));
            } else {
                out.push_str("  ");
                out.push_str(&" ".repeat(pad));
                out.push_str(cell);
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(&mut header.iter().copied());
    let total: usize = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
    out.push_str(&"-".repeat(total));
    out.push('\n');
    for row in rows {
        out.push_str(&line(&mut row.iter().map(String::as_str)));
    }
    out
}

/// The speed and latency table: one row per workload.
pub fn speed_table(results: &[PhaseResult]) -> String {
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let h = &r.latency;
            vec![
                r.benchmark.name().to_string(),
                r.ops.to_string(),
                format!("{:.0}", r.ops_per_sec()),
                format!("{:.3}", r.micros_per_op()),
                format!("{:.1}", r.mb_per_sec()),
                format_nanos(h.percentile(50.0)),
                format_nanos(h.percentile(99.0)),
                format_nanos(h.percentile(99.9)),
                format_nanos(h.max()),
                r.found
                    .map_or_else(String::new, |f| format!("{f} of {}", r.ops)),
                r.background_writes
                    .map_or_else(String::new, |w| w.to_string()),
            ]
        })
        .collect();
    table(
        &[
            "benchmark",
            "ops",
            "ops/s",
            "µs/op",
            "MB/s",
            "p50",
            "p99",
            "p99.9",
            "max",
            "found",
            "bg writes",
        ],
        &rows,
    )
}

/// The I/O and space table: process I/O, write amplification before/after settling, disk use.
pub fn io_table(results: &[PhaseResult]) -> String {
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            let io = |f: fn(&crate::sysinfo::IoCounters) -> u64| {
                r.io.as_ref()
                    .map_or_else(|| "-".into(), |io| format_bytes(f(io)))
            };
            let settled = r.settled.as_ref();
            vec![
                r.benchmark.name().to_string(),
                format_bytes(r.user_bytes_written),
                io(|io| io.write_bytes),
                io(|io| io.read_bytes),
                r.read_bytes_per_op()
                    .map_or_else(|| "-".into(), |b| format!("{b:.0}")),
                opt_ratio(r.process_wa()),
                opt_ratio(r.engine_wa),
                settled.map_or_else(
                    || "-".into(),
                    |s| format!("{:.2}s", s.elapsed.as_secs_f64()),
                ),
                opt_ratio(r.process_wa_settled()),
                opt_ratio(settled.and_then(|s| s.engine_wa)),
                r.cpu_seconds
                    .map_or_else(|| "-".into(), |c| format!("{c:.2}")),
                r.cpu_micros_per_op()
                    .map_or_else(|| "-".into(), |c| format!("{c:.3}")),
                r.peak_rss.map_or_else(|| "-".into(), format_bytes),
                r.peak_anon_rss.map_or_else(|| "-".into(), format_bytes),
                format_bytes(r.disk_bytes),
                opt_ratio(r.space_amp()),
            ]
        })
        .collect();
    table(
        &[
            "benchmark",
            "user write",
            "proc write",
            "proc read",
            "read B/op",
            "WA proc",
            "WA engine",
            "settle",
            "WA proc settled",
            "WA engine settled",
            "cpu s",
            "op cpu µs",
            "peak RSS",
            "peak anon",
            "disk",
            "space amp",
        ],
        &rows,
    )
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_num(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v}"),
        _ => "null".into(),
    }
}

fn json_u64(v: Option<u64>) -> String {
    v.map_or_else(|| "null".into(), |v| v.to_string())
}

/// YCSB's per-operation latencies as a JSON object keyed by operation.
fn per_op_json(ops: &[crate::workload::OpStats]) -> String {
    let mut out = String::from("{");
    for (i, op) in ops.iter().enumerate() {
        let h = &op.latency;
        let _ = write!(
            out,
            "{}{}: {{\"count\": {}, \"not_found\": {}, \"latency_ns_mean\": {}, \
             \"latency_ns_p50\": {}, \"latency_ns_p95\": {}, \"latency_ns_p99\": {}, \
             \"latency_ns_max\": {}}}",
            if i == 0 { "" } else { ", " },
            json_str(op.name),
            h.count(),
            op.not_found,
            json_num(Some(h.mean())),
            h.percentile(50.0),
            h.percentile(95.0),
            h.percentile(99.0),
            h.max()
        );
    }
    out.push('}');
    out
}

/// The whole run as a JSON document: `config` (name/value strings) and one object per result.
pub fn to_json(config: &[(&str, String)], engine: &str, results: &[PhaseResult]) -> String {
    let mut out = String::from("{\n  \"engine\": ");
    out.push_str(&json_str(engine));
    out.push_str(",\n  \"config\": {");
    for (i, (name, value)) in config.iter().enumerate() {
        let sep = if i == 0 { "" } else { ", " };
        let _ = write!(out, "{sep}{}: {}", json_str(name), json_str(value));
    }
    out.push_str("},\n  \"results\": [");
    for (i, r) in results.iter().enumerate() {
        let h = &r.latency;
        let settled = r.settled.as_ref();
        let fields = [
            ("benchmark", json_str(r.benchmark.name())),
            ("ops", r.ops.to_string()),
            ("seconds", json_num(Some(r.elapsed.as_secs_f64()))),
            ("ops_per_sec", json_num(Some(r.ops_per_sec()))),
            ("micros_per_op", json_num(Some(r.micros_per_op()))),
            ("mb_per_sec", json_num(Some(r.mb_per_sec()))),
            ("latency_ns_p50", h.percentile(50.0).to_string()),
            ("latency_ns_p99", h.percentile(99.0).to_string()),
            ("latency_ns_p999", h.percentile(99.9).to_string()),
            ("latency_ns_max", h.max().to_string()),
            ("latency_ns_mean", json_num(Some(h.mean()))),
            ("found", json_u64(r.found)),
            ("user_bytes_written", r.user_bytes_written.to_string()),
            (
                "process_bytes_written",
                json_u64(r.io.map(|io| io.write_bytes)),
            ),
            ("process_bytes_read", json_u64(r.io.map(|io| io.read_bytes))),
            ("process_bytes_read_per_op", json_num(r.read_bytes_per_op())),
            (
                "proc_io_write_bytes",
                json_u64(r.io.map(|io| io.write_bytes)),
            ),
            (
                "proc_io_cancelled_write_bytes",
                json_u64(r.io.map(|io| io.cancelled_write_bytes)),
            ),
            ("proc_io_wchar", json_u64(r.io.map(|io| io.wchar))),
            ("proc_io_rchar", json_u64(r.io.map(|io| io.rchar))),
            ("write_amp_process", json_num(r.process_wa())),
            ("write_amp_engine", json_num(r.engine_wa)),
            (
                "settle_seconds",
                json_num(settled.map(|s| s.elapsed.as_secs_f64())),
            ),
            (
                "write_amp_process_settled",
                json_num(r.process_wa_settled()),
            ),
            (
                "write_amp_engine_settled",
                json_num(settled.and_then(|s| s.engine_wa)),
            ),
            ("disk_bytes", r.disk_bytes.to_string()),
            ("live_bytes", json_u64(r.live_bytes)),
            ("space_amp", json_num(r.space_amp())),
            (
                "space_amp_sampled_mean",
                json_num(r.space_amp_sampled_mean()),
            ),
            ("space_amp_sampled_max", json_num(r.space_amp_sampled_max())),
            ("space_samples", r.space_samples.len().to_string()),
            ("cpu_seconds", json_num(r.cpu_seconds)),
            ("op_cpu_seconds", json_num(r.op_cpu_seconds)),
            (
                "cpu_seconds_settled",
                json_num(settled.and_then(|s| s.cpu_seconds)),
            ),
            ("peak_rss_bytes", json_u64(r.peak_rss)),
            ("peak_anon_rss_bytes", json_u64(r.peak_anon_rss)),
            ("threads", r.threads.to_string()),
            ("background_writes", json_u64(r.background_writes)),
            ("operations", per_op_json(&r.per_op)),
        ];
        out.push_str(if i == 0 { "\n    {" } else { ",\n    {" });
        for (j, (name, value)) in fields.iter().enumerate() {
            let sep = if j == 0 { "" } else { ", " };
            let _ = write!(out, "{sep}{}: {value}", json_str(name));
        }
        out.push('}');
    }
    out.push_str("\n  ]\n}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_shown_in_binary_units() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(1536), "1.5 KiB");
        assert_eq!(format_bytes(3 << 30), "3.0 GiB");
    }

    #[test]
    fn tables_align_their_columns() {
        let t = table(
            &["name", "n"],
            &[
                vec!["a".into(), "1".into()],
                vec!["longer".into(), "12345".into()],
            ],
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "name        n");
        assert_eq!(lines[2], "a           1");
        assert_eq!(lines[3], "longer  12345");
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_str("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
        assert_eq!(json_num(Some(f64::NAN)), "null");
    }
}
