//! Executing flushes and compaction choices.
//!
//! Both write sorted tables from a merged stream of entries, dropping what no reader can see:
//! within one user key (newest first), an entry is dropped when a newer entry of the same key lies
//! in the same *snapshot stripe* — the same interval between consecutive live snapshots — because
//! every reader that could see the older entry sees the newer one instead. A tombstone in the
//! oldest stripe is dropped too when no level below the output holds the key (nothing for it to
//! hide), and only by compaction, never by a flush.

use std::cmp::Ordering;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

use std::collections::HashSet;

use super::parallel::{Finisher, try_map_on_two_threads};
use super::{CompactionFilter, MergeSpec, OutputPlan};
use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::filename;
use crate::fs::Fs;
use crate::iter::{self, ConcatIterator, InternalIterator, MergingIterator};
use crate::key::{self, SequenceNumber, ValueKind};
use crate::layout::flsm::guards;
use crate::manifest::{FileMeta, VersionEdit};
use crate::table::htable::KeyHash;
use crate::table::{TableCache, TableFormat, TableOptions, TableWriter, create_writer};
use crate::version::{FileRef, Version};

/// What a job needs from the database.
#[allow(missing_debug_implementations)]
pub struct JobContext<'a> {
    /// File system.
    pub fs: &'a dyn Fs,
    /// Database directory.
    pub dir: &'a Path,
    /// Internal key order.
    pub icmp: &'a InternalKeyComparator,
    /// Table format options.
    pub table_options: &'a TableOptions,
    /// The format of the tables written (the layout's).
    pub format: TableFormat,
    /// The application's filter, asked by merges (see [`CompactionFilter`]).
    pub compaction_filter: Option<&'a dyn CompactionFilter>,
    /// Open tables (shared: a merge's inputs open their tables lazily through it).
    pub tables: &'a Arc<TableCache>,
    /// Live snapshots, ascending.
    pub snapshots: &'a [SequenceNumber],
    /// Allocates a file number.
    pub new_file_number: &'a (dyn Fn() -> u64 + Sync),
    /// When set (the database is closing), a merge stops early with [`Error::Closed`]; its
    /// unfinished outputs are named by no edit and removed at the next open. Flushes ignore it.
    pub cancel: Option<&'a AtomicBool>,
    /// Open each table written with its pages mapped in (`Options::populate_new_tables`,
    /// decided per job: see [`TableCache::get_written`]).
    pub populate_new_tables: bool,
}

/// Entries a merge writes between two looks at [`JobContext::cancel`].
const CANCEL_CHECK_INTERVAL: u64 = 256;

/// Bytes moved by a job.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobStats {
    /// Bytes of input tables read.
    pub bytes_read: u64,
    /// Bytes of tables written (for Jungle trees: new tree files plus appended segments).
    pub bytes_written: u64,
    /// Jungle: bytes of value records appended to existing trees.
    pub tree_appended_value_bytes: u64,
    /// Jungle: bytes of nodes, filters and commits appended to existing trees.
    pub tree_appended_node_bytes: u64,
    /// Jungle: bytes of new tree files (new guard ranges and rewrites).
    pub tree_new_bytes: u64,
    /// Jungle: append targets replaced by a new tree (the append would have passed C).
    pub tree_replacements: u64,
    /// Tables written.
    pub files_written: u64,
    /// Entries dropped as shadowed or obsolete tombstones.
    pub entries_dropped: u64,
    /// Values the compaction filter dropped (written as tombstones).
    pub entries_filtered: u64,
}

/// Decides, entry by entry, what survives.
pub(super) struct Survivors<'a> {
    icmp: &'a InternalKeyComparator,
    snapshots: &'a [SequenceNumber],
    current_key: Option<Vec<u8>>,
    last_stripe: Option<usize>,
}

impl<'a> Survivors<'a> {
    pub(super) fn new(icmp: &'a InternalKeyComparator, snapshots: &'a [SequenceNumber]) -> Self {
        Survivors {
            icmp,
            snapshots,
            current_key: None,
            last_stripe: None,
        }
    }

    /// True when the entry must be written. `no_older_data` says whether levels below the output
    /// hold the key (only asked for tombstones of the oldest stripe).
    pub(super) fn keep(
        &mut self,
        user_key: &[u8],
        seq: SequenceNumber,
        kind: ValueKind,
        no_older_data: impl FnOnce() -> bool,
    ) -> bool {
        let same_key = self
            .current_key
            .as_deref()
            .is_some_and(|k| self.icmp.user().compare(k, user_key) == Ordering::Equal);
        if !same_key {
            self.current_key = Some(user_key.to_vec());
            self.last_stripe = None;
        }
        let stripe = self.snapshots.partition_point(|&s| s < seq);
        if self.last_stripe == Some(stripe) {
            return false;
        }
        self.last_stripe = Some(stripe);
        !(kind == ValueKind::Deletion && stripe == 0 && no_older_data())
    }
}

/// Decides whether a guard candidate may be committed.
type MayCommit<'a> = Box<dyn Fn(&[u8]) -> bool + 'a>;

/// Where outputs must be cut besides their size: before every committed guard of the output
/// level (FLSM), and before every key that becomes a new guard.
struct Partition<'a> {
    /// Committed guards of the output level, in user-key order.
    committed: &'a [Vec<u8>],
    /// Index in `committed` of the first guard above the last key written.
    next: usize,
    /// Guards of the next level down that the output level lacks, in user-key order: each may
    /// be adopted where the outputs pass it (see [`Partition::starts_guard`]).
    adoptable: Vec<Vec<u8>>,
    /// Index in `adoptable` of the first guard above the last key written.
    next_adoptable: usize,
    /// Bytes the outputs must have received since the last guard cut before a guard is
    /// adopted.
    adopt_after: u64,
    /// Bytes of keys and values written since the last guard cut.
    since_cut: u64,
    /// Bits making a key a new guard candidate (`None`: no new guards).
    bits: Option<u32>,
    /// Whether a candidate may be committed (no table that stays would have to be split).
    may_commit: MayCommit<'a>,
    /// Candidates chosen, ascending.
    new_guards: Vec<Vec<u8>>,
}

impl Partition<'_> {
    fn none() -> Partition<'static> {
        Partition {
            committed: &[],
            next: 0,
            adoptable: Vec::new(),
            next_adoptable: 0,
            adopt_after: 0,
            since_cut: 0,
            bits: None,
            may_commit: Box::new(|_| false),
            new_guards: Vec::new(),
        }
    }

    /// True when `user_key` (ascending across calls) starts a new guard.
    ///
    /// Besides hash candidates, the last guard of the next level passed since the previous key
    /// is adopted when it may be committed, when the outputs received at least `adopt_after`
    /// bytes since the last guard cut (so that a level does not take every guard of a much
    /// larger level below it), and when neither a committed guard nor this key (a new hash
    /// guard) lies above it (the guard would hold nothing of this job's). A new key can become
    /// a guard of a level only where no table of a deeper level spans it, so once the deeper
    /// levels are full a level would otherwise never gain guards: a level 1 that lost the race
    /// to get them before level 2 filled stayed one guard for good, and each of its compactions
    /// merged into all of level 2 (issue 14: the tree shape, and the write amplification,
    /// depended on which memory component filled the first memtables). Adopted guards keep
    /// the skip-list property (a guard of the next level is one at every deeper level), and
    /// they align a guard with one guard below it, so its compaction reaches one child.
    fn starts_guard(&mut self, icmp: &InternalKeyComparator, user_key: &[u8]) -> bool {
        let ucmp = icmp.user();
        let not_above = |g: &Vec<u8>| ucmp.compare(g, user_key) != Ordering::Greater;
        let before = self.next;
        while self.committed.get(self.next).is_some_and(not_above) {
            self.next += 1;
        }
        let last_committed = (self.next > before).then(|| &self.committed[self.next - 1]);
        let committed_here =
            last_committed.is_some_and(|g| ucmp.compare(g, user_key) == Ordering::Equal);
        let hash_here = !committed_here
            && self.bits.is_some_and(|b| guards::is_guard(user_key, b))
            && (self.may_commit)(user_key);
        let passed = self.next_adoptable;
        while self
            .adoptable
            .get(self.next_adoptable)
            .is_some_and(not_above)
        {
            self.next_adoptable += 1;
        }
        // Of several passed between two written keys, only the last would hold any of them.
        let adopted = (self.next_adoptable > passed && self.since_cut >= self.adopt_after.max(1))
            .then(|| &self.adoptable[self.next_adoptable - 1])
            .filter(|g| last_committed.is_none_or(|c| ucmp.compare(c, g) != Ordering::Greater))
            .filter(|g| !hash_here || ucmp.compare(g, user_key) == Ordering::Equal)
            .filter(|g| (self.may_commit)(g))
            .cloned();
        let cut = last_committed.is_some() || hash_here || adopted.is_some();
        if hash_here && adopted.is_none() {
            self.new_guards.push(user_key.to_vec());
        }
        self.new_guards.extend(adopted);
        if cut {
            self.since_cut = 0;
        }
        cut
    }

    /// Counts `bytes` written to the outputs.
    fn wrote(&mut self, bytes: usize) {
        self.since_cut = self.since_cut.saturating_add(bytes as u64);
    }
}

/// Where each user key's entries go: its route (the trie container of the output level) or,
/// for layouts that route by key range, 0 for every key.
type Router<'a> = &'a dyn Fn(&[u8]) -> u64;

/// The hashes of the distinct user keys written to each output table, by file number (the
/// keys of a BloomCluster).
pub(super) struct KeyHashes {
    seed: u64,
    pub(super) by_table: std::collections::HashMap<u64, Vec<KeyHash>>,
}

impl KeyHashes {
    fn new(seed: u64) -> Self {
        KeyHashes {
            seed,
            by_table: std::collections::HashMap::new(),
        }
    }

    fn add(&mut self, table: u64, user_key: &[u8]) {
        let hash = KeyHash::of(self.seed, user_key);
        self.by_table.entry(table).or_default().push(hash);
    }
}

/// A table being written: its route, file number and writer.
type OpenTable = (u64, u64, Box<dyn TableWriter>);

/// How [`write_tables`] cuts, routes and filters what it writes (flush and merge differ only
/// here).
struct Outputs<'o, 'p> {
    /// Size at which a table is full (sorted tables; `u64::MAX`: never).
    target_file_size: u64,
    /// Whether a tombstone of the oldest snapshot stripe may be dropped (no level below the
    /// output holds its key).
    may_drop_tombstone: &'o mut dyn FnMut(&[u8]) -> bool,
    /// The guards of the output level ([`Partition::none`] for none).
    partition: &'o mut Partition<'p>,
    /// The route (output table family) of each user key.
    route_of: Router<'o>,
    /// The application's compaction filter and the output level it is asked for.
    filter: Option<(&'o dyn CompactionFilter, usize)>,
    /// Set when the database closes: the job stops.
    cancel: Option<&'o AtomicBool>,
    /// The hashes of each output's keys, for clustered filters (trie merges).
    key_hashes: Option<&'o mut KeyHashes>,
}

/// Writes the entries of each of `inputs` in turn into tables of `ctx.format`, one open table
/// per route, each cut once it is full (`out.target_file_size` for sorted tables) and at guard
/// boundaries, never between two entries of one user key; the tables of one input are finished
/// before the next begins (a hash split's inputs are its routes, so it holds one route's
/// outputs at a time). No user key may be in two inputs. Returns the new tables. With
/// `parallel`, full tables are finished on a helper thread while the entries go on
/// (`parallel.rs`), and the tables come back in no particular order.
fn write_tables(
    ctx: &JobContext<'_>,
    inputs: Vec<&mut dyn InternalIterator>,
    mut out: Outputs<'_, '_>,
    parallel: bool,
    stats: &mut JobStats,
) -> Result<Vec<FileMeta>> {
    std::thread::scope(|scope| {
        let mut finisher = Finisher::new(parallel.then_some(scope));
        let outputs = inputs
            .into_iter()
            .try_for_each(|input| write_entries(ctx, input, &mut out, &mut finisher, stats))
            .and_then(|()| finisher.into_finished())?;
        for meta in &outputs {
            stats.bytes_written += meta.file_size;
            stats.files_written += 1;
        }
        Ok(outputs)
    })
    .and_then(|outputs| {
        if !outputs.is_empty() {
            // The new tables' directory entries must be durable before an edit names them.
            ctx.fs.sync_dir(ctx.dir)?;
        }
        // Open every new table once, as LevelDB does: a table that cannot be read back
        // (footer, index or filter) fails the job before an edit names it, and the first reads
        // after the install find it open instead of loading its index and filter themselves
        // (and, populated, take no page fault in it).
        for meta in &outputs {
            ctx.tables.get_written(meta, ctx.populate_new_tables)?;
        }
        Ok(outputs)
    })
}

/// The loop of [`write_tables`]: every surviving entry into its open table; full tables (and at
/// the end all of them) go to `finisher`.
fn write_entries(
    ctx: &JobContext<'_>,
    input: &mut dyn InternalIterator,
    out: &mut Outputs<'_, '_>,
    finisher: &mut Finisher<'_, '_>,
    stats: &mut JobStats,
) -> Result<()> {
    let Outputs {
        target_file_size,
        may_drop_tombstone,
        partition,
        route_of,
        filter,
        cancel,
        key_hashes,
    } = out;
    let (target_file_size, route_of, filter, cancel) =
        (*target_file_size, *route_of, *filter, *cancel);
    let newest_snapshot = ctx.snapshots.last().copied().unwrap_or(0);
    let mut tombstone = Vec::new();
    let mut survivors = Survivors::new(ctx.icmp, ctx.snapshots);
    let mut open: Vec<OpenTable> = Vec::new();
    // The open table of the current user key.
    let mut current = 0usize;
    // The user key of the entries being written (valid once `have_key`; reused, not reallocated).
    let mut last_user_key: Vec<u8> = Vec::new();
    let mut have_key = false;
    let mut seen: u64 = 0;
    input.seek_to_first();
    while input.valid() {
        seen += 1;
        if seen.is_multiple_of(CANCEL_CHECK_INTERVAL)
            && cancel.is_some_and(|c| c.load(AtomicOrdering::Acquire))
        {
            return Err(Error::Closed);
        }
        let ikey = input.key();
        let parsed = key::parse_internal_key(ikey).ok_or_else(|| {
            Error::corruption("compaction input", 0, "internal key with a bad trailer")
        })?;
        if !survivors.keep(parsed.user_key, parsed.seq, parsed.kind, || {
            may_drop_tombstone(parsed.user_key)
        }) {
            stats.entries_dropped += 1;
            input.next();
            continue;
        }
        let new_key = !have_key
            || ctx.icmp.user().compare(&last_user_key, parsed.user_key) != Ordering::Equal;
        if new_key {
            let new_guard = partition.starts_guard(ctx.icmp, parsed.user_key);
            let route = route_of(parsed.user_key);
            let found = open.iter().position(|o| o.0 == route);
            if let Some(i) = found
                && (new_guard || open[i].2.is_full(target_file_size))
            {
                let (route, number, writer) = open.swap_remove(i);
                finisher.finish((writer, number, route))?;
            }
            current = match open.iter().position(|o| o.0 == route) {
                Some(i) => i,
                None => {
                    let number = (ctx.new_file_number)();
                    let path = filename::table_file(ctx.dir, number);
                    let writer =
                        create_writer(ctx.fs, &path, ctx.format, ctx.table_options, ctx.icmp)?;
                    open.push((route, number, writer));
                    open.len() - 1
                }
            };
            if let (Some(k), Some(o)) = (key_hashes.as_deref_mut(), open.get(current)) {
                k.add(o.1, parsed.user_key);
            }
            last_user_key.clear();
            last_user_key.extend_from_slice(parsed.user_key);
            have_key = true;
        }
        // The newest value of a key that no snapshot can see: the application's filter may
        // turn it into a tombstone.
        let filtered = new_key
            && parsed.kind == ValueKind::Value
            && parsed.seq > newest_snapshot
            && filter.is_some_and(|(f, level)| f.drop_value(level, parsed.user_key, input.value()));
        if let Some((_, _, writer)) = open.get_mut(current) {
            if filtered {
                stats.entries_filtered += 1;
                tombstone.clear();
                key::append_internal_key(
                    &mut tombstone,
                    parsed.user_key,
                    parsed.seq,
                    ValueKind::Deletion,
                );
                writer.add(&tombstone, b"")?;
                partition.wrote(tombstone.len());
            } else {
                writer.add(ikey, input.value())?;
                partition.wrote(ikey.len() + input.value().len());
            }
        }
        input.next();
    }
    input.status()?;
    for (route, number, writer) in open {
        finisher.finish((writer, number, route))?;
    }
    Ok(())
}

/// Finishes table `number` and describes it as the manifest records it (also used by repair).
pub(crate) fn finish_table(writer: Box<dyn TableWriter>, number: u64) -> Result<FileMeta> {
    let format = writer.format();
    let (file_size, props) = writer.finish()?;
    Ok(FileMeta {
        number,
        file_size,
        smallest: props.smallest_key,
        largest: props.largest_key,
        smallest_seq: props.smallest_seq,
        largest_seq: props.largest_seq,
        num_entries: props.num_entries,
        num_deletions: props.num_deletions,
        format,
        end_checksum: None,
        route: 0,
        live_bytes: 0,
        distinct_sketch: props.distinct_sketch,
    })
}

/// Writes a memtable (or any sorted source) as level-0 tables. Tombstones are kept.
pub fn flush(
    ctx: &JobContext<'_>,
    input: &mut dyn InternalIterator,
) -> Result<(Vec<FileMeta>, JobStats)> {
    let mut stats = JobStats::default();
    let outputs = write_tables(
        ctx,
        vec![input],
        Outputs {
            target_file_size: u64::MAX,
            may_drop_tombstone: &mut |_| false,
            partition: &mut Partition::none(),
            route_of: &|_| 0,
            filter: None,
            cancel: None,
            key_hashes: None,
        },
        false,
        &mut stats,
    )?;
    Ok((outputs, stats))
}

/// The iterators a merge reads its inputs through: each level-0 table on its own, and each
/// level >= 1 as sorted runs of disjoint tables (first fit), every run concatenated and its
/// tables opened one at a time as the merge reaches them. A merge then holds one open table per
/// run, not one per input: a full compaction of thousands of small tables stays within
/// `max_open_tables` (the table cache's bound) plus its runs. A hash split opens every input at
/// once, on two threads: HTables of one container all span the key space (each is a run of its
/// own), and each is read whole and sorted in memory anyway.
pub(super) fn input_iterators(
    ctx: &JobContext<'_>,
    spec: &MergeSpec,
    stats: &mut JobStats,
) -> Result<Vec<Box<dyn InternalIterator>>> {
    let tables = Arc::clone(ctx.tables);
    let open: iter::OpenTable =
        Arc::new(move |f: &FileMeta| -> Result<Box<dyn InternalIterator>> {
            tables.get(f)?.iter()
        });
    let mut children: Vec<Box<dyn InternalIterator>> = Vec::new();
    if let OutputPlan::ByHash { .. } = spec.output {
        // Every input of a hash split is read whole and sorted (an HTable keeps no order), so
        // they are all opened now, on two threads (`parallel.rs`).
        let files: Vec<&FileRef> = spec.inputs.iter().flat_map(|(_, f)| f).collect();
        stats.bytes_read += files.iter().map(|f| f.file_size).sum::<u64>();
        let tables = ctx.tables;
        return try_map_on_two_threads(files, |f| tables.get(f).and_then(|t| t.iter()));
    }
    for (level, files) in &spec.inputs {
        stats.bytes_read += files.iter().map(|f| f.file_size).sum::<u64>();
        if *level == 0 {
            for f in files {
                children.push(ctx.tables.get(f)?.iter()?);
            }
            continue;
        }
        let mut sorted = files.clone();
        sorted.sort_by(|a, b| ctx.icmp.compare(&a.smallest, &b.smallest));
        for run in crate::layout::disjoint_runs(ctx.icmp, &sorted) {
            let metas: Arc<[Arc<FileMeta>]> = run.iter().map(|f| Arc::clone(f.meta())).collect();
            children.push(Box::new(ConcatIterator::new(
                ctx.icmp.clone(),
                metas,
                Arc::clone(&open),
            )));
        }
    }
    Ok(children)
}

/// The iterators one merge pass reads.
type Children = Vec<Box<dyn InternalIterator>>;

/// The inputs of a hash split cut by `route` (the output container of each user key), one
/// group of iterators per route in ascending route order, when every input is a table that
/// can cut itself (HTables: see [`crate::table::TableReader::iter_by_route`]); `None` when one
/// cannot (level 0's sorted tables), and the split is written in one pass.
fn inputs_by_route(
    ctx: &JobContext<'_>,
    spec: &MergeSpec,
    route: &(dyn Fn(&[u8]) -> u64 + Sync),
    stats: &mut JobStats,
) -> Result<Option<Vec<Children>>> {
    let files: Vec<&FileRef> = spec.inputs.iter().flat_map(|(_, f)| f).collect();
    let tables = files
        .iter()
        .map(|f| ctx.tables.get(f))
        .collect::<Result<Vec<_>>>()?;
    // Checked first, so that no table is read for nothing: only HTables cut themselves.
    if tables.iter().any(|t| t.format() != TableFormat::HTable) {
        return Ok(None);
    }
    // Read and sorted on two threads (`parallel.rs`), as a one-pass split's inputs are.
    let parts = try_map_on_two_threads(tables, |t| t.iter_by_route(route).transpose())?;
    let mut groups: std::collections::BTreeMap<u64, Children> = std::collections::BTreeMap::new();
    for part in parts {
        // Not reached (every input is an HTable); the one-pass merge would serve it.
        let Some(part) = part else { return Ok(None) };
        for (r, it) in part {
            groups.entry(r).or_default().push(it);
        }
    }
    stats.bytes_read += files.iter().map(|f| f.file_size).sum::<u64>();
    Ok(Some(groups.into_values().collect()))
}

/// Executes a merge: reads every input table, writes the survivors to the output level, and
/// returns the edit that swaps inputs for outputs. With [`OutputPlan::ByGuards`] the outputs are cut at the
/// output level's guards, and new guards (chosen from the written keys, or adopted from the next
/// level down) are committed in the same edit (at the output level and every deeper level that
/// lacks them).
pub fn merge(
    ctx: &JobContext<'_>,
    version: &Version,
    spec: &MergeSpec,
) -> Result<(VersionEdit, JobStats)> {
    if let OutputPlan::Trees { .. } = spec.output {
        return super::tree_job::merge(ctx, version, spec);
    }
    let mut stats = JobStats::default();
    let out = spec.output_level;
    let inputs: HashSet<u64> = spec.all_inputs().map(|f| f.number).collect();
    let seed = version.hash_seed();
    let by_route = |user_key: &[u8]| crate::layout::trie::route_of_key(seed, user_key, out);
    // A hash split of HTables is written one route (output container) at a time, so that it
    // holds one route's output tables in memory, not all eight; anything else in one pass.
    let routed = match spec.output {
        OutputPlan::ByHash { .. } => inputs_by_route(ctx, spec, &by_route, &mut stats)?,
        _ => None,
    };
    let mut passes: Vec<MergingIterator> = match routed {
        Some(groups) => groups
            .into_iter()
            .map(|g| MergingIterator::new(ctx.icmp.clone(), g))
            .collect(),
        None => vec![MergingIterator::new(
            ctx.icmp.clone(),
            input_iterators(ctx, spec, &mut stats)?,
        )],
    };
    let by_range = |_: &[u8]| 0;
    let route_of: Router<'_> = match spec.output {
        OutputPlan::ByHash { .. } => &by_route,
        OutputPlan::BySize { .. } | OutputPlan::ByGuards { .. } | OutputPlan::Trees { .. } => {
            &by_range
        }
    };
    // Outputs in the trie's last level (its deepest so far, or a new one below it) get their
    // containers' BloomClusters, built from the hashes of the keys each output holds.
    let mut key_hashes = (matches!(spec.output, OutputPlan::ByHash { .. })
        && out >= crate::layout::trie::deepest_level(version))
    .then(|| KeyHashes::new(seed));
    let (below, mut partition) = match spec.output {
        OutputPlan::BySize { .. } | OutputPlan::Trees { .. } => {
            (out + 1..version.num_levels(), Partition::none())
        }
        // The outputs are piled on the tables already in their containers, which may hold
        // older versions of their keys: the output level counts as "below" too.
        OutputPlan::ByHash { .. } => (out..version.num_levels(), Partition::none()),
        // The outputs are added beside the fragments already in the output level, which may
        // hold older versions of their keys: it counts as "below" too.
        OutputPlan::ByGuards {
            new_guard_bits,
            target_file_size,
        } => (
            out..version.num_levels(),
            Partition {
                committed: version.guards(out),
                next: 0,
                adoptable: adoptable_guards(version, out),
                next_adoptable: 0,
                // A sixteenth of a table: 4 MiB with the default 64 MiB tables (a quarter,
                // tried at 50M keys, left level 1 16-21 guards against 24-27; docs/flsm.md).
                adopt_after: target_file_size / 16,
                since_cut: 0,
                bits: Some(new_guard_bits),
                may_commit: Box::new(|key: &[u8]| guard_fits(version, out, key, &inputs)),
                new_guards: Vec::new(),
            },
        ),
    };
    let mut may_drop_tombstone = |user_key: &[u8]| {
        below.clone().all(|level| {
            version
                .tables_for_key(level, user_key)
                .iter()
                .all(|f| inputs.contains(&f.number))
        })
    };
    let outputs = write_tables(
        ctx,
        passes
            .iter_mut()
            .map(|p| p as &mut dyn InternalIterator)
            .collect(),
        Outputs {
            target_file_size: spec.output.target_file_size(),
            may_drop_tombstone: &mut may_drop_tombstone,
            partition: &mut partition,
            route_of,
            filter: ctx.compaction_filter.map(|f| (f, out)),
            cancel: ctx.cancel,
            key_hashes: key_hashes.as_mut(),
        },
        matches!(spec.output, OutputPlan::ByHash { .. }),
        &mut stats,
    )?;
    if let Some(hashes) = key_hashes {
        super::clusters::write(ctx, version, spec, &outputs, hashes, &mut stats)?;
    }
    let mut edit = VersionEdit::default();
    for (level, files) in &spec.inputs {
        for f in files {
            edit.deleted_files.push((*level as u32, f.number));
        }
    }
    for key in &partition.new_guards {
        for level in out..version.num_levels() {
            if !version.has_guard(level, key) {
                edit.added_guards.push((level as u32, key.clone()));
            }
        }
    }
    for f in outputs {
        edit.new_files.push((out as u32, f));
    }
    Ok((edit, stats))
}

/// The guards of `level + 1` that `level` lacks, in user-key order (none below the last level).
fn adoptable_guards(version: &Version, level: usize) -> Vec<Vec<u8>> {
    if level + 1 >= version.num_levels() {
        return Vec::new();
    }
    version
        .guards(level + 1)
        .iter()
        .filter(|g| !version.has_guard(level, g))
        .cloned()
        .collect()
}

/// True when `key` can become a guard at `level` and every deeper level lacking it: no table
/// there except the compaction's inputs holds keys on both sides of it.
pub fn guard_fits(version: &Version, level: usize, key: &[u8], inputs: &HashSet<u64>) -> bool {
    let ucmp = version.icmp().user();
    (level..version.num_levels()).all(|l| {
        version
            .files(l)
            .iter()
            .all(|f| inputs.contains(&f.number) || !guards::spans(ucmp.as_ref(), f, key))
    })
}

/// The edit for a metadata-only move of `file` from `from_level` to `to_level`.
pub fn move_edit(file: &FileMeta, from_level: usize, to_level: usize) -> VersionEdit {
    let mut edit = VersionEdit::default();
    edit.deleted_files.push((from_level as u32, file.number));
    edit.new_files
        .push((to_level as u32, FileMeta::clone(file)));
    edit
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparator::default_comparator;

    fn partition<'a>(
        committed: &'a [Vec<u8>],
        adoptable: &[&str],
        bits: Option<u32>,
        may_commit: MayCommit<'a>,
    ) -> Partition<'a> {
        Partition {
            committed,
            next: 0,
            adoptable: adoptable.iter().map(|k| k.as_bytes().to_vec()).collect(),
            next_adoptable: 0,
            adopt_after: 0,
            since_cut: 0,
            bits,
            may_commit,
            new_guards: Vec::new(),
        }
    }

    /// Runs `keys` through `p`, each followed by `bytes` written; returns where it cut.
    fn cuts(p: &mut Partition<'_>, keys: &[(&str, usize)]) -> Vec<bool> {
        let icmp = InternalKeyComparator::new(default_comparator());
        keys.iter()
            .map(|(key, bytes)| {
                let cut = p.starts_guard(&icmp, key.as_bytes());
                p.wrote(*bytes);
                cut
            })
            .collect()
    }

    #[test]
    fn outputs_adopt_the_last_next_level_guard_they_pass_where_it_fits() {
        let committed = [b"m".to_vec()];
        let fits = Box::new(|k: &[u8]| k != b"x");
        let mut p = partition(&committed, &["c", "d", "l", "r", "x"], None, fits);
        let keys = ["a", "e", "f", "n", "r", "s", "z"].map(|k| (k, 10));
        // "e" passes c and d (d adopted); "n" passes l and the committed m (l would start an
        // empty guard); "r" is adopted at a written key; "x" may not be committed (a table
        // that stays spans it).
        assert_eq!(
            cuts(&mut p, &keys),
            [false, true, false, true, true, false, false]
        );
        assert_eq!(p.new_guards, [b"d".to_vec(), b"r".to_vec()]);
    }

    #[test]
    fn a_guard_is_adopted_only_after_enough_bytes_since_the_last_guard_cut() {
        let committed = [b"m".to_vec()];
        let mut p = partition(&committed, &["c", "h", "p", "t"], None, Box::new(|_| true));
        p.adopt_after = 100;
        let keys = [
            ("a", 60),
            ("d", 60), // passes c after 60 bytes: not adopted
            ("i", 10), // passes h after 120: adopted
            ("n", 90), // the committed m cuts, and the count starts again
            ("q", 10), // passes p after 90: not adopted
            ("u", 10), // passes t after 100: adopted
        ];
        assert_eq!(cuts(&mut p, &keys), [false, false, true, true, false, true]);
        assert_eq!(p.new_guards, [b"h".to_vec(), b"t".to_vec()]);
    }

    #[test]
    fn a_new_hash_guard_wins_over_an_adoption_below_it_and_is_one_with_one_at_it() {
        // Zero bits: every written key is a hash candidate.
        let mut p = partition(&[], &["b", "c"], Some(0), Box::new(|_| true));
        let keys = [("a", 5), ("b", 5), ("d", 5)];
        assert_eq!(cuts(&mut p, &keys), [true, true, true]);
        // "b" is both adopted and a hash candidate; at "d", c would start an empty guard.
        assert_eq!(p.new_guards, [b"a".to_vec(), b"b".to_vec(), b"d".to_vec()]);
    }

    #[test]
    fn survivors_keep_one_entry_per_snapshot_stripe() {
        let icmp = InternalKeyComparator::new(default_comparator());
        // Snapshots at 10 and 20: stripes (..=10], (10..=20], (20..].
        let snaps = [10, 20];
        let mut s = Survivors::new(&icmp, &snaps);
        let v = ValueKind::Value;
        assert!(s.keep(b"a", 25, v, || true)); // newest, latest stripe
        assert!(!s.keep(b"a", 22, v, || true)); // same stripe: shadowed
        assert!(s.keep(b"a", 15, v, || true)); // seen by snapshot 20
        assert!(!s.keep(b"a", 12, v, || true));
        assert!(s.keep(b"a", 10, v, || true)); // seen by snapshot 10
        assert!(!s.keep(b"a", 3, v, || true));
        // A tombstone in the oldest stripe with nothing below is dropped, and hides what follows.
        assert!(!s.keep(b"b", 5, ValueKind::Deletion, || true));
        assert!(!s.keep(b"b", 4, v, || true));
        // ...but kept when older data may exist below.
        assert!(s.keep(b"c", 5, ValueKind::Deletion, || false));
        // A tombstone newer than a snapshot is kept: the snapshot must still see the old value.
        assert!(s.keep(b"d", 15, ValueKind::Deletion, || true));
        assert!(s.keep(b"d", 8, v, || true));
    }

    #[test]
    fn without_snapshots_only_the_newest_survives() {
        let icmp = InternalKeyComparator::new(default_comparator());
        let mut s = Survivors::new(&icmp, &[]);
        assert!(s.keep(b"a", 9, ValueKind::Value, || true));
        assert!(!s.keep(b"a", 8, ValueKind::Value, || true));
        assert!(s.keep(b"b", 7, ValueKind::Value, || true));
    }
}
