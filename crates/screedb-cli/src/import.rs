//! `import --from-leveldb`: copies a LevelDB database into a new ScreeDB one.

use std::io::Write;
use std::path::PathBuf;

use screedb::{Layout, LayoutKind, Options};

use crate::CliResult;

/// The arguments of `import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// The LevelDB database directory to read (not changed; must not be open in LevelDB).
    #[arg(long = "from-leveldb")]
    from_leveldb: PathBuf,
    /// The ScreeDB database directory to create (must not exist).
    #[arg(long)]
    db: PathBuf,
    /// Layout of the new database: flsm (default), leveled, trie or jungle.
    #[arg(long, value_parser = |s: &str| s.parse::<LayoutKind>().map_err(|e| e.to_string()))]
    layout: Option<LayoutKind>,
}

/// `screedb import --from-leveldb SRC --db DST`: prints what was copied.
pub fn import(args: &ImportArgs, out: &mut dyn Write) -> CliResult {
    let mut options = Options::default();
    if let Some(kind) = args.layout {
        options.layout = Layout::with_defaults(kind);
    }
    let r = screedb::import_leveldb(&args.from_leveldb, &args.db, &options)?;
    writeln!(
        out,
        "imported {} keys ({} bytes) from {} tables and {} log records of {} into {} \
         ({} deleted keys skipped)",
        r.keys,
        r.bytes,
        r.tables,
        r.log_records,
        args.from_leveldb.display(),
        args.db.display(),
        r.deleted
    )?;
    Ok(())
}
