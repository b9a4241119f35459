//! Executing merges into Jungle trees ([`OutputPlan::Trees`]).
//!
//! The inputs that are not append targets are merged into one stream in key order. Each user
//! key goes to the guard range of the output level it falls in: into the batch of the range's
//! tree when it has one (appended as one segment once the stream leaves the range), or into a
//! new tree. A new tree is cut before a key whose guard hash ends in `new_guard_bits` one bits
//! and once it holds `target_file_size` of live data; the cut key becomes a guard. A key past
//! the last key of a range's tree may start a new tree too, when it is a guard candidate (so
//! keys written in ascending order get new trees instead of growing one forever). A tree whose
//! append would take it past `replace_past_percent` (Jungle's rewrite ratio: C, or lower on a
//! deepest level whose rewrites are staggered) is replaced instead: merged with its batch into
//! a new tree of its range. The same machinery writes a Jungle flush straight into level 1
//! ([`flush`]).
//!
//! Survivors: entries bound for a new tree pass the same snapshot-stripe rule as every merge
//! (`Survivors`); an append applies it to the batch merged with the leaves it touches, so the
//! tree's older versions of a key are judged with the new ones. A tombstone of the oldest
//! stripe is dropped only when no level below the output holds its key.
//!
//! Crash safety: every appended segment and new tree is synced before the edit that names it
//! is logged (the job's files together, `SyncBatch`), new trees' directory entries are made
//! durable first, and every grown or new tree is opened again (its commit and filter checked)
//! before the edit names it. A crash before the edit leaves a tail past the MANIFEST's extent,
//! which readers never see and the next open cuts away.

use std::cmp::Ordering;
use std::sync::atomic::Ordering as AtomicOrdering;

use super::job::{JobContext, JobStats, Survivors};
use super::sync_batch::{MAX_PENDING, SyncBatch};
use super::{MergeSpec, OutputPlan};
use crate::error::{Error, Result};
use crate::filename;
use crate::fs::write_back_every;
use crate::iter::{InternalIterator, MergingIterator};
use crate::key::{self, ValueKind};
use crate::layout::flsm::guards;
use crate::manifest::{FileMeta, VersionEdit, end_checksum};
use crate::table::{Commit, TableFormat, TreeReader, append_segment, write_tree};
use crate::version::{FileRef, Version};

/// Entries merged between two looks at [`JobContext::cancel`].
const CANCEL_CHECK_INTERVAL: u64 = 256;

/// An entry: internal key and value.
type Entry = (Vec<u8>, Vec<u8>);

/// Where the entries of the current guard range go.
enum Sink {
    /// Not inside a range yet.
    None,
    /// The range's tree, and the batch to append to it.
    Append { tree: FileRef, batch: Vec<Entry> },
    /// A new tree: its surviving entries and their live bytes.
    New { entries: Vec<Entry>, live: u64 },
}

/// The state of one merge into trees.
struct TreeMerge<'a, 'c> {
    ctx: &'a JobContext<'c>,
    version: &'a Version,
    out: usize,
    target_file_size: u64,
    new_guard_bits: u32,
    /// See [`OutputPlan::Trees`]: past this space ratio a target is replaced, not appended to.
    replace_past_percent: u32,
    /// The append targets, by smallest key.
    targets: Vec<FileRef>,
    /// Committed guards of the output level, and the index of the first one above the keys
    /// seen (the guard range of the current key).
    committed: &'a [Vec<u8>],
    next_guard: usize,
    sink: Sink,
    survivors: Survivors<'a>,
    stats: JobStats,
    new_guards: Vec<Vec<u8>>,
    grown: Vec<FileMeta>,
    emptied: Vec<u64>,
    created: Vec<FileMeta>,
    /// The files written and not yet synced.
    syncs: SyncBatch,
}

/// Executes a merge whose plan is [`OutputPlan::Trees`]: returns the edit that removes the
/// merged inputs, grows the appended trees, adds the new trees and their guards.
pub fn merge(
    ctx: &JobContext<'_>,
    version: &Version,
    spec: &MergeSpec,
) -> Result<(VersionEdit, JobStats)> {
    let OutputPlan::Trees { rewrite, .. } = spec.output else {
        return Err(Error::invalid("a tree merge needs OutputPlan::Trees"));
    };
    let out = spec.output_level;
    let mut sources: Vec<(usize, FileRef)> = Vec::new();
    let mut targets: Vec<FileRef> = Vec::new();
    for (level, files) in &spec.inputs {
        for f in files {
            if *level == out && !rewrite {
                targets.push(FileRef::clone(f));
            } else {
                sources.push((*level, FileRef::clone(f)));
            }
        }
    }
    let mut bytes_read = 0;
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    for (_, f) in &sources {
        bytes_read += f.file_size;
        children.push(ctx.tables.get(f)?.iter()?);
    }
    let mut input = MergingIterator::new(ctx.icmp.clone(), children);
    let (mut edit, mut stats) = into_trees(ctx, version, out, spec.output, targets, &mut input)?;
    stats.bytes_read += bytes_read;
    let deleted = sources.iter().map(|(level, f)| (*level as u32, f.number));
    edit.deleted_files.splice(0..0, deleted);
    Ok((edit, stats))
}

/// Writes a flushed memtable (`input`) straight into the trees of level 1, as a merge from
/// level 0 would, when level 0 holds no table (docs/jungle.md, "Flushes"): `targets` are the
/// level-1 trees whose guard ranges its keys span. Returns the edit that grows, replaces and
/// adds trees there (the caller adds the log number).
pub fn flush(
    ctx: &JobContext<'_>,
    version: &Version,
    plan: OutputPlan,
    targets: Vec<FileRef>,
    input: &mut dyn InternalIterator,
) -> Result<(VersionEdit, JobStats)> {
    into_trees(ctx, version, 1, plan, targets, input)
}

/// Merges `input` (in internal-key order) into the trees of level `out`: `targets` are the
/// trees appended to (or replaced), by guard range; keys of a range without one go to new
/// trees. The edit grows, removes and adds trees of `out` and adds its new guards.
fn into_trees(
    ctx: &JobContext<'_>,
    version: &Version,
    out: usize,
    plan: OutputPlan,
    mut targets: Vec<FileRef>,
    input: &mut dyn InternalIterator,
) -> Result<(VersionEdit, JobStats)> {
    let OutputPlan::Trees {
        target_file_size,
        new_guard_bits,
        replace_past_percent,
        ..
    } = plan
    else {
        return Err(Error::invalid("a tree merge needs OutputPlan::Trees"));
    };
    let icmp = ctx.icmp;
    targets.sort_by(|a, b| icmp.compare(&a.smallest, &b.smallest));
    let mut m = TreeMerge {
        ctx,
        version,
        out,
        target_file_size,
        new_guard_bits,
        replace_past_percent,
        targets,
        committed: version.guards(out),
        next_guard: 0,
        sink: Sink::None,
        survivors: Survivors::new(icmp, ctx.snapshots),
        stats: JobStats::default(),
        new_guards: Vec::new(),
        grown: Vec::new(),
        emptied: Vec::new(),
        created: Vec::new(),
        syncs: SyncBatch::default(),
    };
    m.run(input)?;
    m.syncs.sync_all()?;

    if !m.created.is_empty() {
        // The new trees' directory entries must be durable before an edit names them.
        ctx.fs.sync_dir(ctx.dir)?;
    }
    // Open every grown and new tree at its new commit (checking the commit and the filter)
    // before an edit names it; the first reads after the install find it open.
    for meta in m.grown.iter().chain(&m.created) {
        ctx.tables.get(meta)?;
    }
    let mut edit = VersionEdit::default();
    let out32 = out as u32;
    edit.deleted_files
        .extend(m.emptied.iter().map(|&number| (out32, number)));
    edit.grown_files
        .extend(m.grown.into_iter().map(|meta| (out32, meta)));
    edit.new_files
        .extend(m.created.into_iter().map(|meta| (out32, meta)));
    edit.added_guards
        .extend(m.new_guards.into_iter().map(|key| (out32, key)));
    Ok((edit, m.stats))
}

impl TreeMerge<'_, '_> {
    fn run(&mut self, input: &mut dyn InternalIterator) -> Result<()> {
        let newest_snapshot = self.ctx.snapshots.last().copied().unwrap_or(0);
        let filter = self.ctx.compaction_filter;
        // The user key of the entries being merged (valid once `have_key`; reused, not
        // reallocated per key).
        let mut last_user_key: Vec<u8> = Vec::new();
        let mut have_key = false;
        let mut seen = 0u64;
        input.seek_to_first();
        while input.valid() {
            seen += 1;
            if seen.is_multiple_of(CANCEL_CHECK_INTERVAL)
                && self
                    .ctx
                    .cancel
                    .is_some_and(|c| c.load(AtomicOrdering::Acquire))
            {
                return Err(Error::Closed);
            }
            let ikey = input.key();
            let parsed = key::parse_internal_key(ikey).ok_or_else(|| {
                Error::corruption("compaction input", 0, "internal key with a bad trailer")
            })?;
            let new_key = !have_key
                || self
                    .ctx
                    .icmp
                    .user()
                    .compare(&last_user_key, parsed.user_key)
                    != Ordering::Equal;
            if new_key {
                self.route(parsed.user_key)?;
                last_user_key.clear();
                last_user_key.extend_from_slice(parsed.user_key);
                have_key = true;
            }
            // The newest value of a key that no snapshot can see: the application's filter may
            // turn it into a tombstone.
            let entry = if new_key
                && parsed.kind == ValueKind::Value
                && parsed.seq > newest_snapshot
                && filter.is_some_and(|f| f.drop_value(self.out, parsed.user_key, input.value()))
            {
                self.stats.entries_filtered += 1;
                let mut tombstone = Vec::new();
                key::append_internal_key(
                    &mut tombstone,
                    parsed.user_key,
                    parsed.seq,
                    ValueKind::Deletion,
                );
                (tombstone, Vec::new())
            } else {
                (ikey.to_vec(), input.value().to_vec())
            };
            self.push(entry, parsed.user_key, parsed.seq, parsed.kind);
            input.next();
        }
        input.status()?;
        self.close()
    }

    /// Moves the sink to the guard range of `user_key` (ascending across calls), closing the
    /// current one when the key leaves its range or starts a new tree.
    fn route(&mut self, user_key: &[u8]) -> Result<()> {
        let ctx = self.ctx;
        let ucmp = ctx.icmp.user();
        let mut crossed = false;
        while self
            .committed
            .get(self.next_guard)
            .is_some_and(|g| ucmp.compare(g, user_key) != Ordering::Greater)
        {
            self.next_guard += 1;
            crossed = true;
        }
        if crossed {
            self.close()?;
        }
        let candidate = guards::is_guard(user_key, self.new_guard_bits);
        let cut = match &self.sink {
            Sink::None => false,
            // Past the tree's last key, a candidate starts a new tree (and range).
            Sink::Append { tree, .. } => {
                candidate && ucmp.compare(user_key, tree.largest_user_key()) == Ordering::Greater
            }
            Sink::New { entries, live } => {
                !entries.is_empty() && (candidate || *live >= self.target_file_size)
            }
        };
        if cut {
            self.close()?;
            self.new_guards.push(user_key.to_vec());
            self.sink = Sink::New {
                entries: Vec::new(),
                live: 0,
            };
        }
        if matches!(self.sink, Sink::None) {
            let range = self.next_guard;
            let tree = self.targets.iter().find(|t| {
                guards::guard_index(ucmp.as_ref(), self.committed, t.smallest_user_key()) == range
            });
            self.sink = match tree {
                Some(tree) => Sink::Append {
                    tree: FileRef::clone(tree),
                    batch: Vec::new(),
                },
                None => Sink::New {
                    entries: Vec::new(),
                    live: 0,
                },
            };
        }
        Ok(())
    }

    /// Adds an entry of the current key to the sink.
    fn push(&mut self, entry: Entry, user_key: &[u8], seq: u64, kind: ValueKind) {
        let (version, out) = (self.version, self.out);
        match &mut self.sink {
            Sink::Append { batch, .. } => batch.push(entry),
            Sink::New { entries, live } => {
                if self.survivors.keep(user_key, seq, kind, || {
                    nothing_below(version, out, user_key)
                }) {
                    *live += (entry.0.len() + entry.1.len()) as u64;
                    entries.push(entry);
                } else {
                    self.stats.entries_dropped += 1;
                }
            }
            Sink::None => {}
        }
    }

    /// Writes what the current sink holds: appends the batch, or writes the new tree.
    fn close(&mut self) -> Result<()> {
        match std::mem::replace(&mut self.sink, Sink::None) {
            Sink::None => Ok(()),
            Sink::Append { batch, .. } if batch.is_empty() => Ok(()),
            Sink::Append { tree, batch } if self.passes_c(&tree, &batch) => {
                self.replace(&tree, batch)
            }
            Sink::Append { tree, batch } => self.append(&tree, batch),
            Sink::New { entries, .. } if entries.is_empty() => Ok(()),
            Sink::New { entries, .. } => self.create(entries),
        }
    }

    /// Appends `batch` to `tree` as one segment.
    fn append(&mut self, tree: &FileRef, batch: Vec<Entry>) -> Result<()> {
        let ctx = self.ctx;
        let path = filename::table_file(ctx.dir, tree.number);
        let base = TreeReader::open(
            ctx.fs.open(&path)?,
            path.clone(),
            tree.number,
            tree.file_size,
            ctx.table_options.tree.clone(),
            ctx.icmp.clone(),
        )?;
        let file = self.syncs.defer(write_back_every(
            ctx.fs.open_appendable(&path, tree.file_size)?,
            ctx.table_options.bytes_per_sync,
        ));
        let mut survivors = Survivors::new(ctx.icmp, ctx.snapshots);
        let (version, out) = (self.version, self.out);
        let mut dropped = 0u64;
        let mut keep = |ikey: &[u8], _newer_seq: Option<u64>| {
            let Some(p) = key::parse_internal_key(ikey) else {
                return true;
            };
            let kept = survivors.keep(p.user_key, p.seq, p.kind, || {
                nothing_below(version, out, p.user_key)
            });
            dropped += u64::from(!kept);
            kept
        };
        let commit = append_segment(
            &ctx.table_options.tree,
            ctx.icmp,
            &base,
            file,
            batch.into_iter().map(Ok),
            &mut keep,
        )?;
        self.sync_if_many()?;
        self.stats.entries_dropped += dropped;
        let appended = commit.len - tree.file_size;
        self.stats.bytes_written += appended;
        self.stats.tree_appended_value_bytes += commit.segment.value_bytes;
        self.stats.tree_appended_node_bytes += appended - commit.segment.value_bytes;
        if commit.entries == 0 {
            self.emptied.push(tree.number);
        } else {
            self.grown.push(self.meta_of(tree.number, &commit)?);
        }
        Ok(())
    }

    /// True when appending `batch` would take `tree` past the compaction factor: its file plus
    /// the batch (and a leaf entry per key) over the bytes a fresh tree needs, counting the
    /// batch as overwriting the tree's keys (updates, the case that grows garbage) unless it
    /// is larger. Leaves copied on write are not counted, so this errs towards appending.
    fn passes_c(&self, tree: &FileRef, batch: &[Entry]) -> bool {
        if self.replace_past_percent == 0 {
            return false;
        }
        let batch_bytes: u64 = batch.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum();
        let entries = batch.len() as u64;
        let after = tree.file_size + batch_bytes + entries * 32;
        let fresh = crate::layout::jungle::fresh_bytes(&FileMeta {
            live_bytes: tree.live_bytes.max(batch_bytes),
            num_entries: tree.num_entries.max(entries),
            format: TableFormat::Tree,
            ..FileMeta::default()
        });
        after * 100 > fresh * u64::from(self.replace_past_percent)
    }

    /// Replaces `tree` by a new tree of its entries merged with `batch` (the survivors of
    /// both, under the same rule as an append): the tree is removed by the edit.
    fn replace(&mut self, tree: &FileRef, batch: Vec<Entry>) -> Result<()> {
        let ctx = self.ctx;
        let (version, out) = (self.version, self.out);
        self.stats.bytes_read += tree.file_size;
        let children: Vec<Box<dyn InternalIterator>> = vec![
            ctx.tables.get(tree)?.iter()?,
            Box::new(crate::iter::VecIterator::new(batch, ctx.icmp.clone())),
        ];
        let mut input = MergingIterator::new(ctx.icmp.clone(), children);
        let mut survivors = Survivors::new(ctx.icmp, ctx.snapshots);
        let mut entries = Vec::new();
        input.seek_to_first();
        while input.valid() {
            let ikey = input.key();
            let parsed = key::parse_internal_key(ikey).ok_or_else(|| {
                Error::corruption(
                    "tree replacement input",
                    0,
                    "internal key with a bad trailer",
                )
            })?;
            if survivors.keep(parsed.user_key, parsed.seq, parsed.kind, || {
                nothing_below(version, out, parsed.user_key)
            }) {
                entries.push((ikey.to_vec(), input.value().to_vec()));
            } else {
                self.stats.entries_dropped += 1;
            }
            input.next();
        }
        input.status()?;
        self.emptied.push(tree.number);
        self.stats.tree_replacements += 1;
        if entries.is_empty() {
            return Ok(());
        }
        self.create(entries)
    }

    /// Writes `entries` as a new tree file.
    fn create(&mut self, entries: Vec<Entry>) -> Result<()> {
        let ctx = self.ctx;
        let number = (ctx.new_file_number)();
        let path = filename::table_file(ctx.dir, number);
        let commit = write_tree(
            &ctx.table_options.tree,
            ctx.icmp,
            self.syncs.defer(write_back_every(
                ctx.fs.create(&path)?,
                ctx.table_options.bytes_per_sync,
            )),
            &path,
            entries.into_iter().map(Ok),
        )?;
        self.sync_if_many()?;
        self.stats.bytes_written += commit.len;
        self.stats.tree_new_bytes += commit.len;
        self.stats.files_written += 1;
        self.created.push(self.meta_of(number, &commit)?);
        Ok(())
    }

    /// Syncs the files written so far once [`MAX_PENDING`] wait, so a job holds few open.
    fn sync_if_many(&mut self) -> Result<()> {
        if self.syncs.pending() >= MAX_PENDING {
            self.syncs.sync_all()?;
        }
        Ok(())
    }

    /// The MANIFEST's description of tree `number` at `commit`.
    fn meta_of(&self, number: u64, commit: &Commit) -> Result<FileMeta> {
        let path = filename::table_file(self.ctx.dir, number);
        let file = self.ctx.fs.open(&path)?;
        Ok(FileMeta {
            number,
            file_size: commit.len,
            smallest: commit.smallest.clone(),
            largest: commit.largest.clone(),
            smallest_seq: commit.smallest_seq,
            largest_seq: commit.largest_seq,
            num_entries: commit.entries,
            num_deletions: 0,
            format: TableFormat::Tree,
            end_checksum: Some(end_checksum(&*file, commit.len)?),
            route: 0,
            live_bytes: commit.live_bytes,
            distinct_sketch: None,
        })
    }
}

/// True when no level below `out` holds a table that may hold `user_key`.
fn nothing_below(version: &Version, out: usize, user_key: &[u8]) -> bool {
    (out + 1..version.num_levels()).all(|level| version.tables_for_key(level, user_key).is_empty())
}
