//! Read routing shared by the layouts whose levels are sorted runs (leveled and FLSM): a level
//! is split into runs of disjoint tables in key order, and a lookup binary-searches each run.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::comparator::InternalKeyComparator;
use crate::version::{FileRef, Version};

/// Splits tables sorted by smallest key into sorted runs (first fit: each table goes to the
/// first run whose last table ends before it starts), so there are as many runs as tables
/// overlap at the most crowded key.
pub(super) fn first_fit(icmp: &InternalKeyComparator, files: &[FileRef]) -> Vec<Vec<FileRef>> {
    let mut runs: Vec<Vec<FileRef>> = Vec::new();
    for f in files {
        let fits = |run: &Vec<FileRef>| {
            run.last().is_some_and(|last| {
                icmp.user()
                    .compare(last.largest_user_key(), f.smallest_user_key())
                    == Ordering::Less
            })
        };
        match runs.iter_mut().find(|r| fits(r)) {
            Some(run) => run.push(Arc::clone(f)),
            None => runs.push(vec![Arc::clone(f)]),
        }
    }
    runs
}

/// One candidate per sorted run of `level`: the table whose range may hold `user_key`.
pub(super) fn candidates<'v>(
    version: &'v Version,
    level: usize,
    user_key: &[u8],
    target: &[u8],
) -> Vec<&'v FileRef> {
    let icmp = version.icmp();
    let ucmp = icmp.user();
    version
        .runs(level)
        .iter()
        .filter_map(|run| {
            let i = run.partition_point(|f| icmp.compare(&f.largest, target) == Ordering::Less);
            run.get(i)
                .filter(|f| ucmp.compare(user_key, f.smallest_user_key()) != Ordering::Less)
        })
        .collect()
}
