//! Trie compaction: split a container's oldest tables into its 8 children; merge a full
//! container of the last level in place.
//!
//! - level 0 -> 1: once level 0 holds `l0_compaction_trigger` tables, all of them are split by
//!   the first 3 hash bits into the level-1 containers;
//! - level `n` -> `n + 1` (`n` above the last level): a container holding `split_tables` tables
//!   gives its `split_tables` oldest, split by the next 3 bits; nothing below is read;
//! - the deepest level holding tables (the *last* level so far): a container whose estimated
//!   garbage reaches `gc_garbage_percent` of its entries is merged in place, which drops
//!   shadowed versions and (nothing being older) tombstones. A container holding more than
//!   `max_tables_per_container` tables with less garbage has its oldest `split_tables` split
//!   into a new level below, which becomes the last (the trie grows a level when the store
//!   outgrows it), or, at level `num_levels - 1`, is merged in place all the same.
//!
//! Containers of one level are independent, so jobs on different containers run in parallel;
//! inputs are registered as busy files.

use crate::compaction::{Choice, CompactionStrategy, MergeSpec, OutputPlan, State};
use crate::options::{Layout, Options};
use crate::version::{FileRef, Version};

use super::TrieOptions;

/// The trie strategy (its options come from `Options::layout`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Trie;

fn options_of(options: &Options) -> &TrieOptions {
    match &options.layout {
        Layout::Trie(trie) => trie,
        Layout::Leveled | Layout::Flsm(_) | Layout::Jungle(_) => &TrieOptions::DEFAULT,
    }
}

fn merge(inputs: Vec<FileRef>, level: usize, output_level: usize, options: &Options) -> Choice {
    Choice::Merge(MergeSpec {
        inputs: vec![(level, inputs)],
        output_level,
        output: OutputPlan::ByHash {
            target_file_size: options.target_file_size,
        },
        seek: false,
    })
}

fn busy(state: &State, files: &[FileRef]) -> bool {
    files.iter().any(|f| state.busy_files.contains(&f.number))
}

/// True when a job on `container` (of `level`) would race one already running on a container
/// of the last level (`last`) it shares tables with: a split into that level while one of its
/// children is merged in place, or a merge in place while its parent splits into it. Each job
/// writes the container's cluster from the tables it saw, so the later install would leave the
/// other's tables outside the cluster (right, but probed through their own filters).
fn races_a_merge_in_place(version: &Version, state: &State, level: usize, route: u64) -> bool {
    let last = super::deepest_level(version);
    if level >= 1 && level + 1 == last {
        version
            .runs(last)
            .iter()
            .any(|child| child[0].route >> 3 == route && busy(state, child))
    } else if level >= 2 && level == last {
        version
            .runs(level - 1)
            .iter()
            .any(|parent| parent[0].route == route >> 3 && busy(state, parent))
    } else {
        false
    }
}

/// The tables a split of `container` (newest first) takes: its `n` oldest, and every other
/// table whose sequence range reaches down into theirs, until each table that stays is newer
/// than everything split.
///
/// A job cuts its share of one container into several tables when it is large: key-disjoint,
/// but with overlapping sequence ranges, and ordered by their largest sequence they interleave
/// with the next job's. The `n` oldest by largest sequence alone could then leave behind a table
/// holding an older version of a key they hold, and the split would put the newer version below
/// it, where a lookup (which stops at the first level that has the key) never looks. What stays
/// is newer than everything split, so a container is newer than all its children
/// (`Version::check_invariants` checks it).
fn split_inputs(container: &[FileRef], n: usize) -> Vec<FileRef> {
    let cut = container.len() - n.min(container.len());
    let mut take = container[cut..].to_vec();
    let mut stay = container[..cut].to_vec();
    loop {
        let newest_taken = take.iter().map(|f| f.largest_seq).max().unwrap_or(0);
        let (overlapping, newer): (Vec<FileRef>, Vec<FileRef>) = stay
            .into_iter()
            .partition(|f| f.smallest_seq <= newest_taken);
        if overlapping.is_empty() {
            return take;
        }
        take.extend(overlapping);
        stay = newer;
    }
}

/// The fraction of `container`'s keys that a merge in place would drop, estimated from its
/// tables' distinct-key sketches: `1 - distinct(union) / sum(distinct(table))`, the share of
/// the tables' keys that another table of the container holds too (all but the newest of
/// those versions are garbage). Versions of one key within one table are not counted: a merge
/// keeps them when a snapshot needs them, and counting them would make the container due again
/// as soon as it was merged. Tombstones are not counted on their own for the same reason (a
/// tombstone over an older version in another table counts as that version). `None` while a
/// table has no sketch (written before sketches) or the container holds no key.
pub(crate) fn garbage_fraction(container: &[FileRef]) -> Option<f64> {
    let mut union = crate::sketch::DistinctSketch::new();
    let mut sum = 0.0;
    for f in container {
        let sketch = f.distinct_sketch.as_deref()?;
        union.union(sketch);
        sum += sketch.estimate();
    }
    if sum < 1.0 {
        return None;
    }
    Some((1.0 - union.estimate() / sum).max(0.0))
}

impl CompactionStrategy for Trie {
    fn name(&self) -> &'static str {
        "trie"
    }

    fn choose(&self, version: &Version, options: &Options, state: &State) -> Choice {
        let trie = options_of(options);
        let max_last = version.num_levels() - 1;
        let last = super::deepest_level(version);
        let level0 = version.files(0);
        if level0.len() >= options.l0_trigger() && !busy(state, level0) {
            return merge(level0.to_vec(), 0, 1, options);
        }
        let collect = |container: &[FileRef]| {
            container.len() >= 2
                && garbage_fraction(container)
                    .is_some_and(|g| g * 100.0 >= f64::from(trie.gc_garbage_percent))
        };
        // The fullest container first, shallow levels before deep ones on a tie; at the last
        // level a container is also due when it holds enough garbage to collect.
        let mut due: Option<(usize, usize, &Vec<FileRef>)> = None;
        for level in 1..=last {
            let limit = if level < last {
                trie.split_tables
            } else {
                trie.max_tables_per_container + 1
            };
            for container in version.runs(level) {
                let over = (container.len() >= limit || level == last && collect(container))
                    && due.is_none_or(|d| container.len() > d.1);
                if over
                    && !busy(state, container)
                    && !races_a_merge_in_place(version, state, level, container[0].route)
                {
                    due = Some((level, container.len(), container));
                }
            }
        }
        let Some((level, _, container)) = due else {
            return Choice::DoNothing;
        };
        if level == max_last || level == last && collect(container) {
            return merge(container.clone(), level, level, options);
        }
        // Above the deepest level the trie may have, a full container of the deepest level so
        // far deepens the trie: its oldest tables are split into a new level below, which then
        // becomes the deepest (and the containers above it split as every upper level's do).
        merge(
            split_inputs(container, trie.split_tables),
            level,
            level + 1,
            options,
        )
    }

    /// Level 0 at its trigger, and above the trie's last level the oldest `split_tables`
    /// tables of each container holding that many (the splits `choose` owes). Level byte
    /// targets, which this layout does not consult, play no part; nor does the last level's
    /// garbage, which a merge in place collects without pushing anything down. Walks the
    /// containers above the last level (8 on level 1, 64 on level 2, ...).
    fn pending_bytes(&self, version: &Version, options: &Options) -> u64 {
        let split = options_of(options).split_tables;
        let mut pending = version.level0_pending_bytes(options);
        for level in 1..super::deepest_level(version) {
            for container in version.runs(level) {
                if container.len() >= split {
                    let oldest = &container[container.len() - split..];
                    pending += oldest.iter().map(|f| f.file_size).sum::<u64>();
                }
            }
        }
        pending
    }

    /// The trie keeps no key order: a manual compaction covers whole levels (`start` and `end`
    /// are not consulted). Every table of `level` is split into the level below, down to the
    /// trie's last level so far, whose containers are merged in place (a manual compaction does
    /// not deepen the trie: a level below would spread the data over eight times as many
    /// containers).
    fn manual(
        &self,
        version: &Version,
        options: &Options,
        level: usize,
        _start: Option<&[u8]>,
        _end: Option<&[u8]>,
    ) -> Option<MergeSpec> {
        let inputs = version.files(level).to_vec();
        if inputs.is_empty() {
            return None;
        }
        let output_level = if level < super::deepest_level(version) {
            level + 1
        } else {
            level.max(1)
        };
        match merge(inputs, level, output_level, options) {
            Choice::Merge(spec) => Some(spec),
            Choice::DoNothing | Choice::Move { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::test_support::{empty_version, file};
    use crate::layout::LayoutKind;
    use crate::manifest::VersionEdit;
    use crate::version::VersionBuilder;

    /// An empty trie version (levels 0-3) with `new_files` added.
    fn trie_version_with(new_files: Vec<(u32, crate::manifest::FileMeta)>) -> Version {
        let base = empty_version(LayoutKind::Trie);
        let mut b = VersionBuilder::new(&base);
        b.apply(&VersionEdit {
            new_files,
            ..VersionEdit::default()
        })
        .unwrap();
        b.build()
    }

    /// Level 2 (of 0-3) holds container 5 with two tables (due for a split into level 3);
    /// level 3 holds its child 41 with three (due for a merge in place) and container 48 with
    /// three.
    fn trie_version() -> Version {
        let routed = |n: u64, route: u64| crate::manifest::FileMeta {
            route,
            ..file(n, "a", "z", 100)
        };
        trie_version_with(vec![
            (2, routed(20, 5)),
            (2, routed(21, 5)),
            (3, routed(1, 41)),
            (3, routed(2, 41)),
            (3, routed(3, 41)),
            (3, routed(4, 48)),
            (3, routed(5, 48)),
            (3, routed(6, 48)),
        ])
    }

    fn options() -> Options {
        Options {
            layout: Layout::Trie(TrieOptions {
                split_tables: 2,
                max_tables_per_container: 2,
                ..TrieOptions::default()
            }),
            num_levels: 4,
            ..Options::default()
        }
    }

    fn chosen_inputs(state: &State) -> Option<Vec<u64>> {
        match Trie.choose(&trie_version(), &options(), state) {
            Choice::Merge(spec) => Some(spec.all_inputs().map(|f| f.number).collect()),
            Choice::DoNothing | Choice::Move { .. } => None,
        }
    }

    /// A level-1 container (the deepest level) of four tables, `(number, smallest seq, largest
    /// seq)`, and level 0 above it newer than all of them.
    fn aged_version(tables: &[(u64, u64, u64)], level0_seq: u64) -> Version {
        let aged = |&(n, smallest_seq, largest_seq): &(u64, u64, u64)| {
            let f = crate::manifest::FileMeta {
                route: 3,
                smallest_seq,
                largest_seq,
                ..file(n, "a", "z", 100)
            };
            (1, f)
        };
        let mut new_files: Vec<_> = tables.iter().map(aged).collect();
        new_files.push((
            0,
            crate::manifest::FileMeta {
                smallest_seq: level0_seq,
                largest_seq: level0_seq,
                ..file(99, "a", "z", 100)
            },
        ));
        trie_version_with(new_files)
    }

    #[test]
    fn pending_bytes_count_the_splits_owed_above_the_last_level_only() {
        // Level 2's container 5 holds two tables (split_tables 2): both are owed to level 3.
        // Level 3 is the last: its full containers are merged in place, nothing goes down.
        let v = trie_version();
        assert_eq!(Trie.pending_bytes(&v, &options()), 200);
        // The leveled estimate sees level 2's 200 bytes far under its target: nothing owed.
        assert_eq!(v.pending_compaction_bytes(&options()), 0);
        // A container below the split limit owes nothing.
        let mut o = options();
        if let Layout::Trie(t) = &mut o.layout {
            t.split_tables = 3;
        }
        assert_eq!(Trie.pending_bytes(&v, &o), 0);
    }

    #[test]
    fn a_split_takes_every_table_whose_sequences_reach_into_the_oldest() {
        // Tables 1 and 2 are the two oldest by largest sequence; table 3 holds sequences from
        // 35, inside theirs (it may hold a key whose older version table 2 holds): it goes too.
        // Table 4 is newer than all three and stays.
        let v = aged_version(&[(1, 1, 30), (2, 20, 40), (3, 35, 80), (4, 81, 90)], 100);
        v.check_invariants().unwrap();
        let Choice::Merge(spec) = Trie.choose(&v, &options(), &State::default()) else {
            panic!("the full container is not split");
        };
        let mut inputs: Vec<u64> = spec.all_inputs().map(|f| f.number).collect();
        inputs.sort_unstable();
        assert_eq!(inputs, [1, 2, 3]);
        assert_eq!(spec.output_level, 2);
    }

    #[test]
    fn a_container_not_older_than_its_parent_breaks_the_invariants() {
        let err = aged_version(&[(1, 1, 30), (2, 31, 60)], 50)
            .check_invariants()
            .unwrap_err();
        assert!(
            err.contains("table 2 of level 1") && err.contains("not older"),
            "{err}"
        );
    }

    /// A level-1 container (level 1 the last of 0-3) of tables `(number, keys)`, oldest first,
    /// each with the sketch of its keys.
    fn sketched_version(tables: &[(u64, std::ops::Range<u64>)]) -> Version {
        let new_files = tables
            .iter()
            .map(|(n, keys)| {
                let mut sketch = crate::sketch::DistinctSketch::new();
                keys.clone()
                    .for_each(|k| sketch.add(xxhash_rust::xxh3::xxh3_64(&k.to_le_bytes())));
                let f = crate::manifest::FileMeta {
                    route: 3,
                    num_entries: keys.end - keys.start,
                    distinct_sketch: Some(std::sync::Arc::new(sketch)),
                    ..file(*n, "a", "z", 100)
                };
                (1, f)
            })
            .collect();
        trie_version_with(new_files)
    }

    fn chosen(v: &Version, gc_garbage_percent: u32) -> Option<(Vec<u64>, usize)> {
        let mut opts = options();
        if let Layout::Trie(t) = &mut opts.layout {
            t.max_tables_per_container = 4;
            t.gc_garbage_percent = gc_garbage_percent;
        }
        match Trie.choose(v, &opts, &State::default()) {
            Choice::Merge(spec) => {
                let mut inputs: Vec<u64> = spec.all_inputs().map(|f| f.number).collect();
                inputs.sort_unstable();
                Some((inputs, spec.output_level))
            }
            Choice::DoNothing | Choice::Move { .. } => None,
        }
    }

    #[test]
    fn garbage_is_the_share_of_keys_another_table_holds_too() {
        let v = sketched_version(&[(1, 0..10_000), (2, 0..10_000), (3, 10_000..20_000)]);
        let g = garbage_fraction(&v.runs(1)[0]).unwrap();
        assert!(
            (0.25..0.42).contains(&g),
            "a third of the keys is garbage: {g}"
        );
        let disjoint = sketched_version(&[(1, 0..10_000), (2, 10_000..20_000)]);
        let g = garbage_fraction(&disjoint.runs(1)[0]).unwrap();
        assert!(g < 0.1, "{g}");
        // A table without a sketch (written before them): no estimate.
        let unsketched = aged_version(&[(1, 1, 30), (2, 31, 40)], 100);
        assert_eq!(garbage_fraction(&unsketched.runs(1)[0]), None);
    }

    #[test]
    fn a_last_level_container_of_garbage_is_merged_in_place_before_it_is_full() {
        // Three overwrites of the same keys: two thirds garbage, in a container under its
        // limit of 4, at level 1 of 0-3 (not the deepest the trie may have).
        let v = sketched_version(&[(1, 0..5000), (2, 0..5000), (3, 0..5000)]);
        assert_eq!(chosen(&v, 50), Some((vec![1, 2, 3], 1)));
        assert_eq!(
            chosen(&v, 70),
            None,
            "under the threshold and the pile limit"
        );
        // Disjoint keys: no garbage; over the pile limit the trie grows a level instead.
        let v = sketched_version(&[(1, 0..10), (2, 10..20), (3, 20..30), (4, 30..40)]);
        assert_eq!(chosen(&v, 50), None);
        let v = sketched_version(&[
            (1, 0..10),
            (2, 10..20),
            (3, 20..30),
            (4, 30..40),
            (5, 40..50),
        ]);
        assert_eq!(chosen(&v, 50), Some((vec![1, 2], 2)));
        // Over the limit and mostly garbage: merged in place.
        let v = sketched_version(&[(1, 0..10), (2, 0..10), (3, 0..10), (4, 0..10), (5, 0..10)]);
        assert_eq!(chosen(&v, 50), Some((vec![1, 2, 3, 4, 5], 1)));
    }

    #[test]
    fn a_split_waits_for_the_merge_in_place_of_its_child() {
        // Container 48 is being merged in place: the split of container 5 may run.
        let mut state = State::default();
        state.busy_files.extend([4, 5, 6]);
        let mut split = chosen_inputs(&state).unwrap();
        split.sort_unstable();
        assert_eq!(split, [1, 2, 3], "the fullest free container first");
        state.busy_files.extend([1, 2, 3]);
        assert_eq!(chosen_inputs(&state), None, "its child 41 is being merged");
        // The other way round: while container 5 splits, its child is not merged in place.
        let mut state = State::default();
        state.busy_files.extend([20, 21, 4, 5, 6]);
        assert_eq!(chosen_inputs(&state), None);
    }
}
