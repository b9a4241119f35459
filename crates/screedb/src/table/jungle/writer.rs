//! Writing segments: a new tree ([`write_tree`], also what a rewrite of a tree's live entries
//! writes) and an appended batch ([`append_segment`](super::append_segment)), with the pieces
//! both share (`SegmentWriter`, `LeafPacker`).

use std::cmp::Ordering;
use std::path::Path;

use super::commit::{commit_record_len, encode_commit};
use super::leaf::{
    LEAF_HEADER_BYTES, LEAF_OFFSET_BYTES, LeafEntry, ValueRef, common_prefix_len, encode_leaf,
};
use super::node::{
    Child, FILTER_RECORD, Handle, INDEXED_LEAF_RECORD, INTERNAL_RECORD, RECORD_TRAILER_LEN,
    encode_internal, record_trailer, value_record_type,
};
use super::{Commit, SegmentStats, TreeOptions};
use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::key::{self, parse_internal_key};
use crate::table::BloomFilterBuilder;
use crate::table::compression::compress;

/// The survivor rule of an append or a rewrite, applied to the merged stream of every touched
/// leaf (all versions of each user key it holds, old and new, newest first): called with an
/// entry's internal key and the sequence number of the entry just before it in the stream when
/// that one has the same user key (`None` for a user key's newest entry), as LevelDB's
/// `last_sequence_for_key`; returns whether the entry survives. A compaction's rule is
/// "drop if the previous sequence is <= the smallest snapshot; drop a deletion at or below the
/// smallest snapshot when nothing older can exist below".
pub type KeepFn<'a> = dyn FnMut(&[u8], Option<u64>) -> bool + 'a;

/// Appends records of one segment and counts its bytes.
pub(super) struct SegmentWriter<'a> {
    pub(super) opts: &'a TreeOptions,
    pub(super) file: Box<dyn WritableFile>,
    pub(super) path: &'a Path,
    pub(super) stats: SegmentStats,
}

impl SegmentWriter<'_> {
    fn record(&mut self, payload: &[u8], rtype: u8) -> Result<Handle> {
        let size = u32::try_from(payload.len()).map_err(|_| {
            Error::invalid(format!(
                "{}: a {}-byte tree record is too large",
                self.path.display(),
                payload.len()
            ))
        })?;
        let offset = self.file.size();
        self.file.append(payload)?;
        self.file.append(&record_trailer(payload, rtype))?;
        Ok(Handle { offset, size })
    }

    /// Stores `value` inline, or as a value record when longer than the inline maximum,
    /// compressed where that saves an eighth of it.
    pub(super) fn value(&mut self, value: Vec<u8>) -> Result<ValueRef> {
        if value.len() <= self.opts.inline_value_max {
            return Ok(ValueRef::Inline(value));
        }
        let (compression, packed) = compress(self.opts.compression, &value);
        let payload = packed.as_deref().unwrap_or(&value);
        let h = self.record(payload, value_record_type(compression))?;
        self.stats.value_bytes += (payload.len() + RECORD_TRAILER_LEN) as u64;
        Ok(ValueRef::Stored(h, compression))
    }

    fn node(&mut self, payload: &[u8], rtype: u8, first: &[u8], last: &[u8]) -> Result<Child> {
        let handle = self.record(payload, rtype)?;
        self.stats.node_bytes += (payload.len() + RECORD_TRAILER_LEN) as u64;
        Ok(Child {
            first: first.to_vec(),
            last: last.to_vec(),
            handle,
        })
    }

    /// Packs one level of children into internal nodes of about `node_bytes`.
    pub(super) fn pack(&mut self, children: Vec<Child>) -> Result<Vec<Child>> {
        let mut out = Vec::new();
        let (mut node, mut bytes) = (Vec::new(), 4usize);
        for c in children {
            if !node.is_empty() && bytes + c.encoded_len() > self.opts.node_bytes {
                out.push(self.internal(&std::mem::take(&mut node))?);
                bytes = 4;
            }
            bytes += c.encoded_len();
            node.push(c);
        }
        if !node.is_empty() {
            out.push(self.internal(&node)?);
        }
        Ok(out)
    }

    fn internal(&mut self, children: &[Child]) -> Result<Child> {
        let (first, last) = match (children.first(), children.last()) {
            (Some(f), Some(l)) => (f.first.clone(), l.last.clone()),
            _ => return Err(Error::invalid("an internal node needs a child")),
        };
        self.node(&encode_internal(children), INTERNAL_RECORD, &first, &last)
    }

    /// Adds levels above `level` until one node is left: the root and the levels added.
    pub(super) fn build_up(&mut self, mut level: Vec<Child>) -> Result<Option<(Child, u32)>> {
        let mut added = 0;
        while level.len() > 1 {
            level = self.pack(level)?;
            added += 1;
        }
        Ok(level.pop().map(|root| (root, added)))
    }

    /// Writes the filter and the commit record, syncs, and returns the commit.
    pub(super) fn commit(mut self, mut c: Commit, filter: Option<Vec<u8>>) -> Result<Commit> {
        if let Some(f) = filter {
            c.filter = Some(self.record(&f, FILTER_RECORD)?);
        }
        c.offset = self.file.size();
        c.len = c.offset + commit_record_len(&c.smallest, &c.largest);
        c.total_bytes = c.len;
        c.segment = self.stats;
        self.file.append(&encode_commit(&c))?;
        self.file.sync()?;
        Ok(c)
    }
}

/// Cuts a sorted stream of leaf entries into leaves of about `node_bytes`, only between user
/// keys, and counts what it packed. A leaf's size counts its keys past the prefix their user
/// keys share (what [`encode_leaf`] stores), so a leaf of keys sharing much holds more.
pub(super) struct LeafPacker {
    node_bytes: usize,
    leaf: Vec<LeafEntry>,
    /// Bytes of the leaf's entries with whole keys ([`LeafEntry::encoded_len`]).
    leaf_bytes: usize,
    /// Bytes the user keys of the leaf's entries share at their start.
    leaf_prefix: usize,
    group: Vec<LeafEntry>,
    group_bytes: usize,
    out: Vec<Child>,
    pub(super) entries: u64,
    pub(super) live: u64,
    pub(super) seqs: (u64, u64),
    pub(super) filter: BloomFilterBuilder,
}

impl LeafPacker {
    pub(super) fn new(opts: &TreeOptions) -> LeafPacker {
        LeafPacker {
            node_bytes: opts.node_bytes,
            leaf: Vec::new(),
            leaf_bytes: 0,
            leaf_prefix: 0,
            group: Vec::new(),
            group_bytes: 0,
            out: Vec::new(),
            entries: 0,
            live: 0,
            seqs: (u64::MAX, 0),
            filter: BloomFilterBuilder::new(opts.bloom_bits_per_key.max(1)),
        }
    }

    pub(super) fn push(&mut self, w: &mut SegmentWriter<'_>, e: LeafEntry) -> Result<()> {
        let uk = key::user_key(&e.ikey);
        if self
            .group
            .first()
            .is_some_and(|g| key::user_key(&g.ikey) != uk)
        {
            self.flush_group(w)?;
        }
        let seq = key::trailer(&e.ikey) >> 8;
        self.seqs = (self.seqs.0.min(seq), self.seqs.1.max(seq));
        self.filter.add_key(uk);
        self.entries += 1;
        self.live += e.logical_len();
        self.group_bytes += e.encoded_len();
        self.group.push(e);
        Ok(())
    }

    fn flush_group(&mut self, w: &mut SegmentWriter<'_>) -> Result<()> {
        // One user key's versions: they share their whole user key.
        let Some(group_key) = self.group.first().map(|g| key::user_key(&g.ikey)) else {
            return Ok(());
        };
        let whole = group_key.len();
        let shared = match self.leaf.first() {
            Some(first) => {
                let p = self
                    .leaf_prefix
                    .min(common_prefix_len(key::user_key(&first.ikey), group_key));
                // Every entry's key holds the prefix, so this is at most the whole keys' bytes
                // (an entry's key-length varint past the prefix is never longer), and each
                // entry's offset.
                let n = self.leaf.len() + self.group.len();
                let bytes = (LEAF_HEADER_BYTES + p + self.leaf_bytes + self.group_bytes)
                    .saturating_sub(n * p)
                    + n * LEAF_OFFSET_BYTES;
                (bytes <= self.node_bytes).then_some(p)
            }
            None => None,
        };
        self.leaf_prefix = match shared {
            Some(p) => p,
            None => {
                self.write_leaf(w)?;
                whole
            }
        };
        self.leaf.append(&mut self.group);
        self.leaf_bytes += std::mem::take(&mut self.group_bytes);
        Ok(())
    }

    fn write_leaf(&mut self, w: &mut SegmentWriter<'_>) -> Result<()> {
        if let (Some(f), Some(l)) = (self.leaf.first(), self.leaf.last()) {
            let child = w.node(
                &encode_leaf(&self.leaf),
                INDEXED_LEAF_RECORD,
                &f.ikey,
                &l.ikey,
            )?;
            self.out.push(child);
        }
        self.leaf.clear();
        self.leaf_bytes = 0;
        Ok(())
    }

    /// Writes what is pending and returns the leaves written since the last call.
    pub(super) fn take_leaves(&mut self, w: &mut SegmentWriter<'_>) -> Result<Vec<Child>> {
        self.flush_group(w)?;
        self.write_leaf(w)?;
        Ok(std::mem::take(&mut self.out))
    }
}

/// Checks that `ikey` is a valid internal key sorting after `prev`.
pub(super) fn check_order(
    icmp: &InternalKeyComparator,
    prev: Option<&[u8]>,
    ikey: &[u8],
) -> Result<()> {
    if parse_internal_key(ikey).is_none() {
        return Err(Error::invalid("a tree entry's key is not an internal key"));
    }
    if prev.is_some_and(|p| icmp.compare(p, ikey) != Ordering::Less) {
        return Err(Error::invalid(
            "tree entries are not in strictly ascending internal-key order",
        ));
    }
    Ok(())
}

/// Writes a brand-new tree file from `entries` in internal-key order, syncs it, and returns its
/// one commit. `file` must be empty (from [`crate::fs::Fs::create`]).
pub fn write_tree(
    opts: &TreeOptions,
    icmp: &InternalKeyComparator,
    file: Box<dyn WritableFile>,
    path: &Path,
    entries: impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>>,
) -> Result<Commit> {
    let mut w = SegmentWriter {
        opts,
        file,
        path,
        stats: SegmentStats::default(),
    };
    let mut p = LeafPacker::new(opts);
    let mut prev: Option<Vec<u8>> = None;
    for item in entries {
        let (ikey, value) = item?;
        check_order(icmp, prev.as_deref(), &ikey)?;
        let value = w.value(value)?;
        prev = Some(ikey.clone());
        p.push(&mut w, LeafEntry { ikey, value })?;
    }
    let leaves = p.take_leaves(&mut w)?;
    let filter = (opts.bloom_bits_per_key > 0)
        .then(|| p.filter.finish_with_capacity(2 * p.filter.num_keys()));
    let root = w.build_up(leaves)?;
    let c = new_commit(root, 0, p.entries, p.live, p.seqs, None);
    w.commit(c, filter)
}

/// A commit (its offset, length and segment filled in by `SegmentWriter::commit`).
pub(super) fn new_commit(
    root: Option<(Child, u32)>,
    base_height: u32,
    entries: u64,
    live_bytes: u64,
    seqs: (u64, u64),
    prev: Option<u64>,
) -> Commit {
    let (root, height, smallest, largest) = match root {
        Some((r, added)) => (r.handle, base_height.max(1) + added, r.first, r.last),
        None => (Handle { offset: 0, size: 0 }, 0, Vec::new(), Vec::new()),
    };
    let empty = entries == 0;
    Commit {
        offset: 0,
        len: 0,
        root: root.offset,
        root_size: root.size,
        height,
        live_bytes,
        total_bytes: 0,
        entries,
        smallest_seq: if empty { u64::MAX } else { seqs.0 },
        largest_seq: if empty { 0 } else { seqs.1 },
        smallest,
        largest,
        prev,
        filter: None,
        segment: SegmentStats::default(),
    }
}
