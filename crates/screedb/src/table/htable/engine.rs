//! The HTable behind the engine's table seam: [`HashedTable`] is its [`TableReader`] and
//! [`HTableWriter`] its [`TableWriter`], so versions, compaction, check and repair use HTables
//! like any other table (`crate::table::seam`).

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use super::{HProbe, HTable, HTableBuilder, HTableProperties, KeyHash};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{self, ValueKind};
use crate::table::{
    Lookup, Probe, RoutedIters, TableFormat, TableProperties, TableReader, TableWriter,
};

/// An open HTable as a [`TableReader`].
#[derive(Debug)]
pub struct HashedTable {
    table: Arc<HTable>,
    file_number: u64,
    /// The properties every format shares, taken from the HTable's own.
    common: TableProperties,
}

impl HashedTable {
    /// Wraps an open HTable numbered `file_number`.
    pub fn new(table: HTable, file_number: u64) -> HashedTable {
        let common = common_properties(table.properties());
        HashedTable {
            table: Arc::new(table),
            file_number,
            common,
        }
    }

    /// The HTable itself (its own properties, counters and seed).
    pub fn htable(&self) -> &HTable {
        &self.table
    }
}

/// The properties shared by every format, from an HTable's.
fn common_properties(p: &HTableProperties) -> TableProperties {
    TableProperties {
        smallest_key: p.smallest_key.clone(),
        largest_key: p.largest_key.clone(),
        num_entries: p.num_entries,
        num_deletions: p.num_deletions,
        raw_key_bytes: p.raw_key_bytes,
        raw_value_bytes: p.raw_value_bytes,
        data_bytes: u64::from(p.num_buckets) * u64::from(p.bucket_bytes) + p.overflow_bytes,
        filter_bytes: p.filter_bytes,
        smallest_seq: p.smallest_seq,
        largest_seq: p.largest_seq,
        distinct_sketch: p.sketch.clone(),
        ..TableProperties::default()
    }
}

impl TableReader for HashedTable {
    fn format(&self) -> TableFormat {
        TableFormat::HTable
    }

    fn file_number(&self) -> u64 {
        self.file_number
    }

    fn path(&self) -> &Path {
        self.table.path()
    }

    fn extent(&self) -> u64 {
        self.table.properties().file_size
    }

    fn properties(&self) -> &TableProperties {
        &self.common
    }

    fn probe(&self, user_key: &[u8], target: &[u8]) -> Result<Probe> {
        let seed = self.table.hash_seed();
        self.probe_hashed(user_key, target, seed, &KeyHash::of(seed, user_key), true)
    }

    fn probe_hashed(
        &self,
        user_key: &[u8],
        target: &[u8],
        seed: u64,
        hash: &KeyHash,
        use_filter: bool,
    ) -> Result<Probe> {
        let snapshot = key::parse_internal_key(target).map_or(key::MAX_SEQUENCE, |k| k.seq);
        // A table written with another seed (reported by `screedb check`) is read by its own.
        // A table written with another seed (reported by `screedb check`) is read by its own,
        // through its own filter (a cluster built with the database's seed says nothing of it).
        let own;
        let (hash, use_filter) = if seed == self.table.hash_seed() {
            (hash, use_filter)
        } else {
            own = KeyHash::of(self.table.hash_seed(), user_key);
            (&own, true)
        };
        Ok(
            match self
                .table
                .probe_with(hash, user_key, snapshot, use_filter)?
            {
                HProbe::Filtered => Probe::Filtered,
                HProbe::Missed => Probe::Missed,
                HProbe::Hit { kind, value, seq } => {
                    let found = match kind {
                        ValueKind::Value => Lookup::Found(value),
                        ValueKind::Deletion => Lookup::Deleted,
                    };
                    Probe::Hit(found, seq)
                }
            },
        )
    }

    /// Every entry sorted in memory (an HTable stores none in order): for compaction, check,
    /// repair and dumps, never for user iterators (the trie layout has none).
    fn iter(self: Arc<Self>) -> Result<Box<dyn InternalIterator>> {
        Ok(Box::new(self.table.sorted_iter()?))
    }

    fn iter_by_route(self: Arc<Self>, route: &dyn Fn(&[u8]) -> u64) -> Option<Result<RoutedIters>> {
        Some(self.table.sorted_parts(route).map(|parts| {
            parts
                .into_iter()
                .map(|(r, it)| (r, Box::new(it) as Box<dyn InternalIterator>))
                .collect()
        }))
    }

    /// Entries are placed by hash, so no offset follows the key: 0 for every key.
    fn approximate_offset_of(&self, _ikey: &[u8]) -> u64 {
        0
    }

    fn verify(&self) -> Result<()> {
        self.table.verify()
    }

    fn metadata_bytes(&self) -> u64 {
        self.table.metadata_bytes()
    }

    fn hash_seed(&self) -> Option<u64> {
        Some(self.table.hash_seed())
    }
}

/// An [`HTableBuilder`] as a [`TableWriter`]: full (time to cut) when its items reach the fill
/// percentage of its buckets, whatever the target size says.
pub struct HTableWriter(pub(crate) HTableBuilder);

impl fmt::Debug for HTableWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HTableWriter")
            .field("entries", &self.0.num_entries())
            .finish()
    }
}

impl TableWriter for HTableWriter {
    fn format(&self) -> TableFormat {
        TableFormat::HTable
    }

    fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        self.0.add(ikey, value)
    }

    fn estimated_file_size(&self) -> u64 {
        self.0.estimated_bytes()
    }

    fn is_full(&self, _target_file_size: u64) -> bool {
        self.0.is_full()
    }

    fn finish(self: Box<Self>) -> Result<(u64, TableProperties)> {
        let props = self.0.finish()?;
        Ok((props.file_size, common_properties(&props)))
    }
}
