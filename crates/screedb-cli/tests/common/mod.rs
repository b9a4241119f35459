//! Shared by the `screedb` binary's integration tests.

use std::process::{Command, Output};

/// Runs the `screedb` binary built for this test run with `args`.
pub fn screedb(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_screedb"))
        .args(args)
        .output()
        .expect("the screedb binary runs")
}
