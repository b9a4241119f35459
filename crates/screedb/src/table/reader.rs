//! Opens a table file and reads it: point lookups, iteration, verification.
//!
//! [`Table::open`] reads the footer, then the meta-index, properties, filter and index blocks
//! (always checksum-verified, whatever `verify_checksums` says) and cross-checks them: the index
//! must list contiguous data blocks that exactly fill `data_bytes`, in increasing key order, and
//! the sizes in the properties must match the blocks found. Data blocks are read on demand:
//! an uncompressed block of a mapped file (`Options::mmap_reads`) is used in place, a view of
//! the map, with no copy and no block cache (as LevelDB's mmap reads); any other block goes
//! through the block cache when there is one.
//!
//! A block used in place has its trailer read and its checksum checked the first time it is
//! read after the table is opened, not on every use ([`PlainBlocks`]): the mapped bytes of an
//! immutable file are the ones checked, unless the device hands back other bytes for a page
//! the kernel evicted and reads again. A copied block is checked once per copy, as a block in
//! the cache is.

use std::cmp::Ordering;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;
use crate::iter::InternalIterator;
use crate::key;

use super::block::{Block, BlockIter};
use super::cache::BlockCache;
use super::checked_once::CheckedOnce;
use super::filter::BloomFilter;
use super::filter_policy::{CUSTOM_FILTER_PREFIX, FilterPolicy};
use super::format::{
    BLOCK_TRAILER_LEN, BlockHandle, FOOTER_LEN, Footer, read_block, read_block_in_place,
};
use super::properties::TableProperties;
use super::seam::{Lookup, Probe, TableFormat, TableReader};
use super::{FILTER_BLOCK_NAME, PROPERTIES_BLOCK_NAME, TableOptions, prefix_filter_block_name};

/// A table's filter, loaded by [`Table::open`].
enum Filter {
    Bloom(BloomFilter),
    /// A custom policy's filter; only kept when the table was written by the policy in use.
    Custom(Arc<dyn FilterPolicy>, Vec<u8>),
}

impl Filter {
    fn may_contain(&self, user_key: &[u8]) -> bool {
        match self {
            Filter::Bloom(f) => f.may_contain(user_key),
            Filter::Custom(policy, data) => policy.key_may_match(user_key, data),
        }
    }
}

/// An open, immutable table. Share it as `Arc<Table>`.
pub struct Table {
    file: Arc<dyn RandomAccessFile>,
    path: Arc<Path>,
    file_number: u64,
    opts: TableOptions,
    icmp: InternalKeyComparator,
    block_cache: Option<Arc<BlockCache>>,
    index: Arc<Block>,
    filter: Option<Filter>,
    /// The Bloom filter of the first `opts.prefix_bloom_len` bytes of the keys, when the table
    /// was written with that length.
    prefix_filter: Option<BloomFilter>,
    props: TableProperties,
    metaindex: BlockHandle,
    /// Every non-data block (meta-index, properties, filter, index), re-checked by
    /// [`Table::verify_all_blocks`].
    meta_blocks: Vec<BlockHandle>,
    /// Data blocks used in place, by their position in the index (mapped files only).
    plain: PlainBlocks,
}

/// One bit per data block, by the block's position in the index: set once the block was read
/// in place, so its trailer said it is stored uncompressed and its checksum held (if checksums
/// are verified); later reads use it without looking at the trailer. Empty (no block is ever
/// known) unless the file is mapped and the index has one entry per restart point, so that an
/// index iterator's restart point is that position.
type PlainBlocks = CheckedOnce;

impl fmt::Debug for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Table")
            .field("path", &self.path)
            .field("file_number", &self.file_number)
            .field("num_entries", &self.props.num_entries)
            .finish()
    }
}

impl Table {
    /// Opens the table in `file` (named `path` in errors, `file_number` in the block cache).
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        file_number: u64,
        opts: TableOptions,
        icmp: InternalKeyComparator,
        block_cache: Option<Arc<BlockCache>>,
    ) -> Result<Table> {
        let path: Arc<Path> = Arc::from(path);
        let size = file.size();
        if size < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                &*path,
                0,
                format!("file of {size} bytes is too short to be a table"),
            ));
        }
        let footer_at = size - FOOTER_LEN as u64;
        let footer = Footer::decode(&file.read_vec(footer_at, FOOTER_LEN)?, &path, size)?;
        let read_meta = |h: BlockHandle| -> Result<Block> {
            let data = read_block(&*file, &path, h, true)?;
            Block::new(data, Arc::clone(&path), h.offset)
        };

        let metaindex = read_meta(footer.metaindex)?;
        let (mut filter_handle, mut props_handle, mut prefix_handle) = (None, None, None);
        // A prefix filter of another length (or one nobody asked for) is not read.
        let prefix_name =
            (opts.prefix_bloom_len > 0).then(|| prefix_filter_block_name(opts.prefix_bloom_len));
        // `Some` if the filter block is a custom policy's: `Some(Some(policy))` when that policy
        // is the one in use, `Some(None)` when it is another.
        let mut custom: Option<Option<Arc<dyn FilterPolicy>>> = None;
        for (name, value) in metaindex.entries()? {
            let slot = match &name[..] {
                FILTER_BLOCK_NAME => &mut filter_handle,
                PROPERTIES_BLOCK_NAME => &mut props_handle,
                n if prefix_name.as_deref() == Some(n) => &mut prefix_handle,
                n if n.starts_with(CUSTOM_FILTER_PREFIX) => {
                    let writer = &n[CUSTOM_FILTER_PREFIX.len()..];
                    custom = Some(
                        opts.filter_policy
                            .clone()
                            .filter(|p| p.name().as_bytes() == writer),
                    );
                    &mut filter_handle
                }
                _ => continue, // written by a newer version: ignore
            };
            if slot.is_some() {
                return Err(Error::corruption(
                    &*path,
                    footer.metaindex.offset,
                    "meta-index names two filter blocks",
                ));
            }
            *slot = Some(BlockHandle::decode(&value).ok_or_else(|| {
                Error::corruption(&*path, footer.metaindex.offset, "bad handle in meta-index")
            })?);
        }
        let props_handle = props_handle.ok_or_else(|| {
            Error::corruption(
                &*path,
                footer.metaindex.offset,
                "meta-index has no properties block",
            )
        })?;
        let props = TableProperties::decode(&read_meta(props_handle)?, &path, props_handle.offset)?;
        let filter = match (filter_handle, custom) {
            (None, _) => None,
            (Some(h), Some(Some(policy))) => {
                Some(Filter::Custom(policy, read_block(&*file, &path, h, true)?))
            }
            // A custom filter of another policy: the table is read without a filter.
            (Some(_), Some(None)) => None,
            (Some(h), None) => {
                let data = read_block(&*file, &path, h, true)?;
                Some(Filter::Bloom(BloomFilter::new(data).ok_or_else(|| {
                    Error::corruption(&*path, h.offset, "malformed Bloom filter block")
                })?))
            }
        };
        let prefix_filter = match prefix_handle {
            Some(h) => Some(
                BloomFilter::new(read_block(&*file, &path, h, true)?).ok_or_else(|| {
                    Error::corruption(&*path, h.offset, "malformed prefix Bloom filter block")
                })?,
            ),
            None => None,
        };
        let mut index = read_meta(footer.index)?;
        if icmp.user().is_bytewise() {
            index = index.with_bytewise_search();
        }
        let plain = if file.is_mapped() && index.count_entries() == index.num_restarts() {
            PlainBlocks::new(index.num_restarts())
        } else {
            PlainBlocks::new(0)
        };
        let index = Arc::new(index);

        let table = Table {
            file,
            path,
            file_number,
            opts,
            icmp,
            block_cache,
            index,
            filter,
            prefix_filter,
            props,
            metaindex: footer.metaindex,
            meta_blocks: [
                Some(footer.metaindex),
                Some(props_handle),
                filter_handle,
                prefix_handle,
                Some(footer.index),
            ]
            .into_iter()
            .flatten()
            .collect(),
            plain,
        };
        table.check_layout(&footer, filter_handle)?;
        Ok(table)
    }

    /// Cross-checks the index against the properties and the other blocks' positions.
    fn check_layout(&self, footer: &Footer, filter: Option<BlockHandle>) -> Result<()> {
        let p = &self.props;
        let bad = |offset: u64, reason: String| Err(Error::corruption(&*self.path, offset, reason));
        let stored = |h: BlockHandle| h.size.saturating_add(BLOCK_TRAILER_LEN as u64);
        if p.index_bytes != stored(footer.index) {
            return bad(
                footer.index.offset,
                "index size disagrees with properties".into(),
            );
        }
        let after_data = match filter {
            Some(h) if p.filter_bytes != stored(h) => {
                return bad(h.offset, "filter size disagrees with properties".into());
            }
            Some(h) => h.offset,
            None if p.filter_bytes != 0 => {
                return bad(footer.metaindex.offset, "filter block is missing".into());
            }
            None => footer.index.offset,
        };
        if p.data_bytes != after_data {
            return bad(
                0,
                format!(
                    "data blocks should end at {after_data}, properties say {}",
                    p.data_bytes
                ),
            );
        }
        let mut expect_offset = 0u64;
        let mut blocks = 0u64;
        let mut prev: Option<Vec<u8>> = None;
        for (sep, value) in self.index.entries()? {
            let h = BlockHandle::decode(&value).filter(|h| h.offset == expect_offset);
            let Some(h) = h else {
                return bad(
                    footer.index.offset,
                    format!("index entry {blocks} has a bad block handle"),
                );
            };
            if prev
                .as_ref()
                .is_some_and(|p| self.icmp.compare(p, &sep) != Ordering::Less)
            {
                return bad(
                    footer.index.offset,
                    format!("index entry {blocks} is out of order"),
                );
            }
            prev = Some(sep);
            expect_offset = stored(h).saturating_add(h.offset);
            blocks += 1;
        }
        if expect_offset != p.data_bytes || blocks != p.num_data_blocks {
            return bad(
                footer.index.offset,
                format!(
                    "index lists {blocks} blocks ending at {expect_offset}; properties say {} ending at {}",
                    p.num_data_blocks, p.data_bytes
                ),
            );
        }
        if (blocks == 0) != (p.num_entries == 0) {
            return bad(
                footer.index.offset,
                "entry count disagrees with the index".into(),
            );
        }
        Ok(())
    }

    /// The table's properties.
    pub fn properties(&self) -> &TableProperties {
        &self.props
    }

    /// The table's file number.
    pub fn file_number(&self) -> u64 {
        self.file_number
    }

    /// The table's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// False only if `user_key` is certainly not in the table (true when there is no filter).
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(user_key))
    }

    /// The first entry with internal key >= `target`, if the filter says `target`'s user key
    /// may be present (`None` otherwise or past the end). The caller checks the user key.
    pub fn get(&self, target: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        if !self.may_contain(key::user_key(target)) {
            return Ok(None);
        }
        self.get_unfiltered(target)
    }

    /// The first entry with internal key >= `target` (`None` past the end), without asking the
    /// filter. The caller checks the user key.
    pub fn get_unfiltered(&self, target: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        let mut it = self.index_iter();
        it.seek(target);
        while it.valid() {
            let block = self.data_block(it.value(), it.restart_index())?;
            let mut bi = block.iter(self.icmp.clone());
            bi.seek(target);
            if bi.valid() {
                return Ok(Some((bi.key().to_vec(), bi.value().to_vec())));
            }
            bi.status()?;
            it.next();
        }
        it.status()?;
        Ok(None)
    }

    /// An iterator over every entry; it keeps the table alive.
    pub fn table_iter(self: &Arc<Self>) -> TableIterator {
        TableIterator {
            index: self.index_iter(),
            table: Arc::clone(self),
            data: None,
            err: None,
            prefetched: Vec::new(),
        }
    }

    /// Approximate file offset where `ikey`'s entry is or would be.
    fn offset_of(&self, ikey: &[u8]) -> u64 {
        let mut it = self.index_iter();
        it.seek(ikey);
        match it
            .valid()
            .then(|| BlockHandle::decode(it.value()))
            .flatten()
        {
            Some(h) => h.offset,
            // Past the last key: the end of the data, close to the file size.
            None => self.metaindex.offset,
        }
    }

    /// Reads and checksums every block again (whatever `verify_checksums` says), decodes every
    /// data entry and checks the keys increase, stay within their index separators, add up to
    /// `num_entries` and match the smallest/largest key properties. For `screedb check`.
    pub fn verify_all_blocks(&self) -> Result<()> {
        for &h in &self.meta_blocks {
            read_block(&*self.file, &self.path, h, true)?;
        }
        let mut it = self.index_iter();
        it.seek_to_first();
        let mut prev: Option<Vec<u8>> = None;
        let mut first: Option<Vec<u8>> = None;
        let mut entries = 0u64;
        while it.valid() {
            let h = self.decode_handle(it.value())?;
            let block = Block::new(
                read_block(&*self.file, &self.path, h, true)?,
                Arc::clone(&self.path),
                h.offset,
            )?;
            let bad =
                |reason: &str| Err(Error::corruption(&*self.path, h.offset, reason.to_string()));
            for (k, _) in block.entries()? {
                if key::parse_internal_key(&k).is_none() {
                    return bad("data block holds a malformed internal key");
                }
                if prev
                    .as_ref()
                    .is_some_and(|p| self.icmp.compare(p, &k) != Ordering::Less)
                {
                    return bad("data block keys are out of order");
                }
                if self.icmp.compare(&k, it.key()) == Ordering::Greater {
                    return bad("data block key is past its index separator");
                }
                if first.is_none() {
                    first = Some(k.clone());
                }
                prev = Some(k);
                entries += 1;
            }
            it.next();
        }
        it.status()?;
        if entries != self.props.num_entries {
            return Err(Error::corruption(
                &*self.path,
                0,
                format!(
                    "table holds {entries} entries; properties say {}",
                    self.props.num_entries
                ),
            ));
        }
        let first = first.unwrap_or_default();
        let last = prev.unwrap_or_default();
        if first != self.props.smallest_key || last != self.props.largest_key {
            return Err(Error::corruption(
                &*self.path,
                0,
                "smallest/largest key properties disagree with the data",
            ));
        }
        Ok(())
    }

    fn index_iter(&self) -> BlockIter {
        self.index.iter(self.icmp.clone())
    }

    fn decode_handle(&self, value: &[u8]) -> Result<BlockHandle> {
        BlockHandle::decode(value).ok_or_else(|| {
            Error::corruption(
                &*self.path,
                self.index.offset(),
                "bad block handle in index",
            )
        })
    }

    /// Starts loading the data block whose encoded handle is `handle` into the CPU caches,
    /// when it lies in a mapped file (a hint: a bad handle is left to the read that follows).
    fn prefetch_block(&self, handle: &[u8]) {
        if !self.file.is_mapped() {
            return;
        }
        if let Some(h) = BlockHandle::decode(handle)
            && let Ok(size) = usize::try_from(h.size)
            && let Ok(bytes) = self.file.read_bytes(h.offset, size)
        {
            crate::iter::prefetch::prefetch(&bytes);
        }
    }

    /// The data block whose encoded handle is `handle`, the `position`th in the index: in
    /// place in a mapped file if stored uncompressed (no cache: a view costs nothing to make
    /// again), else from the cache or the file.
    fn data_block(&self, handle: &[u8], position: usize) -> Result<Arc<Block>> {
        let h = self.decode_handle(handle)?;
        if self.file.is_mapped() {
            let in_place = if self.plain.contains(position) {
                let size = usize::try_from(h.size).unwrap_or(usize::MAX);
                Some(self.file.read_bytes(h.offset, size)?)
            } else {
                let verify = self.opts.verify_checksums;
                let data = read_block_in_place(&*self.file, &self.path, h, verify)?;
                if data.is_some() {
                    self.plain.insert(position);
                }
                data
            };
            if let Some(data) = in_place {
                return Ok(Arc::new(Block::new(
                    data,
                    Arc::clone(&self.path),
                    h.offset,
                )?));
            }
        }
        let key = (self.file_number, h.offset);
        if let Some(cache) = &self.block_cache
            && let Some(b) = cache.get(key)
        {
            return Ok(b);
        }
        let data = read_block(&*self.file, &self.path, h, self.opts.verify_checksums)?;
        let block = Arc::new(Block::new(data, Arc::clone(&self.path), h.offset)?);
        if let Some(cache) = &self.block_cache {
            cache.insert(key, Arc::clone(&block));
        }
        Ok(block)
    }
}

impl TableReader for Table {
    fn format(&self) -> TableFormat {
        TableFormat::Sorted
    }

    fn file_number(&self) -> u64 {
        self.file_number
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn extent(&self) -> u64 {
        self.file.size()
    }

    fn properties(&self) -> &TableProperties {
        &self.props
    }

    fn probe(&self, user_key: &[u8], target: &[u8]) -> Result<Probe> {
        if !self.may_contain(user_key) {
            return Ok(Probe::Filtered);
        }
        let Some((ikey, value)) = self.get_unfiltered(target)? else {
            return Ok(Probe::Missed);
        };
        let Some(parsed) = key::parse_internal_key(&ikey) else {
            return Err(Error::corruption(
                &*self.path,
                self.offset_of(target),
                "table holds an internal key with a bad trailer",
            ));
        };
        if self.icmp.user().compare(parsed.user_key, user_key) != Ordering::Equal {
            return Ok(Probe::Missed);
        }
        let found = match parsed.kind {
            key::ValueKind::Value => Lookup::Found(value),
            key::ValueKind::Deletion => Lookup::Deleted,
        };
        Ok(Probe::Hit(found, parsed.seq))
    }

    fn iter(self: Arc<Self>) -> Result<Box<dyn InternalIterator>> {
        Ok(Box::new(self.table_iter()))
    }

    fn approximate_offset_of(&self, ikey: &[u8]) -> u64 {
        self.offset_of(ikey)
    }

    fn verify(&self) -> Result<()> {
        self.verify_all_blocks()
    }

    fn metadata_bytes(&self) -> u64 {
        let filter = match &self.filter {
            Some(Filter::Bloom(f)) => f.len_bytes(),
            Some(Filter::Custom(_, data)) => data.len(),
            None => 0,
        };
        let prefix = self
            .prefix_filter
            .as_ref()
            .map_or(0, BloomFilter::len_bytes);
        (self.index.charge() + filter + prefix) as u64
    }

    fn may_contain_prefix(&self, prefix: &[u8]) -> bool {
        let n = self.opts.prefix_bloom_len;
        match (&self.prefix_filter, prefix.get(..n)) {
            (Some(f), Some(p)) if n > 0 => f.may_contain(p),
            _ => true,
        }
    }
}

/// Iterates a table: walks the index block and, within each, the data block it points to.
pub struct TableIterator {
    table: Arc<Table>,
    index: BlockIter,
    data: Option<BlockIter>,
    err: Option<Error>,
    /// The target of the `prefetch_seek` the index is positioned for (empty when none): the
    /// seek that follows with the same target does not search the index again.
    prefetched: Vec<u8>,
}

impl fmt::Debug for TableIterator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableIterator")
            .field("table", &self.table)
            .field("valid", &self.valid())
            .finish()
    }
}

impl TableIterator {
    /// Loads the data block the index iterator points at (or clears it).
    fn init_data_block(&mut self) {
        if !self.index.valid() {
            self.data = None;
            return;
        }
        match self
            .table
            .data_block(self.index.value(), self.index.restart_index())
        {
            Ok(b) => match &mut self.data {
                Some(d) => b.reuse_iter(d),
                None => self.data = Some(b.iter(self.table.icmp.clone())),
            },
            Err(e) => {
                self.data = None;
                self.err = Some(e);
            }
        }
    }

    /// True if the data iterator is positioned, or an error ended the walk.
    fn settled(&mut self) -> bool {
        if self.err.is_some() {
            return true;
        }
        match &self.data {
            Some(d) if d.valid() => true,
            Some(d) => match d.status() {
                Err(e) => {
                    self.err = Some(e);
                    true
                }
                Ok(()) => false,
            },
            None => !self.index.valid(),
        }
    }

    fn skip_empty_blocks_forward(&mut self) {
        while !self.settled() {
            self.index.next();
            self.init_data_block();
            if let Some(d) = &mut self.data {
                d.seek_to_first();
            }
        }
    }

    fn skip_empty_blocks_backward(&mut self) {
        while !self.settled() {
            self.index.prev();
            self.init_data_block();
            if let Some(d) = &mut self.data {
                d.seek_to_last();
            }
        }
    }
}

impl InternalIterator for TableIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && self.data.as_ref().is_some_and(|d| d.valid())
    }

    fn seek_to_first(&mut self) {
        self.prefetched.clear();
        self.index.seek_to_first();
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.seek_to_first();
        }
        self.skip_empty_blocks_forward();
    }

    fn seek_to_last(&mut self) {
        self.prefetched.clear();
        self.index.seek_to_last();
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.seek_to_last();
        }
        self.skip_empty_blocks_backward();
    }

    fn seek(&mut self, target: &[u8]) {
        if self.prefetched.is_empty() || self.prefetched != target {
            self.index.seek(target);
        }
        self.prefetched.clear();
        self.init_data_block();
        if let Some(d) = &mut self.data {
            d.seek(target);
        }
        self.skip_empty_blocks_forward();
    }

    fn prefetch_seek(&mut self, target: &[u8]) {
        self.index.seek(target);
        self.prefetched.clear();
        self.prefetched.extend_from_slice(target);
        if self.index.valid() {
            self.table.prefetch_block(self.index.value());
        }
    }

    fn next(&mut self) {
        self.prefetched.clear();
        if let Some(d) = &mut self.data {
            d.next();
        }
        self.skip_empty_blocks_forward();
    }

    fn prev(&mut self) {
        self.prefetched.clear();
        if let Some(d) = &mut self.data {
            d.prev();
        }
        self.skip_empty_blocks_backward();
    }

    fn key(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.key())
    }

    fn value(&self) -> &[u8] {
        self.data.as_ref().map_or(&[], |d| d.value())
    }

    fn status(&self) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.clone());
        }
        self.index.status()?;
        self.data.as_ref().map_or(Ok(()), |d| d.status())
    }
}

#[cfg(test)]
#[path = "reader_mapped_tests.rs"]
mod mapped_tests;
