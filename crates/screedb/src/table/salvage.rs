//! Salvage, for repair: the entries of a damaged table that still read back intact, unit by
//! unit (the data blocks of a sorted table, the buckets and overflow groups of an HTable), and
//! a record of each unit that did not.
//!
//! A unit is kept only whole: its checksum holds and every entry in it decodes to a well-formed
//! internal key. What a sorted table needs to find its blocks (footer and index block) and what
//! an HTable needs to open (footer and metadata) must be intact; otherwise nothing of the table
//! can be located and the caller loses it whole, as LevelDB's repair does. The filter and
//! properties blocks of a sorted table are not needed.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;
use crate::key;

use super::format::{BlockHandle, FOOTER_LEN, Footer, read_block};
use super::{Block, TableFormat};

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
    htable: &super::htable::HTableOptions,
    sink: Sink<'_>,
) -> Result<Vec<LostBlock>> {
    match format {
        TableFormat::Sorted => salvage_sorted(file.as_ref(), path, sink),
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
    sink: Sink<'_>,
) -> Result<Vec<LostBlock>> {
    let size = file.size();
    let footer_at = size.checked_sub(FOOTER_LEN as u64).ok_or_else(|| {
        Error::corruption(
            path,
            0,
            format!("file of {size} bytes is too short to be a table"),
        )
    })?;
    let footer = Footer::decode(&file.read_vec(footer_at, FOOTER_LEN)?, path, size)?;
    let index_data = read_block(file, path, footer.index, true)?;
    let index = Block::new(index_data, Arc::from(path), footer.index.offset)?.entries()?;
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
