//! Helpers shared by the log format tests (`wal_byte_flip.rs`, `wal_torn_tail.rs`).

use std::path::Path;

use screedb::error::{Error, Result};
use screedb::fs::{Fs, OsFs, RandomAccessFile};
use screedb::wal::LogWriter;

/// A read-only file over a vector, so each damaged copy costs no file-system work.
pub struct MemRandom(pub Vec<u8>);

impl RandomAccessFile for MemRandom {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let start = offset as usize;
        let src = self
            .0
            .get(start..start + buf.len())
            .ok_or_else(|| Error::io("read", "mem", std::io::ErrorKind::UnexpectedEof.into()))?;
        buf.copy_from_slice(src);
        Ok(())
    }
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
}

/// Deterministic pseudo-random bytes (xorshift), so payloads look like real data.
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

/// Writes `records` to `dir/name` through `OsFs`; returns the file's bytes and the log size after
/// each record.
pub fn write_log(dir: &Path, name: &str, records: &[Vec<u8>]) -> (Vec<u8>, Vec<u64>) {
    let path = dir.join(name);
    let mut w = LogWriter::new(OsFs.create(&path).unwrap());
    let mut sizes = Vec::new();
    for r in records {
        w.add_record(r).unwrap();
        sizes.push(w.size());
    }
    w.sync().unwrap();
    drop(w);
    let bytes = screedb::fs::read_all(&OsFs, &path).unwrap();
    assert_eq!(bytes.len() as u64, *sizes.last().unwrap_or(&0));
    (bytes, sizes)
}
