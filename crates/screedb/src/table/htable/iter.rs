//! The sorted view of an HTable: every entry, read bucket by bucket and sorted in memory (as
//! RocksDB's cuckoo-table reader does), for compaction, check, dump and repair.
//!
//! The entries are copied into one arena (internal key, then value) and sorted through a small
//! index: a radix sort by eight bytes of each key (those after the prefix every key of the table
//! shares, so `user0000001234` keys sort by their digits), then a comparison sort of each run of
//! equal eight bytes by whole keys. A split job sorts every input table this way; the sort was a
//! fifth of its CPU when each entry was two `Vec`s ordered by the comparator.

use std::cmp::{Ordering, Reverse};
use std::fmt;
use std::sync::Arc;

use crate::comparator::{InternalKeyComparator, bytewise_prefix, default_comparator};
use crate::error::Result;
use crate::iter::InternalIterator;
use crate::key::{self, TRAILER_LEN};

use super::reader::HTable;

/// One entry of the view: its internal key is `arena[at..at + klen]` (user key, then the
/// 8-byte trailer) and its value the `vlen` bytes after it.
#[derive(Debug, Clone, Copy)]
struct Slot {
    /// The eight bytes of the user key that follow the prefix all the table's keys share
    /// (`bytewise_prefix`): ordered as the keys are.
    prefix: u64,
    at: usize,
    klen: u32,
    vlen: u32,
}

/// Every entry of one HTable in internal-key order (user key bytewise ascending, then newest
/// first): forward, backward and seek over a sorted index into one arena.
pub struct HTableIterator {
    /// Keeps the table open while the iterator lives.
    table: Arc<HTable>,
    /// The entries' bytes, shared by the views of one table's routes.
    arena: Arc<Vec<u8>>,
    slots: Vec<Slot>,
    pos: Option<usize>,
    icmp: InternalKeyComparator,
}

impl fmt::Debug for HTableIterator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HTableIterator")
            .field("table", &self.table.path())
            .field("entries", &self.slots.len())
            .finish()
    }
}

/// Buckets read at once by a scan (256 KiB of 4 KiB buckets).
const SCAN_BUCKETS: u32 = 64;

impl HTable {
    /// Reads every bucket and overflow group (checksums verified as `verify_checksums` says;
    /// the block cache is neither read nor filled) and returns their entries sorted by internal
    /// key. Holds the whole table in memory (`target_file_size`, 64 MiB by default).
    pub fn sorted_iter(self: &Arc<Self>) -> Result<HTableIterator> {
        let mut parts = self.sorted_parts(&|_| 0)?;
        Ok(match parts.pop() {
            Some((_, it)) => it,
            None => self.view(Arc::new(Vec::new()), Vec::new()),
        })
    }

    /// [`HTable::sorted_iter`] cut by `route` of each user key: one sorted view per route the
    /// table's keys take, in ascending route order (none for an empty table), sharing one copy
    /// of the entries. A hash split writes its outputs one route at a time from these, so it
    /// holds one route's output tables at a time instead of all of them.
    pub fn sorted_parts(
        self: &Arc<Self>,
        route: &dyn Fn(&[u8]) -> u64,
    ) -> Result<Vec<(u64, HTableIterator)>> {
        let props = self.properties();
        // Reserved from the properties, never past what the file can hold (they are read from
        // it, and an HTable is not compressed).
        let file_size = props.file_size;
        let mut arena = Vec::with_capacity(
            (props.raw_key_bytes.saturating_add(props.raw_value_bytes)).min(file_size) as usize,
        );
        let mut parts: Vec<(u64, Part)> = Vec::new();
        self.for_each_entry(|user_key, trailer, value| {
            let r = route(user_key);
            let i = match parts.iter().position(|(x, _)| *x == r) {
                Some(i) => i,
                None => {
                    parts.push((r, Part::default()));
                    parts.len() - 1
                }
            };
            parts[i].1.push(&mut arena, user_key, trailer, value);
        })?;
        parts.sort_by_key(|(r, _)| *r);
        // Shared as it is (an `Arc<[u8]>` would copy it).
        let arena = Arc::new(arena);
        Ok(parts
            .into_iter()
            .map(|(r, mut part)| {
                part.sort(&arena);
                (r, self.view(Arc::clone(&arena), part.slots))
            })
            .collect())
    }

    /// Calls `f` with every entry (user key, trailer, value) of the buckets, then of the
    /// overflow area: whole runs of buckets straight from the file (a scan does not fill the
    /// block cache), checksums verified as `verify_checksums` says.
    fn for_each_entry(&self, mut f: impl FnMut(&[u8], u64, &[u8])) -> Result<()> {
        let verify = self.verify_checksums();
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
                    f(e.user_key, e.trailer, e.value);
                }
            }
        }
        for rec in self.overflow_records() {
            let data = self.read_overflow(rec, verify)?;
            for e in self.overflow_entries(rec, &data)? {
                f(e.user_key, e.trailer, e.value);
            }
        }
        Ok(())
    }

    fn view(self: &Arc<Self>, arena: Arc<Vec<u8>>, slots: Vec<Slot>) -> HTableIterator {
        HTableIterator {
            table: Arc::clone(self),
            arena,
            slots,
            pos: None,
            icmp: InternalKeyComparator::new(default_comparator()),
        }
    }
}

/// The entries of one route, collected before they are sorted.
#[derive(Default)]
struct Part {
    slots: Vec<Slot>,
    /// The first user key, and the length of the prefix every key so far shares with it.
    first: Option<Vec<u8>>,
    shared: Option<usize>,
}

impl Part {
    /// Copies the entry into `arena` and indexes it.
    fn push(&mut self, arena: &mut Vec<u8>, user_key: &[u8], trailer: u64, value: &[u8]) {
        let f = self.first.get_or_insert_with(|| user_key.to_vec());
        let common = common_prefix_len(f, user_key);
        self.shared = Some(self.shared.map_or(common, |s| s.min(common)));
        self.slots.push(Slot {
            prefix: 0,
            at: arena.len(),
            klen: (user_key.len() + TRAILER_LEN) as u32,
            vlen: value.len() as u32,
        });
        arena.extend_from_slice(user_key);
        arena.extend_from_slice(&trailer.to_le_bytes());
        arena.extend_from_slice(value);
    }

    /// A radix sort by the eight bytes after the shared prefix, then each run of equal
    /// prefixes by whole keys.
    fn sort(&mut self, arena: &[u8]) {
        let shared = self.shared.unwrap_or(0);
        for s in &mut self.slots {
            let user_key = key::user_key(ikey(arena, s));
            s.prefix = bytewise_prefix(user_key.get(shared..).unwrap_or_default());
        }
        radsort::sort_by_key(&mut self.slots, |s| s.prefix);
        let slots = &mut self.slots;
        let mut start = 0;
        while start < slots.len() {
            let prefix = slots[start].prefix;
            let end = start + slots[start..].partition_point(|s| s.prefix == prefix);
            if end - start > 1 {
                slots[start..end].sort_unstable_by(|x, y| order(arena, x, y));
            }
            start = end;
        }
    }
}

/// The number of leading bytes `a` and `b` share.
fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Internal-key order of two slots whose prefixes are equal: user key bytewise ascending, then
/// trailer (sequence) descending.
fn order(arena: &[u8], x: &Slot, y: &Slot) -> Ordering {
    let (x, y) = (ikey(arena, x), ikey(arena, y));
    (key::user_key(x), Reverse(key::trailer(x))).cmp(&(key::user_key(y), Reverse(key::trailer(y))))
}

fn ikey<'a>(arena: &'a [u8], s: &Slot) -> &'a [u8] {
    arena.get(s.at..s.at + s.klen as usize).unwrap_or_default()
}

impl HTableIterator {
    fn slot(&self) -> Option<&Slot> {
        self.pos.and_then(|p| self.slots.get(p))
    }
}

impl InternalIterator for HTableIterator {
    fn valid(&self) -> bool {
        self.pos.is_some()
    }
    fn seek_to_first(&mut self) {
        self.pos = (!self.slots.is_empty()).then_some(0);
    }
    fn seek_to_last(&mut self) {
        self.pos = self.slots.len().checked_sub(1);
    }
    fn seek(&mut self, target: &[u8]) {
        let i = self
            .slots
            .partition_point(|s| self.icmp.compare(ikey(&self.arena, s), target) == Ordering::Less);
        self.pos = (i < self.slots.len()).then_some(i);
    }
    fn next(&mut self) {
        self.pos = self.pos.map(|p| p + 1).filter(|&p| p < self.slots.len());
    }
    fn prev(&mut self) {
        self.pos = self.pos.and_then(|p| p.checked_sub(1));
    }
    fn key(&self) -> &[u8] {
        self.slot().map_or(&[], |s| ikey(&self.arena, s))
    }
    fn value(&self) -> &[u8] {
        self.slot().map_or(&[], |s| {
            let start = s.at + s.klen as usize;
            self.arena
                .get(start..start + s.vlen as usize)
                .unwrap_or_default()
        })
    }
    fn status(&self) -> Result<()> {
        Ok(())
    }
}
