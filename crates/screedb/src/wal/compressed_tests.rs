//! Compressed WAL records (fragment types 5 to 8): round trips, what stays plain, and damage.

use proptest::prelude::*;

use super::format::{BLOCK_SIZE, FragmentType, HEADER_SIZE, encode_header};
use super::tests::{expect_corruption, pattern, read_all, reader, salvage, write_log_compressing};
use super::{COMPRESS_RECORDS_FROM, LogWriter, Packed, Piece, RecoveryMode};
use crate::coding::put_varint32;
use crate::table::compression::incompressible;

const MODES: [RecoveryMode; 3] = [
    RecoveryMode::Strict,
    RecoveryMode::TolerateTornTail,
    RecoveryMode::SkipDamage,
];

fn fragment(kind: FragmentType, compressed: bool, payload: &[u8]) -> Vec<u8> {
    let mut v = encode_header(kind, compressed, payload).to_vec();
    v.extend_from_slice(payload);
    v
}

/// The type byte of every fragment of a log whose records each fit in one block's rest.
fn type_bytes(bytes: &[u8]) -> Vec<u8> {
    let mut types = Vec::new();
    let mut pos = 0;
    while pos + HEADER_SIZE <= bytes.len() {
        let len = usize::from(u16::from_le_bytes([bytes[pos + 4], bytes[pos + 5]]));
        types.push(bytes[pos + 6]);
        pos += HEADER_SIZE + len;
    }
    types
}

#[test]
fn compressible_records_from_the_threshold_are_compressed_and_read_back() {
    let records = vec![
        pattern(COMPRESS_RECORDS_FROM - 1, 1),
        pattern(COMPRESS_RECORDS_FROM, 2),
        b"small".to_vec(),
        pattern(4000, 3),
    ];
    let (bytes, _) = write_log_compressing(&records, COMPRESS_RECORDS_FROM);
    assert_eq!(type_bytes(&bytes), vec![1, 5, 1, 5]);
    let (plain, _) = write_log_compressing(&records, usize::MAX);
    assert!(
        bytes.len() < plain.len() / 2,
        "{} vs {}",
        bytes.len(),
        plain.len()
    );
    for mode in MODES {
        assert_eq!(read_all(bytes.clone(), mode), records);
    }
    // The reader says how each record was stored, and what it took in the file.
    let mut r = reader(bytes.clone(), RecoveryMode::Strict);
    let mut seen = Vec::new();
    while let Some(record) = r.read_record().unwrap() {
        seen.push((
            r.last_record_compressed(),
            r.last_record_stored_bytes(),
            record.len(),
        ));
    }
    let plain_sizes: Vec<u64> = records
        .iter()
        .map(|r| (HEADER_SIZE + r.len()) as u64)
        .collect();
    assert_eq!(
        seen.iter().map(|s| s.0).collect::<Vec<_>>(),
        [false, true, false, true]
    );
    assert_eq!(seen[0].1, plain_sizes[0]);
    assert_eq!(seen[2].1, plain_sizes[2]);
    assert!(seen[3].1 < plain_sizes[3] / 4, "{seen:?}");
    assert_eq!(seen.iter().map(|s| s.1).sum::<u64>(), bytes.len() as u64);
}

#[test]
fn records_lz4_cannot_shrink_by_an_eighth_stay_plain() {
    let records = vec![incompressible(1, 4000), vec![7; 600]];
    let (bytes, _) = write_log_compressing(&records, 0);
    assert_eq!(type_bytes(&bytes), vec![1, 5]);
    assert_eq!(read_all(bytes, RecoveryMode::Strict), records);
}

#[test]
fn a_compressed_record_spanning_blocks_uses_first_middle_last_of_its_family() {
    // Half random (LZ4 keeps it), half runs: compressed, still over two blocks.
    let mut big = incompressible(2, 2 * BLOCK_SIZE + 100);
    big.extend(pattern(BLOCK_SIZE, 4));
    let records = vec![b"before".to_vec(), big, b"after".to_vec()];
    let (bytes, sizes) = write_log_compressing(&records, 0);
    let later_types: Vec<u8> = (1..3).map(|b| bytes[b * BLOCK_SIZE + 6]).collect();
    assert_eq!(bytes[sizes[0] as usize + 6], 6, "FIRST, compressed");
    assert_eq!(later_types, vec![7, 8], "MIDDLE and LAST, compressed");
    for mode in MODES {
        assert_eq!(read_all(bytes.clone(), mode), records);
    }
}

#[test]
fn valid_fragments_that_do_not_decode_are_corruption_and_skipped_by_salvage() {
    // An empty prefix, then a piece of 100 bytes packed into 12 no LZ4 decoder accepts.
    let mut bogus = Vec::new();
    for n in [0, 100, 12] {
        put_varint32(&mut bogus, n);
    }
    bogus.extend_from_slice(&[0xff; 12]);
    // A raw piece longer than the record.
    let mut short = Vec::new();
    for n in [0, 100, 0] {
        put_varint32(&mut short, n);
    }
    short.extend_from_slice(&[1; 15]);
    for body in [bogus, short] {
        let mut log = fragment(FragmentType::Full, false, b"kept");
        log.extend(fragment(FragmentType::Full, true, &body));
        let end = log.len() as u64;
        log.extend(fragment(FragmentType::Full, false, b"after"));
        for mode in [RecoveryMode::Strict, RecoveryMode::TolerateTornTail] {
            expect_corruption(log.clone(), mode, 11, "does not decode");
        }
        let (got, skipped) = salvage(log);
        assert_eq!(got, [b"kept".to_vec(), b"after".to_vec()]);
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert_eq!((skipped[0].offset, skipped[0].resumed_at), (11, end));
    }
}

#[test]
fn a_prefix_and_mixed_pieces_read_back_as_one_record() {
    let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let file = super::tests::MemWritable(std::sync::Arc::clone(&buf));
    let mut w = LogWriter::new(Box::new(file));
    let (a, b) = (pattern(2000, 9), incompressible(4, 300));
    let pa = Packed::new(&a).unwrap();
    w.add_compressed_record(b"header", &[Piece::Raw(&b), Piece::Packed(&pa)])
        .unwrap();
    w.add_record(b"plain").unwrap();
    let bytes = buf.lock().unwrap().clone();
    let want = vec![[&b"header"[..], &b, &a].concat(), b"plain".to_vec()];
    for mode in MODES {
        assert_eq!(read_all(bytes.clone(), mode), want);
    }
}

#[test]
fn a_fragment_of_the_other_family_inside_a_record_is_corruption() {
    let packed = pattern(3000, 5);
    let (head, tail) = packed.split_at(10);
    for (first, last) in [(true, false), (false, true)] {
        let mut log = fragment(FragmentType::First, first, head);
        log.extend(fragment(FragmentType::Last, last, tail));
        log.extend(fragment(FragmentType::Full, false, b"next"));
        let at = (HEADER_SIZE + head.len()) as u64;
        for mode in [RecoveryMode::Strict, RecoveryMode::TolerateTornTail] {
            expect_corruption(log.clone(), mode, at, "inside the");
        }
        let (got, skipped) = salvage(log);
        assert_eq!(got, [b"next".to_vec()]);
        assert_eq!(skipped[0].offset, 0, "{skipped:?}");
    }
}

#[test]
fn every_byte_flip_in_a_compressed_log_is_caught_never_returned_as_data() {
    let records = vec![pattern(700, 6), b"plain one".to_vec(), pattern(900, 7)];
    let (bytes, _) = write_log_compressing(&records, COMPRESS_RECORDS_FROM);
    for at in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x20;
        for mode in MODES {
            let mut r = reader(bad.clone(), mode);
            while let Ok(Some(rec)) = r.read_record() {
                assert!(
                    records.contains(&rec),
                    "flip at {at} returned a record never written"
                );
            }
        }
        let mut strict = reader(bad, RecoveryMode::Strict);
        let mut ok = 0;
        while let Ok(Some(_)) = strict.read_record() {
            ok += 1;
        }
        assert!(
            ok < records.len(),
            "flip at {at} went unnoticed in strict mode"
        );
    }
}

#[test]
fn a_torn_compressed_record_is_a_torn_tail() {
    let mut big = incompressible(3, BLOCK_SIZE);
    big.extend(pattern(BLOCK_SIZE, 8));
    let records = vec![b"kept".to_vec(), big];
    let (bytes, sizes) = write_log_compressing(&records, 0);
    let cut = bytes[..BLOCK_SIZE + 100].to_vec();
    let mut r = reader(cut, RecoveryMode::TolerateTornTail);
    assert_eq!(r.read_record().unwrap().unwrap(), b"kept");
    assert_eq!(r.read_record().unwrap(), None);
    assert_eq!(r.torn_tail().unwrap().offset, sizes[0]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn random_records_round_trip_compressed(
        records in proptest::collection::vec(
            (0usize..(2 * BLOCK_SIZE), any::<bool>(), any::<u8>()),
            0..16,
        ),
        from in prop_oneof![Just(0usize), Just(COMPRESS_RECORDS_FROM), 0usize..5000],
    ) {
        let records: Vec<Vec<u8>> = records
            .iter()
            .map(|&(n, runs, seed)| {
                if runs { pattern(n, seed) } else { incompressible(u64::from(seed), n) }
            })
            .collect();
        let (bytes, _) = write_log_compressing(&records, from);
        for mode in MODES {
            prop_assert_eq!(read_all(bytes.clone(), mode), records.clone());
        }
    }
}
