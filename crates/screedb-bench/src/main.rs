//! `screedb-bench`: run the benchmarks on one engine (`screedb-bench --engine fjall ...`) or
//! compare several (`screedb-bench compare --engines screedb,fjall ...`). Peers are compiled in
//! with cargo features; see docs/benchmarks.md.

use std::process::ExitCode;

fn main() -> ExitCode {
    screedb_bench::cli::main_with_engines(Vec::new())
}
