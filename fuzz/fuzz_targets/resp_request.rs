//! The server's RESP request parser (`screedb_server::resp::parse`) over arbitrary bytes, fed
//! in two pieces split where the first byte says: it never panics, answers the same whether the
//! bytes came at once or in two reads, and never returns an argument above the bulk (or inline)
//! limit, nor more arguments than the argument limit. The check lives in
//! `screedb_server::resp_fuzz`, so `cargo test` replays this target's corpus
//! (`fuzz/corpus/resp_request`) through it on stable Rust.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| screedb_server::resp_fuzz::check(data));
