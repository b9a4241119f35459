//! The property the request parser's fuzz target checks (`fuzz/fuzz_targets/resp_request.rs`),
//! kept here so that `cargo test` replays the fuzzer's corpus (`fuzz/corpus/resp_request`,
//! `tests/server_resp_corpus.rs`) through the same check on stable Rust.
//!
//! An input's first byte says where to cut the rest in two; the parser, under small limits,
//! must never panic, must answer the same whether the bytes arrive at once or in those two
//! reads, and must never return an argument above the bulk (or inline) limit nor more
//! arguments than the argument limit. A violation panics, which is what a fuzz target reports.

use bytes::BytesMut;

use crate::resp::{Limits, parse};

/// The limits the check parses under: small, so random bytes reach them.
const LIMITS: Limits = Limits {
    max_bulk_len: 64,
    max_args: 8,
    max_inline_len: 128,
    max_query_buffer: 4096,
};

/// Checks one fuzz input (see the module comment); panics on a violation.
pub fn check(data: &[u8]) {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let cut = usize::from(split) % (rest.len() + 1);
    let whole = requests(&[rest]);
    let pieces = requests(&[&rest[..cut], &rest[cut..]]);
    assert_eq!(whole, pieces, "one read and two reads parse differently");
}

/// The requests parsed from `chunks` fed one after another, and whether parsing failed.
fn requests(chunks: &[&[u8]]) -> (Vec<Vec<Vec<u8>>>, bool) {
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            match parse(&mut buf, &LIMITS) {
                Ok(Some(req)) => {
                    // An inline argument is bounded by the line length instead.
                    let longest = LIMITS.max_bulk_len.max(LIMITS.max_inline_len);
                    assert!(
                        req.iter().all(|a| a.len() <= longest),
                        "argument over the limit"
                    );
                    assert!(
                        req.len() <= LIMITS.max_args,
                        "more arguments than the limit"
                    );
                    out.push(req.iter().map(|a| a.to_vec()).collect());
                }
                Ok(None) => break,
                Err(_) => return (out, true),
            }
        }
    }
    (out, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_and_malformed_requests_pass() {
        for input in [
            &b"\x05*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"[..],
            b"\x00PING\r\nPING\r\n",
            b"\x03*1\r\n$99\r\n",
            b"\xffa b c d e f g h i\r\n",
            b"",
        ] {
            check(input);
        }
    }
}
