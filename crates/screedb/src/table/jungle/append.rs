//! [`append_segment`]: merges a batch into a tree at a commit by appending a segment that
//! holds the batch's long values, the touched leaves, the internal nodes on their paths to a
//! new root, the filter and a commit.

use std::cmp::Ordering;

use super::leaf::LeafEntry;
use super::node::{Child, Handle, Node};
use super::writer::{KeepFn, LeafPacker, SegmentWriter, check_order, new_commit};
use super::{Commit, SegmentStats, TreeOptions, TreeReader};
use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::key;
use crate::table::BloomFilterBuilder;

/// State of one append: the base tree, the segment and what the touched leaves held.
struct Append<'a, 'k> {
    icmp: &'a InternalKeyComparator,
    base: &'a TreeReader,
    w: SegmentWriter<'a>,
    packer: LeafPacker,
    keep: &'a mut KeepFn<'k>,
    removed_entries: u64,
    removed_live: u64,
}

impl Append<'_, '_> {
    /// The replacement, at the same height, of subtree `node` (of `height` levels) once `batch`
    /// (the batch entries whose user keys fall in it) is merged in.
    fn rebuild(&mut self, node: &Child, height: u32, batch: &[LeafEntry]) -> Result<Vec<Child>> {
        if batch.is_empty() {
            return Ok(vec![node.clone()]);
        }
        match self.base.read_node(node.handle, height == 1)? {
            Node::Leaf(old) => {
                self.removed_entries += old.len() as u64;
                self.removed_live += old.logical_len();
                self.merge(old.entries(), batch)?;
                self.packer.take_leaves(&mut self.w)
            }
            Node::Internal(children) => {
                let mut out = Vec::new();
                let mut rest = batch;
                for (i, c) in children.iter().enumerate() {
                    let split = match children.get(i + 1) {
                        Some(next) => rest.partition_point(|e| {
                            self.icmp.compare_user(&e.ikey, &next.first) == Ordering::Less
                        }),
                        None => rest.len(),
                    };
                    let (mine, later) = rest.split_at(split);
                    out.extend(self.rebuild(c, height - 1, mine)?);
                    rest = later;
                }
                self.w.pack(out)
            }
        }
    }

    /// Merges a leaf's entries with batch entries (the batch wins a tie), applies the survivor
    /// rule and packs the survivors.
    fn merge(&mut self, old: impl Iterator<Item = LeafEntry>, batch: &[LeafEntry]) -> Result<()> {
        let mut old = old.peekable();
        let mut new = batch.iter().cloned().peekable();
        let mut prev: Option<(Vec<u8>, u64)> = None;
        loop {
            let e = match (old.peek(), new.peek()) {
                (Some(o), Some(n)) => match self.icmp.compare(&o.ikey, &n.ikey) {
                    Ordering::Less => old.next(),
                    Ordering::Equal => {
                        old.next();
                        new.next()
                    }
                    Ordering::Greater => new.next(),
                },
                (Some(_), None) => old.next(),
                (None, _) => new.next(),
            };
            let Some(e) = e else { break };
            let uk = key::user_key(&e.ikey);
            let seq = key::trailer(&e.ikey) >> 8;
            let prev_seq = match &prev {
                Some((pk, ps)) if self.icmp.user().compare(pk, uk) == Ordering::Equal => Some(*ps),
                _ => None,
            };
            prev = Some((uk.to_vec(), seq));
            if (self.keep)(&e.ikey, prev_seq) {
                self.packer.push(&mut self.w, e)?;
            }
        }
        Ok(())
    }
}

/// Appends a segment that merges `batch` (internal keys in ascending order, each new to the
/// tree) into the tree at `base`: the batch's long values, then only the leaves the batch
/// touches (each merged with its batch entries under `keep`, see [`KeepFn`]) and the internal
/// nodes on their paths to a new root, a filter and a commit. `file` is the tree file reopened
/// at `base.commit().len` ([`crate::fs::Fs::open_appendable`]). Syncs before returning the new
/// commit; the caller then publishes it (a reader opened at the new `len` sees it). An empty
/// batch still appends a commit (same root, a copy of the filter).
pub fn append_segment(
    opts: &TreeOptions,
    icmp: &InternalKeyComparator,
    base: &TreeReader,
    file: Box<dyn WritableFile>,
    batch: impl Iterator<Item = Result<(Vec<u8>, Vec<u8>)>>,
    keep: &mut KeepFn<'_>,
) -> Result<Commit> {
    let bc = base.commit().clone();
    if file.size() != bc.len {
        return Err(Error::invalid(format!(
            "{}: an append must start at the base commit's length {}, not {}",
            base.path().display(),
            bc.len,
            file.size()
        )));
    }
    let mut w = SegmentWriter {
        opts,
        file,
        path: base.path(),
        stats: SegmentStats::default(),
    };
    let mut entries = Vec::new();
    let mut prev: Option<Vec<u8>> = None;
    for item in batch {
        let (ikey, value) = item?;
        check_order(icmp, prev.as_deref(), &ikey)?;
        prev = Some(ikey.clone());
        entries.push(LeafEntry {
            ikey,
            value: w.value(value)?,
        });
    }
    let mut a = Append {
        icmp,
        base,
        w,
        packer: LeafPacker::new(opts),
        keep,
        removed_entries: 0,
        removed_live: 0,
    };
    let level = if bc.height == 0 {
        a.merge(std::iter::empty(), &entries)?;
        a.packer.take_leaves(&mut a.w)?
    } else {
        let root = Child {
            first: bc.smallest.clone(),
            last: bc.largest.clone(),
            handle: Handle {
                offset: bc.root,
                size: bc.root_size,
            },
        };
        a.rebuild(&root, bc.height, &entries)?
    };
    let root = a.w.build_up(level)?;
    let total = bc.entries - a.removed_entries.min(bc.entries) + a.packer.entries;
    let live = bc.live_bytes - a.removed_live.min(bc.live_bytes) + a.packer.live;
    let seqs = match bc.entries {
        0 => a.packer.seqs,
        _ => (
            bc.smallest_seq.min(a.packer.seqs.0),
            bc.largest_seq.max(a.packer.seqs.1),
        ),
    };
    let filter = match opts.bloom_bits_per_key {
        0 => None,
        bits => Some(next_filter(base, &a.packer.filter, &entries, bits, total)?),
    };
    let c = new_commit(root, bc.height, total, live, seqs, Some(bc.offset));
    a.w.commit(c, filter)
}

/// The filter of an appended commit: the base's with the batch's keys added, or a new one
/// sized for twice `entries` when the base has none or is full.
fn next_filter(
    base: &TreeReader,
    added: &BloomFilterBuilder,
    batch: &[LeafEntry],
    bits: u32,
    entries: u64,
) -> Result<Vec<u8>> {
    if let Some(old) = base.filter_bytes() {
        let capacity = (old.len().saturating_sub(1) as u64 * 8) / u64::from(bits);
        if entries <= capacity
            && let Some(f) = added.add_to(old)
        {
            return Ok(f);
        }
    }
    let mut b = BloomFilterBuilder::new(bits);
    let mut ikey = Vec::new();
    base.for_each_leaf(&mut |leaf| {
        for i in 0..leaf.len() {
            leaf.ikey_into(i, &mut ikey);
            b.add_key(key::user_key(&ikey));
        }
    })?;
    for e in batch {
        b.add_key(key::user_key(&e.ikey));
    }
    let capacity = usize::try_from(entries.saturating_mul(2)).unwrap_or(usize::MAX);
    Ok(b.finish_with_capacity(capacity))
}
