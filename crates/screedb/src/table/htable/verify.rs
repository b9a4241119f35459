//! `HTable::verify`: re-reads every byte of a table and checks it against everything else.

use std::collections::HashSet;

use crate::error::{Error, Result};
use crate::key::ValueKind;

use super::format::{self, Entry};
use super::hash::KeyHash;
use super::reader::HTable;
use super::{HTableProperties, NO_MIGRATION};

/// Totals recomputed from the entries, compared with the stored properties.
#[derive(Default)]
struct Totals {
    p: HTableProperties,
    keys: HashSet<Vec<u8>>,
    smallest: Option<Vec<u8>>,
    largest: Option<Vec<u8>>,
}

impl Totals {
    fn add(&mut self, e: &Entry<'_>, item_bytes: usize) {
        let p = &mut self.p;
        let seq = e.seq();
        p.smallest_seq = if p.num_entries == 0 {
            seq
        } else {
            p.smallest_seq.min(seq)
        };
        p.largest_seq = p.largest_seq.max(seq);
        p.num_entries += 1;
        if e.kind() == Some(ValueKind::Deletion) {
            p.num_deletions += 1;
        }
        p.raw_key_bytes += e.user_key.len() as u64 + 8;
        p.raw_value_bytes += e.value.len() as u64;
        p.item_bytes += item_bytes as u64;
        let mut ikey = e.user_key.to_vec();
        ikey.extend_from_slice(&e.trailer.to_le_bytes());
        let icmp =
            crate::comparator::InternalKeyComparator::new(crate::comparator::default_comparator());
        if self
            .smallest
            .as_ref()
            .is_none_or(|s| icmp.compare(&ikey, s).is_lt())
        {
            self.smallest = Some(ikey.clone());
        }
        if self
            .largest
            .as_ref()
            .is_none_or(|l| icmp.compare(&ikey, l).is_gt())
        {
            self.largest = Some(ikey);
        }
        if !self.keys.contains(e.user_key) {
            self.keys.insert(e.user_key.to_vec());
        }
    }
}

impl HTable {
    /// Re-reads and checks every bucket (checksum, tail, entries, that each entry is where its
    /// hash and the migration records say, and passes its home filter), every overflow group,
    /// and the stored properties against the entries. Errors name the file and the offset of
    /// the damaged bucket, group or block.
    pub fn verify(&self) -> Result<()> {
        let n = self.num_buckets();
        let seed = self.properties().hash_seed;
        let path = self.path();
        let mut t = Totals::default();
        for id in 0..n {
            let offset = self.bucket_offset(id);
            let buf = self
                .raw_file()
                .read_vec(offset, self.footer().bucket_bytes as usize)?;
            let bad =
                |reason: String| Error::corruption(path, offset, format!("bucket {id}: {reason}"));
            let (tail, entries) = self.open_bucket(id, &buf, true)?;
            let rec = self.migration_of(id);
            let expect = rec.map_or((NO_MIGRATION, 0), |m| (m.dst, m.mark));
            if (tail.dst, tail.mark) != expect {
                return Err(bad(format!(
                    "tail migration ({}, {}) differs from the migration block",
                    tail.dst, tail.mark
                )));
            }
            let mut prev: Option<&Entry<'_>> = None;
            for e in &entries {
                let h = KeyHash::of(seed, e.user_key);
                let home = h.bucket(n);
                let here = self.locate(home, h.rank())?;
                if here != id {
                    return Err(bad(format!("an entry belongs in bucket {here}")));
                }
                if !self.filter_passes(home, &h)? {
                    return Err(bad(format!(
                        "an entry is missing from the filter of bucket {home}"
                    )));
                }
                if prev.is_some_and(|p| p.user_key == e.user_key && p.trailer < e.trailer) {
                    return Err(bad("versions of a key are not newest first".into()));
                }
                if home != id {
                    t.p.migrated_entries += 1;
                }
                t.add(e, format::entry_len(e.user_key.len(), e.value.len()));
                prev = Some(e);
            }
        }
        let area = self.footer().overflow;
        let mut expect_at = area.offset;
        for rec in self.overflow_records() {
            if rec.offset != expect_at {
                return Err(Error::corruption(
                    path,
                    rec.offset,
                    format!("overflow group does not start at {expect_at}"),
                ));
            }
            expect_at += u64::from(rec.len);
            let data = self.read_overflow(rec, true)?;
            let entries = self.overflow_entries(rec, &data)?;
            for e in &entries {
                if !self.filter_passes(rec.bucket, &KeyHash::of(seed, e.user_key))? {
                    return Err(Error::corruption(
                        path,
                        rec.offset,
                        "overflow entry is missing from its filter",
                    ));
                }
                t.p.overflow_entries += 1;
                t.add(e, format::entry_len(e.user_key.len(), e.value.len()));
            }
        }
        if expect_at != area.offset + area.size {
            return Err(Error::corruption(
                path,
                expect_at,
                "overflow index does not cover the overflow area",
            ));
        }
        let stored = self.properties();
        let mut got = t.p;
        got.distinct_keys = t.keys.len() as u64;
        got.smallest_key = t.smallest.unwrap_or_default();
        got.largest_key = t.largest.unwrap_or_default();
        got.hash_seed = stored.hash_seed;
        // A table written before sketches has none to check.
        got.sketch = stored.sketch.as_ref().map(|_| {
            let mut sketch = crate::sketch::DistinctSketch::new();
            for k in &t.keys {
                sketch.add(KeyHash::of(stored.hash_seed, k).sketch_bits());
            }
            std::sync::Arc::new(sketch)
        });
        let stored_only = HTableProperties {
            num_buckets: 0,
            bucket_bytes: 0,
            num_migrations: 0,
            overflow_groups: 0,
            overflow_bytes: 0,
            filter_bytes: 0,
            file_size: 0,
            ..stored.clone()
        };
        if got != stored_only {
            return Err(Error::corruption(
                path,
                self.footer().properties.offset,
                format!(
                    "properties differ from the entries: stored {stored_only:?}, found {got:?}"
                ),
            ));
        }
        Ok(())
    }
}
