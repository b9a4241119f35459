//! The behaviour every engine must share for the workloads to mean the same thing, as a check
//! any adapter's tests can run (screedb-bench-rocksdb's included).

use screedb::{Error, Result};

use super::{Engine, Op};

/// A scan and the keys it must visit: start, reverse, limit, keys.
type ScanCase = (Option<&'static [u8]>, bool, u64, &'static [&'static str]);

fn keys(e: &dyn Engine, start: Option<&[u8]>, reverse: bool, limit: u64) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let n = e.scan(start, reverse, limit, &mut |k, _| {
        out.push(String::from_utf8_lossy(k).into_owned());
        true
    })?;
    if n as usize != out.len() {
        return Err(Error::invalid(format!(
            "scan returned {n} but visited {} entries",
            out.len()
        )));
    }
    Ok(out)
}

/// Writes a few keys (batch, put with sync, delete), reads them back and scans in both
/// directions from several starts, then settles; an error names the first difference.
pub fn check_conformance(e: &dyn Engine) -> Result<()> {
    e.write_batch(
        &[
            Op::Put(b"b", b"2"),
            Op::Put(b"d", b"4"),
            Op::Put(b"x", b"-"),
        ],
        false,
    )?;
    e.put(b"a", b"1", true)?;
    e.delete(b"x", false)?;
    let expect = |what: String, got: String, want: String| {
        if got == want {
            Ok(())
        } else {
            Err(Error::invalid(format!(
                "{} engine: {what} gave {got}, expected {want}",
                e.name()
            )))
        }
    };
    expect(
        "get b".into(),
        format!("{:?}", e.get(b"b")?),
        "Some([50])".into(),
    )?;
    expect("get x".into(), format!("{:?}", e.get(b"x")?), "None".into())?;
    let cases: [ScanCase; 6] = [
        (None, false, 10, &["a", "b", "d"]),
        (Some(b"c"), false, 1, &["d"]),
        (None, true, 10, &["d", "b", "a"]),
        (Some(b"c"), true, 10, &["b", "a"]),
        (Some(b"b"), true, 1, &["b"]),
        (Some(b"z"), true, 1, &["d"]),
    ];
    for (start, reverse, limit, want) in cases {
        let start_text = start.map(String::from_utf8_lossy);
        expect(
            format!("scan from {start_text:?} reverse={reverse} limit={limit}"),
            format!("{:?}", keys(e, start, reverse, limit)?),
            format!("{want:?}"),
        )?;
    }
    // Prefix scans stop at the first key past the prefix and at the limit.
    e.write_batch(
        &[
            Op::Put(b"pa1", b""),
            Op::Put(b"pa2", b""),
            Op::Put(b"pb1", b""),
        ],
        false,
    )?;
    let prefix_cases: [(&[u8], u64, &[&str]); 4] = [
        (b"pa", 10, &["pa1", "pa2"]),
        (b"pa", 1, &["pa1"]),
        (b"pc", 10, &[]),
        (b"p", 10, &["pa1", "pa2", "pb1"]),
    ];
    for (prefix, limit, want) in prefix_cases {
        let mut got = Vec::new();
        let n = e.prefix_scan(prefix, limit, &mut |k, _| {
            got.push(String::from_utf8_lossy(k).into_owned());
        })?;
        expect(
            format!(
                "prefix scan {:?} limit={limit}",
                String::from_utf8_lossy(prefix)
            ),
            format!("{got:?} ({n})"),
            format!("{want:?} ({})", want.len()),
        )?;
    }
    e.settle()
}

/// Puts 12 MB (12,000 values of 1000 bytes) and settles, then checks that the engine reports
/// a write amplification above 0.5: with a write buffer of 1 MiB at most, its own figure must
/// count at least the flushes (so its statistics are really parsed). Returns the figure.
pub fn check_reported_wa(e: &dyn Engine) -> Result<f64> {
    for i in 0..12_000u32 {
        e.put(format!("{i:08}").as_bytes(), &[7; 1000], false)?;
    }
    e.settle()?;
    match e.write_amplification() {
        Some(wa) if wa > 0.5 => Ok(wa),
        wa => Err(Error::invalid(format!(
            "{} engine reports write amplification {wa:?} after 12 MB of puts; its statistics:\n{}",
            e.name(),
            e.stats_text()
        ))),
    }
}
