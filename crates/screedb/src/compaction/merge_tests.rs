//! `job::merge` over real tables (the other compaction tests hand-build versions with no files).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::job::{self, JobContext, JobStats};
use super::test_support::{version, version_of};
use super::{MergeSpec, OutputPlan};
use crate::comparator::{InternalKeyComparator, default_comparator};
use crate::fs::{Fs, MemFs};
use crate::key::{ValueKind, make_internal_key, parse_internal_key};
use crate::layout::LayoutKind;
use crate::manifest::{FileMeta, VersionEdit};
use crate::table::{TableCache, TableFormat, TableOptions, create_writer};
use crate::version::Version;

/// Tables of one format in `/db` on a `MemFs`, and merges run over them.
struct Tables {
    fs: Arc<MemFs>,
    dir: PathBuf,
    icmp: InternalKeyComparator,
    opts: TableOptions,
    format: TableFormat,
    cache: Arc<TableCache>,
}

impl Tables {
    fn new(format: TableFormat, opts: TableOptions) -> Self {
        let fs = Arc::new(MemFs::new());
        let dir = PathBuf::from("/db");
        fs.create_dir_all(&dir).unwrap();
        let icmp = InternalKeyComparator::new(default_comparator());
        let cache = Arc::new(TableCache::new(
            fs.clone(),
            dir.clone(),
            opts.clone(),
            icmp.clone(),
            64,
            None,
        ));
        Tables {
            fs,
            dir,
            icmp,
            opts,
            format,
            cache,
        }
    }

    /// Writes table `number` holding `keys` (ascending) at sequence `number`, 100-byte values
    /// of the byte `number`.
    fn write(&self, number: u64, keys: &[String]) -> FileMeta {
        let path = crate::filename::table_file(&self.dir, number);
        let mut w = create_writer(&*self.fs, &path, self.format, &self.opts, &self.icmp).unwrap();
        for k in keys {
            w.add(
                &make_internal_key(k.as_bytes(), number, ValueKind::Value),
                &[number as u8; 100],
            )
            .unwrap();
        }
        job::finish_table(w, number).unwrap()
    }

    /// Runs `spec` on `v` (no snapshots, no filter); new tables are numbered from 100.
    fn merge(&self, v: &Version, spec: &MergeSpec) -> (VersionEdit, JobStats) {
        let next = AtomicU64::new(100);
        let new_file_number = || next.fetch_add(1, Ordering::Relaxed);
        let ctx = JobContext {
            fs: &*self.fs,
            dir: &self.dir,
            icmp: &self.icmp,
            table_options: &self.opts,
            format: self.format,
            compaction_filter: None,
            tables: &self.cache,
            snapshots: &[],
            new_file_number: &new_file_number,
            cancel: None,
            populate_new_tables: false,
        };
        job::merge(&ctx, v, spec).unwrap()
    }
}

/// A level-0 table of keys `a0`..`z9` merged into an empty, guard-less level 1 above a level 2
/// guarded at `f`, `m` and `t` (FLSM, `OutputPlan::ByGuards`, no hash guards): the outputs take
/// the three guards where they pass them once a sixteenth of a table was written since the last
/// cut, commit them at level 1 only (levels 2 and 3 have them), and no output spans one.
#[test]
fn a_merge_adopts_the_guards_of_the_level_below_at_its_output_level() {
    let t = Tables::new(TableFormat::Sorted, TableOptions::default());
    let keys: Vec<String> = ('a'..='z')
        .flat_map(|c| (0..10).map(move |i| format!("{c}{i}")))
        .collect();
    let guards = [(2, "f"), (2, "m"), (2, "t"), (3, "f"), (3, "m"), (3, "t")];
    let v = version(&guards, vec![(0, t.write(7, &keys))]);
    // Each key and value is 102 bytes plus its 8-byte trailer: a sixteenth of 16,000 bytes
    // (1,000) is written after ten keys, well before each guard.
    let spec = MergeSpec {
        inputs: vec![(0, v.files(0).to_vec())],
        output_level: 1,
        output: OutputPlan::ByGuards {
            target_file_size: 16_000,
            new_guard_bits: 64,
        },
        seek: false,
    };
    let (edit, stats) = t.merge(&v, &spec);
    let mut added: Vec<(u32, String)> = edit
        .added_guards
        .iter()
        .map(|(l, k)| (*l, String::from_utf8_lossy(k).into_owned()))
        .collect();
    added.sort();
    let want: Vec<(u32, String)> = ["f", "m", "t"].iter().map(|g| (1, g.to_string())).collect();
    assert_eq!(added, want);
    assert_eq!(stats.entries_dropped, 0);
    let user = |k: &[u8]| parse_internal_key(k).unwrap().user_key.to_vec();
    for (level, f) in &edit.new_files {
        assert_eq!(*level, 1);
        let (lo, hi) = (user(&f.smallest), user(&f.largest));
        for g in ["f", "m", "t"] {
            assert!(
                !(lo.as_slice() < g.as_bytes() && g.as_bytes() <= hi.as_slice()),
                "table {} spans guard {g}: {:?}..{:?}",
                f.number,
                String::from_utf8_lossy(&lo),
                String::from_utf8_lossy(&hi)
            );
        }
    }
    assert_eq!(
        edit.new_files
            .iter()
            .map(|(_, f)| f.num_entries)
            .sum::<u64>(),
        keys.len() as u64
    );
}

/// Two level-0 HTables (the second overwriting every other key of the first) split into the
/// eight containers of level 1 (`OutputPlan::ByHash`) with tables of about twenty entries, so
/// each container gets several and the job finishes full ones on its helper thread while it
/// writes on: every surviving entry is in one output, in the container of its route, newest
/// version only.
#[test]
fn a_hash_split_puts_every_key_once_in_its_container() {
    let seed = version_of(LayoutKind::Trie, &[], Vec::new()).hash_seed();
    let mut opts = TableOptions::default();
    opts.htable.num_buckets = 5;
    opts.htable.bucket_bytes = 512;
    opts.htable.hash_seed = seed;
    let t = Tables::new(TableFormat::HTable, opts);
    let keys: Vec<String> = (0..1000).map(|i| format!("key{i:05}")).collect();
    let newer: Vec<String> = keys.iter().step_by(2).cloned().collect();
    let v = version_of(
        LayoutKind::Trie,
        &[],
        vec![(0, t.write(7, &keys)), (0, t.write(8, &newer))],
    );
    assert_eq!(v.hash_seed(), seed);
    let spec = MergeSpec {
        inputs: vec![(0, v.files(0).to_vec())],
        output_level: 1,
        output: OutputPlan::ByHash {
            target_file_size: 1 << 20,
        },
        seek: false,
    };
    let (edit, stats) = t.merge(&v, &spec);
    assert_eq!(stats.entries_dropped, newer.len() as u64);
    let mut seen = std::collections::BTreeMap::new();
    let mut per_route = std::collections::BTreeMap::<u64, usize>::new();
    for (level, f) in &edit.new_files {
        assert_eq!(*level, 1);
        *per_route.entry(f.route).or_default() += 1;
        let mut it = t.cache.get(f).unwrap().iter().unwrap();
        it.seek_to_first();
        while it.valid() {
            let k = parse_internal_key(it.key()).unwrap();
            let route = crate::layout::trie::route_of_key(seed, k.user_key, 1);
            assert_eq!(
                route, f.route,
                "table {} holds a key of another container",
                f.number
            );
            let before = seen.insert(k.user_key.to_vec(), k.seq);
            assert!(before.is_none(), "{:?} written twice", k.user_key);
            it.next();
        }
        it.status().unwrap();
    }
    assert_eq!(seen.len(), keys.len());
    for (i, k) in keys.iter().enumerate() {
        let want = if i % 2 == 0 { 8 } else { 7 };
        assert_eq!(seen[k.as_bytes()], want, "{k}");
    }
    assert_eq!(per_route.len(), 8);
    assert!(
        per_route.values().all(|&n| n >= 3),
        "several tables per container: {per_route:?}"
    );
}
