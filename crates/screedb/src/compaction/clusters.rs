//! BloomClusters for the trie's last level (LSM-trie, section 2.4.3; docs/lsm-trie.md).
//!
//! A job whose outputs land in the last level rewrites, copy-on-write, the cluster of every
//! container it adds tables to: the new cluster covers the container's tables after the job (its
//! outputs and the older tables that stay) and is held by the job's highest-numbered output in
//! that container, which is the container's highest-numbered table once the edit is installed.
//! The filters of the outputs come from the hashes of the keys written; those of the tables that
//! stay come from the container's previous cluster, or, for a table it does not cover (a store
//! written before clusters, or after a change of options), from reading the table's keys.
//! Each cluster is synced, and the directory with it, before the edit that names its holder.

use std::collections::HashSet;
use std::sync::Arc;

use super::MergeSpec;
use super::job::{JobContext, JobStats, KeyHashes};
use crate::error::Result;
use crate::filename;
use crate::key;
use crate::manifest::FileMeta;
use crate::table::htable::{Cluster, KeyHash, SlotFilters, write_cluster};
use crate::version::{FileRef, Version};

/// Writes the clusters of the last-level containers `outputs` (the job's new tables, all at
/// `spec.output_level`) are added to.
pub(super) fn write(
    ctx: &JobContext<'_>,
    version: &Version,
    spec: &MergeSpec,
    outputs: &[FileMeta],
    mut hashes: KeyHashes,
    stats: &mut JobStats,
) -> Result<()> {
    let opts = &ctx.table_options.htable;
    let (num_slots, bits_per_key) = (opts.num_buckets, opts.filter_bits_per_key);
    let inputs: HashSet<u64> = spec.all_inputs().map(|f| f.number).collect();
    let mut routes: Vec<u64> = outputs.iter().map(|f| f.route).collect();
    routes.sort_unstable();
    routes.dedup();
    let containers = version.runs(spec.output_level);
    for route in routes {
        let container: &[FileRef] = containers
            .iter()
            .find(|c| c[0].route == route)
            .map_or(&[], Vec::as_slice);
        let staying: Vec<&FileRef> = container
            .iter()
            .filter(|f| !inputs.contains(&f.number))
            .collect();
        let mut filters: Vec<SlotFilters> = Vec::new();
        let mut holder = 0;
        for f in outputs.iter().filter(|f| f.route == route) {
            let keys = hashes.by_table.remove(&f.number).unwrap_or_default();
            filters.push(SlotFilters::build(f.number, &keys, num_slots, bits_per_key));
            holder = holder.max(f.number);
        }
        let previous = match container.iter().map(|f| f.number).max() {
            Some(old_holder) if !staying.is_empty() => {
                previous_filters(ctx, old_holder, num_slots)?
            }
            _ => Vec::new(),
        };
        for f in staying {
            match previous.iter().find(|p| p.table == f.number) {
                Some(p) => filters.push(p.clone()),
                None => {
                    let keys = table_key_hashes(ctx, version.hash_seed(), f, stats)?;
                    filters.push(SlotFilters::build(f.number, &keys, num_slots, bits_per_key));
                }
            }
        }
        let path = filename::cluster_file(ctx.dir, holder);
        stats.bytes_written += write_cluster(ctx.fs, &path, num_slots, bits_per_key, &filters)?;
    }
    ctx.fs.sync_dir(ctx.dir)
}

/// The filters of the cluster table `holder` (a container's highest-numbered) holds, if it
/// holds one with `num_slots` slots.
fn previous_filters(ctx: &JobContext<'_>, holder: u64, num_slots: u32) -> Result<Vec<SlotFilters>> {
    let cluster: Option<Arc<Cluster>> = ctx.tables.cluster(holder)?;
    match cluster {
        Some(c) if c.num_slots() == num_slots => c.slot_filters(),
        _ => Ok(Vec::new()),
    }
}

/// The hashes of table `f`'s distinct user keys, read from the table.
fn table_key_hashes(
    ctx: &JobContext<'_>,
    seed: u64,
    f: &FileMeta,
    stats: &mut JobStats,
) -> Result<Vec<KeyHash>> {
    stats.bytes_read += f.file_size;
    let mut it = ctx.tables.get(f)?.iter()?;
    let mut out = Vec::new();
    let mut last: Vec<u8> = Vec::new();
    it.seek_to_first();
    while it.valid() {
        let user_key = key::user_key(it.key());
        if out.is_empty() || user_key != last.as_slice() {
            out.push(KeyHash::of(seed, user_key));
            last.clear();
            last.extend_from_slice(user_key);
        }
        it.next();
    }
    it.status()?;
    Ok(out)
}
