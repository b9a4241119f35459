//! The request side of RESP: multibulk requests (`*<n>\r\n$<len>\r\n<bytes>\r\n...`) and inline
//! commands (`SET k v\r\n`), with the limits that keep a bad client from using unbounded memory.
//!
//! [`parse`] looks at the bytes received so far and returns one whole request, or `None` when
//! more bytes are needed, or an error that ends the connection. It never panics and never
//! allocates more than the request's own (limited) size; a caller keeps calling it until `None`
//! to serve a pipeline.

use bytes::{Buf, Bytes, BytesMut};

/// Limits on one request. Defaults follow Redis's (`proto-max-bulk-len` 512 MiB, at most
/// 1024 * 1024 arguments, `PROTO_INLINE_MAX_SIZE` 64 KiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest bulk string (`$<len>`). Default: 512 MiB.
    pub max_bulk_len: usize,
    /// Most arguments in one request (`*<n>`). Default: 1,048,576.
    pub max_args: usize,
    /// Longest inline command line, and longest `*`/`$` header line. Default: 64 KiB.
    pub max_inline_len: usize,
    /// Most bytes of unparsed requests one client may have buffered (the connection checks it,
    /// Redis's `client-query-buffer-limit`). Default: 1 GiB.
    pub max_query_buffer: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 512 << 20,
            max_args: 1 << 20,
            max_inline_len: 64 << 10,
            max_query_buffer: 1 << 30,
        }
    }
}

/// Why a request cannot be parsed. The connection is closed after the error reply, as Redis
/// does; the `Display` text is Redis's own wording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolError {
    /// `*<n>` is not a number or above [`Limits::max_args`].
    InvalidMultibulkLength,
    /// `$<len>` is not a number or above [`Limits::max_bulk_len`].
    InvalidBulkLength,
    /// An argument of a multibulk request does not start with `$`.
    ExpectedDollar(u8),
    /// A header or an inline line is longer than [`Limits::max_inline_len`].
    TooBigInline,
    /// The bytes after a bulk string are not `\r\n`.
    MissingCrlf,
    /// An inline command with an unclosed quote.
    UnbalancedQuotes,
    /// An inline command with more than [`Limits::max_args`] arguments.
    TooManyInlineArgs,
}

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProtocolError::InvalidMultibulkLength => {
                f.write_str("Protocol error: invalid multibulk length")
            }
            ProtocolError::InvalidBulkLength => f.write_str("Protocol error: invalid bulk length"),
            ProtocolError::ExpectedDollar(b) => {
                write!(f, "Protocol error: expected '$', got '{}'", char::from(*b))
            }
            ProtocolError::TooBigInline => f.write_str("Protocol error: too big inline request"),
            ProtocolError::MissingCrlf => {
                f.write_str("Protocol error: bulk string not followed by CRLF")
            }
            ProtocolError::UnbalancedQuotes => {
                f.write_str("Protocol error: unbalanced quotes in request")
            }
            ProtocolError::TooManyInlineArgs => {
                f.write_str("Protocol error: too many arguments in inline request")
            }
        }
    }
}

impl std::error::Error for ProtocolError {}

/// One parsed request: its arguments (the command name first). May be empty (an empty inline
/// line), which the caller skips.
pub type Request = Vec<Bytes>;

/// Takes one whole request off the front of `buf`, or returns `Ok(None)` (leaving `buf` as it
/// was) if `buf` does not hold a whole request yet.
pub fn parse(buf: &mut BytesMut, limits: &Limits) -> Result<Option<Request>, ProtocolError> {
    match buf.first() {
        None => Ok(None),
        Some(b'*') => parse_multibulk(buf, limits),
        Some(_) => parse_inline(buf, limits),
    }
}

/// The position of the `\r\n` ending the line that starts at `from`, if it is in `buf`; a line
/// longer than the limit is an error even before its end arrives.
fn find_line_end(buf: &[u8], from: usize, limits: &Limits) -> Result<Option<usize>, ProtocolError> {
    let rest = buf.get(from..).unwrap_or_default();
    match rest.iter().position(|&b| b == b'\n') {
        Some(nl) if nl > limits.max_inline_len => Err(ProtocolError::TooBigInline),
        Some(nl) => Ok(Some(from + nl)),
        None if rest.len() > limits.max_inline_len => Err(ProtocolError::TooBigInline),
        None => Ok(None),
    }
}

/// Parses the decimal number of a `*`/`$` header line (without the `\r`).
fn parse_len(line: &[u8]) -> Option<i64> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let s = std::str::from_utf8(line).ok()?;
    if s.is_empty() || s.len() > 20 || s.starts_with('+') {
        return None;
    }
    s.parse().ok()
}

fn parse_multibulk(buf: &mut BytesMut, limits: &Limits) -> Result<Option<Request>, ProtocolError> {
    let Some(nl) = find_line_end(buf, 0, limits)? else {
        return Ok(None);
    };
    let count = parse_len(buf.get(1..nl).unwrap_or_default())
        .ok_or(ProtocolError::InvalidMultibulkLength)?;
    if count <= 0 {
        // `*0` and `*-1` are empty requests, skipped as Redis does.
        buf.advance(nl + 1);
        return Ok(Some(Vec::new()));
    }
    let count = usize::try_from(count)
        .ok()
        .filter(|&n| n <= limits.max_args)
        .ok_or(ProtocolError::InvalidMultibulkLength)?;
    // First pass: find where every argument lies without copying, so an incomplete request
    // costs nothing but this scan.
    let mut spans = Vec::with_capacity(count.min(1024));
    let mut pos = nl + 1;
    for _ in 0..count {
        let Some(&first) = buf.get(pos) else {
            return Ok(None);
        };
        if first != b'$' {
            return Err(ProtocolError::ExpectedDollar(first));
        }
        let Some(nl) = find_line_end(buf, pos, limits)? else {
            return Ok(None);
        };
        let len = parse_len(buf.get(pos + 1..nl).unwrap_or_default())
            .and_then(|n| usize::try_from(n).ok())
            .filter(|&n| n <= limits.max_bulk_len)
            .ok_or(ProtocolError::InvalidBulkLength)?;
        let start = nl + 1;
        let end = start + len;
        if buf.len() < end + 2 {
            return Ok(None);
        }
        if buf.get(end..end + 2) != Some(b"\r\n".as_slice()) {
            return Err(ProtocolError::MissingCrlf);
        }
        spans.push((start, end));
        pos = end + 2;
    }
    let whole = buf.split_to(pos).freeze();
    Ok(Some(
        spans.into_iter().map(|(s, e)| whole.slice(s..e)).collect(),
    ))
}

fn parse_inline(buf: &mut BytesMut, limits: &Limits) -> Result<Option<Request>, ProtocolError> {
    let Some(nl) = find_line_end(buf, 0, limits)? else {
        return Ok(None);
    };
    let line = buf.split_to(nl + 1);
    let line = line.get(..nl).unwrap_or_default();
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let args = split_args(line)?;
    if args.len() > limits.max_args {
        return Err(ProtocolError::TooManyInlineArgs);
    }
    Ok(Some(args))
}

/// Splits an inline command line as Redis's `sdssplitargs` does: blanks separate arguments,
/// `"..."` understands `\n \r \t \b \a \\ \" \xHH`, `'...'` understands `\'`; a closing quote
/// must be followed by a blank or the end.
pub fn split_args(line: &[u8]) -> Result<Request, ProtocolError> {
    let mut args = Vec::new();
    let mut i = 0;
    let at = |i: usize| line.get(i).copied();
    loop {
        while at(i).is_some_and(|b| b.is_ascii_whitespace()) {
            i += 1;
        }
        if i >= line.len() {
            return Ok(args);
        }
        let mut cur = Vec::new();
        match at(i) {
            Some(b'"') => {
                i += 1;
                loop {
                    match at(i) {
                        None => return Err(ProtocolError::UnbalancedQuotes),
                        Some(b'"') => {
                            i += 1;
                            break;
                        }
                        Some(b'\\') => {
                            let hex = |b: Option<u8>| b.and_then(|b| char::from(b).to_digit(16));
                            if let (Some(b'x'), Some(h), Some(l)) =
                                (at(i + 1), hex(at(i + 2)), hex(at(i + 3)))
                            {
                                cur.push(u8::try_from(h * 16 + l).unwrap_or(0));
                                i += 4;
                                continue;
                            }
                            let Some(c) = at(i + 1) else {
                                return Err(ProtocolError::UnbalancedQuotes);
                            };
                            cur.push(match c {
                                b'n' => b'\n',
                                b'r' => b'\r',
                                b't' => b'\t',
                                b'b' => 8,
                                b'a' => 7,
                                other => other,
                            });
                            i += 2;
                        }
                        Some(b) => {
                            cur.push(b);
                            i += 1;
                        }
                    }
                }
            }
            Some(b'\'') => {
                i += 1;
                loop {
                    match at(i) {
                        None => return Err(ProtocolError::UnbalancedQuotes),
                        Some(b'\'') => {
                            i += 1;
                            break;
                        }
                        Some(b'\\') if at(i + 1) == Some(b'\'') => {
                            cur.push(b'\'');
                            i += 2;
                        }
                        Some(b) => {
                            cur.push(b);
                            i += 1;
                        }
                    }
                }
            }
            _ => {
                while let Some(b) = at(i).filter(|b| !b.is_ascii_whitespace()) {
                    cur.push(b);
                    i += 1;
                }
                args.push(Bytes::from(cur));
                continue;
            }
        }
        if at(i).is_some_and(|b| !b.is_ascii_whitespace()) {
            return Err(ProtocolError::UnbalancedQuotes);
        }
        args.push(Bytes::from(cur));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8], limits: &Limits) -> Result<Vec<Request>, ProtocolError> {
        let mut buf = BytesMut::from(input);
        let mut out = Vec::new();
        while let Some(r) = parse(&mut buf, limits)? {
            out.push(r);
        }
        Ok(out)
    }

    fn strs(r: &Request) -> Vec<&[u8]> {
        r.iter().map(|b| b.as_ref()).collect()
    }

    #[test]
    fn multibulk_pipeline_and_partial() {
        let input = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n";
        let all = parse_all(input, &Limits::default()).expect("valid");
        assert_eq!(all.len(), 2);
        assert_eq!(strs(&all[1]), vec![&b"SET"[..], b"k", b""]);
        // Every prefix of the first request (20 bytes) is incomplete, never an error, and
        // leaves the buffer untouched.
        for cut in 0..20 {
            let mut buf = BytesMut::from(&input[..cut]);
            assert_eq!(parse(&mut buf, &Limits::default()), Ok(None), "cut {cut}");
            assert_eq!(buf.len(), cut);
        }
    }

    #[test]
    fn inline_quotes() {
        let all = parse_all(
            b"set \"a b\" 'c\\'d' \"\\x41\\n\"\r\nPING\n\r\n",
            &Limits::default(),
        )
        .expect("valid");
        assert_eq!(strs(&all[0]), vec![&b"set"[..], b"a b", b"c'd", b"A\n"]);
        assert_eq!(strs(&all[1]), vec![&b"PING"[..]]);
        assert!(all[2].is_empty());
        assert_eq!(
            parse_all(b"set \"abc\r\n", &Limits::default()),
            Err(ProtocolError::UnbalancedQuotes)
        );
    }

    #[test]
    fn limits_are_errors() {
        let small = Limits {
            max_bulk_len: 10,
            max_args: 3,
            max_inline_len: 16,
            max_query_buffer: 1 << 10,
        };
        assert_eq!(
            parse_all(b"*1\r\n$11\r\n", &small),
            Err(ProtocolError::InvalidBulkLength)
        );
        assert_eq!(
            parse_all(b"*4\r\n", &small),
            Err(ProtocolError::InvalidMultibulkLength)
        );
        assert_eq!(
            parse_all(&[b'a'; 17], &small),
            Err(ProtocolError::TooBigInline)
        );
        assert_eq!(
            parse_all(b"*1\r\n$-5\r\n", &small),
            Err(ProtocolError::InvalidBulkLength)
        );
        assert_eq!(
            parse_all(b"*1\r\nx\r\n", &small),
            Err(ProtocolError::ExpectedDollar(b'x'))
        );
        assert_eq!(
            parse_all(b"*1\r\n$1\r\nab\r\n", &small),
            Err(ProtocolError::MissingCrlf)
        );
        assert_eq!(
            parse_all(b"*x\r\n", &small),
            Err(ProtocolError::InvalidMultibulkLength)
        );
        // postmortem: the fuzz target found that inline requests were not held to max_args.
        assert_eq!(
            parse_all(b"a b c d\r\n", &small),
            Err(ProtocolError::TooManyInlineArgs)
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        /// Random bytes never panic, and no request breaks the limits.
        #[test]
        fn random_bytes_never_panic(
            data in proptest::collection::vec(proptest::num::u8::ANY, 0..300),
        ) {
            let small = Limits {
                max_bulk_len: 64,
                max_args: 8,
                max_inline_len: 64,
                max_query_buffer: 1024,
            };
            if let Ok(requests) = parse_all(&data, &small) {
                for r in requests {
                    proptest::prop_assert!(r.len() <= 8);
                    proptest::prop_assert!(r.iter().all(|a| a.len() <= 64));
                }
            }
        }

        /// Random requests encoded as multibulk parse back to themselves, split anywhere.
        #[test]
        fn multibulk_round_trip(
            args in proptest::collection::vec(
                proptest::collection::vec(proptest::num::u8::ANY, 0..20),
                1..6,
            ),
            cut in 0usize..200,
        ) {
            let mut wire = format!("*{}\r\n", args.len()).into_bytes();
            for a in &args {
                wire.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
                wire.extend_from_slice(a);
                wire.extend_from_slice(b"\r\n");
            }
            let cut = cut.min(wire.len());
            let mut buf = BytesMut::from(&wire[..cut]);
            let first = parse(&mut buf, &Limits::default()).expect("valid prefix");
            if cut < wire.len() {
                proptest::prop_assert!(first.is_none());
                buf.extend_from_slice(&wire[cut..]);
            }
            let got = match first {
                Some(r) => r,
                None => parse(&mut buf, &Limits::default()).expect("valid").expect("whole"),
            };
            let got: Vec<Vec<u8>> = got.iter().map(|b| b.to_vec()).collect();
            proptest::prop_assert_eq!(got, args);
        }
    }
}
