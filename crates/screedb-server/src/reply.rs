//! Replies and their encoding in RESP2 or RESP3 (chosen per connection by `HELLO`).
//!
//! | reply            | RESP2                      | RESP3                 |
//! |------------------|----------------------------|-----------------------|
//! | `Null`           | `$-1\r\n`                  | `_\r\n`               |
//! | `NullArray`      | `*-1\r\n`                  | `_\r\n`               |
//! | `Double(f)`      | bulk string of `f`         | `,<f>\r\n`            |
//! | `Map(pairs)`     | array of 2n elements       | `%<n>\r\n` ...        |
//! | `Set(items)`     | array                      | `~<n>\r\n` ...        |
//! | `Bool(b)`        | integer 0/1                | `#t\r\n` / `#f\r\n`   |

use bytes::{BufMut, Bytes, BytesMut};

/// One reply to one command.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `+OK`-style status.
    Simple(&'static str),
    /// A status built at run time (no `\r` or `\n` inside).
    Status(String),
    /// `-ERR ...`; the text includes its prefix (`ERR`, `WRONGTYPE`, ...).
    Error(String),
    /// `:<n>`.
    Int(i64),
    /// `$<len>` bytes.
    Bulk(Bytes),
    /// The null bulk string.
    Null,
    /// The null array (SET ... GET of nothing is `Null`; this is for the few that answer `*-1`).
    NullArray,
    /// A float: a bulk string in RESP2, a double in RESP3.
    Double(f64),
    /// An array.
    Array(Vec<Reply>),
    /// A map: a flat array in RESP2.
    Map(Vec<(Reply, Reply)>),
    /// A set: an array in RESP2.
    Set(Vec<Reply>),
    /// A boolean: an integer in RESP2.
    Bool(bool),
    /// Text: a bulk string in RESP2, a verbatim string (`=<len>\r\ntxt:...`) in RESP3.
    Verbatim(String),
}

/// `+OK`.
pub const OK: Reply = Reply::Simple("OK");

impl Reply {
    /// An error reply with the `ERR` prefix.
    pub fn err(msg: impl std::fmt::Display) -> Reply {
        Reply::Error(format!("ERR {msg}"))
    }

    /// A bulk string copied from `bytes`.
    pub fn bulk(bytes: impl Into<Bytes>) -> Reply {
        Reply::Bulk(bytes.into())
    }

    /// `Bulk` of `Some`, `Null` of `None`.
    pub fn opt(value: Option<impl Into<Bytes>>) -> Reply {
        value.map_or(Reply::Null, |v| Reply::Bulk(v.into()))
    }

    /// Whether this is an error reply (for INFO's error counters).
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// Appends the encoding of this reply for protocol version `proto` (2 or 3) to `out`.
    pub fn encode(&self, proto: u8, out: &mut BytesMut) {
        let resp3 = proto >= 3;
        match self {
            Reply::Simple(s) => line(out, b'+', s.as_bytes()),
            Reply::Status(s) => line(out, b'+', s.as_bytes()),
            Reply::Error(s) => line(out, b'-', s.as_bytes()),
            Reply::Int(n) => header(out, b':', *n),
            Reply::Bulk(b) => bulk(out, b),
            Reply::Null if resp3 => out.put_slice(b"_\r\n"),
            Reply::Null => out.put_slice(b"$-1\r\n"),
            Reply::NullArray if resp3 => out.put_slice(b"_\r\n"),
            Reply::NullArray => out.put_slice(b"*-1\r\n"),
            Reply::Double(f) if resp3 => line(out, b',', format_double(*f).as_bytes()),
            Reply::Double(f) => bulk(out, format_double(*f).as_bytes()),
            Reply::Array(items) => {
                header(out, b'*', len_i64(items.len()));
                items.iter().for_each(|r| r.encode(proto, out));
            }
            Reply::Set(items) => {
                header(out, if resp3 { b'~' } else { b'*' }, len_i64(items.len()));
                items.iter().for_each(|r| r.encode(proto, out));
            }
            Reply::Map(pairs) => {
                if resp3 {
                    header(out, b'%', len_i64(pairs.len()));
                } else {
                    header(out, b'*', len_i64(pairs.len() * 2));
                }
                for (k, v) in pairs {
                    k.encode(proto, out);
                    v.encode(proto, out);
                }
            }
            Reply::Bool(b) if resp3 => out.put_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
            Reply::Bool(b) => header(out, b':', i64::from(*b)),
            Reply::Verbatim(s) if resp3 => {
                header(out, b'=', len_i64(s.len() + 4));
                out.put_slice(b"txt:");
                out.put_slice(s.as_bytes());
                out.put_slice(b"\r\n");
            }
            Reply::Verbatim(s) => bulk(out, s.as_bytes()),
        }
    }
}

fn len_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn line(out: &mut BytesMut, tag: u8, text: &[u8]) {
    out.put_u8(tag);
    // A status or error never carries a line break (it would end the reply early).
    out.extend(
        text.iter()
            .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
    );
    out.put_slice(b"\r\n");
}

fn header(out: &mut BytesMut, tag: u8, n: i64) {
    out.put_u8(tag);
    let mut buf = itoa_buf(n);
    out.put_slice(buf.as_bytes_mut());
    out.put_slice(b"\r\n");
}

fn bulk(out: &mut BytesMut, b: &[u8]) {
    header(out, b'$', len_i64(b.len()));
    out.put_slice(b);
    out.put_slice(b"\r\n");
}

/// A small stack buffer holding the decimal digits of an integer.
struct Digits {
    buf: [u8; 20],
    start: usize,
}

impl Digits {
    fn as_bytes_mut(&mut self) -> &[u8] {
        self.buf.get(self.start..).unwrap_or_default()
    }
}

fn itoa_buf(n: i64) -> Digits {
    let mut d = Digits {
        buf: [0; 20],
        start: 20,
    };
    let neg = n < 0;
    let mut v = n.unsigned_abs();
    loop {
        d.start -= 1;
        if let Some(slot) = d.buf.get_mut(d.start) {
            *slot = b'0' + u8::try_from(v % 10).unwrap_or(0);
        }
        v /= 10;
        if v == 0 {
            break;
        }
    }
    if neg {
        d.start -= 1;
        if let Some(slot) = d.buf.get_mut(d.start) {
            *slot = b'-';
        }
    }
    d
}

/// A float as Redis prints scores: the shortest text that reads back to the same value,
/// `inf`/`-inf` for infinities.
pub fn format_double(f: f64) -> String {
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if f.is_nan() {
        return "nan".to_string();
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-5..1e17).contains(&abs) {
        // Rust's `{:e}` is `1e21`; Redis prints `1e+21`.
        let s = format!("{f:e}");
        return match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        };
    }
    format!("{f}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(r: &Reply, proto: u8) -> String {
        let mut out = BytesMut::new();
        r.encode(proto, &mut out);
        String::from_utf8(out.to_vec()).expect("ascii")
    }

    #[test]
    fn encodings() {
        assert_eq!(enc(&Reply::Int(-42), 2), ":-42\r\n");
        assert_eq!(enc(&Reply::Int(i64::MIN), 2), ":-9223372036854775808\r\n");
        assert_eq!(enc(&Reply::Null, 2), "$-1\r\n");
        assert_eq!(enc(&Reply::Null, 3), "_\r\n");
        assert_eq!(enc(&Reply::Double(1.5), 2), "$3\r\n1.5\r\n");
        assert_eq!(enc(&Reply::Double(3.0), 3), ",3\r\n");
        let m = Reply::Map(vec![(Reply::bulk("a"), Reply::Int(1))]);
        assert_eq!(enc(&m, 2), "*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(&m, 3), "%1\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(&Reply::err("x\r\ny"), 2), "-ERR x  y\r\n");
        assert_eq!(format_double(1e21), "1e+21");
        assert_eq!(format_double(f64::NEG_INFINITY), "-inf");
    }
}
