//! Writes an HTable: collects entries in memory (any order), places them at `finish`.
//!
//! Order of the file (see `mod.rs`): buckets 0..n, overflow area, overflow index, filter block,
//! migration block, properties, footer. The file is synced before `finish` returns.

use std::cmp::Reverse;
use std::fmt;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::fs::WritableFile;
use crate::key::{self, TRAILER_LEN, ValueKind};
use crate::table::BlockHandle;
use crate::table::CompressionType;
use crate::table::format::block_trailer;

use super::format::{self, BucketTail, HFooter, OverflowRecord, put_entry, seal_bucket};
use super::hash::{KeyHash, filter_add, prime_at_least, probes_for};
use super::migration::{Group, Place, plan};
use super::{BUCKET_TAIL_LEN, HTableOptions, HTableProperties, NO_MIGRATION};

/// Bytes of buckets (and overflow groups) collected before one append to the file.
const WRITE_CHUNK: usize = 256 << 10;

/// A table's buckets are made large enough to hold this many of its average groups (all
/// versions of one key): from `HTableOptions::bucket_bytes` the size doubles, up to
/// [`MAX_BUCKET_BYTES`], until they do. With fewer per bucket, migration cannot balance the
/// buckets at the fill percentage, and a group above an eighth of a bucket always overflows:
/// with 1,000-byte values in 4 KiB buckets every key was in the overflow area, indexed in
/// memory at 27 bytes per key; in 16 KiB buckets none is, at 2.9 bytes per key (the HTable
/// tests' `balance` measurement).
const GROUPS_PER_BUCKET: u64 = 12;
/// The largest bucket a table is given: a get reads one bucket, so this bounds its read.
/// Items of over 2 KiB go to the overflow area, where a get reads just the item and the
/// index costs at most about 1% of the item in memory.
const MAX_BUCKET_BYTES: usize = 16384;

/// One collected entry; its key and value live in the builder's arena.
#[derive(Debug, Clone, Copy)]
struct Pending {
    hash: KeyHash,
    bucket: u32,
    at: usize,
    klen: u32,
    vlen: u32,
    trailer: u64,
}

impl Pending {
    /// Encoded bytes of the entry.
    fn len(&self) -> u64 {
        format::entry_len(self.klen as usize, self.vlen as usize) as u64
    }
}

/// Builds one HTable file. Entries may be added in any order.
pub struct HTableBuilder {
    opts: HTableOptions,
    file: Box<dyn WritableFile>,
    path: PathBuf,
    arena: Vec<u8>,
    entries: Vec<Pending>,
    item_bytes: u64,
    /// Every entry so far was added after the one before it in internal-key order (as flushes
    /// and compactions add them); else `finish` first sorts them so. From that order it takes
    /// the groups and orders by bucket alone (see [`by_bucket`]).
    in_order: bool,
}

impl fmt::Debug for HTableBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HTableBuilder")
            .field("path", &self.path)
            .field("num_entries", &self.entries.len())
            .field("item_bytes", &self.item_bytes)
            .finish()
    }
}

impl HTableBuilder {
    /// A builder writing to `file` (named `path` in errors). Options are checked by `finish`.
    pub fn new(opts: HTableOptions, file: Box<dyn WritableFile>, path: PathBuf) -> Self {
        HTableBuilder {
            opts,
            file,
            path,
            arena: Vec::new(),
            entries: Vec::new(),
            item_bytes: 0,
            in_order: true,
        }
    }

    /// Adds one entry: internal key (user key + trailer) and value. Any order; several versions
    /// of one user key are all kept. An internal key without a valid trailer is
    /// [`Error::InvalidArgument`].
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        let parsed = key::parse_internal_key(ikey).ok_or_else(|| {
            Error::invalid(format!(
                "{}: bad internal key of {} bytes",
                self.path.display(),
                ikey.len()
            ))
        })?;
        key::check_key_value(parsed.user_key, value)?;
        let trailer = key::trailer(ikey);
        if self.in_order
            && let Some(last) = self.entries.last()
        {
            self.in_order =
                (self.user_key(last), Reverse(last.trailer)) < (parsed.user_key, Reverse(trailer));
        }
        let hash = KeyHash::of(self.opts.hash_seed, parsed.user_key);
        let at = self.arena.len();
        self.arena.extend_from_slice(parsed.user_key);
        self.arena.extend_from_slice(value);
        self.entries.push(Pending {
            hash,
            bucket: hash.bucket(self.opts.num_buckets),
            at,
            klen: parsed.user_key.len() as u32,
            vlen: value.len() as u32,
            trailer,
        });
        self.item_bytes += format::entry_len(parsed.user_key.len(), value.len()) as u64;
        Ok(())
    }

    /// Encoded bytes of the entries added so far.
    pub fn estimated_bytes(&self) -> u64 {
        self.item_bytes
    }

    /// Bytes the buckets can hold: `num_buckets * (bucket_bytes - 16)` of the options (a
    /// table of large items gets fewer, larger buckets of about the same total).
    pub fn capacity_bytes(&self) -> u64 {
        u64::from(self.opts.num_buckets)
            * self.opts.bucket_bytes.saturating_sub(BUCKET_TAIL_LEN) as u64
    }

    /// True once `estimated_bytes` reaches `fill_percent` of `capacity_bytes`: time to finish.
    pub fn is_full(&self) -> bool {
        self.item_bytes * 100 >= self.capacity_bytes() * u64::from(self.opts.fill_percent)
    }

    /// Entries added so far.
    pub fn num_entries(&self) -> u64 {
        self.entries.len() as u64
    }

    fn user_key(&self, e: &Pending) -> &[u8] {
        self.arena
            .get(e.at..e.at + e.klen as usize)
            .unwrap_or_default()
    }

    fn value(&self, e: &Pending) -> &[u8] {
        let start = e.at + e.klen as usize;
        self.arena
            .get(start..start + e.vlen as usize)
            .unwrap_or_default()
    }

    fn encode_group(&self, range: &[Pending], out: &mut Vec<u8>) {
        for e in range {
            put_entry(out, self.user_key(e), e.trailer, self.value(e));
        }
    }

    /// Runs of one user key in `entries` (all versions of a key are adjacent): the groups.
    fn group_spans(&self, entries: &[Pending]) -> Vec<(usize, usize)> {
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            match spans.last_mut() {
                Some((_, end)) if self.user_key(e) == self.user_key(&entries[*end - 1]) => {
                    *end += 1
                }
                _ => spans.push((i, i + 1)),
            }
        }
        spans
    }

    /// The bucket size for groups of `sizes` bytes, and the bytes of the groups that can be
    /// placed in such buckets (at most an eighth of one; larger ones go to the overflow area).
    /// The size is the options', doubled until a bucket holds [`GROUPS_PER_BUCKET`] of the
    /// average group that can ever be in a bucket (at most [`MAX_BUCKET_BYTES`]).
    fn bucket_bytes_for(&self, sizes: &[u64]) -> (usize, u64) {
        let largest = self.opts.bucket_bytes.max(MAX_BUCKET_BYTES);
        let fits = |bucket: usize, g: u64| g <= (bucket / 8) as u64;
        let (bytes, count) = sizes
            .iter()
            .filter(|&&g| fits(largest, g))
            .fold((0u64, 0u64), |(b, c), g| (b + g, c + 1));
        let mean = bytes.div_ceil(count.max(1));
        let mut bucket = self.opts.bucket_bytes;
        while bucket < largest
            && ((bucket - BUCKET_TAIL_LEN) as u64) < mean.saturating_mul(GROUPS_PER_BUCKET)
        {
            bucket *= 2;
        }
        let placeable = sizes.iter().filter(|&&g| fits(bucket, g)).sum();
        (bucket, placeable)
    }

    /// Places the entries, writes and syncs the file, and returns its properties.
    pub fn finish(mut self) -> Result<HTableProperties> {
        let (base_bytes, base_n) = (self.opts.bucket_bytes, self.opts.num_buckets);
        if !format::valid_bucket_bytes(base_bytes) || base_n == 0 {
            return Err(Error::invalid(format!(
                "HTable of {base_n} buckets of {base_bytes} bytes: buckets must be a power of two in 512..=65536 and at least one"
            )));
        }
        let mut entries = std::mem::take(&mut self.entries);
        if !self.in_order {
            entries.sort_by(|a, b| {
                (self.user_key(a), Reverse(a.trailer)).cmp(&(self.user_key(b), Reverse(b.trailer)))
            });
        }
        let sizes: Vec<u64> = self
            .group_spans(&entries)
            .iter()
            .map(|&(s, e)| entries[s..e].iter().map(Pending::len).sum())
            .collect();
        let (bucket_bytes, placeable) = self.bucket_bytes_for(&sizes);
        drop(sizes);
        let room = (bucket_bytes - BUCKET_TAIL_LEN) as u64;
        // Larger buckets: fewer of them, holding at least as much as the options' buckets.
        let most = match bucket_bytes == base_bytes {
            true => base_n,
            false => prime_at_least(self.capacity_bytes().div_ceil(room)),
        };
        // A table holds what it was given: as many buckets as the items that can be placed in
        // them need at the fill percentage (the prime at or above; the prime below could be
        // dozens of buckets short), at most `most`. So a flush of a small memtable writes a
        // small table as full as a large one (migration balances it as well, tests:
        // `balanced_at_95_percent_in_full_and_shrunk_tables`), and a table of items too large
        // for any bucket writes no empty buckets: every empty byte is written again by each
        // split.
        let needed = placeable * 100 / u64::from(self.opts.fill_percent.max(1));
        let n = prime_at_least(needed.div_ceil(room)).min(most);
        if n != self.opts.num_buckets {
            for e in &mut entries {
                e.bucket = e.hash.bucket(n);
            }
        }
        // Order: bucket, then user key, then newest first (a stable reorder by bucket of the
        // key order).
        match by_bucket(&entries, n) {
            Some(sorted) => entries = sorted,
            None => entries.sort_by(|a, b| {
                (a.bucket, self.user_key(a), Reverse(a.trailer)).cmp(&(
                    b.bucket,
                    self.user_key(b),
                    Reverse(b.trailer),
                ))
            }),
        }
        let spans = self.group_spans(&entries);
        let groups: Vec<Group> = spans
            .iter()
            .map(|&(s, e)| Group {
                bucket: entries[s].bucket,
                rank: entries[s].hash.rank(),
                bytes: entries[s..e].iter().map(Pending::len).sum(),
            })
            .collect();
        if let Some(g) = groups.iter().find(|g| g.bytes > u64::from(u32::MAX)) {
            return Err(Error::invalid(format!(
                "{}: the versions of one key take {} bytes, over the 4 GiB an overflow group can hold",
                self.path.display(),
                g.bytes
            )));
        }
        let capacity = (bucket_bytes - BUCKET_TAIL_LEN) as u64;
        let placed = plan(n, capacity, (bucket_bytes / 8) as u64, &groups);
        let mut props = self.properties_of(&entries, &spans, &placed.place);
        let mut offset = 0u64;

        // Buckets.
        let mut lists: Vec<Vec<usize>> = vec![Vec::new(); n as usize];
        for (gi, p) in placed.place.iter().enumerate() {
            if let Place::Bucket(d) = p
                && let Some(l) = lists.get_mut(*d as usize)
            {
                l.push(gi);
            }
        }
        let mut rec_iter = placed.records.iter().peekable();
        let mut buf = Vec::with_capacity(bucket_bytes);
        // Buckets and overflow groups go to the file in chunks of about `WRITE_CHUNK` bytes.
        let mut out: Vec<u8> = Vec::with_capacity(WRITE_CHUNK + bucket_bytes);
        for (b, list) in lists.iter_mut().enumerate() {
            list.sort_by(|&x, &y| {
                self.user_key(&entries[spans[x].0])
                    .cmp(self.user_key(&entries[spans[y].0]))
            });
            buf.clear();
            let mut count = 0usize;
            for &gi in list.iter() {
                let (s, e) = spans[gi];
                self.encode_group(&entries[s..e], &mut buf);
                count += e - s;
            }
            let used = buf.len();
            buf.resize(bucket_bytes, 0);
            let (dst, mark) = match rec_iter.next_if(|r| r.bucket == b as u32) {
                Some(r) => (r.dst, r.mark),
                None => (NO_MIGRATION, 0),
            };
            let tail = BucketTail {
                dst,
                mark,
                used: used as u16,
                count: count as u16,
            };
            seal_bucket(&mut buf, b as u32, tail);
            out.extend_from_slice(&buf);
            if out.len() >= WRITE_CHUNK {
                self.file.append(&out)?;
                out.clear();
            }
            offset += bucket_bytes as u64;
        }

        // Overflow area and its index.
        let mut over: Vec<usize> = (0..groups.len())
            .filter(|&g| placed.place[g] == Place::Overflow)
            .collect();
        over.sort_by_key(|&g| (groups[g].bucket, groups[g].rank));
        let overflow_start = offset;
        let mut index = Vec::with_capacity(over.len() * format::OVERFLOW_RECORD_LEN);
        for &gi in &over {
            buf.clear();
            let (s, e) = spans[gi];
            self.encode_group(&entries[s..e], &mut buf);
            OverflowRecord {
                bucket: groups[gi].bucket,
                rank: groups[gi].rank,
                offset,
                len: buf.len() as u32,
                crc: crate::checksum::mask(crate::checksum::crc32c(&buf)),
            }
            .encode_to(&mut index);
            out.extend_from_slice(&buf);
            if out.len() >= WRITE_CHUNK {
                self.file.append(&out)?;
                out.clear();
            }
            offset += buf.len() as u64;
        }
        self.file.append(&out)?;
        let overflow = BlockHandle {
            offset: overflow_start,
            size: offset - overflow_start,
        };
        let overflow_index = self.write_block(&index, &mut offset)?;

        // Filters: every distinct key in its home bucket's filter, wherever it is stored.
        let filter_data = self.filter_block(n, &entries, &spans);
        let filter = self.write_block(&filter_data, &mut offset)?;
        let mut mig = Vec::with_capacity(placed.records.len() * format::MIGRATION_RECORD_LEN);
        for r in &placed.records {
            r.encode_to(&mut mig);
        }
        let migration = self.write_block(&mig, &mut offset)?;
        let properties = self.write_block(&format::encode_properties(&props), &mut offset)?;
        let footer = HFooter {
            num_buckets: n,
            bucket_bytes: bucket_bytes as u32,
            overflow,
            overflow_index,
            filter,
            migration,
            properties,
        };
        self.file.append(&footer.encode())?;
        offset += super::HTABLE_FOOTER_LEN as u64;
        self.file.sync()?;
        props.num_buckets = n;
        props.bucket_bytes = bucket_bytes as u32;
        props.num_migrations = placed.records.len() as u64;
        props.overflow_groups = over.len() as u64;
        props.overflow_bytes = overflow.size;
        props.filter_bytes = filter.size + 5;
        props.file_size = offset;
        Ok(props)
    }

    fn write_block(&mut self, data: &[u8], offset: &mut u64) -> Result<BlockHandle> {
        let h = BlockHandle {
            offset: *offset,
            size: data.len() as u64,
        };
        self.file.append(data)?;
        self.file
            .append(&block_trailer(data, CompressionType::None))?;
        *offset += data.len() as u64 + 5;
        Ok(h)
    }

    fn filter_block(&self, n: u32, entries: &[Pending], spans: &[(usize, usize)]) -> Vec<u8> {
        let k = probes_for(self.opts.filter_bits_per_key);
        let mut keys_per_bucket = vec![0u64; n as usize];
        for &(s, _) in spans {
            if let Some(c) = keys_per_bucket.get_mut(entries[s].bucket as usize) {
                *c += 1;
            }
        }
        let mut offsets = Vec::with_capacity(n as usize + 1);
        let mut total = 0u64;
        offsets.push(0u32);
        for &c in &keys_per_bucket {
            if k > 0 {
                total += (c * u64::from(self.opts.filter_bits_per_key)).div_ceil(8);
            }
            offsets.push(total as u32);
        }
        let mut bits = vec![0u8; total as usize];
        for &(s, _) in spans {
            let b = entries[s].bucket as usize;
            let (lo, hi) = (offsets[b] as usize, offsets[b + 1] as usize);
            if let Some(f) = bits.get_mut(lo..hi) {
                filter_add(f, k, &entries[s].hash);
            }
        }
        let mut out = Vec::with_capacity(4 + 4 * offsets.len() + bits.len());
        crate::coding::put_u32(&mut out, k);
        for o in offsets {
            crate::coding::put_u32(&mut out, o);
        }
        out.extend_from_slice(&bits);
        out
    }

    fn properties_of(
        &self,
        entries: &[Pending],
        spans: &[(usize, usize)],
        place: &[Place],
    ) -> HTableProperties {
        let mut p = HTableProperties {
            hash_seed: self.opts.hash_seed,
            item_bytes: self.item_bytes,
            ..Default::default()
        };
        p.num_entries = entries.len() as u64;
        p.distinct_keys = spans.len() as u64;
        let mut sketch = crate::sketch::DistinctSketch::new();
        for &(s, _) in spans {
            sketch.add(entries[s].hash.sketch_bits());
        }
        p.sketch = Some(std::sync::Arc::new(sketch));
        p.smallest_seq = entries.iter().map(|e| e.trailer >> 8).min().unwrap_or(0);
        p.largest_seq = entries.iter().map(|e| e.trailer >> 8).max().unwrap_or(0);
        for e in entries {
            p.raw_key_bytes += u64::from(e.klen) + TRAILER_LEN as u64;
            p.raw_value_bytes += u64::from(e.vlen);
            if e.trailer & 0xff == ValueKind::Deletion as u64 {
                p.num_deletions += 1;
            }
        }
        for (&(s, e), pl) in spans.iter().zip(place) {
            let moved = match pl {
                Place::Overflow => {
                    p.overflow_entries += (e - s) as u64;
                    continue;
                }
                Place::Bucket(d) => *d != entries[s].bucket,
            };
            if moved {
                p.migrated_entries += (e - s) as u64;
            }
        }
        // Smallest internal key: smallest user key, newest version; largest: the reverse.
        let ikey = |e: &Pending| {
            let mut k = self.user_key(e).to_vec();
            k.extend_from_slice(&e.trailer.to_le_bytes());
            k
        };
        let min = spans
            .iter()
            .map(|&(s, _)| s)
            .min_by(|&a, &b| self.user_key(&entries[a]).cmp(self.user_key(&entries[b])));
        let max = spans
            .iter()
            .map(|&(_, e)| e - 1)
            .max_by(|&a, &b| self.user_key(&entries[a]).cmp(self.user_key(&entries[b])));
        p.smallest_key = min.map(|i| ikey(&entries[i])).unwrap_or_default();
        p.largest_key = max.map(|i| ikey(&entries[i])).unwrap_or_default();
        p
    }
}

/// `entries`, already in internal-key order, stably reordered by bucket (a counting sort): the
/// order `finish` needs, bucket then internal key, without comparing keys. None if an entry's
/// bucket is not below `n`.
fn by_bucket(entries: &[Pending], n: u32) -> Option<Vec<Pending>> {
    let mut start = vec![0usize; n as usize + 1];
    for e in entries {
        *start.get_mut(e.bucket as usize + 1)? += 1;
    }
    for i in 1..start.len() {
        start[i] += start[i - 1];
    }
    let first = *entries.first()?;
    let mut out = vec![first; entries.len()];
    for e in entries {
        let at = &mut start[e.bucket as usize];
        out[*at] = *e;
        *at += 1;
    }
    Some(out)
}
