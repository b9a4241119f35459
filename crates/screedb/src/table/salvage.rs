//! Salvage, for repair: the entries of a damaged table that still read back intact, unit by
//! unit (the data blocks of a sorted table, the buckets and overflow groups of an HTable), and
//! a record of each unit that did not.
//!
//! A unit is kept only whole: its checksum holds and every entry in it decodes to a well-formed
//! internal key. A sorted table's data blocks are found through its index block; when the index
//! is damaged, or the footer that locates it is (a table cut short loses its footer), they are
//! found without it: they lie back to back from offset 0, and each one ends where the checksum
//! in its trailer matches the bytes before it. The walk stops at the first block that does not
//! read back as an intact data block whose keys follow the previous block's, and reports the
//! rest of the data as lost (from the meta-index, when it is readable, it knows where the data
//! ends; otherwise it walks until the metadata blocks stop it). LevelDB's repair loses such a
//! table whole. What an HTable needs to open (footer and metadata) must be intact, or the
//! caller loses it whole. The filter and properties blocks of a sorted table are not needed.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;
use crate::key;

use super::format::{BLOCK_TRAILER_LEN, BlockHandle, FOOTER_LEN, Footer, read_block};
use super::{Block, CompressionType, TableFormat};
use crate::checksum;
use crate::comparator::InternalKeyComparator;

/// A part of a table that salvage could not read: its entries are lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostBlock {
    /// Offset of the part in the table file.
    pub offset: u64,
    /// Its length in bytes, as the table's index or metadata gives it.
    pub bytes: u64,
    /// The user keys the part held lie after the first (exclusive; `None`: from the start of
    /// the table) and up to the second (inclusive), when the table records them (a sorted
    /// table's index does; an HTable places keys by hash and says nothing).
    pub keys: Option<(Option<Vec<u8>>, Vec<u8>)>,
    /// Why it could not be read.
    pub reason: String,
}

impl fmt::Display for LostBlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} bytes at offset {}", self.bytes, self.offset)?;
        if let Some((after, upto)) = &self.keys {
            let show = |k: &[u8]| String::from_utf8_lossy(k).escape_debug().to_string();
            match after {
                Some(a) => write!(f, " (keys after \"{}\"", show(a))?,
                None => write!(f, " (keys from the start")?,
            }
            write!(f, " up to \"{}\")", show(upto))?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// Receives each salvaged entry: its internal key and value.
pub type Sink<'a> = &'a mut dyn FnMut(&[u8], &[u8]);

/// Salvages the table in `file` (named `path`) of `format`: passes every entry of every intact
/// unit to `sink` (in no particular order across units) and returns the units it lost. Fails
/// when the table cannot be located at all (see the module comment), and for the tree format,
/// which is salvaged whole or not at all.
pub fn salvage(
    format: TableFormat,
    file: Arc<dyn RandomAccessFile>,
    path: &Path,
    icmp: &InternalKeyComparator,
    htable: &super::htable::HTableOptions,
    sink: Sink<'_>,
) -> Result<Vec<LostBlock>> {
    match format {
        TableFormat::Sorted => salvage_sorted(file.as_ref(), path, icmp, sink),
        TableFormat::HTable => {
            let table =
                super::htable::HTable::open(file, path.to_path_buf(), 0, htable.clone(), None)?;
            table.salvage(sink)
        }
        TableFormat::Tree => Err(Error::corruption(
            path,
            0,
            "a tree file is salvaged whole or not at all",
        )),
    }
}

/// The sorted format: footer and index block, then each data block on its own.
fn salvage_sorted(
    file: &dyn RandomAccessFile,
    path: &Path,
    icmp: &InternalKeyComparator,
    sink: Sink<'_>,
) -> Result<Vec<LostBlock>> {
    let size = file.size();
    let footer = match size.checked_sub(FOOTER_LEN as u64) {
        Some(at) => Footer::decode(&file.read_vec(at, FOOTER_LEN)?, path, size),
        None => Err(Error::corruption(
            path,
            0,
            format!("file of {size} bytes is too short to hold a footer"),
        )),
    };
    let footer = match footer {
        Ok(footer) => footer,
        Err(damage) => {
            let bytes = size.min(FOOTER_LEN as u64);
            let first_loss = LostBlock {
                offset: size - bytes,
                bytes,
                keys: None,
                reason: format!("footer: {damage} (the data blocks were looked for without it)"),
            };
            return walk_data_blocks(file, path, size, icmp, sink, first_loss);
        }
    };
    let index = read_block(file, path, footer.index, true)
        .and_then(|data| Block::new(data, Arc::from(path), footer.index.offset)?.entries());
    let index = match index {
        Ok(index) => index,
        Err(damage) => {
            let first_loss = LostBlock {
                offset: footer.index.offset,
                bytes: footer.index.size,
                keys: None,
                reason: format!("index block: {damage} (the data blocks were found without it)"),
            };
            let end = data_end(file, path, &footer);
            return walk_data_blocks(file, path, end, icmp, sink, first_loss);
        }
    };
    let mut lost = Vec::new();
    let mut previous: Option<Vec<u8>> = None;
    for (separator, encoded) in index {
        let upto = key::user_key(&separator).to_vec();
        let keys = Some((previous.replace(upto.clone()), upto));
        let Some(handle) = BlockHandle::decode(&encoded) else {
            lost.push(LostBlock {
                offset: footer.index.offset,
                bytes: 0,
                keys,
                reason: "bad block handle in the index".to_owned(),
            });
            continue;
        };
        match read_entries(file, path, handle) {
            Ok(entries) => entries.iter().for_each(|(k, v)| sink(k, v)),
            Err(e) => lost.push(LostBlock {
                offset: handle.offset,
                bytes: handle.size,
                keys,
                reason: e.to_string(),
            }),
        }
    }
    Ok(lost)
}

/// Where the data blocks of a table with an intact `footer` end: at the first block the
/// meta-index names, or (the meta-index damaged too) before the meta-index and the index.
fn data_end(file: &dyn RandomAccessFile, path: &Path, footer: &Footer) -> u64 {
    let named = read_block(file, path, footer.metaindex, true)
        .and_then(|data| Block::new(data, Arc::from(path), footer.metaindex.offset)?.entries())
        .unwrap_or_default();
    named
        .iter()
        .filter_map(|(_, handle)| BlockHandle::decode(handle))
        .map(|h| h.offset)
        .chain([footer.metaindex.offset, footer.index.offset])
        .min()
        .unwrap_or(0)
}

/// The data blocks of a sorted table in its first `data_end` bytes, found one after the other by
/// their trailers' checksums (see the module comment), when its index cannot be read;
/// `first_loss` says why. The walk stops at the first block that is not an intact data block
/// following the previous one; the rest is reported lost.
fn walk_data_blocks(
    file: &dyn RandomAccessFile,
    path: &Path,
    data_end: u64,
    icmp: &InternalKeyComparator,
    sink: Sink<'_>,
    first_loss: LostBlock,
) -> Result<Vec<LostBlock>> {
    let data = file.read_vec(0, usize::try_from(data_end).unwrap_or(0))?;
    let mut lost = vec![first_loss];
    let mut pos = 0usize;
    let mut last: Option<Vec<u8>> = None;
    while pos < data.len() {
        let block = block_end(&data, pos).and_then(|end| {
            let handle = BlockHandle {
                offset: pos as u64,
                size: (end - pos) as u64,
            };
            let entries = read_entries(file, path, handle).ok()?;
            let less = |a: &[u8], b: &[u8]| icmp.compare(a, b).is_lt();
            let ordered = entries.windows(2).all(|w| less(&w[0].0, &w[1].0))
                && entries
                    .first()
                    .is_none_or(|(k, _)| last.as_ref().is_none_or(|l| less(l, k)));
            ordered.then_some((end, entries))
        });
        let Some((end, entries)) = block else {
            // The keys lost lie after the last one kept; the table says nothing of where they end.
            let after = last.as_ref().map_or_else(
                || "from the first key".to_owned(),
                |l| format!("after {:?}", String::from_utf8_lossy(key::user_key(l))),
            );
            lost.push(LostBlock {
                offset: pos as u64,
                bytes: (data.len() - pos) as u64,
                keys: None,
                reason: format!(
                    "no intact data block starts here: the rest of the data (keys {after}) is lost"
                ),
            });
            break;
        };
        entries.iter().for_each(|(k, v)| sink(k, v));
        last = entries.last().map(|(k, _)| k.clone()).or(last);
        pos = end + BLOCK_TRAILER_LEN;
    }
    Ok(lost)
}

/// Where the block starting at `start` of `data` ends: the first position whose trailer (a
/// compression type, then the masked CRC32C of the bytes before it and the type) matches.
fn block_end(data: &[u8], start: usize) -> Option<usize> {
    let mut crc = checksum::crc32c(&[]);
    for end in start..data.len().saturating_sub(BLOCK_TRAILER_LEN - 1) {
        if end > start {
            crc = checksum::crc32c_extend(crc, &data[end - 1..end]);
        }
        let kind = data[end];
        if CompressionType::from_u8(kind).is_none() {
            continue;
        }
        let stored = crate::coding::get_u32(&data[end + 1..]).unwrap_or_default();
        if checksum::unmask(stored) == checksum::crc32c_extend(crc, &[kind]) {
            return Some(end);
        }
    }
    None
}

/// The entries of the data block at `handle`, if its checksum holds and every key in it is a
/// well-formed internal key.
fn read_entries(
    file: &dyn RandomAccessFile,
    path: &Path,
    handle: BlockHandle,
) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
    let data = read_block(file, path, handle, true)?;
    let entries = Block::new(data, Arc::from(path), handle.offset)?.entries()?;
    if entries
        .iter()
        .any(|(k, _)| key::parse_internal_key(k).is_none())
    {
        return Err(Error::corruption(
            path,
            handle.offset,
            "data block holds a malformed internal key",
        ));
    }
    Ok(entries)
}
