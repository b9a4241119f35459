//! The server's RESP request parser (`screedb_server::resp::parse`) over arbitrary bytes, fed
//! in two pieces split where the first byte says: it never panics, answers the same whether the
//! bytes came at once or in two reads, and never returns an argument above the bulk (or inline)
//! limit, nor more arguments than the argument limit.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use screedb_server::resp::{Limits, parse};

fn all(chunks: &[&[u8]], limits: &Limits) -> (Vec<Vec<Vec<u8>>>, bool) {
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for chunk in chunks {
        buf.extend_from_slice(chunk);
        loop {
            match parse(&mut buf, limits) {
                Ok(Some(req)) => {
                    // An inline argument is bounded by the line length instead.
                    let longest = limits.max_bulk_len.max(limits.max_inline_len);
                    for arg in &req {
                        assert!(arg.len() <= longest);
                    }
                    assert!(req.len() <= limits.max_args.max(1) || req.is_empty());
                    out.push(req.iter().map(|a| a.to_vec()).collect());
                }
                Ok(None) => break,
                Err(_) => return (out, true),
            }
        }
    }
    (out, false)
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let limits = Limits {
        max_bulk_len: 64,
        max_args: 8,
        max_inline_len: 128,
        max_query_buffer: 4096,
    };
    let cut = usize::from(split) % (rest.len() + 1);
    let whole = all(&[rest], &limits);
    let pieces = all(&[&rest[..cut], &rest[cut..]], &limits);
    assert_eq!(whole, pieces);
});
