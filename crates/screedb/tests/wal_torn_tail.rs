//! A log cut short (or extended with zeros or garbage) by a crash reads back as exactly the
//! complete records before the damage in `TolerateTornTail` mode, and is an error in `Strict`
//! mode. Damage followed by a valid record is an error in both modes.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers panic on unexpected errors"
)]

use std::path::PathBuf;
use std::sync::Arc;

use screedb::error::{Error, Result};
use screedb::fs::{Fs, OsFs};
use screedb::wal::{BLOCK_SIZE, HEADER_SIZE, LogReader, RecoveryMode};

mod wal_common;
use wal_common::{MemRandom, random_bytes, write_log};

const LOG_NAME: &str = "000042.log";

/// Reads `bytes` to the end: the records, and the torn tail's (offset, dropped bytes) if any.
#[allow(clippy::type_complexity)]
fn read(bytes: &[u8], mode: RecoveryMode) -> Result<(Vec<Vec<u8>>, Option<(u64, u64)>)> {
    let file = Arc::new(MemRandom(bytes.to_vec()));
    let mut r = LogReader::new(file, PathBuf::from(LOG_NAME), mode);
    let mut out = Vec::new();
    while let Some(rec) = r.read_record()? {
        out.push(rec);
    }
    Ok((out, r.torn_tail().map(|t| (t.offset, t.dropped_bytes))))
}

fn assert_corruption(result: Result<impl std::fmt::Debug>, context: &str) {
    match result {
        Err(e @ Error::Corruption { .. }) => {
            assert!(e.to_string().contains(LOG_NAME), "{context}: {e}");
        }
        other => panic!("{context}: expected corruption, got {other:?}"),
    }
}

/// Checks both modes for the log `full` cut at `cut`.
fn check_cut(full: &[u8], sizes: &[u64], records: &[Vec<u8>], cut: usize) {
    let bytes = &full[..cut];
    let complete = sizes.iter().filter(|&&s| s <= cut as u64).count();
    let clean_end = if complete == 0 {
        0
    } else {
        sizes[complete - 1]
    };
    let (got, tail) = read(bytes, RecoveryMode::TolerateTornTail)
        .unwrap_or_else(|e| panic!("cut at {cut}: tolerant read failed: {e}"));
    assert!(got == records[..complete], "cut at {cut}: wrong records");
    if clean_end == cut as u64 {
        assert_eq!(tail, None, "cut at {cut} is a record boundary");
        let (strict, _) = read(bytes, RecoveryMode::Strict).unwrap();
        assert!(strict == records[..complete]);
    } else {
        assert_eq!(
            tail,
            Some((clean_end, cut as u64 - clean_end)),
            "cut at {cut}"
        );
        assert_corruption(
            read(bytes, RecoveryMode::Strict),
            &format!("strict, cut at {cut}"),
        );
    }
}

/// Records whose sizes put the end of the second-to-last record `gap` bytes before a block end.
fn records_ending_before_block_end(gap: usize, last_len: usize) -> Vec<Vec<u8>> {
    let mut records: Vec<Vec<u8>> = (0..5)
        .map(|i| random_bytes(100 + i * 37, i as u64))
        .collect();
    let used: usize = records.iter().map(|r| r.len() + HEADER_SIZE).sum();
    records.push(random_bytes(BLOCK_SIZE - gap - used - HEADER_SIZE, 99));
    records.push(random_bytes(last_len, 100));
    records
}

#[test]
fn every_cut_in_a_last_record_behind_a_trailer() {
    let dir = tempfile::tempdir().unwrap();
    for gap in [0, 3, 6] {
        let records = records_ending_before_block_end(gap, 2500);
        let (full, sizes) = write_log(dir.path(), LOG_NAME, &records);
        assert_eq!(sizes[sizes.len() - 2], (BLOCK_SIZE - gap) as u64);
        for cut in sizes[sizes.len() - 2] as usize..=full.len() {
            check_cut(&full, &sizes, &records, cut);
        }
    }
}

#[test]
fn every_cut_in_a_last_record_crossing_a_block() {
    let dir = tempfile::tempdir().unwrap();
    let records = records_ending_before_block_end(1200, 2500);
    let (full, sizes) = write_log(dir.path(), LOG_NAME, &records);
    for cut in sizes[sizes.len() - 2] as usize..=full.len() {
        check_cut(&full, &sizes, &records, cut);
    }
}

#[test]
fn sampled_cuts_in_a_large_last_record_and_in_earlier_records() {
    let dir = tempfile::tempdir().unwrap();
    let mut records: Vec<Vec<u8>> = (0..40)
        .map(|i| random_bytes(i * 211 % 3000, i as u64))
        .collect();
    records.push(random_bytes(3 * BLOCK_SIZE + 500, 7));
    records.push(random_bytes(90_000, 8));
    let (full, sizes) = write_log(dir.path(), LOG_NAME, &records);
    let mut cuts: Vec<usize> = (0..=full.len()).step_by(389).collect();
    for b in (BLOCK_SIZE..full.len()).step_by(BLOCK_SIZE) {
        cuts.extend(b - 8..=b + 8);
    }
    for &s in &sizes {
        let s = s as usize;
        cuts.extend(s.saturating_sub(2)..=(s + HEADER_SIZE + 1).min(full.len()));
    }
    for cut in cuts {
        check_cut(&full, &sizes, &records, cut);
    }
}

#[test]
fn appended_zeros_and_garbage_are_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    for gap in [0, 2, 500] {
        let records = records_ending_before_block_end(gap, 10);
        let (full, sizes) = write_log(dir.path(), LOG_NAME, &records);
        let mut tails: Vec<Vec<u8>> = [1, 2, 6, 7, 8, 100, BLOCK_SIZE, 2 * BLOCK_SIZE + 13]
            .iter()
            .map(|&n| vec![0u8; n])
            .collect();
        for (i, n) in [1, 5, 7, 64, 4096, BLOCK_SIZE + 99].into_iter().enumerate() {
            tails.push(random_bytes(n, 1000 + i as u64));
        }
        for tail in tails {
            let mut bytes = full.clone();
            bytes.extend_from_slice(&tail);
            let context = format!("gap {gap}, tail of {} bytes", tail.len());
            let (got, torn) = read(&bytes, RecoveryMode::TolerateTornTail)
                .unwrap_or_else(|e| panic!("{context}: {e}"));
            assert!(got == records, "{context}");
            assert_eq!(
                torn,
                Some((full.len() as u64, tail.len() as u64)),
                "{context}"
            );
            assert_corruption(read(&bytes, RecoveryMode::Strict), &context);
        }
        assert_eq!(*sizes.last().unwrap(), full.len() as u64);
    }
}

#[test]
fn a_damaged_record_followed_by_a_valid_one_is_an_error_in_both_modes() {
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<Vec<u8>> = (0..6)
        .map(|i| random_bytes(700 * i + 5, i as u64))
        .collect();
    let (full, sizes) = write_log(dir.path(), LOG_NAME, &records);
    // Damage record 2 in its header, its payload and by zeroing it; record 3 onwards stays valid.
    let start = sizes[1] as usize;
    let end = sizes[2] as usize;
    let mut damaged = Vec::new();
    for at in [start, start + 4, start + 6, start + 20, end - 1] {
        let mut b = full.clone();
        b[at] ^= 0x10;
        damaged.push(b);
    }
    let mut zeroed = full.clone();
    zeroed[start..end].fill(0);
    damaged.push(zeroed);
    for (i, bytes) in damaged.iter().enumerate() {
        for mode in [RecoveryMode::Strict, RecoveryMode::TolerateTornTail] {
            let result = read(bytes, mode);
            match &result {
                Err(Error::Corruption { offset, .. }) => {
                    assert_eq!(*offset, start as u64, "damage #{i}, {mode:?}");
                }
                other => panic!("damage #{i}, {mode:?}: expected corruption, got {other:?}"),
            }
            assert!(
                result.unwrap_err().to_string().contains("corruption in"),
                "damage #{i}"
            );
        }
    }
}

#[test]
fn a_real_file_with_a_torn_tail_reads_through_os_fs() {
    let dir = tempfile::tempdir().unwrap();
    let records = vec![
        b"alpha".to_vec(),
        random_bytes(50_000, 3),
        b"omega".to_vec(),
    ];
    let (full, sizes) = write_log(dir.path(), LOG_NAME, &records);
    let path = dir.path().join("torn.log");
    screedb::fs::write_all_synced(&OsFs, &path, &full[..full.len() - 3]).unwrap();
    let file = OsFs.open(&path).unwrap();
    let mut r = LogReader::new(file, path.clone(), RecoveryMode::TolerateTornTail);
    assert_eq!(r.read_record().unwrap().unwrap(), b"alpha");
    assert!(r.read_record().unwrap().unwrap() == records[1]);
    assert_eq!(r.last_record_offset(), sizes[0]);
    assert_eq!(r.read_record().unwrap(), None);
    let tail = r.torn_tail().unwrap();
    assert_eq!(
        (tail.offset, tail.dropped_bytes),
        (sizes[1], sizes[2] - sizes[1] - 3)
    );
    assert!(
        tail.reason.contains("ends inside a fragment"),
        "{}",
        tail.reason
    );

    let file = OsFs.open(&path).unwrap();
    let mut r = LogReader::new(file, path.clone(), RecoveryMode::Strict);
    r.read_record().unwrap().unwrap();
    r.read_record().unwrap().unwrap();
    let err = r.read_record().unwrap_err();
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}
