//! The trie layout (LSM-trie, Wu et al., USENIX ATC'15; docs/lsm-trie.md): levels >= 1 form a
//! trie of containers addressed by the key's hash, each holding a pile of HTables.
//!
//! Every user key is hashed once with the database's seeded 128-bit hash (the seed is in the
//! MANIFEST, tag 14); bits `[3 d, 3 d + 3)` pick the child at depth `d`, so the container of a
//! key at level `l >= 1` is its *route*: the first `l` children as one number
//! ([`route_of`]). Level 0 holds flushed HTables (route 0), newest first, as every layout's.
//! A container's tables are ordered by age (sequence ranges), newest first; every table is
//! newer than everything below it on its path, so a lookup walks level 0, then one container
//! per level, and stops at the first visible version.
//!
//! Compaction ([`Trie`]) never reads or rewrites the level below: it takes a container's oldest
//! tables and splits their items by the next 3 hash bits into new tables appended to the piles
//! of the 8 children. The last level is merged in place (shadowed versions and tombstones
//! dropped) when a container holds too many tables. The layout keeps no key order: iterators,
//! ranges and size estimates are [`crate::Error::NotSupported`].

mod strategy;

pub use strategy::Trie;

use std::collections::HashSet;

use crate::LayoutKind;
use crate::error::Result;
use crate::key::SequenceNumber;
use crate::table::htable::{KeyHash, MAX_TRIE_DEPTH, ReadCounters};
use crate::table::{Lookup, Probe, TableCache};
use crate::version::{FileRef, Version};

/// Options of the trie layout, carried by [`crate::Layout::Trie`]. The HTable size is
/// `Options::target_file_size` (32 MiB in the paper; the engine's default 64 MiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrieOptions {
    /// Bytes of one HTable bucket (a power of two from 512 to 65536), the smallest: a table of
    /// larger items doubles it, up to 16 KiB, until a bucket holds 12 of its average keys (a
    /// key whose versions take more than an eighth of a bucket goes to the overflow area).
    /// Default: 4096.
    pub bucket_bytes: usize,
    /// A table is finished once its items fill this percentage of its buckets, and a smaller
    /// one (a flush, a container's last output) gets the buckets its items need at this
    /// percentage. Default: 95, the paper's (its code: 75 "for large values"; here such
    /// tables get larger buckets instead).
    pub fill_percent: u32,
    /// Bloom filter bits per key in each bucket's filter. Default: 16 (the paper's Table 1:
    /// with many tables on a lookup path, 10 bits let the false positives add up).
    pub filter_bits_per_key: u32,
    /// A container of a level above the last is split into its children once it holds this
    /// many tables; that many of its oldest tables are split. Default: 8 (the paper's code:
    /// about 7.2 tables of volume).
    pub split_tables: usize,
    /// A container of the last level holding more than this many tables is merged in place
    /// when its garbage passes `gc_garbage_percent` or the trie has no level left to grow
    /// into; otherwise its oldest tables are split into a new level below. Default: 16.
    pub max_tables_per_container: usize,
    /// A container of the last level is merged in place (garbage collected) once this
    /// percentage of its entries is garbage: versions shadowed by newer ones in the container
    /// and tombstones, estimated from its tables' distinct-key sketches (`crate::sketch`).
    /// Lower keeps less garbage on disk and rewrites more; 100 leaves garbage to the pile
    /// limit alone. Default: 35: a container is merged once its garbage reaches about half its
    /// live keys (at 10M keys, two overwrite passes end at space amplification 1.33 with WA
    /// 5.49 per pass; 50 ends the first pass at 2.80, before anything is due, docs/lsm-trie.md).
    pub gc_garbage_percent: u32,
}

impl Default for TrieOptions {
    fn default() -> Self {
        TrieOptions::DEFAULT
    }
}

impl TrieOptions {
    /// The defaults, as a constant.
    pub const DEFAULT: TrieOptions = TrieOptions {
        bucket_bytes: 4096,
        fill_percent: 95,
        filter_bits_per_key: 16,
        split_tables: 8,
        max_tables_per_container: 16,
        gc_garbage_percent: 35,
    };

    /// Checks that every option is in range; the error names the option.
    pub fn validate(&self) -> Result<()> {
        let check = crate::options::require;
        check(
            self.bucket_bytes.is_power_of_two() && (512..=65536).contains(&self.bucket_bytes),
            "trie.bucket_bytes must be a power of two from 512 to 65536",
        )?;
        check(
            (10..=100).contains(&self.fill_percent),
            "trie.fill_percent must be between 10 and 100",
        )?;
        check(
            self.filter_bits_per_key <= 64,
            "trie.filter_bits_per_key must be at most 64",
        )?;
        check(
            (1..=1024).contains(&self.split_tables),
            "trie.split_tables must be between 1 and 1024",
        )?;
        check(
            (2..=1024).contains(&self.max_tables_per_container),
            "trie.max_tables_per_container must be between 2 and 1024",
        )?;
        check(
            (1..=100).contains(&self.gc_garbage_percent),
            "trie.gc_garbage_percent must be between 1 and 100",
        )
    }
}

/// The most levels a trie database may have: level 0 plus one per trie depth the hash spans.
pub const MAX_TRIE_LEVELS: usize = MAX_TRIE_DEPTH as usize + 1;

/// The container of `hash` at `level`: the children of depths `0..level` as one number, 3 bits
/// each, the first child in the highest bits (0 at level 0).
pub fn route_of(hash: &KeyHash, level: usize) -> u64 {
    (0..level as u32).fold(0, |route, depth| {
        (route << 3) | u64::from(hash.trie_child(depth))
    })
}

/// The container of `user_key` at `level` in a database whose hash seed is `seed`.
pub fn route_of_key(seed: u64, user_key: &[u8], level: usize) -> u64 {
    route_of(&KeyHash::of(seed, user_key), level)
}

/// A fresh hash seed for a new trie database (randomised per process and call, so two
/// databases do not share their bucket placement).
pub fn new_hash_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish()
}

/// The tables of one level >= 1 (sorted by smallest key) as containers: the tables of each
/// route, newest first, containers in route order. These are the level's "runs".
pub(crate) fn containers(files: &[FileRef]) -> Vec<Vec<FileRef>> {
    let mut by_route: Vec<FileRef> = files.to_vec();
    by_route.sort_by(|a, b| {
        a.route
            .cmp(&b.route)
            .then(b.largest_seq.cmp(&a.largest_seq))
            .then(b.number.cmp(&a.number))
    });
    let mut out: Vec<Vec<FileRef>> = Vec::new();
    for f in by_route {
        match out.last_mut() {
            Some(c) if c[0].route == f.route => c.push(f),
            _ => out.push(vec![f]),
        }
    }
    out
}

/// The tables whose BloomCluster (`NNNNNN.bfc`) is the one gets read: the highest-numbered table
/// of each container of a level >= 1 (empty for the other layouts, which write no clusters).
/// A cluster whose table is no longer its container's highest has been superseded by a newer
/// one (a job adds its outputs, numbered above every older table, beside the tables that stay)
/// or belongs to a container no job writes clusters for any more: no get reads it again.
pub(crate) fn cluster_holders(version: &Version) -> HashSet<u64> {
    if version.layout() != LayoutKind::Trie {
        return HashSet::new();
    }
    (1..version.num_levels())
        .flat_map(|level| version.runs(level))
        .filter_map(|container| container.iter().map(|f| f.number).max())
        .collect()
}

/// The tables `before` named as cluster holders that `after` keeps but no longer names: their
/// clusters were superseded by the edit between the two versions.
pub(crate) fn superseded_cluster_holders(before: &Version, after: &Version) -> Vec<u64> {
    let now = cluster_holders(after);
    if now.is_empty() {
        return Vec::new();
    }
    let live: HashSet<u64> = after.all_file_numbers().collect();
    let mut gone: Vec<u64> = cluster_holders(before)
        .into_iter()
        .filter(|n| !now.contains(n) && live.contains(n))
        .collect();
    gone.sort_unstable();
    gone
}

/// The trie's last level so far: the deepest level >= 1 holding a table (1 when none does). Its
/// containers grow piles of up to `max_tables_per_container` tables and hold BloomClusters.
pub(crate) fn deepest_level(version: &Version) -> usize {
    version.deepest_level().unwrap_or(1)
}

/// The newest entry of `user_key` visible at `target` (its internal key for the snapshot) in
/// `level` (>= 1), or `None`: the key's container is probed newest table first. When the
/// container's highest-numbered table holds a BloomCluster (docs/lsm-trie.md; jobs write them
/// in the last level), one page read of it says which of the tables it covers may hold the
/// key: those it rules out are skipped, the others are probed without their own filters; a
/// table it does not cover is probed through its own. `hash` is the key's hash with the
/// database's seed.
pub(crate) fn probe_level(
    version: &Version,
    tables: &TableCache,
    level: usize,
    hash: &KeyHash,
    user_key: &[u8],
    target: &[u8],
) -> Result<Option<(Lookup, SequenceNumber)>> {
    let route = route_of(hash, level);
    let containers = version.runs(level);
    let Ok(i) = containers.binary_search_by(|c| c[0].route.cmp(&route)) else {
        return Ok(None);
    };
    let container = &containers[i];
    let cluster = match container.iter().map(|f| f.number).max() {
        Some(holder) => tables.cluster(holder)?,
        None => None,
    };
    let counters = tables.hashed_reads();
    let maybe = match &cluster {
        Some(c) => {
            ReadCounters::add(&counters.cluster_reads, 1);
            Some(c.may_hold(hash)?)
        }
        None => None,
    };
    let covered = |number: u64| -> Option<bool> {
        let c = cluster.as_ref()?;
        let i = c.tables().iter().position(|&t| t == number)?;
        maybe.as_ref()?.get(i).copied()
    };
    let seed = version.hash_seed();
    // Newest first (`containers`); stop once the best entry found is newer than anything the
    // remaining tables hold.
    let mut best: Option<(Lookup, SequenceNumber)> = None;
    for f in container {
        if best.as_ref().is_some_and(|(_, seq)| *seq >= f.largest_seq) {
            break;
        }
        let use_filter = match covered(f.number) {
            Some(false) => {
                ReadCounters::add(&counters.cluster_rejections, 1);
                continue;
            }
            Some(true) => false,
            None => true,
        };
        let probe = f
            .reader(tables)?
            .probe_hashed(user_key, target, seed, hash, use_filter)?;
        if let Probe::Hit(found, seq) = probe
            && best.as_ref().is_none_or(|(_, s)| seq > *s)
        {
            best = Some((found, seq));
        }
    }
    Ok(best)
}

/// The tables of `level` (>= 1) that may hold `user_key`: its container's, newest first.
pub(crate) fn candidates<'v>(
    version: &'v Version,
    level: usize,
    user_key: &[u8],
) -> Vec<&'v FileRef> {
    let route = route_of_key(version.hash_seed(), user_key, level);
    let containers = version.runs(level);
    match containers.binary_search_by(|c| c[0].route.cmp(&route)) {
        Ok(i) => containers[i].iter().collect(),
        Err(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_extends_its_parents_route_by_three_bits() {
        for i in 0..200u32 {
            let key = i.to_le_bytes();
            let hash = KeyHash::of(7, &key);
            assert_eq!(route_of(&hash, 0), 0);
            for level in 1..MAX_TRIE_LEVELS {
                let route = route_of(&hash, level);
                assert!(route < 8u64.pow(level as u32));
                assert_eq!(route >> 3, route_of(&hash, level - 1));
                assert_eq!(route & 7, u64::from(hash.trie_child(level as u32 - 1)));
            }
        }
    }

    #[test]
    fn options_out_of_range_are_named() {
        let bad = TrieOptions {
            bucket_bytes: 3000,
            ..TrieOptions::default()
        };
        let err = bad.validate().unwrap_err().to_string();
        assert!(err.contains("trie.bucket_bytes"), "{err}");
        TrieOptions::default().validate().unwrap();
    }
}
