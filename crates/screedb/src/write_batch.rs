//! Write batches: a set of puts and deletes applied atomically, and their WAL encoding.
//!
//! A batch is stored as the exact bytes of one WAL record:
//!
//! ```text
//! batch   := sequence: u64 LE | count: u32 LE | record * count
//! record  := kind: u8 (1 = Value) | key: varint32 length + bytes | value: varint32 length + bytes
//!          | kind: u8 (0 = Deletion) | key: varint32 length + bytes
//! ```
//!
//! `sequence` is the sequence number of the first record; record `i` gets `sequence + i`. The
//! kind bytes are those of [`ValueKind`] and are frozen.

use std::path::Path;

use crate::coding::{get_length_prefixed, get_u32, get_u64, put_length_prefixed};
use crate::error::{Error, Result};
use crate::key::{SequenceNumber, ValueKind, check_key_value};

/// Bytes of the batch header (sequence + count).
pub const HEADER_LEN: usize = 12;

/// An ordered set of updates applied atomically by [`crate::Db::write`].
#[derive(Clone, PartialEq, Eq)]
pub struct WriteBatch {
    rep: Vec<u8>,
}

impl std::fmt::Debug for WriteBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteBatch")
            .field("count", &self.count())
            .field("bytes", &self.rep.len())
            .finish()
    }
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

/// One update of a batch, borrowed from its encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchOp<'a> {
    /// Set `key` to `value`.
    Put {
        /// The key.
        key: &'a [u8],
        /// The value.
        value: &'a [u8],
    },
    /// Remove `key`.
    Delete {
        /// The key.
        key: &'a [u8],
    },
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        WriteBatch {
            rep: vec![0; HEADER_LEN],
        }
    }

    /// An empty batch with room for `reserved_bytes` bytes of updates beyond its header, so
    /// that adding them does not reallocate (RocksDB: `WriteBatch(reserved_bytes)`).
    pub fn with_capacity(reserved_bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(HEADER_LEN + reserved_bytes);
        rep.resize(HEADER_LEN, 0);
        WriteBatch { rep }
    }

    /// Bytes a put of `key` -> `value` adds at most: its tag and two length prefixes of at
    /// most 5 bytes each.
    pub fn put_bytes(key: &[u8], value: &[u8]) -> usize {
        11 + key.len() + value.len()
    }

    /// Adds a put of `key` -> `value`.
    pub fn put(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> &mut Self {
        let (key, value) = (key.as_ref(), value.as_ref());
        // One allocation, not one per growth.
        self.rep.reserve(Self::put_bytes(key, value));
        self.set_count(self.count() + 1);
        self.rep.push(ValueKind::Value as u8);
        put_length_prefixed(&mut self.rep, key);
        put_length_prefixed(&mut self.rep, value);
        self
    }

    /// Adds a delete of `key`.
    pub fn delete(&mut self, key: impl AsRef<[u8]>) -> &mut Self {
        self.set_count(self.count() + 1);
        self.rep.push(ValueKind::Deletion as u8);
        put_length_prefixed(&mut self.rep, key.as_ref());
        self
    }

    /// Removes every update.
    pub fn clear(&mut self) {
        self.rep.clear();
        self.rep.resize(HEADER_LEN, 0);
    }

    /// Appends every update of `other` after this batch's own.
    pub fn append(&mut self, other: &WriteBatch) {
        self.set_count(self.count() + other.count());
        self.rep.extend_from_slice(&other.rep[HEADER_LEN..]);
    }

    /// Number of updates.
    pub fn count(&self) -> u32 {
        get_u32(&self.rep[8..]).unwrap_or(0)
    }

    /// True when the batch holds no update.
    pub fn is_empty(&self) -> bool {
        self.count() == 0
    }

    /// Size of the encoding in bytes (what the WAL record will hold).
    pub fn approximate_size(&self) -> usize {
        self.rep.len()
    }

    /// Sequence number of the first update (set by the database when it commits the batch).
    pub fn sequence(&self) -> SequenceNumber {
        get_u64(&self.rep).unwrap_or(0)
    }

    /// Sets the sequence number of the first update.
    pub fn set_sequence(&mut self, seq: SequenceNumber) {
        self.rep[..8].copy_from_slice(&seq.to_le_bytes());
    }

    fn set_count(&mut self, n: u32) {
        self.rep[8..12].copy_from_slice(&n.to_le_bytes());
    }

    /// The encoding (one WAL record).
    pub fn data(&self) -> &[u8] {
        &self.rep
    }

    /// Parses and validates a batch read back from a WAL record; `file`/`offset` name the record
    /// in errors.
    pub fn from_record(rep: Vec<u8>, file: &Path, offset: u64) -> Result<WriteBatch> {
        if rep.len() < HEADER_LEN {
            return Err(Error::corruption(
                file,
                offset,
                "write batch shorter than its header",
            ));
        }
        let batch = WriteBatch { rep };
        let mut n = 0u32;
        for op in batch.iter() {
            op.map_err(|reason| Error::corruption(file, offset, reason))?;
            n += 1;
        }
        if n != batch.count() {
            return Err(Error::corruption(
                file,
                offset,
                format!(
                    "write batch says it has {} records but holds {n}",
                    batch.count()
                ),
            ));
        }
        Ok(batch)
    }

    /// Checks every key and value against the size limits.
    pub fn validate(&self) -> Result<()> {
        for op in self.iter() {
            match op.map_err(Error::invalid)? {
                BatchOp::Put { key, value } => check_key_value(key, value)?,
                BatchOp::Delete { key } => check_key_value(key, b"")?,
            }
        }
        Ok(())
    }

    /// The updates in order. Each item is an error string if the encoding is malformed.
    pub fn iter(&self) -> BatchIter<'_> {
        BatchIter {
            rest: &self.rep[HEADER_LEN..],
        }
    }
}

/// Iterator over the updates of a [`WriteBatch`].
#[derive(Debug)]
pub struct BatchIter<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = std::result::Result<BatchOp<'a>, String>;

    fn next(&mut self) -> Option<Self::Item> {
        let (&tag, rest) = self.rest.split_first()?;
        let parsed = (|| {
            let (key, n) = get_length_prefixed(rest).ok_or("truncated key in write batch")?;
            let rest = &rest[n..];
            match ValueKind::from_u8(tag) {
                Some(ValueKind::Value) => {
                    let (value, m) =
                        get_length_prefixed(rest).ok_or("truncated value in write batch")?;
                    Ok((BatchOp::Put { key, value }, &rest[m..]))
                }
                Some(ValueKind::Deletion) => Ok((BatchOp::Delete { key }, rest)),
                None => Err(format!("unknown record kind {tag} in write batch")),
            }
        })();
        match parsed {
            Ok((op, rest)) => {
                self.rest = rest;
                Some(Ok(op))
            }
            Err(e) => {
                self.rest = &[];
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ops(batch: &WriteBatch) -> Vec<(bool, Vec<u8>, Vec<u8>)> {
        batch
            .iter()
            .map(|op| match op.unwrap() {
                BatchOp::Put { key, value } => (true, key.to_vec(), value.to_vec()),
                BatchOp::Delete { key } => (false, key.to_vec(), vec![]),
            })
            .collect()
    }

    proptest! {
        #[test]
        fn batch_round_trips(
            updates in proptest::collection::vec(
                (any::<bool>(), proptest::collection::vec(any::<u8>(), 0..20),
                 proptest::collection::vec(any::<u8>(), 0..40)), 0..30),
            seq in 0u64..1 << 50,
        ) {
            let mut b = WriteBatch::new();
            for (put, k, v) in &updates {
                if *put { b.put(k, v); } else { b.delete(k); }
            }
            b.set_sequence(seq);
            let back = WriteBatch::from_record(b.data().to_vec(), Path::new("x"), 0).unwrap();
            prop_assert_eq!(back.sequence(), seq);
            prop_assert_eq!(back.count() as usize, updates.len());
            let expect: Vec<_> = updates.iter()
                .map(|(p, k, v)| (*p, k.clone(), if *p { v.clone() } else { vec![] }))
                .collect();
            prop_assert_eq!(ops(&back), expect);
        }

        #[test]
        fn decoding_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = WriteBatch::from_record(bytes, Path::new("x"), 0);
        }
    }

    #[test]
    fn append_and_clear() {
        let mut a = WriteBatch::new();
        a.put("a", "1");
        let mut b = WriteBatch::new();
        b.delete("b").put("c", "3");
        a.append(&b);
        assert_eq!(a.count(), 3);
        assert_eq!(ops(&a)[1], (false, b"b".to_vec(), vec![]));
        a.clear();
        assert!(a.is_empty());
        assert_eq!(a.data().len(), HEADER_LEN);
    }

    #[test]
    fn a_batch_sized_for_its_put_holds_it_without_growing() {
        let (key, value) = (b"key".as_slice(), vec![7u8; 300]);
        let mut b = WriteBatch::with_capacity(WriteBatch::put_bytes(key, &value));
        assert!(b.is_empty());
        let room = b.rep.capacity();
        b.put(key, &value);
        assert_eq!(b.rep.capacity(), room, "the put reallocated");
        let mut plain = WriteBatch::new();
        plain.put(key, &value);
        assert_eq!(b.data(), plain.data());
    }

    #[test]
    fn wrong_count_is_corruption() {
        let mut b = WriteBatch::new();
        b.put("k", "v");
        let mut rep = b.data().to_vec();
        rep[8] = 2;
        let err = WriteBatch::from_record(rep, Path::new("000003.log"), 77).unwrap_err();
        assert!(err.to_string().contains("000003.log at offset 77"), "{err}");
    }
}
