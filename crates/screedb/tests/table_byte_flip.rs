//! Flipping any byte of a table is either detected as Corruption naming the file, or provably
//! harmless (only the footer padding); it never yields wrong data silently.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use screedb::comparator::{InternalKeyComparator, default_comparator};
use screedb::fs::{RandomAccessFile, WritableFile};
use screedb::iter::InternalIterator;
use screedb::key::{ValueKind, make_internal_key};
use screedb::table::{CompressionType, FOOTER_LEN, Table, TableBuilder, TableOptions};
use screedb::{Error, Result};

#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl WritableFile for SharedBuf {
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

struct MemFile(Vec<u8>);

impl RandomAccessFile for MemFile {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let src = usize::try_from(offset)
            .ok()
            .and_then(|o| self.0.get(o..o.checked_add(buf.len())?))
            .ok_or_else(|| Error::io("read", "mem", io::ErrorKind::UnexpectedEof.into()))?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

const PATH: &str = "flip/000042.sst";

fn icmp() -> InternalKeyComparator {
    InternalKeyComparator::new(default_comparator())
}

fn options() -> TableOptions {
    TableOptions {
        block_size: 256,
        block_restart_interval: 4,
        compression: CompressionType::Lz4,
        ..TableOptions::default()
    }
}

/// 48 entries: compressible and incompressible values, some deletions, several versions of a key.
fn entries() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    (0..48u64)
        .map(|i| {
            let kind = if i % 7 == 3 {
                ValueKind::Deletion
            } else {
                ValueKind::Value
            };
            let key = make_internal_key(format!("key{:03}", i / 2).as_bytes(), 1000 - i, kind);
            let value = if i % 3 == 0 {
                (0..30)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        x as u8
                    })
                    .collect()
            } else {
                format!("value-{i}-").repeat(4).into_bytes()
            };
            (key, value)
        })
        .collect()
}

fn build() -> Vec<u8> {
    let buf = SharedBuf::default();
    let mut b = TableBuilder::new(options(), icmp(), Box::new(buf.clone()), PATH.into());
    for (k, v) in entries() {
        b.add(&k, &v).unwrap();
    }
    let (_, props) = b.finish().unwrap();
    assert!(props.num_data_blocks >= 5, "{props:?}");
    buf.0.lock().unwrap().clone()
}

/// Checks that `err` is Corruption naming the table file.
fn assert_names_file(err: &Error, pos: usize) {
    match err {
        Error::Corruption { file, .. } => assert_eq!(file, Path::new(PATH), "byte {pos}: {err}"),
        other => panic!("byte {pos}: expected Corruption, got {other}"),
    }
}

/// Everything a reader can see: forward scan, backward scan, a get per key, full verification.
fn read_everything(t: &Arc<Table>, want: &[(Vec<u8>, Vec<u8>)]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut it = t.table_iter();
    let mut fwd = Vec::new();
    it.seek_to_first();
    while it.valid() {
        fwd.push((it.key().to_vec(), it.value().to_vec()));
        it.next();
    }
    it.status()?;
    let mut back = Vec::new();
    it.seek_to_last();
    while it.valid() {
        back.push((it.key().to_vec(), it.value().to_vec()));
        it.prev();
    }
    it.status()?;
    back.reverse();
    assert_eq!(
        fwd, back,
        "forward and backward scans disagree without an error"
    );
    for (k, v) in want {
        let got = t.get(k)?;
        assert_eq!(
            got.as_ref().map(|(_, v)| v),
            Some(v),
            "get returned wrong data silently"
        );
    }
    t.verify_all_blocks()?;
    Ok(fwd)
}

fn open(bytes: Vec<u8>) -> Result<Arc<Table>> {
    Table::open(
        Arc::new(MemFile(bytes)),
        PathBuf::from(PATH),
        42,
        options(),
        icmp(),
        None,
    )
    .map(Arc::new)
}

#[test]
fn every_byte_flip_is_detected_or_harmless() {
    let original = build();
    let want = entries();
    assert!(
        original.len() < 8192,
        "table of {} bytes: keep it small",
        original.len()
    );
    let clean = open(original.clone()).unwrap();
    assert_eq!(read_everything(&clean, &want).unwrap(), want);

    let padding = original.len() - FOOTER_LEN + 36..original.len() - FOOTER_LEN + 40;
    let mut harmless = Vec::new();
    let (mut caught_at_open, mut caught_at_read) = (0, 0);
    for pos in 0..original.len() {
        for mask in [0x01u8, 0x80, 0xff] {
            let mut bytes = original.clone();
            bytes[pos] ^= mask;
            let table = match open(bytes) {
                Err(e) => {
                    assert_names_file(&e, pos);
                    caught_at_open += 1;
                    continue;
                }
                Ok(t) => t,
            };
            match read_everything(&table, &want) {
                Err(e) => {
                    assert_names_file(&e, pos);
                    caught_at_read += 1;
                }
                Ok(data) => {
                    assert!(
                        data == want,
                        "byte {pos} ^ {mask:#x}: wrong data read silently"
                    );
                    assert!(
                        padding.contains(&pos),
                        "byte {pos} ^ {mask:#x} went unnoticed"
                    );
                    harmless.push(pos);
                }
            }
        }
    }
    harmless.dedup();
    assert_eq!(
        harmless,
        padding.collect::<Vec<_>>(),
        "only the footer padding is ignored"
    );
    // Both detection paths are exercised: meta blocks and footer at open, data blocks on read.
    assert!(
        caught_at_open > 100 && caught_at_read > 100,
        "{caught_at_open} / {caught_at_read}"
    );
}
