//! Ordered iteration over a tree at one commit: a [`Cursor`] (the path of nodes from the root to
//! a leaf entry) and [`TreeIterator`], the [`InternalIterator`] that resolves values.

use std::cmp::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use super::TreeReader;
use super::leaf::Leaf;
use super::node::{Handle, Node};
use crate::error::{Error, Result};
use crate::iter::InternalIterator;

/// A position in a tree: the nodes from the root down to a leaf, each with the index of the
/// child (or, in the leaf, the entry) the path takes. Empty when not positioned.
#[derive(Debug, Default)]
pub(super) struct Cursor {
    stack: Vec<(Arc<Node>, usize)>,
}

fn node_len(n: &Node) -> usize {
    match n {
        Node::Leaf(leaf) => leaf.len(),
        Node::Internal(cs) => cs.len(),
    }
}

impl Cursor {
    /// The leaf under the cursor and the entry's index in it.
    pub(super) fn current(&self) -> Option<(&Leaf, usize)> {
        match self.stack.last() {
            Some((node, i)) => match &**node {
                Node::Leaf(leaf) if *i < leaf.len() => Some((leaf, *i)),
                _ => None,
            },
            None => None,
        }
    }

    /// The leaf node under the cursor and the entry's index in it (shared, so the position
    /// outlives the cursor).
    pub(super) fn position(&self) -> Option<(Arc<Node>, usize)> {
        self.current()?;
        self.stack.last().map(|(node, i)| (Arc::clone(node), *i))
    }

    /// Height of the node that would be pushed next.
    fn next_height(tree: &TreeReader, depth: usize) -> u32 {
        tree.commit().height.saturating_sub(depth as u32)
    }

    /// Pushes the subtree at `h` and descends to its first (or last) entry.
    fn descend(&mut self, tree: &TreeReader, mut h: Handle, last: bool) -> Result<()> {
        loop {
            let height = Self::next_height(tree, self.stack.len());
            let node = tree.node(h, height == 1)?;
            let n = node_len(&node);
            if n == 0 {
                return Err(Error::corruption(tree.path(), h.offset, "empty tree node"));
            }
            let i = if last { n - 1 } else { 0 };
            let child = match &*node {
                Node::Internal(cs) => Some(cs[i].handle),
                Node::Leaf(_) => None,
            };
            self.stack.push((node, i));
            match child {
                Some(c) => h = c,
                None => return Ok(()),
            }
        }
    }

    pub(super) fn seek_to_edge(&mut self, tree: &TreeReader, last: bool) -> Result<()> {
        self.stack.clear();
        match tree.root() {
            Some(root) => self.descend(tree, root, last),
            None => Ok(()),
        }
    }

    /// Positions on the first entry >= `target`.
    pub(super) fn seek(&mut self, tree: &TreeReader, target: &[u8]) -> Result<()> {
        self.stack.clear();
        let Some(mut h) = tree.root() else {
            return Ok(());
        };
        let icmp = &tree.icmp;
        loop {
            let height = Self::next_height(tree, self.stack.len());
            let node = tree.node(h, height == 1)?;
            match &*node {
                Node::Internal(cs) => {
                    let i = cs.partition_point(|c| icmp.compare(&c.last, target) == Ordering::Less);
                    let Some(c) = cs.get(i) else {
                        self.stack.clear();
                        return Ok(());
                    };
                    h = c.handle;
                    self.stack.push((node, i));
                }
                Node::Leaf(leaf) => {
                    let i = leaf.lower_bound(icmp, target);
                    let past = i >= leaf.len();
                    self.stack.push((node, i));
                    if past {
                        // Only a damaged range gets here: move on to the next leaf.
                        return self.step(tree, true);
                    }
                    return Ok(());
                }
            }
        }
    }

    /// Moves to the next (`forward`) or previous entry; empty past either end.
    pub(super) fn step(&mut self, tree: &TreeReader, forward: bool) -> Result<()> {
        while let Some((node, i)) = self.stack.last_mut() {
            let n = node_len(node);
            let moved = if forward {
                (*i + 1 < n).then(|| *i + 1)
            } else {
                i.checked_sub(1).filter(|&j| j < n)
            };
            match moved {
                Some(j) => {
                    *i = j;
                    let child = match &**node {
                        Node::Internal(cs) => Some(cs[j].handle),
                        Node::Leaf(_) => None,
                    };
                    if let Some(c) = child {
                        self.descend(tree, c, !forward)?;
                    }
                    return Ok(());
                }
                None => {
                    self.stack.pop();
                }
            }
        }
        Ok(())
    }
}

/// An [`InternalIterator`] over a tree at one commit, values resolved (a stored value is read
/// and, if the options say so, verified when the cursor lands on it).
pub struct TreeIterator {
    tree: Arc<TreeReader>,
    cur: Cursor,
    /// The current entry's internal key (a leaf may store only its part past a prefix).
    key: Vec<u8>,
    /// The current entry's value: a view of the file's map (or of the leaf) where it is
    /// mapped; unused while `in_buf`.
    value: Bytes,
    /// The current entry's value when it was decompressed (the allocation kept for the next).
    buf: Vec<u8>,
    /// Whether the current value is in `buf`.
    in_buf: bool,
    err: Option<Error>,
}

impl std::fmt::Debug for TreeIterator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TreeIterator")
            .field("path", &self.tree.path())
            .field("valid", &self.valid())
            .finish_non_exhaustive()
    }
}

impl TreeIterator {
    pub(super) fn new(tree: Arc<TreeReader>) -> TreeIterator {
        TreeIterator {
            tree,
            cur: Cursor::default(),
            key: Vec::new(),
            value: Bytes::new(),
            buf: Vec::new(),
            in_buf: false,
            err: None,
        }
    }

    /// Applies a move's result: copies the key and resolves the value, or records the error
    /// and stops.
    fn settle(&mut self, moved: Result<()>) {
        let resolved = moved.and_then(|()| match self.cur.current() {
            Some((leaf, i)) => {
                leaf.ikey_into(i, &mut self.key);
                self.tree.resolve_into(leaf, i, &mut self.buf)
            }
            None => Ok(Some(Bytes::new())),
        });
        self.in_buf = matches!(resolved, Ok(None));
        match resolved {
            Ok(Some(v)) => self.value = v,
            Ok(None) => self.value = Bytes::new(),
            Err(e) => {
                self.err = Some(e);
                self.cur = Cursor::default();
            }
        }
    }
}

impl InternalIterator for TreeIterator {
    fn valid(&self) -> bool {
        self.err.is_none() && self.cur.current().is_some()
    }
    fn seek_to_first(&mut self) {
        self.err = None;
        let r = self.cur.seek_to_edge(&self.tree, false);
        self.settle(r);
    }
    fn seek_to_last(&mut self) {
        self.err = None;
        let r = self.cur.seek_to_edge(&self.tree, true);
        self.settle(r);
    }
    fn seek(&mut self, target: &[u8]) {
        self.err = None;
        let r = self.cur.seek(&self.tree, target);
        self.settle(r);
    }
    fn next(&mut self) {
        let r = self.cur.step(&self.tree, true);
        self.settle(r);
    }
    fn prev(&mut self) {
        let r = self.cur.step(&self.tree, false);
        self.settle(r);
    }
    fn key(&self) -> &[u8] {
        if self.valid() { &self.key } else { &[] }
    }
    fn value(&self) -> &[u8] {
        if self.in_buf { &self.buf } else { &self.value }
    }
    fn status(&self) -> Result<()> {
        match &self.err {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }
}
