//! The `screedb-bench` command line, shared by every binary that links this crate: run the
//! benchmarks on one engine (`--engine fjall ...`) or compare several (`compare --engines
//! screedb,fjall ...`). [`main_with_engines`] lets a binary add engines first (the
//! screedb-bench-rocksdb binary adds the bundled RocksDB).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::BenchArgs;
use crate::compare::CompareArgs;
use crate::engine::{ExternalEngine, register};

/// db_bench-style benchmarks for ScreeDB and its peers.
#[derive(Debug, Parser)]
#[command(
    name = "screedb-bench",
    version,
    about,
    max_term_width = 100,
    args_conflicts_with_subcommands = true,
    args_override_self = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    args: BenchArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the same workloads on several engines in turn and print one markdown table.
    Compare(CompareArgs),
}

/// Registers `engines` (see [`register`]), then parses the process's arguments and runs them:
/// the whole `main` of a screedb-bench binary. Prints the report on stdout, an error on stderr
/// (exit status 2).
pub fn main_with_engines(engines: Vec<ExternalEngine>) -> ExitCode {
    if let Err(e) = register(engines) {
        eprintln!("screedb-bench: {e}");
        return ExitCode::from(2);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Compare(args)) => crate::compare::run(args).map(|c| c.markdown()),
        None => crate::run(cli.args).map(|r| r.render()),
    };
    match result {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("screedb-bench: {e}");
            ExitCode::from(2)
        }
    }
}
