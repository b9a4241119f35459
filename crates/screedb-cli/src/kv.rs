//! `put`, `get`, `delete` and `scan`: reading and writing a database from the shell.

use std::ffi::OsString;
use std::io::Write;
use std::ops::{Bound, RangeBounds};
use std::path::PathBuf;

use screedb::{Db, Options, WriteBatch, WriteOptions};

use crate::escape::{escape, unescape};
use crate::{CliError, CliResult};

/// The database argument shared by the key-value commands.
#[derive(Debug, clap::Args)]
pub struct DbArg {
    /// Database directory.
    #[arg(long)]
    db: PathBuf,
    /// Keys and values on the command line use the escapes `scan` prints (\xNN, \\, \t, \n,
    /// \r).
    #[arg(long)]
    escaped: bool,
    /// Layout of a database `put --create` creates: flsm, leveled or trie. An existing database is
    /// always opened with the layout it was created with.
    #[arg(long, value_parser = |s: &str| s.parse::<screedb::LayoutKind>().map_err(|e| e.to_string()))]
    layout: Option<screedb::LayoutKind>,
    /// Memory component to open the database with: flodb (default) or skiplist (see
    /// docs/memory.md). Not stored in the database: each open chooses.
    #[arg(long, value_parser = crate::parse_memory)]
    memory: Option<screedb::Memory>,
}

impl DbArg {
    /// The bytes of a key or value argument.
    fn bytes(&self, arg: OsString) -> Result<Vec<u8>, CliError> {
        let raw = arg.into_encoded_bytes();
        if self.escaped {
            unescape(&raw).map_err(|e| CliError::Usage(format!("bad escaped argument: {e}")))
        } else {
            Ok(raw)
        }
    }

    fn open(&self, create: bool) -> Result<Db, CliError> {
        let mut options = Options::default().create_if_missing(create);
        if let Some(memory) = self.memory {
            options.memory = memory;
        }
        match screedb::check::stored_layout(&self.db, &options) {
            Ok(stored) => options.layout = screedb::Layout::with_defaults(stored),
            Err(screedb::Error::NotFound(_)) => {
                if let Some(layout) = self.layout {
                    options.layout = screedb::Layout::with_defaults(layout);
                }
            }
            Err(e) => return Err(CliError::Db(e)),
        }
        Db::open(&self.db, options).map_err(|e| match e {
            screedb::Error::NotFound(dir) => CliError::Usage(format!(
                "database {} does not exist (put --create creates it)",
                dir.display()
            )),
            e => CliError::Db(e),
        })
    }
}

/// The arguments of `scan`.
#[derive(Debug, clap::Args)]
pub struct ScanArgs {
    #[command(flatten)]
    db: DbArg,
    /// First key (inclusive).
    #[arg(long)]
    from: Option<OsString>,
    /// End key (exclusive).
    #[arg(long)]
    to: Option<OsString>,
    /// Only keys starting with this prefix.
    #[arg(long)]
    prefix: Option<OsString>,
    /// At most this many entries.
    #[arg(long)]
    limit: Option<u64>,
}

fn write_one(db: &Db, batch: WriteBatch) -> CliResult {
    db.write(batch, &WriteOptions::synced())?;
    Ok(())
}

/// `screedb put`.
pub fn put(arg: &DbArg, create: bool, key: OsString, value: OsString) -> CliResult {
    let (key, value) = (arg.bytes(key)?, arg.bytes(value)?);
    let db = arg.open(create)?;
    let mut batch = WriteBatch::new();
    batch.put(key, value);
    write_one(&db, batch)?;
    Ok(db.close()?)
}

/// `screedb delete`.
pub fn delete(arg: &DbArg, key: OsString) -> CliResult {
    let key = arg.bytes(key)?;
    let db = arg.open(false)?;
    let mut batch = WriteBatch::new();
    batch.delete(key);
    write_one(&db, batch)?;
    Ok(db.close()?)
}

/// `screedb get`: the value, escaped like `scan` shows it, on one line.
pub fn get(arg: &DbArg, key: OsString, out: &mut dyn Write) -> CliResult {
    let key = arg.bytes(key)?;
    let db = arg.open(false)?;
    let value = db.get(&key)?;
    db.close()?;
    match value {
        Some(v) => Ok(writeln!(out, "{}", escape(&v))?),
        None => Err(CliError::NotFound(format!(
            "key {} not found",
            escape(&key)
        ))),
    }
}

/// The start of a scan: the later of `--from` (inclusive) and `--prefix`.
fn scan_start(from: Option<Vec<u8>>, prefix: Option<&[u8]>) -> Bound<Vec<u8>> {
    match (from, prefix.map(<[u8]>::to_vec)) {
        (None, None) => Bound::Unbounded,
        (Some(k), None) | (None, Some(k)) => Bound::Included(k),
        (Some(a), Some(b)) => Bound::Included(a.max(b)),
    }
}

/// The end of a scan: the earlier of `--to` (exclusive) and the end of `--prefix`.
fn scan_end(to: Option<Vec<u8>>, prefix: Option<&[u8]>) -> Bound<Vec<u8>> {
    match (
        to,
        prefix.and_then(screedb::comparator::bytewise_prefix_successor),
    ) {
        (None, None) => Bound::Unbounded,
        (Some(k), None) | (None, Some(k)) => Bound::Excluded(k),
        (Some(a), Some(b)) => Bound::Excluded(a.min(b)),
    }
}

/// A key and its value.
type Pair = (Vec<u8>, Vec<u8>);

/// `screedb scan`: in key order, or in no particular order for a layout that keeps none (the
/// trie: `Db::scan_unordered`, every pair checked against the bounds).
pub fn scan(args: &ScanArgs, out: &mut dyn Write) -> CliResult {
    let arg = &args.db;
    let bytes = |o: &Option<OsString>| o.clone().map(|a| arg.bytes(a)).transpose();
    let (from, to, prefix) = (bytes(&args.from)?, bytes(&args.to)?, bytes(&args.prefix)?);
    let bounds = (
        scan_start(from, prefix.as_deref()),
        scan_end(to, prefix.as_deref()),
    );
    let db = arg.open(false)?;
    let limit = args
        .limit
        .map_or(usize::MAX, |l| usize::try_from(l).unwrap_or(usize::MAX));
    let pairs: Box<dyn Iterator<Item = screedb::Result<Pair>>> = match db.range(bounds.clone()) {
        Ok(range) => Box::new(range),
        Err(screedb::Error::NotSupported { .. }) => {
            let all = db.scan_unordered(&screedb::ReadOptions::default())?;
            Box::new(
                all.filter(move |item| item.as_ref().map_or(true, |(k, _)| bounds.contains(k))),
            )
        }
        Err(e) => return Err(e.into()),
    };
    for item in pairs.take(limit) {
        let (k, v) = item?;
        writeln!(out, "{}\t{}", escape(&k), escape(&v))?;
    }
    Ok(db.close()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_successors_skip_trailing_ff() {
        assert_eq!(
            screedb::comparator::bytewise_prefix_successor(b"ab"),
            Some(b"ac".to_vec())
        );
        assert_eq!(
            screedb::comparator::bytewise_prefix_successor(b"a\xff"),
            Some(b"b".to_vec())
        );
        assert_eq!(
            screedb::comparator::bytewise_prefix_successor(b"\xff\xff"),
            None
        );
    }

    #[test]
    fn scan_bounds_are_the_intersection_of_the_flags() {
        let k = |s: &str| Some(s.as_bytes().to_vec());
        assert_eq!(scan_start(None, None), Bound::Unbounded);
        assert_eq!(
            scan_start(k("b"), Some(b"a")),
            Bound::Included(b"b".to_vec())
        );
        assert_eq!(
            scan_start(k("a"), Some(b"ab")),
            Bound::Included(b"ab".to_vec())
        );
        assert_eq!(
            scan_end(k("z"), Some(b"ab")),
            Bound::Excluded(b"ac".to_vec())
        );
        assert_eq!(
            scan_end(k("aa"), Some(b"a")),
            Bound::Excluded(b"aa".to_vec())
        );
        assert_eq!(scan_end(None, Some(b"\xff")), Bound::Unbounded);
    }
}
