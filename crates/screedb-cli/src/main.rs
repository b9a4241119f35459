//! The `screedb` command: read and write a database, look inside its files, check it, show its
//! statistics and run benchmarks.
//!
//! Exit status: 0 on success, 1 when `get` finds no value, 2 on any error (one sentence on
//! stderr).

mod dump;
mod escape;
mod import;
mod inspect;
mod kv;
mod serve;

use std::ffi::OsString;
use std::fmt;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Inspect, check and benchmark ScreeDB databases.
#[derive(Debug, Parser)]
#[command(name = "screedb", version, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Set KEY to VALUE (a synced write).
    Put {
        #[command(flatten)]
        db: kv::DbArg,
        /// Create the database if it does not exist.
        #[arg(long)]
        create: bool,
        /// The key.
        key: OsString,
        /// The value.
        value: OsString,
    },
    /// Print the value of KEY (exit status 1 if there is none).
    Get {
        #[command(flatten)]
        db: kv::DbArg,
        /// The key.
        key: OsString,
    },
    /// Remove KEY (a synced write).
    Delete {
        #[command(flatten)]
        db: kv::DbArg,
        /// The key.
        key: OsString,
    },
    /// Print `key<TAB>value` lines in key order.
    Scan(kv::ScanArgs),
    /// Print the records of a write-ahead log file.
    DumpWal(dump::WalArgs),
    /// Print the properties and entries of a table file.
    DumpTable(dump::TableArgs),
    /// Print the version edits of a MANIFEST file.
    DumpManifest(dump::ManifestArgs),
    /// Verify every table checksum, the version invariants and the WALs, without changing
    /// anything.
    Check {
        /// Database directory.
        #[arg(long)]
        db: PathBuf,
    },
    /// Rebuild the database from the tables and logs in its directory (LevelDB's RepairDB):
    /// damaged tables are salvaged block by block; what was lost is printed on stderr.
    Repair {
        /// Database directory.
        #[arg(long)]
        db: PathBuf,
        /// Layout to rebuild it in: flsm, leveled, trie or jungle. Default: the layout its
        /// MANIFEST records, or flsm when the MANIFEST cannot be read.
        #[arg(long, value_parser = |s: &str| s.parse::<screedb::LayoutKind>().map_err(|e| e.to_string()))]
        layout: Option<screedb::LayoutKind>,
    },
    /// Copy the live contents of a LevelDB database into a new ScreeDB database (docs/c-api.md,
    /// "Migrating from LevelDB").
    Import(import::ImportArgs),
    /// Open the database and print its statistics and the shape of its tree.
    Stats {
        /// Database directory.
        #[arg(long)]
        db: PathBuf,
        /// Memory component to open it with: flodb (default) or skiplist.
        #[arg(long, value_parser = parse_memory)]
        memory: Option<screedb::Memory>,
    },
    /// Run db_bench-style benchmarks (default: the README's main job, about a minute), or
    /// `bench compare` to run them on several engines.
    Bench(Box<BenchCommand>),
    /// Serve the database over the Redis protocol (RESP2/RESP3) until SIGINT, SIGTERM or
    /// SHUTDOWN (docs/server.md).
    Serve(serve::ServeArgs),
}

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
struct BenchCommand {
    #[command(subcommand)]
    compare: Option<BenchSub>,
    #[command(flatten)]
    args: screedb_bench::BenchArgs,
}

#[derive(Debug, Subcommand)]
enum BenchSub {
    /// Run the same workloads on several engines in turn and print one markdown table.
    Compare(screedb_bench::compare::CompareArgs),
}

/// Why a command failed.
#[derive(Debug)]
enum CliError {
    /// The engine reported an error.
    Db(screedb::Error),
    /// The key (or whatever was asked for) does not exist.
    NotFound(String),
    /// An argument could not be used.
    Usage(String),
    /// Standard output could not be written.
    Output(io::Error),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Db(e) => write!(f, "{e}"),
            CliError::NotFound(what) | CliError::Usage(what) => f.write_str(what),
            CliError::Output(e) => write!(f, "cannot write the output: {e}"),
        }
    }
}

impl From<screedb::Error> for CliError {
    fn from(e: screedb::Error) -> Self {
        CliError::Db(e)
    }
}

impl From<io::Error> for CliError {
    fn from(e: io::Error) -> Self {
        CliError::Output(e)
    }
}

type CliResult = Result<(), CliError>;

/// Parses `--memory`.
fn parse_memory(s: &str) -> Result<screedb::Memory, String> {
    s.parse().map_err(|e: screedb::Error| e.to_string())
}

fn run(command: Command, out: &mut dyn Write) -> CliResult {
    match command {
        Command::Put {
            db,
            create,
            key,
            value,
        } => kv::put(&db, create, key, value),
        Command::Get { db, key } => kv::get(&db, key, out),
        Command::Delete { db, key } => kv::delete(&db, key),
        Command::Scan(args) => kv::scan(&args, out),
        Command::DumpWal(args) => dump::wal(&args, out),
        Command::DumpTable(args) => dump::table(&args, out),
        Command::DumpManifest(args) => dump::manifest(&args, out),
        Command::Check { db } => inspect::check(&db, out),
        Command::Repair { db, layout } => inspect::repair(&db, layout, out),
        Command::Import(args) => import::import(&args, out),
        Command::Stats { db, memory } => inspect::stats(&db, memory, out),
        Command::Bench(bench) => bench_command(*bench, out),
        Command::Serve(args) => serve::serve(args),
    }
}

fn bench_command(bench: BenchCommand, out: &mut dyn Write) -> CliResult {
    match bench {
        BenchCommand {
            compare: None,
            args,
        } => {
            let report = screedb_bench::run(args)?;
            out.write_all(report.render().as_bytes())?;
            Ok(())
        }
        BenchCommand {
            compare: Some(BenchSub::Compare(args)),
            ..
        } => {
            let comparison = screedb_bench::compare::run(args)?;
            out.write_all(comparison.markdown().as_bytes())?;
            Ok(())
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = run(cli.command, &mut out).and_then(|()| out.flush().map_err(CliError::from));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A reader that went away (`screedb scan | head`) is not an error.
        Err(CliError::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            let _ = out.flush();
            eprintln!("screedb: {e}");
            match e {
                CliError::NotFound(_) => ExitCode::from(1),
                _ => ExitCode::from(2),
            }
        }
    }
}
