//! Writes a table file from sorted internal keys.
//!
//! Order of the file (see `super` for the layout): data blocks, filter block (a custom policy's
//! if `filter_policy` is set, else the Bloom filter if `bloom_bits_per_key > 0`), prefix filter
//! block (if `prefix_bloom_len > 0` and `bloom_bits_per_key > 0`), index block, properties
//! block, meta-index block, footer. The
//! index precedes the properties so the properties can record its size. Every block is
//! followed by its 5-byte trailer.

use std::cmp::Ordering;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::key::{self, ValueKind};

use super::block_builder::BlockBuilder;
use super::compression::{self, CompressionType};
use super::filter::BloomFilterBuilder;
use super::filter_policy::{CustomFilterBuilder, custom_filter_block_name};
use super::format::{BLOCK_TRAILER_LEN, BlockHandle, Footer, block_trailer};
use super::properties::TableProperties;
use super::seam::{TableFormat, TableWriter};
use super::{FILTER_BLOCK_NAME, PROPERTIES_BLOCK_NAME, TableOptions, prefix_filter_block_name};

/// The filter being collected: the built-in Bloom filter or a custom policy's.
#[derive(Debug)]
enum FilterBuilder {
    Bloom(BloomFilterBuilder),
    Custom(CustomFilterBuilder),
}

/// Builds one table file. Keys must be added in increasing internal-key order.
pub struct TableBuilder {
    opts: TableOptions,
    icmp: InternalKeyComparator,
    file: Box<dyn WritableFile>,
    path: PathBuf,
    /// Bytes written to `file`.
    offset: u64,
    data_block: BlockBuilder,
    index_block: BlockBuilder,
    filter: Option<FilterBuilder>,
    /// The prefix filter being collected (`TableOptions::prefix_bloom_len`; keys arrive
    /// sorted, so the builder counts each distinct prefix once).
    prefix_filter: Option<BloomFilterBuilder>,
    /// Last key added (for ordering checks and index separators).
    last_key: Vec<u8>,
    /// Handle of a flushed data block whose index entry waits for the next key.
    pending_index: Option<BlockHandle>,
    props: TableProperties,
    /// First write error; every later call returns it (sticky).
    err: Option<Error>,
}

impl fmt::Debug for TableBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableBuilder")
            .field("path", &self.path)
            .field("offset", &self.offset)
            .field("num_entries", &self.props.num_entries)
            .field("err", &self.err)
            .finish()
    }
}

impl TableBuilder {
    /// Starts a table written to `file` (named `path` in errors).
    pub fn new(
        opts: TableOptions,
        icmp: InternalKeyComparator,
        file: Box<dyn WritableFile>,
        path: PathBuf,
    ) -> Self {
        let filter = match &opts.filter_policy {
            Some(policy) => Some(FilterBuilder::Custom(CustomFilterBuilder::new(Arc::clone(
                policy,
            )))),
            None => (opts.bloom_bits_per_key > 0)
                .then(|| FilterBuilder::Bloom(BloomFilterBuilder::new(opts.bloom_bits_per_key))),
        };
        let props = TableProperties {
            compression: opts.compression,
            ..TableProperties::default()
        };
        let prefix_filter = (opts.prefix_bloom_len > 0 && opts.bloom_bits_per_key > 0)
            .then(|| BloomFilterBuilder::new(opts.bloom_bits_per_key));
        TableBuilder {
            data_block: BlockBuilder::new(opts.block_restart_interval),
            index_block: BlockBuilder::new(1),
            opts,
            icmp,
            file,
            path,
            offset: 0,
            filter,
            prefix_filter,
            last_key: Vec::new(),
            pending_index: None,
            props,
            err: None,
        }
    }

    /// Adds an entry.
    ///
    /// REQUIRES: `ikey` is a valid internal key greater than every key added before (checked by
    /// `debug_assert`; release builds return [`Error::InvalidArgument`]).
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        if let Some(e) = &self.err {
            return Err(e.clone());
        }
        let ordered = self.props.num_entries == 0
            || self.icmp.compare(&self.last_key, ikey) == Ordering::Less;
        debug_assert!(ordered, "TableBuilder::add: keys out of order");
        if !ordered {
            return Err(Error::invalid(format!(
                "table {}: key added out of order",
                self.path.display()
            )));
        }
        let parsed = key::parse_internal_key(ikey).ok_or_else(|| {
            Error::invalid(format!(
                "table {}: {} bytes are not an internal key",
                self.path.display(),
                ikey.len()
            ))
        })?;
        key::check_key_value(parsed.user_key, value)?;

        if let Some(handle) = self.pending_index.take() {
            let sep = self.icmp.find_shortest_separator(&self.last_key, ikey);
            self.index_block.add(&sep, &handle.encode());
        }
        match &mut self.filter {
            Some(FilterBuilder::Bloom(f)) => f.add_key(parsed.user_key),
            Some(FilterBuilder::Custom(f)) => f.add_key(parsed.user_key),
            None => {}
        }
        if let Some(f) = &mut self.prefix_filter
            && let Some(prefix) = parsed.user_key.get(..self.opts.prefix_bloom_len)
        {
            f.add_key(prefix);
        }
        let p = &mut self.props;
        if p.num_entries == 0 {
            p.smallest_key = ikey.to_vec();
            p.smallest_seq = parsed.seq;
        }
        p.num_entries += 1;
        p.num_deletions += u64::from(parsed.kind == ValueKind::Deletion);
        p.raw_key_bytes += ikey.len() as u64;
        p.raw_value_bytes += value.len() as u64;
        p.smallest_seq = p.smallest_seq.min(parsed.seq);
        p.largest_seq = p.largest_seq.max(parsed.seq);
        self.last_key.clear();
        self.last_key.extend_from_slice(ikey);

        self.data_block.add(ikey, value);
        if self.data_block.current_size_estimate() >= self.opts.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.props.num_entries
    }

    /// Bytes written so far plus the size of the block being built.
    pub fn estimated_file_size(&self) -> u64 {
        self.offset + self.data_block.current_size_estimate() as u64
    }

    /// Writes the last data block, the filter, index, properties and meta-index blocks and the
    /// footer, then syncs the file. Returns the file size and the table's properties.
    pub fn finish(mut self) -> Result<(u64, TableProperties)> {
        if let Some(e) = self.err.take() {
            return Err(e);
        }
        self.flush_data_block()?;
        if let Some(handle) = self.pending_index.take() {
            let succ = self.icmp.find_short_successor(&self.last_key);
            self.index_block.add(&succ, &handle.encode());
        }
        self.props.data_bytes = self.offset;
        self.props.largest_key = self.last_key.clone();

        let mut meta: Vec<(Vec<u8>, BlockHandle)> = Vec::new();
        if let Some(filter) = self.filter.take() {
            let (name, bytes) = match filter {
                FilterBuilder::Bloom(f) => (FILTER_BLOCK_NAME.to_vec(), f.finish()),
                FilterBuilder::Custom(f) => {
                    (custom_filter_block_name(f.policy().as_ref()), f.finish())
                }
            };
            let h = self.write_block(&bytes, CompressionType::None)?;
            self.props.filter_bytes = h.size + BLOCK_TRAILER_LEN as u64;
            meta.push((name, h));
        }
        if let Some(f) = self.prefix_filter.take() {
            let h = self.write_block(&f.finish(), CompressionType::None)?;
            meta.push((prefix_filter_block_name(self.opts.prefix_bloom_len), h));
        }
        let index = self.index_block.finish().to_vec();
        let index_handle = self.write_block(&index, self.opts.compression)?;
        self.props.index_bytes = index_handle.size + BLOCK_TRAILER_LEN as u64;

        let props_handle = self.write_block(&self.props.encode(), self.opts.compression)?;
        meta.push((PROPERTIES_BLOCK_NAME.to_vec(), props_handle));
        meta.sort_by(|a, b| a.0.cmp(&b.0));
        let mut metaindex = BlockBuilder::new(1);
        for (name, h) in &meta {
            metaindex.add(name, &h.encode());
        }
        let metaindex_handle = self.write_block(metaindex.finish(), CompressionType::None)?;

        let footer = Footer {
            metaindex: metaindex_handle,
            index: index_handle,
        };
        self.append(&footer.encode())?;
        self.file.sync()?;
        Ok((self.offset, self.props))
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data_block.is_empty() {
            return Ok(());
        }
        debug_assert!(self.pending_index.is_none());
        let mut block = std::mem::replace(&mut self.data_block, BlockBuilder::new(1));
        let result = self.write_block(block.finish(), self.opts.compression);
        block.reset();
        self.data_block = block;
        self.pending_index = Some(result?);
        self.props.num_data_blocks += 1;
        Ok(())
    }

    /// Writes `raw` (compressed as `wanted` allows) and its trailer; returns its handle.
    fn write_block(&mut self, raw: &[u8], wanted: CompressionType) -> Result<BlockHandle> {
        let (kind, compressed) = compression::compress(wanted, raw);
        let stored = compressed.as_deref().unwrap_or(raw);
        let handle = BlockHandle {
            offset: self.offset,
            size: stored.len() as u64,
        };
        let trailer = block_trailer(stored, kind);
        self.append(stored)?;
        self.append(&trailer)?;
        Ok(handle)
    }

    fn append(&mut self, data: &[u8]) -> Result<()> {
        if let Err(e) = self.file.append(data) {
            self.err = Some(e.clone());
            return Err(e);
        }
        self.offset += data.len() as u64;
        Ok(())
    }
}

impl TableWriter for TableBuilder {
    fn format(&self) -> TableFormat {
        TableFormat::Sorted
    }

    fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        TableBuilder::add(self, ikey, value)
    }

    fn estimated_file_size(&self) -> u64 {
        TableBuilder::estimated_file_size(self)
    }

    fn finish(self: Box<Self>) -> Result<(u64, TableProperties)> {
        TableBuilder::finish(*self)
    }
}
