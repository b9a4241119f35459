//! Table-level tests of bad input: keys out of order or malformed, sticky write errors,
//! corrupt blocks, truncated and foreign files, and random damage (never a panic).

use std::io;

use proptest::prelude::*;

use super::tests::{SharedBuf, build, icmp, open, opts, sample};
use super::*;
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::iter::InternalIterator;
use crate::key::{ValueKind, make_internal_key};

/// A writable file that fails every append after `ok_bytes`.
struct FailingFile {
    ok_bytes: usize,
    written: usize,
}

impl WritableFile for FailingFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        if self.written + data.len() > self.ok_bytes {
            return Err(Error::io(
                "write",
                "fail.sst",
                io::Error::other("disk full"),
            ));
        }
        self.written += data.len();
        Ok(())
    }
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }
    fn size(&self) -> u64 {
        self.written as u64
    }
}

#[test]
#[cfg_attr(debug_assertions, should_panic(expected = "out of order"))]
fn out_of_order_keys_are_refused() {
    let mut b = TableBuilder::new(
        TableOptions::default(),
        icmp(),
        Box::new(SharedBuf::default()),
        "t.sst".into(),
    );
    b.add(&make_internal_key(b"b", 1, ValueKind::Value), b"")
        .unwrap();
    let err = b
        .add(&make_internal_key(b"a", 1, ValueKind::Value), b"")
        .unwrap_err();
    assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
}

#[test]
fn malformed_internal_keys_are_refused() {
    let mut b = TableBuilder::new(
        TableOptions::default(),
        icmp(),
        Box::new(SharedBuf::default()),
        "t.sst".into(),
    );
    assert!(matches!(
        b.add(b"short", b""),
        Err(Error::InvalidArgument(_))
    ));
}

#[test]
fn write_errors_are_sticky() {
    let mut b = TableBuilder::new(
        opts(CompressionType::None),
        icmp(),
        Box::new(FailingFile {
            ok_bytes: 300,
            written: 0,
        }),
        "fail.sst".into(),
    );
    let mut failed = None;
    for (k, v) in sample(100) {
        if let Err(e) = b.add(&k, &v) {
            failed = Some(e);
            break;
        }
    }
    assert!(failed.unwrap().io_kind().is_some());
    let again = b.add(&make_internal_key(b"zzz", 1, ValueKind::Value), b"");
    assert!(again.unwrap_err().io_kind().is_some());
    assert!(b.finish().unwrap_err().io_kind().is_some());
}

#[test]
fn corrupt_data_blocks_are_reported_with_file_and_offset() {
    let es = sample(100);
    let o = opts(CompressionType::None);
    let (mut bytes, _) = build(&o, &es);
    bytes[10] ^= 0x40; // inside the first data block
    let t = open(bytes.clone(), &o, None).unwrap();
    let err = t.get(&es[0].0).unwrap_err();
    assert!(
        err.is_corruption() && err.to_string().contains("t.sst at offset 0"),
        "{err}"
    );
    let mut it = t.table_iter();
    it.seek_to_first();
    assert!(!it.valid());
    assert!(it.status().unwrap_err().is_corruption());
    assert!(t.verify_all_blocks().unwrap_err().is_corruption());
    // Without checksum verification the flipped byte goes unnoticed by reads, but `verify_all_blocks`
    // still checks every block.
    let lax = TableOptions {
        verify_checksums: false,
        ..o
    };
    let t = open(bytes, &lax, None).unwrap();
    assert!(t.get(&es[50].0).unwrap().is_some());
    assert!(t.verify_all_blocks().unwrap_err().is_corruption());
}

#[test]
fn truncated_and_foreign_files_are_rejected() {
    let (bytes, _) = build(&opts(CompressionType::Lz4), &sample(50));
    for len in [0, 10, 47, 48, bytes.len() - 1] {
        let err = open(bytes[..len].to_vec(), &TableOptions::default(), None).unwrap_err();
        assert!(
            err.is_corruption() && err.to_string().contains("t.sst"),
            "{len}: {err}"
        );
    }
    let err = open(vec![0u8; 4096], &TableOptions::default(), None).unwrap_err();
    assert!(err.to_string().contains("magic"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Damaged tables, read without checksums so garbage reaches the decoders, never panic.
    #[test]
    fn damaged_tables_never_panic(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
        truncate in any::<bool>(),
    ) {
        let lax = TableOptions { verify_checksums: false, ..opts(CompressionType::Lz4) };
        let (mut bytes, _) = build(&lax, &sample(60));
        let data_end = bytes.len() - 200; // damage data blocks, which are not verified
        for (at, b) in &edits {
            bytes[at.index(data_end)] = *b;
        }
        if truncate {
            bytes.truncate(cut.index(bytes.len()));
        }
        if let Ok(t) = open(bytes, &lax, None) {
            let mut it = t.table_iter();
            it.seek_to_first();
            for _ in 0..200 {
                if !it.valid() { break; }
                it.next();
            }
            it.seek_to_last();
            for _ in 0..200 {
                if !it.valid() { break; }
                it.prev();
            }
            it.seek(&make_internal_key(b"user-key-000030", 5, ValueKind::Value));
            let _ = (it.status(), t.get(&sample(60)[30].0), t.verify_all_blocks());
        }
    }

    /// Random bytes behind a well-formed footer never panic `Table::open`.
    #[test]
    fn random_files_with_a_footer_never_panic(
        body in proptest::collection::vec(any::<u8>(), 0..400),
        handles in proptest::array::uniform4(0u64..450),
    ) {
        let mut bytes = body;
        let footer = Footer {
            metaindex: BlockHandle { offset: handles[0], size: handles[1] },
            index: BlockHandle { offset: handles[2], size: handles[3] },
        };
        bytes.extend_from_slice(&footer.encode());
        if let Ok(t) = open(bytes, &TableOptions::default(), None) {
            let _ = t.verify_all_blocks();
        }
    }
}
