//! Table properties: statistics of a table, stored in the "screedb.properties" meta block.
//!
//! The block uses the ordinary entry format (see [`super::block_builder`]) with names sorted
//! bytewise and no duplicates:
//!
//! | name                       | value                                                 |
//! |----------------------------|-------------------------------------------------------|
//! | `screedb.compression`      | u64 LE: compression type configured (0 none, 1 lz4)   |
//! | `screedb.data_bytes`       | u64 LE: bytes of all data blocks, trailers included   |
//! | `screedb.filter_bytes`     | u64 LE: bytes of the filter block + trailer (0: none) |
//! | `screedb.index_bytes`      | u64 LE: bytes of the index block + trailer            |
//! | `screedb.largest_key`      | raw: largest internal key (empty if no entries)       |
//! | `screedb.largest_seq`      | u64 LE                                                |
//! | `screedb.num_data_blocks`  | u64 LE                                                |
//! | `screedb.num_deletions`    | u64 LE: entries of kind Deletion                      |
//! | `screedb.num_entries`      | u64 LE                                                |
//! | `screedb.raw_key_bytes`    | u64 LE: sum of internal key lengths                   |
//! | `screedb.raw_value_bytes`  | u64 LE: sum of value lengths                          |
//! | `screedb.smallest_key`     | raw: smallest internal key (empty if no entries)      |
//! | `screedb.smallest_seq`     | u64 LE (0 if no entries)                              |
//!
//! Unknown names are ignored on read (forward compatibility); a missing name, a u64 that is not
//! 8 bytes, or an unknown compression type is corruption.

use std::collections::BTreeMap;
use std::path::Path;

use crate::coding::{get_u64, put_u64};
use crate::error::{Error, Result};

use super::block::Block;
use super::block_builder::BlockBuilder;
use super::compression::CompressionType;

/// Statistics of one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableProperties {
    /// Smallest internal key (empty if the table has no entries).
    pub smallest_key: Vec<u8>,
    /// Largest internal key (empty if the table has no entries).
    pub largest_key: Vec<u8>,
    /// Entries in the table.
    pub num_entries: u64,
    /// Entries that are deletion tombstones.
    pub num_deletions: u64,
    /// Sum of the internal keys' lengths.
    pub raw_key_bytes: u64,
    /// Sum of the values' lengths.
    pub raw_value_bytes: u64,
    /// Bytes of the data blocks as stored, trailers included.
    pub data_bytes: u64,
    /// Bytes of the index block as stored, trailer included.
    pub index_bytes: u64,
    /// Bytes of the filter block as stored, trailer included (0 without a filter).
    pub filter_bytes: u64,
    /// Data blocks in the table.
    pub num_data_blocks: u64,
    /// Smallest sequence number of any entry (0 if none).
    pub smallest_seq: u64,
    /// Largest sequence number of any entry (0 if none).
    pub largest_seq: u64,
    /// Compression the table was built with (each block may still be stored uncompressed).
    pub compression: CompressionType,
    /// A sketch of the table's distinct user keys: an HTable's (stored in its own properties,
    /// docs/format.md); `None` for the other formats, whose block above does not hold one.
    pub distinct_sketch: Option<std::sync::Arc<crate::sketch::DistinctSketch>>,
}

impl Default for TableProperties {
    fn default() -> Self {
        TableProperties {
            smallest_key: Vec::new(),
            largest_key: Vec::new(),
            num_entries: 0,
            num_deletions: 0,
            raw_key_bytes: 0,
            raw_value_bytes: 0,
            data_bytes: 0,
            index_bytes: 0,
            filter_bytes: 0,
            num_data_blocks: 0,
            smallest_seq: 0,
            largest_seq: 0,
            compression: CompressionType::None,
            distinct_sketch: None,
        }
    }
}

const COMPRESSION: &str = "screedb.compression";
const DATA_BYTES: &str = "screedb.data_bytes";
const FILTER_BYTES: &str = "screedb.filter_bytes";
const INDEX_BYTES: &str = "screedb.index_bytes";
const LARGEST_KEY: &str = "screedb.largest_key";
const LARGEST_SEQ: &str = "screedb.largest_seq";
const NUM_DATA_BLOCKS: &str = "screedb.num_data_blocks";
const NUM_DELETIONS: &str = "screedb.num_deletions";
const NUM_ENTRIES: &str = "screedb.num_entries";
const RAW_KEY_BYTES: &str = "screedb.raw_key_bytes";
const RAW_VALUE_BYTES: &str = "screedb.raw_value_bytes";
const SMALLEST_KEY: &str = "screedb.smallest_key";
const SMALLEST_SEQ: &str = "screedb.smallest_seq";

impl TableProperties {
    /// Encodes the properties as an (uncompressed, trailer-less) block.
    pub fn encode(&self) -> Vec<u8> {
        let mut map: BTreeMap<&str, Vec<u8>> = BTreeMap::new();
        let mut num = |name, v: u64| {
            let mut b = Vec::with_capacity(8);
            put_u64(&mut b, v);
            map.insert(name, b);
        };
        num(COMPRESSION, self.compression as u64);
        num(DATA_BYTES, self.data_bytes);
        num(FILTER_BYTES, self.filter_bytes);
        num(INDEX_BYTES, self.index_bytes);
        num(LARGEST_SEQ, self.largest_seq);
        num(NUM_DATA_BLOCKS, self.num_data_blocks);
        num(NUM_DELETIONS, self.num_deletions);
        num(NUM_ENTRIES, self.num_entries);
        num(RAW_KEY_BYTES, self.raw_key_bytes);
        num(RAW_VALUE_BYTES, self.raw_value_bytes);
        num(SMALLEST_SEQ, self.smallest_seq);
        map.insert(LARGEST_KEY, self.largest_key.clone());
        map.insert(SMALLEST_KEY, self.smallest_key.clone());
        let mut b = BlockBuilder::new(16);
        for (name, value) in &map {
            b.add(name.as_bytes(), value);
        }
        b.finish().to_vec()
    }

    /// Decodes a properties block read from `file` at `offset`.
    pub fn decode(block: &Block, file: &Path, offset: u64) -> Result<TableProperties> {
        let bad = |reason: String| Error::corruption(file, offset, reason);
        let mut map: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        let mut prev: Option<Vec<u8>> = None;
        for (name, value) in block.entries()? {
            if prev.as_ref().is_some_and(|p| *p >= name) {
                return Err(bad(format!(
                    "property names out of order at {:?}",
                    String::from_utf8_lossy(&name)
                )));
            }
            prev = Some(name.clone());
            map.insert(name, value);
        }
        let raw = |name: &str| -> Result<Vec<u8>> {
            map.get(name.as_bytes())
                .cloned()
                .ok_or_else(|| bad(format!("table property {name} is missing")))
        };
        let num = |name: &str| -> Result<u64> {
            let v = raw(name)?;
            if v.len() != 8 {
                return Err(bad(format!(
                    "table property {name} is {} bytes, not 8",
                    v.len()
                )));
            }
            get_u64(&v).ok_or_else(|| bad(format!("table property {name} is unreadable")))
        };
        let compression = num(COMPRESSION)?;
        let compression = u8::try_from(compression)
            .ok()
            .and_then(CompressionType::from_u8)
            .ok_or_else(|| {
                bad(format!(
                    "unknown compression type {compression} in properties"
                ))
            })?;
        Ok(TableProperties {
            smallest_key: raw(SMALLEST_KEY)?,
            largest_key: raw(LARGEST_KEY)?,
            num_entries: num(NUM_ENTRIES)?,
            num_deletions: num(NUM_DELETIONS)?,
            raw_key_bytes: num(RAW_KEY_BYTES)?,
            raw_value_bytes: num(RAW_VALUE_BYTES)?,
            data_bytes: num(DATA_BYTES)?,
            index_bytes: num(INDEX_BYTES)?,
            filter_bytes: num(FILTER_BYTES)?,
            num_data_blocks: num(NUM_DATA_BLOCKS)?,
            smallest_seq: num(SMALLEST_SEQ)?,
            largest_seq: num(LARGEST_SEQ)?,
            compression,
            distinct_sketch: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;

    fn decode_bytes(data: Vec<u8>) -> Result<TableProperties> {
        let block = Block::new(data, Arc::from(Path::new("p.sst")), 9)?;
        TableProperties::decode(&block, Path::new("p.sst"), 9)
    }

    proptest! {
        #[test]
        fn properties_round_trip(
            nums in proptest::array::uniform10(any::<u64>()),
            small in proptest::collection::vec(any::<u8>(), 0..30),
            large in proptest::collection::vec(any::<u8>(), 0..30),
            lz4 in any::<bool>(),
        ) {
            let p = TableProperties {
                smallest_key: small,
                largest_key: large,
                num_entries: nums[0],
                num_deletions: nums[1],
                raw_key_bytes: nums[2],
                raw_value_bytes: nums[3],
                data_bytes: nums[4],
                index_bytes: nums[5],
                filter_bytes: nums[6],
                num_data_blocks: nums[7],
                smallest_seq: nums[8],
                largest_seq: nums[9],
                compression: if lz4 { CompressionType::Lz4 } else { CompressionType::None },
                distinct_sketch: None,
            };
            prop_assert_eq!(decode_bytes(p.encode()).unwrap(), p);
        }
    }

    fn rebuild(edit: impl Fn(&mut BTreeMap<Vec<u8>, Vec<u8>>)) -> Result<TableProperties> {
        let p = TableProperties {
            num_entries: 3,
            ..TableProperties::default()
        };
        let block = Block::new(p.encode(), Arc::from(Path::new("p.sst")), 9)?;
        let mut map: BTreeMap<_, _> = block.entries()?.into_iter().collect();
        edit(&mut map);
        let mut b = BlockBuilder::new(16);
        for (k, v) in &map {
            b.add(k, v);
        }
        decode_bytes(b.finish().to_vec())
    }

    #[test]
    fn unknown_names_are_ignored_and_missing_ones_rejected() {
        let p = rebuild(|m| {
            m.insert(b"screedb.zzz_future".to_vec(), b"whatever".to_vec());
            m.insert(b"aaa.other".to_vec(), vec![]);
        })
        .unwrap();
        assert_eq!(p.num_entries, 3);
        let err = rebuild(|m| {
            m.remove(NUM_ENTRIES.as_bytes());
        })
        .unwrap_err();
        assert!(err.to_string().contains("num_entries is missing"), "{err}");
        assert!(err.to_string().contains("offset 9"), "{err}");
        let err = rebuild(|m| {
            m.insert(DATA_BYTES.as_bytes().to_vec(), vec![1, 2]);
        })
        .unwrap_err();
        assert!(err.to_string().contains("not 8"), "{err}");
        let err = rebuild(|m| {
            m.insert(COMPRESSION.as_bytes().to_vec(), 9u64.to_le_bytes().to_vec());
        })
        .unwrap_err();
        assert!(err.to_string().contains("compression type 9"), "{err}");
    }
}
