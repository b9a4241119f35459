//! The tree file behind the engine's table seam: [`TreeTable`] is its [`TableReader`], so
//! versions, iterators, `screedb check` and repair read Jungle trees like any other table
//! (`crate::table::seam`). Trees are written only by the Jungle compaction job
//! (`crate::compaction::tree_job`), never through a [`crate::table::TableWriter`].

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;

use super::TreeReader;
use super::node::Node;
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{self, ValueKind};
use crate::table::{Lookup, Probe, TableFormat, TableProperties, TableReader};

/// An open tree, pinned at one commit, as a [`TableReader`].
#[derive(Debug)]
pub struct TreeTable {
    tree: Arc<TreeReader>,
    /// The properties every format shares, taken from the commit. Trees do not count their
    /// tombstones: `num_deletions` is 0, as the MANIFEST records it.
    common: TableProperties,
}

impl TreeTable {
    /// Wraps a tree opened at one commit.
    pub fn new(tree: TreeReader) -> TreeTable {
        let c = tree.commit();
        let common = TableProperties {
            smallest_key: c.smallest.clone(),
            largest_key: c.largest.clone(),
            num_entries: c.entries,
            num_deletions: 0,
            raw_value_bytes: c.live_bytes,
            data_bytes: c.total_bytes,
            filter_bytes: c.filter.map_or(0, |h| u64::from(h.size)),
            smallest_seq: if c.entries == 0 { 0 } else { c.smallest_seq },
            largest_seq: c.largest_seq,
            ..TableProperties::default()
        };
        TreeTable {
            tree: Arc::new(tree),
            common,
        }
    }

    /// The tree reader itself (its commit).
    pub fn tree(&self) -> &Arc<TreeReader> {
        &self.tree
    }
}

impl TableReader for TreeTable {
    fn format(&self) -> TableFormat {
        TableFormat::Tree
    }

    fn file_number(&self) -> u64 {
        self.tree.file_number()
    }

    fn path(&self) -> &Path {
        self.tree.path()
    }

    fn extent(&self) -> u64 {
        self.tree.commit().len
    }

    fn properties(&self) -> &TableProperties {
        &self.common
    }

    fn probe(&self, user_key: &[u8], target: &[u8]) -> Result<Probe> {
        if !self.tree.may_contain(user_key) {
            return Ok(Probe::Filtered);
        }
        let Some((node, i)) = self.tree.find(target)? else {
            return Ok(Probe::Missed);
        };
        let Node::Leaf(leaf) = &*node else {
            return Ok(Probe::Missed);
        };
        let ucmp = self.tree.icmp.user();
        let hit = leaf.with_ikey(i, |ikey| {
            let parsed = key::parse_internal_key(ikey)?;
            (ucmp.compare(parsed.user_key, user_key) == Ordering::Equal)
                .then_some((parsed.kind, parsed.seq))
        });
        let Some((kind, seq)) = hit else {
            return Ok(Probe::Missed);
        };
        // Only a live value is read: a tombstone or another key costs no value record.
        let found = match kind {
            ValueKind::Value => Lookup::Found(self.tree.resolve_entry(leaf, i)?),
            ValueKind::Deletion => Lookup::Deleted,
        };
        Ok(Probe::Hit(found, seq))
    }

    fn iter(self: Arc<Self>) -> Result<Box<dyn InternalIterator>> {
        Ok(Box::new(self.tree.iter()))
    }

    /// The share of the root's children before `ikey`'s, times the extent: the file holds
    /// segments in time order, not key order, so this is a size estimate, not an offset.
    fn approximate_offset_of(&self, ikey: &[u8]) -> u64 {
        let extent = self.tree.commit().len;
        let icmp = &self.tree.icmp;
        let Some(root) = self.tree.root_node() else {
            return 0;
        };
        let (before, n) = match &**root {
            Node::Internal(cs) => (
                cs.partition_point(|c| icmp.compare(&c.last, ikey) == Ordering::Less),
                cs.len(),
            ),
            Node::Leaf(leaf) => (leaf.lower_bound(icmp, ikey), leaf.len()),
        };
        if n == 0 {
            return 0;
        }
        u64::try_from(u128::from(extent) * before as u128 / n as u128).unwrap_or(extent)
    }

    fn verify(&self) -> Result<()> {
        self.tree.verify()
    }

    fn metadata_bytes(&self) -> u64 {
        self.tree.metadata_bytes()
    }
}
