//! `screedb-bench`: run the benchmarks on one engine (`screedb-bench --engine fjall ...`) or
//! compare several (`screedb-bench compare --engines screedb,fjall ...`). Peers are compiled in
//! with cargo features; see docs/benchmarks.md.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use screedb_bench::BenchArgs;
use screedb_bench::compare::CompareArgs;

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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Compare(args)) => screedb_bench::compare::run(args).map(|c| c.markdown()),
        None => screedb_bench::run(cli.args).map(|r| r.render()),
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
