//! The log format of the write-ahead log and of the MANIFEST: LevelDB's `log_format.md`, and
//! for the WAL, compressed records in four fragment types of its own (5 to 8).
//!
//! A log is a sequence of 32 KiB blocks. A record is written as one or more fragments, each with
//! a 7-byte header (masked CRC32C u32 LE | length u16 LE | type u8); a fragment never spans a
//! block, and fewer than 7 bytes left in a block are zero-filled. [`format`] holds the byte
//! layout, [`LogWriter`] appends records and [`LogReader`] reads them back, either strictly or
//! tolerating a torn tail left by a crash (see [`RecoveryMode`] and `docs/format.md`).

mod format;
mod packed;
mod reader;
mod writer;

pub use format::{BLOCK_SIZE, HEADER_SIZE};
pub use packed::{Packed, Piece};
pub use reader::{LogReader, RecoveryMode, SkippedRegion, TornTail};
pub use writer::LogWriter;

#[cfg(test)]
mod compressed_tests;

/// The smallest write batch whose writer compresses it for the WAL (`Options::wal_compression`).
/// A smaller one is logged as it is: LZ4 finds little to take in a few hundred bytes, and a
/// single small put would pay the compressor's fixed cost (0.3-0.5 us) on the write path.
pub const COMPRESS_RECORDS_FROM: usize = 512;

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::sync::{Arc, Mutex};

    use proptest::prelude::*;

    use super::format::{FragmentType, encode_header};
    use super::*;
    use crate::error::{Error, Result};
    use crate::fs::{RandomAccessFile, WritableFile};

    /// An append-only file over a shared vector.
    pub(super) struct MemWritable(pub(super) Arc<Mutex<Vec<u8>>>);

    impl WritableFile for MemWritable {
        fn append(&mut self, data: &[u8]) -> Result<()> {
            self.0.lock().unwrap().extend_from_slice(data);
            Ok(())
        }
        fn flush(&mut self) -> Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
        fn size(&self) -> u64 {
            self.0.lock().unwrap().len() as u64
        }
    }

    /// A read-only file over a vector.
    struct MemRandom(Vec<u8>);

    impl RandomAccessFile for MemRandom {
        fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
            let start = offset as usize;
            let src = self.0.get(start..start + buf.len()).ok_or_else(|| {
                Error::io("read", "mem", std::io::ErrorKind::UnexpectedEof.into())
            })?;
            buf.copy_from_slice(src);
            Ok(())
        }
        fn size(&self) -> u64 {
            self.0.len() as u64
        }
    }

    /// Writes `records` and returns the log bytes and the writer's size after each record.
    fn write_log(records: &[Vec<u8>]) -> (Vec<u8>, Vec<u64>) {
        write_log_compressing(records, usize::MAX)
    }

    /// [`write_log`], compressing each record of at least `from` bytes LZ4 shrinks by an
    /// eighth (one packed piece behind an empty prefix).
    pub(super) fn write_log_compressing(records: &[Vec<u8>], from: usize) -> (Vec<u8>, Vec<u64>) {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let mut w = LogWriter::new(Box::new(MemWritable(Arc::clone(&buf))));
        let mut sizes = Vec::new();
        for r in records {
            match (r.len() >= from).then(|| Packed::new(r)).flatten() {
                Some(p) => w.add_compressed_record(&[], &[Piece::Packed(&p)]).unwrap(),
                None => w.add_record(r).unwrap(),
            }
            sizes.push(w.size());
        }
        w.sync().unwrap();
        let bytes = buf.lock().unwrap().clone();
        assert_eq!(bytes.len() as u64, w.size());
        (bytes, sizes)
    }

    pub(super) fn reader(bytes: Vec<u8>, mode: RecoveryMode) -> LogReader {
        LogReader::new(
            Arc::new(MemRandom(bytes)),
            PathBuf::from("000007.log"),
            mode,
        )
    }

    /// Reads every record; panics on error.
    pub(super) fn read_all(bytes: Vec<u8>, mode: RecoveryMode) -> Vec<Vec<u8>> {
        let mut r = reader(bytes, mode);
        let mut out = Vec::new();
        while let Some(rec) = r.read_record().unwrap() {
            out.push(rec);
        }
        assert!(r.torn_tail().is_none(), "{:?}", r.torn_tail());
        out
    }

    fn round_trip(records: &[Vec<u8>]) {
        let (bytes, _) = write_log(records);
        for mode in [
            RecoveryMode::Strict,
            RecoveryMode::TolerateTornTail,
            RecoveryMode::SkipDamage,
        ] {
            let got = read_all(bytes.clone(), mode);
            assert_eq!(got.len(), records.len());
            for (i, (g, r)) in got.iter().zip(records).enumerate() {
                assert!(
                    g == r,
                    "record {i} differs (len {} vs {})",
                    g.len(),
                    r.len()
                );
            }
        }
    }

    pub(super) fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn empty_log_and_empty_records() {
        round_trip(&[]);
        round_trip(&[vec![]]);
        round_trip(&[vec![], b"a".to_vec(), vec![], vec![]]);
    }

    #[test]
    fn small_and_block_filling_records() {
        round_trip(&[b"foo".to_vec(), b"bar".to_vec(), pattern(1000, 1)]);
        round_trip(&[pattern(BLOCK_SIZE - HEADER_SIZE, 2), b"after".to_vec()]);
    }

    #[test]
    fn every_size_around_the_block_boundary() {
        let base = BLOCK_SIZE - HEADER_SIZE;
        for len in base - 2 * HEADER_SIZE..=base + 2 * HEADER_SIZE {
            round_trip(&[pattern(len, 3), b"x".to_vec(), pattern(len, 4)]);
        }
        // The same, two blocks in.
        let base = 2 * BLOCK_SIZE - 2 * HEADER_SIZE;
        for len in base - HEADER_SIZE..=base + HEADER_SIZE {
            round_trip(&[pattern(len, 5), pattern(7, 6)]);
        }
    }

    #[test]
    fn trailer_padding_of_one_to_six_bytes() {
        for leftover in 1..HEADER_SIZE {
            let first = pattern(BLOCK_SIZE - HEADER_SIZE - leftover, 7);
            round_trip(&[first.clone(), b"next".to_vec()]);
            round_trip(&[first, vec![]]);
        }
    }

    #[test]
    fn ten_mib_record_and_many_records() {
        round_trip(&[b"a".to_vec(), pattern(10 << 20, 8), b"b".to_vec()]);
        let many: Vec<Vec<u8>> = (0..5000).map(|i| pattern(i % 300, i as u8)).collect();
        round_trip(&many);
    }

    #[test]
    fn last_record_offset_points_at_the_first_header() {
        let records = vec![b"one".to_vec(), pattern(BLOCK_SIZE, 9), b"three".to_vec()];
        let (bytes, sizes) = write_log(&records);
        let mut r = reader(bytes, RecoveryMode::Strict);
        let mut starts = vec![0];
        starts.extend(&sizes[..2]);
        for start in starts {
            r.read_record().unwrap().unwrap();
            assert_eq!(r.last_record_offset(), start);
        }
        assert_eq!(r.read_record().unwrap(), None);
        assert_eq!(r.read_record().unwrap(), None);
    }

    fn fragment(kind: FragmentType, payload: &[u8]) -> Vec<u8> {
        let mut v = encode_header(kind, false, payload).to_vec();
        v.extend_from_slice(payload);
        v
    }

    pub(super) fn expect_corruption(bytes: Vec<u8>, mode: RecoveryMode, offset: u64, needle: &str) {
        let mut r = reader(bytes, mode);
        let err = loop {
            match r.read_record() {
                Ok(Some(_)) => {}
                Ok(None) => panic!("expected corruption, got end of log"),
                Err(e) => break e,
            }
        };
        match &err {
            Error::Corruption {
                file,
                offset: at,
                reason,
            } => {
                assert_eq!(file, &PathBuf::from("000007.log"));
                assert_eq!(*at, offset, "{err}");
                assert!(reason.contains(needle), "{err}");
            }
            other => panic!("not corruption: {other}"),
        }
        assert!(r.read_record().is_err(), "errors are sticky");
    }

    #[test]
    fn fragments_out_of_order_are_corruption_in_both_modes() {
        let full = fragment(FragmentType::Full, b"ok");
        for mode in [RecoveryMode::Strict, RecoveryMode::TolerateTornTail] {
            for kind in [FragmentType::Middle, FragmentType::Last] {
                let mut log = full.clone();
                log.extend(fragment(kind, b"orphan"));
                expect_corruption(log, mode, 9, "without a FIRST");
            }
            for kind in [FragmentType::Full, FragmentType::First] {
                let mut log = fragment(FragmentType::First, b"begun");
                log.extend(fragment(kind, b"again"));
                log.extend(fragment(FragmentType::Last, b"end"));
                expect_corruption(log, mode, 12, "inside the record starting at offset 0");
            }
        }
    }

    #[test]
    fn missing_last_fragment_is_strict_error_and_torn_tail() {
        let mut log = fragment(FragmentType::Full, b"kept");
        log.extend(fragment(FragmentType::First, b"begun"));
        log.extend(fragment(FragmentType::Middle, b"more"));
        expect_corruption(
            log.clone(),
            RecoveryMode::Strict,
            11,
            "LAST fragment is missing",
        );
        let mut r = reader(log.clone(), RecoveryMode::TolerateTornTail);
        assert_eq!(r.read_record().unwrap().unwrap(), b"kept");
        assert_eq!(r.read_record().unwrap(), None);
        let tail = r.torn_tail().unwrap();
        assert_eq!(tail.offset, 11);
        assert_eq!(tail.dropped_bytes, log.len() as u64 - 11);
    }

    #[test]
    fn non_zero_trailer_byte_is_corruption() {
        let leftover = 3;
        let (mut bytes, _) = write_log(&[pattern(BLOCK_SIZE - HEADER_SIZE - leftover, 1), vec![1]]);
        bytes[BLOCK_SIZE - 2] = 0x40;
        let at = (BLOCK_SIZE - leftover) as u64;
        expect_corruption(bytes.clone(), RecoveryMode::Strict, at, "trailer");
        expect_corruption(
            bytes,
            RecoveryMode::TolerateTornTail,
            at,
            "valid fragment starts",
        );
    }

    #[test]
    fn zero_filled_tail_is_torn_tail() {
        let (mut bytes, sizes) = write_log(&[b"a".to_vec(), b"b".to_vec()]);
        bytes.resize(3 * BLOCK_SIZE + 100, 0);
        let mut r = reader(bytes.clone(), RecoveryMode::TolerateTornTail);
        assert_eq!(r.read_record().unwrap().unwrap(), b"a");
        assert_eq!(r.read_record().unwrap().unwrap(), b"b");
        assert_eq!(r.read_record().unwrap(), None);
        assert_eq!(r.torn_tail().unwrap().offset, sizes[1]);
        assert!(r.torn_tail().unwrap().reason.contains("zero-filled"));
        expect_corruption(bytes, RecoveryMode::Strict, sizes[1], "zero-filled");
    }

    #[test]
    fn a_valid_fragment_anywhere_after_the_damage_is_found() {
        // Damage in block 0; block 1 starts with zeros; a valid fragment sits mid-block 2.
        let mut log = fragment(FragmentType::Full, b"a");
        log.extend(fragment(FragmentType::Full, b"damaged"));
        log[8 + HEADER_SIZE] ^= 1;
        log.resize(2 * BLOCK_SIZE + 100, 0);
        log.extend(fragment(FragmentType::Full, b"late"));
        let at = 2 * BLOCK_SIZE as u64 + 100;
        let needle = format!("valid fragment starts later, at offset {at}");
        expect_corruption(log.clone(), RecoveryMode::TolerateTornTail, 8, &needle);
        expect_corruption(log.clone(), RecoveryMode::Strict, 8, "checksum mismatch");
        // Without the late fragment, the same damage is a torn tail.
        log.truncate(at as usize);
        let mut r = reader(log, RecoveryMode::TolerateTornTail);
        assert_eq!(r.read_record().unwrap().unwrap(), b"a");
        assert_eq!(r.read_record().unwrap(), None);
        let tail = r.torn_tail().unwrap().clone();
        assert_eq!((tail.offset, tail.dropped_bytes), (8, at - 8));
        assert!(tail.reason.contains("offset 8"), "{}", tail.reason);
        assert!(format!("{r:?}").contains("000007.log"));
    }

    /// Every record, and the regions skipped, of a [`RecoveryMode::SkipDamage`] read.
    pub(super) fn salvage(bytes: Vec<u8>) -> (Vec<Vec<u8>>, Vec<SkippedRegion>) {
        let mut r = reader(bytes, RecoveryMode::SkipDamage);
        let mut out = Vec::new();
        while let Some(rec) = r.read_record().unwrap() {
            out.push(rec);
        }
        (out, r.skipped().to_vec())
    }

    #[test]
    fn skip_damage_keeps_every_intact_record_after_the_damage() {
        // Record 2 spans three blocks; damage its middle fragment, then record 4's only one.
        let records = vec![
            b"first".to_vec(),
            pattern(1000, 1),
            pattern(2 * BLOCK_SIZE + 500, 2),
            b"after the big one".to_vec(),
            pattern(300, 3),
            b"last".to_vec(),
        ];
        let (mut bytes, sizes) = write_log(&records);
        bytes[BLOCK_SIZE + 100] ^= 1;
        bytes[sizes[3] as usize + HEADER_SIZE + 10] ^= 1;
        let (got, skipped) = salvage(bytes.clone());
        let want: Vec<Vec<u8>> = [0, 1, 3, 5].iter().map(|&i| records[i].clone()).collect();
        assert_eq!(got, want);
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        assert_eq!(skipped[0].offset, sizes[1], "the cut record starts there");
        assert!(skipped[0].reason.contains("checksum"), "{skipped:?}");
        assert_eq!(skipped[1].offset, sizes[3]);
        // The other modes refuse the same log.
        expect_corruption(
            bytes,
            RecoveryMode::TolerateTornTail,
            BLOCK_SIZE as u64,
            "valid fragment",
        );
    }

    #[test]
    fn skip_damage_drops_fragments_out_of_order_and_goes_on() {
        let mut log = fragment(FragmentType::Full, b"ok");
        log.extend(fragment(FragmentType::Middle, b"orphan"));
        log.extend(fragment(FragmentType::First, b"begun"));
        log.extend(fragment(FragmentType::Full, b"again"));
        log.extend(fragment(FragmentType::First, b"two"));
        log.extend(fragment(FragmentType::Last, b" parts"));
        let (got, skipped) = salvage(log);
        assert_eq!(
            got,
            [b"ok".to_vec(), b"again".to_vec(), b"two parts".to_vec()]
        );
        // The orphan and the unfinished record next to it: one region of lost bytes.
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert_eq!((skipped[0].offset, skipped[0].resumed_at), (9, 34));
        assert!(skipped[0].reason.contains("without a FIRST"), "{skipped:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn random_records_round_trip(
            sizes in proptest::collection::vec(
                prop_oneof![0usize..64, 0usize..(BLOCK_SIZE + 64), 0usize..100_000],
                0..24,
            ),
            seed in any::<u8>(),
        ) {
            let records: Vec<Vec<u8>> =
                sizes.iter().enumerate().map(|(i, &n)| pattern(n, seed ^ i as u8)).collect();
            round_trip(&records);
        }
    }
}
