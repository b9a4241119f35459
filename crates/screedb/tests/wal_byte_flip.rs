//! Flipping any single byte of a log is detected: `Strict` reading fails with a corruption error
//! naming the file and an offset at or before the flipped byte, `TolerateTornTail` fails too
//! unless the flip is in the last record (then that record is dropped as a torn tail), and no
//! reader ever returns a record whose bytes differ from what was written.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers panic on unexpected errors"
)]

use std::path::PathBuf;
use std::sync::Arc;

use screedb::error::Error;
use screedb::wal::{BLOCK_SIZE, HEADER_SIZE, LogReader, RecoveryMode};

mod wal_common;
use wal_common::{MemRandom, random_bytes, write_log};

const LOG_NAME: &str = "MANIFEST-000005";

/// What reading a damaged copy produced.
struct Outcome {
    records: Vec<Vec<u8>>,
    /// `Ok(torn tail offset or None)`, or the corruption's offset.
    end: std::result::Result<Option<u64>, u64>,
}

fn read(bytes: Vec<u8>, mode: RecoveryMode, context: &str) -> Outcome {
    let mut r = LogReader::new(Arc::new(MemRandom(bytes)), PathBuf::from(LOG_NAME), mode);
    let mut records = Vec::new();
    loop {
        match r.read_record() {
            Ok(Some(rec)) => records.push(rec),
            Ok(None) => {
                let end = Ok(r.torn_tail().map(|t| t.offset));
                return Outcome { records, end };
            }
            Err(e) => {
                let msg = e.to_string();
                let Error::Corruption { file, offset, .. } = e else {
                    panic!("{context}: not a corruption error: {msg}");
                };
                assert_eq!(file, PathBuf::from(LOG_NAME), "{context}");
                assert!(
                    msg.contains(LOG_NAME) && msg.contains(&offset.to_string()),
                    "{msg}"
                );
                return Outcome {
                    records,
                    end: Err(offset),
                };
            }
        }
    }
}

/// Flips byte `at` of `full` with `mask` and checks both modes.
fn check_flip(full: &[u8], sizes: &[u64], records: &[Vec<u8>], at: usize, mask: u8) {
    let mut bytes = full.to_vec();
    bytes[at] ^= mask;
    // Index of the record whose bytes (including a trailer written before it) hold `at`.
    let hit = sizes.iter().filter(|&&s| s <= at as u64).count();
    let context = format!("flip {mask:#04x} at {at} (record {hit})");

    let strict = read(bytes.clone(), RecoveryMode::Strict, &context);
    let bad_offset = strict
        .end
        .expect_err(&format!("{context}: strict read must fail"));
    assert!(
        bad_offset <= at as u64,
        "{context}: offset {bad_offset} is past the flip"
    );
    assert!(
        strict.records == records[..strict.records.len()],
        "{context}: wrong data"
    );
    assert!(
        strict.records.len() <= hit,
        "{context}: returned the damaged record"
    );

    let tolerant = read(bytes, RecoveryMode::TolerateTornTail, &context);
    assert!(
        tolerant.records == records[..tolerant.records.len()],
        "{context}: wrong data"
    );
    assert!(
        tolerant.records.len() <= hit,
        "{context}: returned the damaged record"
    );
    if hit + 1 < records.len() {
        assert!(
            tolerant.end.is_err(),
            "{context}: a flip before the last record must fail"
        );
    } else if let Ok(torn) = tolerant.end {
        // Dropped as a torn tail: only the last record may be missing.
        assert_eq!(tolerant.records.len(), records.len() - 1, "{context}");
        assert_eq!(torn, Some(sizes[records.len() - 2]), "{context}");
    }
}

#[test]
fn every_byte_of_a_small_log() {
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<Vec<u8>> = [0, 1, 300, 7, 0, 900, 40, 1000]
        .iter()
        .enumerate()
        .map(|(i, &n)| random_bytes(n, i as u64))
        .collect();
    let (full, sizes) = write_log(dir.path(), LOG_NAME, &records);
    assert!((2000..3500).contains(&full.len()), "{}", full.len());
    for at in 0..full.len() {
        for mask in [0x01, 0x80, 0xff] {
            check_flip(&full, &sizes, &records, at, mask);
        }
    }
}

#[test]
fn every_header_and_trailer_byte_and_sampled_payload_of_a_multi_block_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut records = vec![random_bytes(BLOCK_SIZE - HEADER_SIZE - 4, 1)]; // 4-byte trailer
    records.push(random_bytes(3 * BLOCK_SIZE, 2)); // FIRST, MIDDLE, MIDDLE, LAST
    records.push(Vec::new());
    for i in 0..30 {
        records.push(random_bytes(i * 397 % 5000, 10 + i as u64));
    }
    records.push(random_bytes(BLOCK_SIZE + 1234, 3));
    let (full, sizes) = write_log(dir.path(), LOG_NAME, &records);

    let mut positions: Vec<usize> = (0..full.len()).step_by(211).collect();
    // Every header: record starts (after any trailer) and block starts.
    let mut starts: Vec<usize> = vec![0];
    starts.extend(sizes.iter().map(|&s| s as usize));
    starts.extend((BLOCK_SIZE..full.len()).step_by(BLOCK_SIZE));
    for s in starts {
        let s = if BLOCK_SIZE - s % BLOCK_SIZE < HEADER_SIZE {
            positions.extend(s..s.next_multiple_of(BLOCK_SIZE)); // the trailer
            s.next_multiple_of(BLOCK_SIZE)
        } else {
            s
        };
        positions.extend(s..(s + HEADER_SIZE + 2).min(full.len()));
    }
    positions.extend(full.len() - 20..full.len());
    positions.sort_unstable();
    positions.dedup();
    for at in positions.into_iter().filter(|&p| p < full.len()) {
        for mask in [0x01, 0xff] {
            check_flip(&full, &sizes, &records, at, mask);
        }
    }
}
