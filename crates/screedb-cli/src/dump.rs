//! `dump-wal`, `dump-table` and `dump-manifest`: the contents of one file, read through the
//! engine's format modules. Damage stops the dump with the engine's corruption error, which names
//! the file and the byte offset; everything before it has been printed.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use screedb::comparator::{InternalKeyComparator, default_comparator};
use screedb::filename::{self, FileKind};
use screedb::fs::{Fs, OsFs, RandomAccessFile};
use screedb::iter::InternalIterator;
use screedb::key::{ValueKind, parse_internal_key};
use screedb::manifest::{FileMeta, VersionEdit};
use screedb::table::{TableCache, TableOptions};
use screedb::wal::{LogReader, RecoveryMode};
use screedb::write_batch::{BatchOp, WriteBatch};

use crate::CliResult;
use crate::escape::{escape, escape_value};

/// Longest value shown in full unless `--full-values`.
const VALUE_PREVIEW: usize = 48;

/// The arguments of `dump-wal`.
#[derive(Debug, clap::Args)]
pub struct WalArgs {
    /// The log file (`NNNNNN.log`).
    file: PathBuf,
    /// Drop a torn last record (as recovery does) instead of reporting it as corruption.
    #[arg(long)]
    tolerate_torn_tail: bool,
    /// Show whole values (by default long values are cut).
    #[arg(long)]
    full_values: bool,
}

/// The arguments of `dump-table`.
#[derive(Debug, clap::Args)]
pub struct TableArgs {
    /// The table file (`NNNNNN.sst`).
    file: PathBuf,
    /// Show at most this many entries.
    #[arg(long)]
    limit: Option<u64>,
    /// Show whole values (by default long values are cut).
    #[arg(long)]
    full_values: bool,
}

/// The arguments of `dump-manifest`.
#[derive(Debug, clap::Args)]
pub struct ManifestArgs {
    /// The MANIFEST file (`MANIFEST-NNNNNN`).
    file: PathBuf,
    /// Drop a torn last edit (as recovery does) instead of reporting it as corruption.
    #[arg(long)]
    tolerate_torn_tail: bool,
}

fn open(path: &Path) -> screedb::Result<Arc<dyn RandomAccessFile>> {
    OsFs.open(path)
}

fn mode(tolerate: bool) -> RecoveryMode {
    if tolerate {
        RecoveryMode::TolerateTornTail
    } else {
        RecoveryMode::Strict
    }
}

fn kind_name(kind: ValueKind) -> &'static str {
    match kind {
        ValueKind::Value => "put",
        ValueKind::Deletion => "del",
    }
}

/// An internal key as `user_key @seq kind`.
fn show_ikey(ikey: &[u8]) -> String {
    match parse_internal_key(ikey) {
        Some(p) => format!("{} @{} {}", escape(p.user_key), p.seq, kind_name(p.kind)),
        None if ikey.is_empty() => "(none)".to_string(),
        None => format!("(malformed internal key {})", escape(ikey)),
    }
}

/// A strict read's corruption, with a hint when the damage may be the end of a live log: the
/// newest WAL of a database that is open, or was not closed, ends in a torn record or (with the
/// memory-mapped WAL) in the zeros reserved ahead of the last record.
fn hint_tolerant(e: screedb::Error, args: &WalArgs) -> screedb::Error {
    match e {
        screedb::Error::Corruption {
            file,
            offset,
            reason,
        } if !args.tolerate_torn_tail => screedb::Error::corruption(
            file,
            offset,
            format!(
                "{reason} (if this is the newest log of a database that is open or was not \
                 closed, its end may be a torn record or the zeros reserved ahead of it: \
                 --tolerate-torn-tail reads it as recovery does)"
            ),
        ),
        other => other,
    }
}

/// `screedb dump-wal`.
pub fn wal(args: &WalArgs, out: &mut dyn Write) -> CliResult {
    let path = &args.file;
    let file = open(path)?;
    writeln!(out, "{}: {} bytes", path.display(), file.size())?;
    let mut reader = LogReader::new(file, path.clone(), mode(args.tolerate_torn_tail));
    let preview = if args.full_values { 0 } else { VALUE_PREVIEW };
    let (mut records, mut updates, mut compressed) = (0u64, 0u64, 0u64);
    while let Some(record) = reader.read_record().map_err(|e| hint_tolerant(e, args))? {
        let offset = reader.last_record_offset();
        let stored = if reader.last_record_compressed() {
            compressed += 1;
            format!(
                ", compressed: {} bytes stored for {}",
                reader.last_record_stored_bytes(),
                record.len()
            )
        } else {
            String::new()
        };
        let batch = WriteBatch::from_record(record, path, offset)?;
        writeln!(
            out,
            "offset {offset}: sequence {}, {} update{}{stored}",
            batch.sequence(),
            batch.count(),
            if batch.count() == 1 { "" } else { "s" }
        )?;
        for op in batch.iter() {
            // `from_record` validated every update.
            match op.map_err(|reason| screedb::Error::corruption(path, offset, reason))? {
                BatchOp::Put { key, value } => writeln!(
                    out,
                    "  put\t{}\t{}",
                    escape(key),
                    escape_value(value, preview)
                )?,
                BatchOp::Delete { key } => writeln!(out, "  del\t{}", escape(key))?,
            }
        }
        records += 1;
        updates += u64::from(batch.count());
    }
    writeln!(
        out,
        "{records} records ({compressed} compressed), {updates} updates"
    )?;
    if let Some(tail) = reader.torn_tail() {
        writeln!(
            out,
            "torn tail dropped: {} bytes from offset {} ({})",
            tail.dropped_bytes, tail.offset, tail.reason
        )?;
    }
    Ok(())
}

/// `screedb dump-table`.
pub fn table(args: &TableArgs, out: &mut dyn Write) -> CliResult {
    let path = &args.file;
    let number = match path
        .file_name()
        .and_then(|n| n.to_str())
        .map(filename::parse)
    {
        Some(Some(FileKind::Table(n))) => n,
        _ => 0,
    };
    let table = TableCache::open_path(
        &OsFs,
        path,
        number,
        &TableOptions::default(),
        &InternalKeyComparator::new(default_comparator()),
    )?;
    let p = table.properties();
    writeln!(
        out,
        "{}: {} bytes, {} format",
        path.display(),
        table.extent(),
        table.format()
    )?;
    writeln!(out, "properties:")?;
    let rows = [
        ("entries", p.num_entries.to_string()),
        ("deletions", p.num_deletions.to_string()),
        ("smallest key", show_ikey(&p.smallest_key)),
        ("largest key", show_ikey(&p.largest_key)),
        (
            "sequences",
            format!("{} ..= {}", p.smallest_seq, p.largest_seq),
        ),
        (
            "data",
            format!("{} blocks, {} bytes", p.num_data_blocks, p.data_bytes),
        ),
        ("index", format!("{} bytes", p.index_bytes)),
        ("filter", format!("{} bytes", p.filter_bytes)),
        (
            "raw keys/values",
            format!("{} / {} bytes", p.raw_key_bytes, p.raw_value_bytes),
        ),
        ("compression", format!("{:?}", p.compression).to_lowercase()),
    ];
    for (name, value) in rows {
        writeln!(out, "  {name:<16} {value}")?;
    }
    writeln!(out, "entries (user key, sequence, kind, value):")?;
    let preview = if args.full_values { 0 } else { VALUE_PREVIEW };
    let mut it = Arc::clone(&table).iter()?;
    it.seek_to_first();
    let mut shown = 0u64;
    while it.valid() && args.limit.is_none_or(|l| shown < l) {
        match parse_internal_key(it.key()) {
            Some(k) => {
                let value = match k.kind {
                    ValueKind::Value => escape_value(it.value(), preview),
                    ValueKind::Deletion => String::new(),
                };
                writeln!(
                    out,
                    "  {}\t{}\t{}\t{value}",
                    escape(k.user_key),
                    k.seq,
                    kind_name(k.kind)
                )?;
            }
            None => writeln!(out, "  (malformed internal key {})", escape(it.key()))?,
        }
        shown += 1;
        it.next();
    }
    it.status()?;
    if shown < p.num_entries {
        writeln!(out, "  ... {} more", p.num_entries - shown)?;
    }
    Ok(())
}

fn show_file(f: &FileMeta) -> String {
    format!(
        "table {} ({} bytes): {} .. {}, sequences {} ..= {}, entries {}, deletions {}",
        f.number,
        f.file_size,
        show_ikey(&f.smallest),
        show_ikey(&f.largest),
        f.smallest_seq,
        f.largest_seq,
        f.num_entries,
        f.num_deletions
    )
}

/// The lines describing one edit.
fn describe_edit(edit: &VersionEdit) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(c) = &edit.comparator {
        lines.push(format!("comparator {c}"));
    }
    if let Some(layout) = edit.layout {
        lines.push(format!("layout {layout}"));
    }
    let numbers = [
        ("log number", edit.log_number),
        ("prev log number", edit.prev_log_number),
        ("next file number", edit.next_file_number),
        ("last sequence", edit.last_sequence),
    ];
    for (name, value) in numbers {
        if let Some(v) = value {
            lines.push(format!("{name} {v}"));
        }
    }
    for (level, number) in &edit.deleted_files {
        lines.push(format!("remove L{level} table {number}"));
    }
    for (level, f) in &edit.new_files {
        lines.push(format!("add L{level} {}", show_file(f)));
    }
    for (level, key) in &edit.added_guards {
        lines.push(format!("add guard L{level} {}", escape(key)));
    }
    for (level, key) in &edit.removed_guards {
        lines.push(format!("remove guard L{level} {}", escape(key)));
    }
    if !edit.stats.is_empty() {
        let stats: Vec<String> = edit.stats.iter().map(|(n, v)| format!("{n}={v}")).collect();
        lines.push(format!("stats {}", stats.join(" ")));
    }
    lines
}

/// `screedb dump-manifest`.
pub fn manifest(args: &ManifestArgs, out: &mut dyn Write) -> CliResult {
    let path = &args.file;
    let file = open(path)?;
    writeln!(out, "{}: {} bytes", path.display(), file.size())?;
    let mut reader = LogReader::new(file, path.clone(), mode(args.tolerate_torn_tail));
    let mut edits = 0u64;
    while let Some(record) = reader.read_record()? {
        let offset = reader.last_record_offset();
        let edit = VersionEdit::decode(&record, path, offset)?;
        writeln!(out, "edit {edits} at offset {offset}:")?;
        for line in describe_edit(&edit) {
            writeln!(out, "  {line}")?;
        }
        edits += 1;
    }
    writeln!(out, "{edits} edits")?;
    if let Some(tail) = reader.torn_tail() {
        writeln!(
            out,
            "torn tail dropped: {} bytes from offset {} ({})",
            tail.dropped_bytes, tail.offset, tail.reason
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use screedb::key::make_internal_key;

    #[test]
    fn internal_keys_show_user_key_sequence_and_kind() {
        let k = make_internal_key(b"apple", 7, ValueKind::Deletion);
        assert_eq!(show_ikey(&k), "apple @7 del");
        assert_eq!(show_ikey(b""), "(none)");
        assert!(show_ikey(b"abc").starts_with("(malformed"));
    }

    #[test]
    fn edits_are_described_field_by_field() {
        let edit = VersionEdit {
            comparator: Some("screedb.bytewise".into()),
            log_number: Some(5),
            deleted_files: vec![(0, 3)],
            stats: vec![("flushes".into(), 2)],
            ..VersionEdit::default()
        };
        assert_eq!(
            describe_edit(&edit),
            [
                "comparator screedb.bytewise",
                "log number 5",
                "remove L0 table 3",
                "stats flushes=2"
            ]
        );
    }
}
