//! `check`, `repair` and `stats`: the health and the shape of a whole database.

use std::io::Write;
use std::path::Path;

use screedb::check::check_database;
use screedb::{Db, Layout, LayoutKind, Memory, Options};

use crate::CliResult;

/// `1 edit`, `2 edits`; `entry` becomes `entries`.
fn plural(n: u64, word: &str) -> String {
    match (n, word.strip_suffix('y')) {
        (1, _) => format!("1 {word}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        (_, None) => format!("{n} {word}s"),
    }
}

/// `screedb repair`: rebuilds the database in `layout` (default: the one its MANIFEST records,
/// else the default layout); prints a summary on `out` and the full report, naming every table
/// and block lost, on stderr.
pub fn repair(dir: &Path, layout: Option<LayoutKind>, out: &mut dyn Write) -> CliResult {
    let mut options = Options::default();
    let kind = layout.unwrap_or_else(|| {
        screedb::check::stored_layout(dir, &options).unwrap_or(options.layout.kind())
    });
    options.layout = Layout::with_defaults(kind);
    let report = screedb::repair_db(dir, &options)?;
    eprint!("{report}");
    let lost = report.tables_lost.len() + report.tables_salvaged.len() + report.log_errors.len();
    writeln!(
        out,
        "{}: repaired ({kind} layout), {} keys in {} tables{}",
        dir.display(),
        report.keys_written,
        report.tables_written,
        if lost == 0 {
            ""
        } else {
            "; some data was lost (see above)"
        }
    )?;
    Ok(())
}

/// `screedb check`: verifies the database and prints a summary; any problem is an error.
pub fn check(dir: &Path, out: &mut dyn Write) -> CliResult {
    let r = check_database(dir, &Options::default())?;
    writeln!(out, "{}: OK", dir.display())?;
    let manifest = r
        .manifest
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    writeln!(
        out,
        "  manifest  {manifest}: {}, last sequence {}",
        plural(r.manifest_edits, "edit"),
        r.last_sequence
    )?;
    writeln!(
        out,
        "  tables    {} ({} bytes, {} verified), {} ({})",
        r.tables,
        r.table_bytes,
        plural(r.data_blocks, "data block"),
        plural(r.entries, "entry"),
        plural(r.deletions, "deletion")
    )?;
    let levels: Vec<String> = r
        .tables_per_level
        .iter()
        .enumerate()
        .map(|(l, n)| format!("L{l} {n}"))
        .collect();
    writeln!(out, "  levels    {}", levels.join(", "))?;
    writeln!(
        out,
        "  WAL       {} ({} bytes): {}, {}",
        plural(r.wal_files as u64, "file"),
        r.wal_bytes,
        plural(r.wal_records, "record"),
        plural(r.wal_updates, "update")
    )?;
    for (file, reason) in &r.torn_tails {
        writeln!(
            out,
            "  note: {} ends in a torn record, dropped at the next open: {reason}",
            file.display()
        )?;
    }
    if !r.unreferenced_tables.is_empty() {
        let numbers: Vec<String> = r.unreferenced_tables.iter().map(u64::to_string).collect();
        writeln!(
            out,
            "  note: tables not in the manifest, removed at the next open: {}",
            numbers.join(", ")
        )?;
    }
    Ok(())
}

/// `screedb stats`: opens the database and prints its counters and levels.
pub fn stats(dir: &Path, memory: Option<Memory>, out: &mut dyn Write) -> CliResult {
    let mut options = Options::default();
    if let Some(memory) = memory {
        options.memory = memory;
    }
    options.layout = screedb::Layout::with_defaults(screedb::check::stored_layout(dir, &options)?);
    let db = Db::open(dir, options)?;
    let s = db.stats();
    let levels = db.property("screedb.levels").unwrap_or_default();
    let memory = db
        .property("screedb.approximate-memory-usage")
        .unwrap_or_default();
    let component = db.property("screedb.memory").unwrap_or_default();
    db.close()?;
    let rows: [(&str, u64); 14] = [
        ("user bytes written", s.user_bytes_written),
        ("WAL bytes written", s.wal_bytes_written),
        ("flush bytes written", s.flush_bytes_written),
        ("compaction bytes written", s.compaction_bytes_written),
        ("compaction bytes read", s.compaction_bytes_read),
        ("flushes", s.flushes),
        ("compactions", s.compactions),
        ("trivial moves", s.trivial_moves),
        (
            "compactions stopped by close",
            s.compactions_stopped_by_close,
        ),
        ("write stalls (slowdowns)", s.stall_slowdowns),
        ("write stalls (stops)", s.stall_stops),
        ("stall microseconds", s.stall_micros),
        ("WAL syncs", s.wal_syncs),
        ("write groups", s.write_groups),
    ];
    writeln!(out, "{}", dir.display())?;
    for (name, value) in rows {
        writeln!(out, "  {name:<26} {value}")?;
    }
    writeln!(
        out,
        "  {:<26} {:.3}  ((WAL + flush + compaction bytes) / user bytes, since creation)",
        "write amplification",
        s.write_amplification()
    )?;
    writeln!(
        out,
        "  {:<26} {} hits, {} misses (this open)",
        "block cache", s.block_cache_hits, s.block_cache_misses
    )?;
    writeln!(out, "  {:<26} {memory} bytes", "memtable memory")?;
    writeln!(out, "  {:<26} {component}", "memory component")?;
    for (level, bytes) in s.compaction_bytes_written_per_level.iter().enumerate() {
        if *bytes > 0 {
            writeln!(out, "  {:<26} {bytes}", format!("compacted into L{level}"))?;
        }
    }
    writeln!(out, "levels:")?;
    for line in levels.lines() {
        writeln!(out, "  {line}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_pluralised() {
        assert_eq!(plural(1, "edit"), "1 edit");
        assert_eq!(plural(0, "edit"), "0 edits");
        assert_eq!(plural(2, "entry"), "2 entries");
        assert_eq!(plural(1, "entry"), "1 entry");
    }
}
