//! Placement of groups into buckets: home bucket, the paper's paired migration, overflow.
//!
//! A pure function over group sizes and ranks, so it is tested without files.
//!
//! 1. A group larger than `max_group` bytes goes to the overflow area.
//! 2. Every other group is loaded onto its home bucket.
//! 3. While the most loaded bucket not yet balanced is over `capacity`, it is balanced: it sorts
//!    the groups it holds by their rank in it ([`rank_at`]) and keeps the longest prefix that
//!    fits; the rank of the first group left out is the HashMark, and every group of rank >=
//!    mark leaves (a kept group whose rank equals the mark leaves too, so a lookup decides by
//!    rank alone and never reads two buckets). All leaving groups go to one destination among
//!    the buckets not yet balanced: the fullest that takes them all (best fit, which keeps the
//!    large holes for later sources), else the least loaded, which may go over capacity and
//!    then passes groups on when its own turn comes (a chain; records are in memory, so a chain
//!    costs no read). If no bucket under capacity is left, the groups go to the overflow area.
//! 4. Every balanced source gets a migration record `(bucket, dst, mark)`. A balanced bucket
//!    never receives again, so following records from any bucket ends within `num_buckets`
//!    hops.

use std::collections::BTreeSet;

use super::format::MigrationRecord;

/// A group to place: all versions of one user key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Group {
    /// Home bucket.
    pub bucket: u32,
    /// Migration rank of the user key.
    pub rank: u32,
    /// Encoded bytes of its entries.
    pub bytes: u64,
}

/// Where a group is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    /// In this bucket (its home or its home's migration destination).
    Bucket(u32),
    /// In the overflow area.
    Overflow,
}

/// The placement of every group (same order as the input) and the migration records, sorted by
/// source bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Plan {
    pub place: Vec<Place>,
    pub records: Vec<MigrationRecord>,
}

/// Places `groups` into `num_buckets` buckets holding `capacity` bytes each.
pub(super) fn plan(num_buckets: u32, capacity: u64, max_group: u64, groups: &[Group]) -> Plan {
    let n = num_buckets as usize;
    let mut place = vec![Place::Overflow; groups.len()];
    let mut load = vec![0u64; n];
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, g) in groups.iter().enumerate() {
        let b = g.bucket as usize;
        if g.bytes <= max_group
            && let (Some(l), Some(m)) = (load.get_mut(b), members.get_mut(b))
        {
            *l += g.bytes;
            m.push(i);
            place[i] = Place::Bucket(g.bucket);
        }
    }
    // Buckets not yet balanced, by load; a balanced source never receives again.
    let mut live: BTreeSet<(u64, u32)> = (0..num_buckets).map(|b| (load[b as usize], b)).collect();
    let mut records = Vec::new();
    while let Some(&(l, src)) = live.last()
        && l > capacity
    {
        live.remove(&(l, src));
        let rank = |i: usize| rank_at(groups[i].rank, src);
        let mut mine = std::mem::take(&mut members[src as usize]);
        mine.sort_by_key(|&i| (rank(i), i));
        let mut kept = 0usize;
        let mut used = 0u64;
        for &i in &mine {
            if used + groups[i].bytes > capacity {
                break;
            }
            used += groups[i].bytes;
            kept += 1;
        }
        let Some(&first_out) = mine.get(kept) else {
            members[src as usize] = mine;
            continue;
        };
        let mark = rank(first_out);
        while kept > 0 && rank(mine[kept - 1]) == mark {
            kept -= 1;
        }
        let leaving = mine.split_off(kept);
        load[src as usize] = mine.iter().map(|&i| groups[i].bytes).sum();
        members[src as usize] = mine;
        let bytes: u64 = leaving.iter().map(|&i| groups[i].bytes).sum();
        // Best fit: the fullest bucket that takes every leaving group, which keeps the large
        // holes for later sources; else the emptiest, which then passes some on in its turn.
        let fit = capacity
            .checked_sub(bytes)
            .and_then(|room| live.range(..=(room, u32::MAX)).next_back().copied());
        let dst = fit.or_else(|| live.first().copied().filter(|&(dl, _)| dl < capacity));
        let Some((dl, d)) = dst else {
            for i in leaving {
                place[i] = Place::Overflow;
            }
            continue;
        };
        live.remove(&(dl, d));
        for &i in &leaving {
            place[i] = Place::Bucket(d);
        }
        load[d as usize] += bytes;
        members[d as usize].extend(leaving);
        live.insert((load[d as usize], d));
        records.push(MigrationRecord {
            bucket: src,
            dst: d,
            mark,
        });
    }
    records.sort();
    Plan { place, records }
}

/// Which buckets of a table have a migration record, and where it is in the records (sorted
/// by bucket): one bit per bucket and, per 64 buckets, the records before them. A lookup reads
/// a word and a count instead of binary-searching the records (a few thousand per 32 MiB table,
/// a cache miss per step once the table is cold).
#[derive(Debug, Clone, Default)]
pub(super) struct MigrationIndex {
    bits: Vec<u64>,
    before: Vec<u32>,
}

impl MigrationIndex {
    /// The index of `records` (sorted by bucket, each below `num_buckets`).
    pub(super) fn new(records: &[MigrationRecord], num_buckets: u32) -> MigrationIndex {
        let words = (num_buckets as usize).div_ceil(64);
        let mut bits = vec![0u64; words];
        for r in records {
            if let Some(w) = bits.get_mut(r.bucket as usize / 64) {
                *w |= 1 << (r.bucket % 64);
            }
        }
        let mut before = Vec::with_capacity(words);
        let mut count = 0u32;
        for w in &bits {
            before.push(count);
            count += w.count_ones();
        }
        MigrationIndex { bits, before }
    }

    /// The position of `bucket`'s record among the records, if it has one.
    pub(super) fn position(&self, bucket: u32) -> Option<usize> {
        let w = bucket as usize / 64;
        let word = *self.bits.get(w)?;
        let bit = 1u64 << (bucket % 64);
        if word & bit == 0 {
            return None;
        }
        Some(*self.before.get(w)? as usize + (word & (bit - 1)).count_ones() as usize)
    }

    /// Bytes held in memory.
    pub(super) fn bytes(&self) -> usize {
        8 * self.bits.len() + 4 * self.before.len()
    }
}

/// The rank a group has in bucket `bucket`: its rank rotated left by `bucket % 32` bits, so
/// that a group which moved for its high rank in one bucket is not always the first to move
/// again from the next (the paper's per-bucket rotation).
pub(super) fn rank_at(rank: u32, bucket: u32) -> u32 {
    rank.rotate_left(bucket % 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(bucket: u32, rank: u32, bytes: u64) -> Group {
        Group {
            bucket,
            rank,
            bytes,
        }
    }

    #[test]
    fn overloaded_bucket_moves_its_high_ranks_to_the_best_fit() {
        // Bucket 0 holds 150 bytes in 100; bucket 1 (half full) takes the 50 leaving exactly.
        let groups = [g(0, 5, 50), g(0, 1, 50), g(0, 9, 50), g(1, 3, 50)];
        let p = plan(3, 100, 60, &groups);
        assert_eq!(
            p.place,
            vec![
                Place::Bucket(0),
                Place::Bucket(0),
                Place::Bucket(1),
                Place::Bucket(1)
            ]
        );
        assert_eq!(
            p.records,
            vec![MigrationRecord {
                bucket: 0,
                dst: 1,
                mark: 9
            }]
        );
    }

    #[test]
    fn a_destination_pushed_over_capacity_passes_groups_on() {
        // 90 bytes leave bucket 0 and no bucket has 90 free: the emptiest (1) takes them and,
        // in its turn, keeps them (rank 2 -> 4 in bucket 1) and sends its own group (5 -> 10)
        // to bucket 2.
        let groups = [g(0, 1, 90), g(0, 2, 90), g(1, 5, 50), g(2, 7, 50)];
        let p = plan(3, 100, 100, &groups);
        assert_eq!(
            p.place,
            vec![
                Place::Bucket(0),
                Place::Bucket(1),
                Place::Bucket(2),
                Place::Bucket(2)
            ]
        );
        let r = |bucket, dst, mark| MigrationRecord { bucket, dst, mark };
        assert_eq!(p.records, vec![r(0, 1, 2), r(1, 2, 10)]);
        assert_eq!(rank_at(0x8000_0001, 1), 3);
    }

    #[test]
    fn large_groups_and_unplaceable_ones_overflow() {
        // Both buckets overloaded: nothing can receive, so the leavers overflow, no record.
        let groups = [
            g(0, 1, 70),
            g(0, 2, 70),
            g(1, 1, 70),
            g(1, 2, 70),
            g(1, 3, 500),
        ];
        let p = plan(2, 100, 100, &groups);
        assert_eq!(p.place[4], Place::Overflow);
        assert_eq!(p.place[0], Place::Bucket(0));
        assert_eq!(p.place[2], Place::Bucket(1));
        assert_eq!(p.records.len(), 0, "{p:?}");
        assert_eq!(p.place.iter().filter(|&&x| x == Place::Overflow).count(), 3);
    }

    #[test]
    fn the_index_finds_each_record_and_only_those() {
        let r = |bucket| MigrationRecord {
            bucket,
            dst: 0,
            mark: 0,
        };
        let records: Vec<MigrationRecord> = [1, 63, 64, 65, 200, 511].into_iter().map(r).collect();
        let index = MigrationIndex::new(&records, 512);
        for b in 0..600 {
            let want = records.iter().position(|x| x.bucket == b);
            assert_eq!(index.position(b), want, "bucket {b}");
        }
        assert_eq!(MigrationIndex::new(&[], 5).position(3), None);
    }

    #[test]
    fn equal_ranks_at_the_mark_all_leave() {
        let groups = [g(0, 4, 60), g(0, 4, 60), g(0, 1, 30)];
        let p = plan(2, 130, 100, &groups);
        // Keeping rank 1 (30) + one rank-4 group (60) would fit, but both rank-4 groups leave.
        assert_eq!(
            p.place,
            vec![Place::Bucket(1), Place::Bucket(1), Place::Bucket(0)]
        );
        assert_eq!(
            p.records,
            vec![MigrationRecord {
                bucket: 0,
                dst: 1,
                mark: 4
            }]
        );
    }
}
