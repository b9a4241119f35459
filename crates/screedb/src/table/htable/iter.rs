//! The sorted view of an HTable: every entry, read bucket by bucket and sorted in memory (as
//! RocksDB's cuckoo-table reader does), for compaction, check, dump and repair.

use std::fmt;
use std::sync::Arc;

use crate::comparator::{InternalKeyComparator, default_comparator};
use crate::error::Result;
use crate::iter::{VecIterator, forward_internal_iterator};

use super::reader::HTable;

/// Every entry of one HTable in internal-key order (user key bytewise ascending, then newest
/// first): forward, backward and seek over a sorted vector.
pub struct HTableIterator {
    /// Keeps the table open while the iterator lives.
    table: Arc<HTable>,
    inner: VecIterator,
}

impl fmt::Debug for HTableIterator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HTableIterator")
            .field("table", &self.table.path())
            .finish()
    }
}

forward_internal_iterator!(HTableIterator, inner);

/// Buckets read at once by a scan (256 KiB of 4 KiB buckets).
const SCAN_BUCKETS: u32 = 64;

impl HTable {
    /// Reads every bucket and overflow group (checksums verified as `verify_checksums` says;
    /// the block cache is neither read nor filled) and returns their entries sorted by internal
    /// key. Holds the whole table in memory (a table is 32 MiB by default).
    pub fn sorted_iter(self: &Arc<Self>) -> Result<HTableIterator> {
        let mut all: Vec<(Vec<u8>, Vec<u8>)> =
            Vec::with_capacity(self.properties().num_entries.min(1 << 24) as usize);
        let verify = self.verify_checksums();
        let mut push = |user_key: &[u8], trailer: u64, value: &[u8]| {
            let mut k = Vec::with_capacity(user_key.len() + 8);
            k.extend_from_slice(user_key);
            k.extend_from_slice(&trailer.to_le_bytes());
            all.push((k, value.to_vec()));
        };
        // Whole runs of buckets straight from the file: a scan does not fill the block cache.
        let b = self.footer().bucket_bytes as usize;
        let n = self.num_buckets();
        for first in (0..n).step_by(SCAN_BUCKETS as usize) {
            let count = (n - first).min(SCAN_BUCKETS);
            let run = self
                .raw_file()
                .read_vec(self.bucket_offset(first), count as usize * b)?;
            for (id, buf) in (first..).zip(run.chunks(b)) {
                let (_, entries) = self.open_bucket(id, buf, verify)?;
                for e in entries {
                    push(e.user_key, e.trailer, e.value);
                }
            }
        }
        for rec in self.overflow_records() {
            let data = self.read_overflow(rec, verify)?;
            for e in self.overflow_entries(rec, &data)? {
                push(e.user_key, e.trailer, e.value);
            }
        }
        let icmp = InternalKeyComparator::new(default_comparator());
        all.sort_by(|a, b| icmp.compare(&a.0, &b.0));
        Ok(HTableIterator {
            table: Arc::clone(self),
            inner: VecIterator::new(all, icmp),
        })
    }
}
