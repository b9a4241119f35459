//! Showing arbitrary bytes as text, and reading them back.
//!
//! Valid UTF-8 is shown as it is, except control characters and the backslash; those and every
//! byte that is not part of valid UTF-8 are escaped: `\\`, `\t`, `\n`, `\r`, `\xNN`. The result
//! never holds a tab or a newline, so `key<TAB>value` lines stay unambiguous, and [`unescape`]
//! turns it back into the original bytes.

use std::fmt::Write as _;

/// `bytes` as printable text (see the module documentation).
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\t' => out.push_str("\\t"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                c if c.is_control() => {
                    let mut buf = [0u8; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        let _ = write!(out, "\\x{b:02x}");
                    }
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// `bytes` escaped and cut to about `max` bytes, with the full length noted when cut
/// (`max == 0`: never cut).
pub fn escape_value(bytes: &[u8], max: usize) -> String {
    if max == 0 || bytes.len() <= max {
        return escape(bytes);
    }
    format!("{}… ({} bytes)", escape(&bytes[..max]), bytes.len())
}

/// The bytes `text` stands for, reading the escapes [`escape`] writes.
pub fn unescape(text: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while let Some(&b) = text.get(i) {
        i += 1;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        match text.get(i) {
            Some(b'\\') => out.push(b'\\'),
            Some(b't') => out.push(b'\t'),
            Some(b'n') => out.push(b'\n'),
            Some(b'r') => out.push(b'\r'),
            Some(b'x') => {
                let hex = text
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("\\x at byte {} needs two hex digits", i - 1))?;
                out.push(hex);
                i += 2;
            }
            _ => return Err(format!("unknown escape at byte {}", i - 1)),
        }
        i += 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_text_is_shown_as_is() {
        assert_eq!(escape(b"hello world"), "hello world");
        assert_eq!(escape("héllo ☃".as_bytes()), "héllo ☃");
    }

    #[test]
    fn control_bytes_backslashes_and_invalid_utf8_are_escaped() {
        assert_eq!(escape(b"a\tb\nc\\d"), "a\\tb\\nc\\\\d");
        assert_eq!(escape(&[0x00, 0xff, b'x', 0x7f]), "\\x00\\xffx\\x7f");
    }

    #[test]
    fn escape_round_trips_every_byte_string() {
        let mut samples: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b, b'a', b]).collect();
        samples.push("snow ☃\\x41".as_bytes().to_vec());
        samples.push((0..=255u8).collect());
        for s in samples {
            let shown = escape(&s);
            assert!(!shown.contains('\t') && !shown.contains('\n'), "{shown}");
            assert_eq!(unescape(shown.as_bytes()).unwrap(), s, "{shown}");
        }
    }

    #[test]
    fn bad_escapes_are_refused() {
        assert!(unescape(b"\\q").is_err());
        assert!(unescape(b"\\x4").is_err());
        assert!(unescape(b"abc\\").is_err());
    }

    #[test]
    fn long_values_are_cut_with_their_length() {
        assert_eq!(escape_value(b"abcdef", 3), "abc… (6 bytes)");
        assert_eq!(escape_value(b"abcdef", 0), "abcdef");
    }
}
