//! The request parser's fuzz corpus (`fuzz/corpus/resp_request`, grown by `cargo +nightly fuzz
//! run resp_request` and minimized with `cargo fuzz cmin`), replayed through the fuzz target's
//! check (`screedb_server::resp_fuzz::check`) so every `cargo test` runs the target over it.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::Path;

#[test]
fn the_parser_fuzz_corpus_passes_the_fuzz_targets_check() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/resp_request");
    let mut inputs = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let checked = std::panic::catch_unwind(|| screedb_server::resp_fuzz::check(&data));
        assert!(checked.is_ok(), "{} fails the check", path.display());
        inputs += 1;
    }
    // The corpus is what makes this test mean anything: a lost directory must fail it.
    assert!(inputs >= 200, "only {inputs} inputs in {}", dir.display());
}
