//! [`TreeReader`]: a tree file pinned at one commit. It reads only below the commit's extent,
//! so segments appended later are invisible to it (MVCC for free: bytes below a commit never
//! change).

use std::cmp::Ordering;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use super::commit::{read_commit_at, read_commit_ending_at};
use super::fences::LeafFences;
use super::iter::{Cursor, TreeIterator};
use super::leaf::{Leaf, LeafIndex, ValueSlot};
use super::node::{
    FILTER_RECORD, Handle, LEAF_RECORD, Node, RECORD_TRAILER_LEN, decompress_value,
    decompress_value_into, read_checked_payload, read_node, read_record, read_record_bytes,
    value_record_type,
};
use super::{Commit, TreeOptions};
use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;
use crate::key::parse_internal_key;
use crate::table::checked_once::CheckedOnce;
use crate::table::{BloomFilter, CompressionType};
use quick_cache::Weighter;
use quick_cache::sync::Cache;

/// A tree file opened at one commit. `Send + Sync`; share it in an `Arc`.
pub struct TreeReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    file_number: u64,
    opts: TreeOptions,
    pub(super) icmp: InternalKeyComparator,
    commit: Commit,
    filter_bytes: Option<Vec<u8>>,
    filter: Option<BloomFilter>,
    /// The root node, decoded at open (every lookup starts there).
    root: Option<Arc<Node>>,
    /// Every other internal node of this commit, decoded at open and sorted by offset, as a
    /// sorted table keeps its index in memory: a get then reads only its leaf and its value.
    internal: Vec<(u64, Arc<Node>)>,
    /// The last key and the handle of every leaf, in key order, gathered from the internal
    /// nodes at open (empty when the root is a leaf): a get finds its leaf with one binary
    /// search over contiguous keys, as a sorted table searches its index block, instead of
    /// one per level over children whose keys each lie in their own allocation.
    fences: LeafFences,
    /// Payload bytes of the root and of `internal`, plus the bytes of `fences`.
    internal_bytes: u64,
    /// Leaves shared by every open tree, if the engine gave one.
    cache: Option<Arc<NodeCache>>,
    /// Which records of a mapped file this reader has read and checked ([`CHECKED_GRANULE`]):
    /// indexed leaves (every entry, and the checksum unless `verify_checksums` is off) and
    /// value records (checksum). Later reads
    /// through the map use them in place unchecked, as a sorted table's blocks are checked
    /// once ([`CheckedOnce`]). Made at the first such read.
    checked: OnceLock<CheckedOnce>,
}

/// Bytes of a tree file per bit of [`TreeReader::checked`]: no two records spanning at least this
/// many bytes (payload and trailer) start in one granule, so each has a bit of its own (a value
/// record past `inline_value_max`, 64 bytes by default, always does). A smaller record has none
/// and is checked on every read.
const CHECKED_GRANULE: u64 = 64;

/// The leaves of every open tree that a reader cannot search in place (internal nodes stay with
/// their reader; an indexed leaf of a mapped file needs nothing kept), keyed by `(file
/// number, offset)` and bounded in bytes. Safe without invalidation: a node a reader can reach
/// lies below a commit, and bytes below a commit never change (file numbers are never reused).
pub struct NodeCache {
    cache: Cache<(u64, u64), Cached, NodeWeighter>,
}

/// What the cache keeps of a node.
#[derive(Clone)]
enum Cached {
    /// A decoded leaf of a file read without a map, weighed by its payload bytes.
    Node(u32, Arc<Node>),
    /// A leaf of a mapped file: only where its entries lie, checked when it was read. A reader
    /// pairs it with the leaf's bytes read in place from its own map ([`Leaf::over`]): no copy
    /// of the bytes is kept (the page cache holds them, as it holds a sorted table's blocks
    /// read in place), and no view that would keep the map of a deleted file alive.
    Leaf(LeafIndex),
}

/// Weighs a cached node by the bytes it holds.
#[derive(Debug, Clone, Copy)]
struct NodeWeighter;

impl Weighter<(u64, u64), Cached> for NodeWeighter {
    fn weight(&self, _key: &(u64, u64), cached: &Cached) -> u64 {
        match cached {
            Cached::Node(size, _) => u64::from(*size).max(1),
            Cached::Leaf(index) => index.charge(),
        }
    }
}

impl fmt::Debug for NodeCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeCache")
            .field("capacity_bytes", &self.cache.capacity())
            .field("usage_bytes", &self.cache.weight())
            .finish()
    }
}

impl NodeCache {
    /// A cache of at most about `capacity_bytes` of node payloads.
    pub fn new(capacity_bytes: u64) -> NodeCache {
        // Mostly the entry offsets of older leaves of mapped files: a few hundred bytes each.
        let items = usize::try_from(capacity_bytes / 512)
            .unwrap_or(usize::MAX)
            .max(16);
        NodeCache {
            cache: Cache::with_weighter(items, capacity_bytes, NodeWeighter),
        }
    }
}

impl fmt::Debug for TreeReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TreeReader")
            .field("path", &self.path)
            .field("file_number", &self.file_number)
            .field("commit", &self.commit)
            .finish_non_exhaustive()
    }
}

impl TreeReader {
    /// Opens the tree as of the commit whose record ends the extent `len` (reads only bytes
    /// below `len`, so later appends are invisible). The commit and the filter are verified, and
    /// the internal nodes (the root's and every one of height 2 and up) are read and kept
    /// decoded.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        file_number: u64,
        len: u64,
        opts: TreeOptions,
        icmp: InternalKeyComparator,
    ) -> Result<TreeReader> {
        let commit = read_commit_ending_at(&*file, &path, len)?;
        if (commit.height == 0) != (commit.entries == 0) {
            return Err(Error::corruption(
                &path,
                commit.offset,
                format!(
                    "commit of a tree of height {} with {} entries",
                    commit.height, commit.entries
                ),
            ));
        }
        let (filter_bytes, filter) = match commit.filter {
            Some(h) => {
                let raw = read_record(&*file, &path, commit.offset, h, FILTER_RECORD, true)?;
                let parsed = BloomFilter::new(raw.clone())
                    .ok_or_else(|| Error::corruption(&path, h.offset, "malformed tree filter"))?;
                (Some(raw), Some(parsed))
            }
            None => (None, None),
        };
        let mut tree = TreeReader {
            file,
            path,
            file_number,
            opts,
            icmp,
            commit,
            filter_bytes,
            filter,
            root: None,
            internal: Vec::new(),
            fences: LeafFences::default(),
            internal_bytes: 0,
            cache: None,
            checked: OnceLock::new(),
        };
        if let Some(h) = tree.root() {
            let root = Arc::new(tree.read_node(h, tree.commit.height == 1)?);
            tree.read_internal_nodes(&root)?;
            tree.internal_bytes += u64::from(h.size);
            if tree.commit.height >= 2 {
                tree.fences = tree.gather_fences(&root, tree.commit.height);
                tree.internal_bytes += tree.fences.bytes();
            }
            tree.root = Some(root);
        }
        Ok(tree)
    }

    /// Reads and keeps every internal node below `root`, level by level: those of height 2 and
    /// up (height 1 is the leaves).
    fn read_internal_nodes(&mut self, root: &Node) -> Result<()> {
        let children = |node: &Node| match node {
            Node::Internal(cs) => cs.iter().map(|c| c.handle).collect(),
            Node::Leaf(_) => Vec::new(),
        };
        let mut frontier: Vec<Handle> = children(root);
        let mut height = self.commit.height.saturating_sub(1);
        while height >= 2 {
            let mut next = Vec::new();
            for h in frontier {
                let node = Arc::new(self.read_node(h, false)?);
                next.extend(children(&node));
                self.internal_bytes += u64::from(h.size);
                self.internal.push((h.offset, node));
            }
            frontier = next;
            height -= 1;
        }
        self.internal.sort_unstable_by_key(|(offset, _)| *offset);
        Ok(())
    }

    /// The leaves' last keys and handles below `node` (of `height` >= 2), in key order, from the
    /// internal nodes kept at open.
    fn gather_fences(&self, node: &Node, height: u32) -> LeafFences {
        let mut fences = LeafFences::default();
        // Depth first, children pushed in reverse so the leaves come out in key order.
        let mut stack = vec![(node, height)];
        while let Some((node, height)) = stack.pop() {
            let Node::Internal(cs) = node else { continue };
            if height == 2 {
                for c in cs {
                    fences.push(&c.last, c.handle);
                }
                continue;
            }
            for c in cs.iter().rev() {
                // Every one was read at open (`read_internal_nodes` fails otherwise).
                if let Ok(i) = self
                    .internal
                    .binary_search_by_key(&c.handle.offset, |(offset, _)| *offset)
                {
                    stack.push((&*self.internal[i].1, height - 1));
                }
            }
        }
        fences
    }

    /// Caches the leaves this reader decodes in `cache` (its internal nodes are its own; an
    /// indexed leaf of a mapped file is not cached, see `TreeReader::node`).
    pub fn with_node_cache(mut self, cache: Option<Arc<NodeCache>>) -> TreeReader {
        self.cache = cache;
        self
    }

    /// The commit this reader is pinned at.
    pub fn commit(&self) -> &Commit {
        &self.commit
    }

    /// The file's path (for errors).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's number, as given to [`TreeReader::open`].
    pub fn file_number(&self) -> u64 {
        self.file_number
    }

    /// False only if `user_key` is certainly not in the tree (one filter probe).
    pub fn may_contain(&self, user_key: &[u8]) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(user_key))
    }

    /// The encoded filter of this commit, if it has one.
    pub(super) fn filter_bytes(&self) -> Option<&[u8]> {
        self.filter_bytes.as_deref()
    }

    /// Bytes this reader keeps in memory: the filter, the commit's key range, the internal
    /// nodes' payloads (the root's included) and the bits of the records it checked.
    pub fn metadata_bytes(&self) -> u64 {
        (self.filter_bytes.as_ref().map_or(0, Vec::len)
            + self.commit.smallest.len()
            + self.commit.largest.len()
            + self.checked.get().map_or(0, CheckedOnce::bytes)) as u64
            + self.internal_bytes
    }

    /// The bit of the record at `h` in [`TreeReader::checked`]; `None` for a record smaller
    /// than [`CHECKED_GRANULE`].
    fn checked_bit(h: Handle) -> Option<usize> {
        let span = u64::from(h.size) + RECORD_TRAILER_LEN as u64;
        (span >= CHECKED_GRANULE).then(|| usize::try_from(h.offset / CHECKED_GRANULE).ok())?
    }

    /// Whether this reader read and checked the record at `h` before.
    fn was_checked(&self, h: Handle) -> bool {
        match (Self::checked_bit(h), self.checked.get()) {
            (Some(bit), Some(bits)) => bits.contains(bit),
            _ => false,
        }
    }

    /// Records that this reader read and checked the record at `h` (nothing if it is smaller
    /// than a granule).
    fn set_checked(&self, h: Handle) {
        if let Some(bit) = Self::checked_bit(h) {
            let granules = self.commit.offset.div_ceil(CHECKED_GRANULE);
            let bits = self
                .checked
                .get_or_init(|| CheckedOnce::new(usize::try_from(granules).unwrap_or(0)));
            bits.insert(bit);
        }
    }

    /// The root node, decoded at open; `None` for an empty tree.
    pub(super) fn root_node(&self) -> Option<&Arc<Node>> {
        self.root.as_ref()
    }

    /// The root node's handle; `None` for an empty tree.
    pub(super) fn root(&self) -> Option<Handle> {
        (self.commit.height > 0).then_some(Handle {
            offset: self.commit.root,
            size: self.commit.root_size,
        })
    }

    /// The node at `handle`, a leaf if `leaf`: internal nodes from memory; an indexed leaf of a
    /// mapped file read in place (checked the first time); an older leaf read (or its entry
    /// offsets taken from the cache).
    pub(super) fn node(&self, handle: Handle, leaf: bool) -> Result<Arc<Node>> {
        if let Some(root) = &self.root
            && Some(handle) == self.root()
        {
            return Ok(Arc::clone(root));
        }
        if !leaf {
            // Every internal node below this commit's root was kept at open; another handle
            // (none reaches here from the root) is read, not cached.
            return match self
                .internal
                .binary_search_by_key(&handle.offset, |(offset, _)| *offset)
            {
                Ok(i) => Ok(Arc::clone(&self.internal[i].1)),
                Err(_) => self.read_node(handle, false).map(Arc::new),
            };
        }
        let mapped = self.file.is_mapped();
        if mapped && self.was_checked(handle) {
            let (file, path, extent) = (&*self.file, &self.path, self.commit.offset);
            let payload = read_checked_payload(file, path, extent, handle, LEAF_RECORD)?;
            return match Leaf::in_place(payload) {
                Some(l) => Ok(Arc::new(Node::Leaf(l))),
                None => Err(Error::corruption(
                    path,
                    handle.offset,
                    "malformed leaf node",
                )),
            };
        }
        let key = (self.file_number, handle.offset);
        match self.cache.as_ref().and_then(|c| c.cache.get(&key)) {
            Some(Cached::Node(_, node)) => return Ok(node),
            // The bytes were checked when the index was cached and never change: read them in
            // place again.
            Some(Cached::Leaf(index)) if mapped => {
                let payload = self.file.read_bytes(handle.offset, handle.size as usize)?;
                if let Some(l) = Leaf::over(payload, &index) {
                    return Ok(Arc::new(Node::Leaf(l)));
                }
            }
            _ => {}
        }
        let node = Arc::new(self.read_node(handle, leaf)?);
        let cached = match &*node {
            // Its offsets are in its bytes: nothing to cache but that it was checked.
            Node::Leaf(l) if mapped && l.is_indexed() => {
                self.set_checked(handle);
                return Ok(node);
            }
            Node::Leaf(l) if mapped => Cached::Leaf(l.index()),
            _ => Cached::Node(handle.size, Arc::clone(&node)),
        };
        if let Some(cache) = &self.cache {
            cache.cache.insert(key, cached);
        }
        Ok(node)
    }

    /// Reads the node at `handle`, a leaf if `leaf`.
    pub(super) fn read_node(&self, handle: Handle, leaf: bool) -> Result<Node> {
        let verify = self.opts.verify_checksums;
        read_node(
            &*self.file,
            &self.path,
            self.commit.offset,
            handle,
            leaf,
            verify,
        )
    }

    /// Entry `i`'s value as shared bytes: a view of the leaf, or of the value record in the
    /// file's map when the file is mapped, so an iterator stepping over entries copies nothing.
    /// A value record read through the map has its checksum checked once by this reader
    /// ([`TreeReader::checked`]), as a table block used in place is.
    /// A compressed value is decompressed into bytes of its own.
    pub(super) fn resolve_shared(&self, leaf: &Leaf, i: usize) -> Result<Bytes> {
        match self.stored_value(leaf, i)? {
            (bytes, None) => Ok(bytes),
            (payload, Some((h, compression))) => {
                decompress_value(&self.path, h, compression, payload)
            }
        }
    }

    /// [`TreeReader::resolve_shared`] for an iterator that keeps `buf` from one entry to the
    /// next: a compressed value is decompressed over `buf` (its allocation reused) and `None`
    /// returned; any other value is returned as shared bytes.
    pub(super) fn resolve_into(
        &self,
        leaf: &Leaf,
        i: usize,
        buf: &mut Vec<u8>,
    ) -> Result<Option<Bytes>> {
        match self.stored_value(leaf, i)? {
            (bytes, None) => Ok(Some(bytes)),
            (payload, Some((h, compression))) => {
                decompress_value_into(&self.path, h, compression, &payload, buf)?;
                Ok(None)
            }
        }
    }

    /// Entry `i`'s value as stored, checked as [`TreeReader::resolve_shared`] says: a view of
    /// the leaf (inline) or of the value record's payload, with the record's handle and
    /// compression when it must be decompressed.
    fn stored_value(
        &self,
        leaf: &Leaf,
        i: usize,
    ) -> Result<(Bytes, Option<(Handle, CompressionType)>)> {
        let (h, compression) = match leaf.value(i) {
            ValueSlot::Inline(v) => return Ok((leaf.view(v), None)),
            ValueSlot::Stored(h, compression) => (h, compression),
        };
        let (file, path, extent) = (&*self.file, &self.path, self.commit.offset);
        let rtype = value_record_type(compression);
        let mapped = file.is_mapped();
        let payload = if mapped && self.was_checked(h) {
            // Its type and checksum held when it was first read: its trailer, on another cache
            // line than the bytes the caller uses, is not read again.
            read_checked_payload(file, path, extent, h, rtype)?
        } else {
            let verify = self.opts.verify_checksums;
            let (bytes, _) = read_record_bytes(file, path, extent, h, rtype, verify)?;
            if verify && mapped {
                self.set_checked(h);
            }
            bytes
        };
        let packed = (compression != CompressionType::None).then_some((h, compression));
        Ok((payload, packed))
    }

    /// Entry `i`'s value, copied (what a get returns; a decompressed value is handed over).
    pub(super) fn resolve_entry(&self, leaf: &Leaf, i: usize) -> Result<Vec<u8>> {
        if self.file.is_mapped() {
            return self.resolve_shared(leaf, i).map(Vec::from);
        }
        self.resolve(leaf.value(i), false)
    }

    /// The bytes of a leaf entry's value.
    pub(super) fn resolve(&self, value: ValueSlot<'_>, verify: bool) -> Result<Vec<u8>> {
        match value {
            ValueSlot::Inline(v) => Ok(v.to_vec()),
            ValueSlot::Stored(h, compression) => {
                let verify = verify || self.opts.verify_checksums;
                let (file, path, extent) = (&*self.file, &self.path, self.commit.offset);
                let rtype = value_record_type(compression);
                let payload = read_record(file, path, extent, h, rtype, verify)?;
                // A raw value goes through Bytes and back to a Vec, reusing its buffer.
                decompress_value(path, h, compression, payload.into()).map(Vec::from)
            }
        }
    }

    /// The first entry whose internal key is >= `target` (like `Table::get_unfiltered`), its
    /// value resolved; `None` past the last entry.
    pub fn get(&self, target_ikey: &[u8]) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        match self.find(target_ikey)? {
            Some((leaf, i)) => {
                let Node::Leaf(l) = &*leaf else {
                    return Ok(None);
                };
                Ok(Some((l.ikey_vec(i), self.resolve_entry(l, i)?)))
            }
            None => Ok(None),
        }
    }

    /// The leaf and index of the first entry whose internal key is >= `target`; `None` past
    /// the last entry. A get's descent: one node per level and no cursor (the cursor's stack is
    /// only needed when the answer lies in the next leaf, which only a damaged range causes).
    pub(super) fn find(&self, target: &[u8]) -> Result<Option<(Arc<Node>, usize)>> {
        let Some(mut h) = self.root() else {
            return Ok(None);
        };
        let mut height = self.commit.height;
        if !self.fences.is_empty() {
            let i = self.fences.partition_point(&self.icmp, target);
            let Some(leaf) = self.fences.handle(i) else {
                return Ok(None);
            };
            (h, height) = (leaf, 1);
        }
        loop {
            let node = self.node(h, height == 1)?;
            match &*node {
                Node::Internal(cs) => {
                    let i = cs
                        .partition_point(|c| self.icmp.compare(&c.last, target) == Ordering::Less);
                    let Some(c) = cs.get(i) else {
                        return Ok(None);
                    };
                    h = c.handle;
                    height = height.saturating_sub(1);
                }
                Node::Leaf(leaf) => {
                    let i = leaf.lower_bound(&self.icmp, target);
                    if i < leaf.len() {
                        return Ok(Some((node, i)));
                    }
                    let mut cur = Cursor::default();
                    cur.seek(self, target)?;
                    return Ok(cur.position());
                }
            }
        }
    }

    /// An iterator over the tree at this commit, values resolved.
    pub fn iter(self: &Arc<Self>) -> TreeIterator {
        TreeIterator::new(Arc::clone(self))
    }

    /// Calls `f` with every leaf's entries, in key order (no value is read).
    pub(super) fn for_each_leaf(&self, f: &mut dyn FnMut(&Leaf)) -> Result<()> {
        match self.root() {
            Some(root) => self.walk(root, self.commit.height, f),
            None => Ok(()),
        }
    }

    fn walk(&self, h: Handle, height: u32, f: &mut dyn FnMut(&Leaf)) -> Result<()> {
        match self.read_node(h, height == 1)? {
            Node::Leaf(leaf) => f(&leaf),
            Node::Internal(children) => {
                for c in children {
                    self.walk(c.handle, height - 1, f)?;
                }
            }
        }
        Ok(())
    }

    /// Checks every reachable node and value (checksums, order, key ranges, depth, counts),
    /// the filter against every key, and the chain of earlier commits. Errors name the file
    /// and the offset of the damaged record.
    pub fn verify(&self) -> Result<()> {
        let c = &self.commit;
        let mut v = Verify {
            tree: self,
            entries: 0,
            live: 0,
            last: None,
        };
        if let Some(root) = self.root() {
            v.node(root, c.height, &c.smallest, &c.largest)?;
        }
        if (v.entries, v.live) != (c.entries, c.live_bytes) {
            return Err(Error::corruption(
                &self.path,
                c.offset,
                format!(
                    "commit counts {} entries and {} live bytes, the tree holds {} and {}",
                    c.entries, c.live_bytes, v.entries, v.live
                ),
            ));
        }
        let mut later = c.offset;
        let mut prev = c.prev;
        while let Some(off) = prev {
            let p = read_commit_at(&*self.file, &self.path, off, later)?;
            if p.len > later {
                return Err(Error::corruption(
                    &self.path,
                    off,
                    format!("previous commit overlaps the commit at {later}"),
                ));
            }
            later = p.offset;
            prev = p.prev;
        }
        Ok(())
    }
}

/// The state of [`TreeReader::verify`]'s walk.
struct Verify<'a> {
    tree: &'a TreeReader,
    entries: u64,
    live: u64,
    /// The last key of the previous leaf.
    last: Option<Vec<u8>>,
}

impl Verify<'_> {
    fn bad(&self, offset: u64, reason: String) -> Error {
        Error::corruption(&self.tree.path, offset, reason)
    }

    /// Checks the subtree at `h` of `height` levels whose keys must span exactly first..=last.
    fn node(&mut self, h: Handle, height: u32, first: &[u8], last: &[u8]) -> Result<()> {
        let t = self.tree;
        let icmp = &t.icmp;
        let node = read_node(&*t.file, &t.path, t.commit.offset, h, height == 1, true)?;
        let (got_first, got_last) = match &node {
            Node::Leaf(l) if !l.is_empty() => (
                Some(l.ikey_vec(0)),
                Some(l.ikey_vec(l.len().saturating_sub(1))),
            ),
            Node::Leaf(_) => (None, None),
            Node::Internal(cs) => (
                cs.first().map(|c| c.first.clone()),
                cs.last().map(|c| c.last.clone()),
            ),
        };
        if got_first.as_deref() != Some(first) || got_last.as_deref() != Some(last) {
            return Err(self.bad(h.offset, "node keys do not match its parent's range".into()));
        }
        match node {
            Node::Leaf(leaf) => {
                if let Some(prev) = &self.last
                    && icmp.compare_user(prev, &leaf.ikey_vec(0)) != Ordering::Less
                {
                    return Err(self.bad(h.offset, "leaf overlaps or splits a user key".into()));
                }
                let (mut prev, mut ikey) = (Vec::new(), Vec::new());
                for i in 0..leaf.len() {
                    leaf.ikey_into(i, &mut ikey);
                    let Some(pk) = parse_internal_key(&ikey) else {
                        return Err(self.bad(h.offset, format!("entry {i}: bad internal key")));
                    };
                    if i > 0 && icmp.compare(&prev, &ikey) != Ordering::Less {
                        return Err(self.bad(h.offset, format!("entry {i} out of order")));
                    }
                    let c = &t.commit;
                    if pk.seq < c.smallest_seq || pk.seq > c.largest_seq {
                        return Err(self.bad(h.offset, format!("entry {i}: seq out of range")));
                    }
                    if !t.may_contain(pk.user_key) {
                        return Err(self.bad(h.offset, format!("entry {i}: not in the filter")));
                    }
                    let value = leaf.value(i);
                    t.resolve(value, true)?;
                    self.live += ikey.len() as u64 + value.value_len();
                    std::mem::swap(&mut prev, &mut ikey);
                }
                self.entries += leaf.len() as u64;
                self.last = Some(prev);
            }
            Node::Internal(children) => {
                for (i, c) in children.iter().enumerate() {
                    let next_ok = children
                        .get(i + 1)
                        .is_none_or(|n| icmp.compare(&c.last, &n.first) == Ordering::Less);
                    if icmp.compare(&c.first, &c.last) == Ordering::Greater || !next_ok {
                        return Err(self.bad(h.offset, format!("child {i}: bad key range")));
                    }
                    if height <= 1 {
                        return Err(self.bad(h.offset, "internal node at leaf depth".into()));
                    }
                    self.node(c.handle, height - 1, &c.first, &c.last)?;
                }
            }
        }
        Ok(())
    }
}
