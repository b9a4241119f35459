//! Reads an HTable: open loads the footer, migration records, overflow index and properties
//! into memory (all checksummed), the bucket filters on the first probe that asks them (a table
//! of the trie's last level is asked through its container's BloomCluster instead, and never
//! holds its own); a probe then reads exactly one bucket.
//!
//! A bucket is used where it lies: in place in a mapped file, its checksum checked the first
//! time it is read after open ([`CheckedOnce`], as the sorted tables' blocks are); else shared
//! from the block cache, where buckets are kept checked; else read from the file and checked.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;

use crate::coding::get_u32;
use crate::comparator::{InternalKeyComparator, default_comparator};
use crate::error::{Error, Result};
use crate::fs::RandomAccessFile;
use crate::key::ValueKind;
use crate::table::checked_once::CheckedOnce;
use crate::table::format::read_block;
use crate::table::{BlockCache, BlockHandle};

use super::format::{self, Entry, HFooter, MigrationRecord, OverflowRecord};
use super::hash::{KeyHash, MAX_FILTER_PROBES, filter_may_contain};
use super::migration::{MigrationIndex, rank_at};
use super::{
    HProbe, HTABLE_FOOTER_LEN, HTableOptions, HTableProperties, HTableStats, ReadCounters,
};

/// The per-bucket filters, in memory.
struct Filters {
    probes: u32,
    offsets: Vec<u32>,
    bits: Vec<u8>,
}

/// An open HTable; `Send + Sync`, shared as `Arc<HTable>`.
pub struct HTable {
    file: Arc<dyn RandomAccessFile>,
    path: Arc<Path>,
    file_number: u64,
    opts: HTableOptions,
    footer: HFooter,
    props: HTableProperties,
    /// Loaded (and checked) by the first probe that uses them.
    filters: OnceLock<Filters>,
    migrations: Vec<MigrationRecord>,
    /// Which buckets have a record in `migrations`, and where.
    migration_index: MigrationIndex,
    overflow: Vec<OverflowRecord>,
    block_cache: Option<Arc<BlockCache>>,
    /// Buckets of a mapped file whose checksum held (no bits if the file is not mapped).
    checked: CheckedOnce,
    icmp: InternalKeyComparator,
    counters: Arc<ReadCounters>,
}

impl fmt::Debug for HTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HTable")
            .field("path", &self.path)
            .field("file_number", &self.file_number)
            .field("num_buckets", &self.footer.num_buckets)
            .field("num_entries", &self.props.num_entries)
            .finish()
    }
}

impl HTable {
    /// Opens the HTable `file` (named `path`, number `file_number` in the block cache). Checks
    /// the footer, loads and checks the filter, migration, overflow-index and properties blocks
    /// (always checksum-verified). `opts.hash_seed`, `bucket_bytes` and `num_buckets` are
    /// ignored: the file says (probes hash with [`HTable::hash_seed`]; `screedb check`
    /// compares it with the database's).
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        file_number: u64,
        opts: HTableOptions,
        block_cache: Option<Arc<BlockCache>>,
    ) -> Result<HTable> {
        let size = file.size();
        let path: Arc<Path> = Arc::from(path);
        let footer_len = HTABLE_FOOTER_LEN as u64;
        if size < footer_len {
            return Err(Error::corruption(
                &*path,
                0,
                format!("file of {size} bytes is too short to hold an HTable footer"),
            ));
        }
        let tail = file.read_vec(size - footer_len, HTABLE_FOOTER_LEN)?;
        let footer = HFooter::decode(&tail, &path, size)?;
        let n = footer.num_buckets;
        let read = |h: BlockHandle| read_block(&*file, &path, h, true);
        let bad = |h: BlockHandle, reason: String| Error::corruption(&*path, h.offset, reason);

        let data = read(footer.properties)?;
        let mut props = format::decode_properties(&data)
            .ok_or_else(|| bad(footer.properties, "properties block does not decode".into()))?;

        let data = read(footer.migration)?;
        let migrations =
            decode_records(&data, format::MIGRATION_RECORD_LEN, MigrationRecord::decode)
                .filter(|r| {
                    r.windows(2).all(|w| w[0].bucket < w[1].bucket)
                        && r.iter()
                            .all(|m| m.bucket < n && m.dst < n && m.dst != m.bucket)
                })
                .ok_or_else(|| bad(footer.migration, "migration block does not decode".into()))?;

        let data = read(footer.overflow_index)?;
        let area = footer.overflow;
        let overflow = decode_records(&data, format::OVERFLOW_RECORD_LEN, OverflowRecord::decode)
            .filter(|r| {
                r.windows(2).all(|w| {
                    (w[0].bucket, w[0].rank, w[0].offset) < (w[1].bucket, w[1].rank, w[1].offset)
                }) && r.iter().all(|o| {
                    o.bucket < n
                        && o.offset >= area.offset
                        && o.offset
                            .checked_add(u64::from(o.len))
                            .is_some_and(|end| end <= area.offset + area.size)
                })
            })
            .ok_or_else(|| {
                bad(
                    footer.overflow_index,
                    "overflow index does not decode".into(),
                )
            })?;

        props.num_buckets = n;
        props.bucket_bytes = footer.bucket_bytes;
        props.num_migrations = migrations.len() as u64;
        props.overflow_groups = overflow.len() as u64;
        props.overflow_bytes = footer.overflow.size;
        props.filter_bytes = footer.filter.size + 5;
        props.file_size = size;
        let checked = CheckedOnce::new(match file.is_mapped() {
            true => n as usize,
            false => 0,
        });
        Ok(HTable {
            file,
            path,
            file_number,
            opts,
            footer,
            props,
            filters: OnceLock::new(),
            migration_index: MigrationIndex::new(&migrations, n),
            migrations,
            overflow,
            block_cache,
            checked,
            icmp: InternalKeyComparator::new(default_comparator()),
            counters: Arc::default(),
        })
    }

    /// The table's properties.
    pub fn properties(&self) -> &HTableProperties {
        &self.props
    }

    /// The seed of the key hash the table was built with.
    pub fn hash_seed(&self) -> u64 {
        self.props.hash_seed
    }

    /// The table's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Counters since open (of every table sharing them, see [`HTable::sharing_counters`]).
    pub fn stats(&self) -> HTableStats {
        self.counters.snapshot()
    }

    /// The table counting its reads in `counters` (shared by the tables of one table cache).
    pub fn sharing_counters(mut self, counters: Arc<ReadCounters>) -> HTable {
        self.counters = counters;
        self
    }

    /// Bytes of metadata held in memory: filters (once loaded), migration records, overflow
    /// index, properties, the checked-bucket bits of a mapped file.
    pub fn metadata_bytes(&self) -> u64 {
        let filters = self
            .filters
            .get()
            .map_or(0, |f| f.bits.len() + 4 * f.offsets.len());
        let props = self.props.smallest_key.len()
            + self.props.largest_key.len()
            + self
                .props
                .sketch
                .as_ref()
                .map_or(0, |_| crate::sketch::REGISTERS)
            + size_of::<HTableProperties>();
        (filters
            + size_of::<MigrationRecord>() * self.migrations.len()
            + self.migration_index.bytes()
            + size_of::<OverflowRecord>() * self.overflow.len()
            + props
            + self.checked.bytes()
            + size_of::<HTable>()) as u64
    }

    /// The bucket filters, read and checked on first use.
    fn filters(&self) -> Result<&Filters> {
        if let Some(f) = self.filters.get() {
            return Ok(f);
        }
        let handle = self.footer.filter;
        let data = read_block(&*self.file, &self.path, handle, true)?;
        let filters = decode_filters(&data, self.footer.num_buckets).ok_or_else(|| {
            Error::corruption(&*self.path, handle.offset, "filter block does not decode")
        })?;
        Ok(self.filters.get_or_init(|| filters))
    }

    /// True unless the bucket filter of `bucket` rules the key out.
    pub(super) fn filter_passes(&self, bucket: u32, hash: &KeyHash) -> Result<bool> {
        let f = self.filters()?;
        let b = bucket as usize;
        let (lo, hi) = (f.offsets.get(b).copied(), f.offsets.get(b + 1).copied());
        let bits = lo
            .zip(hi)
            .and_then(|(lo, hi)| f.bits.get(lo as usize..hi as usize))
            .unwrap_or_default();
        Ok(filter_may_contain(bits, f.probes, hash))
    }

    /// The newest entry of `user_key` with `seq <= snapshot`. `hash` must be
    /// `KeyHash::of(seed, user_key)` for this table's seed. Reads one bucket after the filter
    /// passes, or the key's overflow group when the in-memory overflow index holds it.
    pub fn probe(&self, hash: &KeyHash, user_key: &[u8], snapshot: u64) -> Result<HProbe> {
        self.probe_with(hash, user_key, snapshot, true)
    }

    /// [`HTable::probe`], asking the table's own bucket filter only if `use_filter` (false: a
    /// BloomCluster already let the key through).
    pub fn probe_with(
        &self,
        hash: &KeyHash,
        user_key: &[u8],
        snapshot: u64,
        use_filter: bool,
    ) -> Result<HProbe> {
        let c = &self.counters;
        c.probes.fetch_add(1, Ordering::Relaxed);
        let n = self.footer.num_buckets;
        let home = hash.bucket(n);
        if use_filter && !self.filter_passes(home, hash)? {
            c.filter_rejections.fetch_add(1, Ordering::Relaxed);
            return Ok(HProbe::Filtered);
        }
        let rank = hash.rank();
        let lo = self
            .overflow
            .partition_point(|o| (o.bucket, o.rank) < (home, rank));
        for rec in self
            .overflow
            .get(lo..)
            .unwrap_or_default()
            .iter()
            .take_while(|o| (o.bucket, o.rank) == (home, rank))
        {
            c.overflow_reads.fetch_add(1, Ordering::Relaxed);
            let data = self.read_overflow(rec, self.opts.verify_checksums)?;
            let entries = self.overflow_entries(rec, &data)?;
            if entries.first().is_some_and(|e| e.user_key == user_key) {
                return Ok(answer(&entries, user_key, snapshot));
            }
        }
        let target = self.locate(home, rank)?;
        c.bucket_reads.fetch_add(1, Ordering::Relaxed);
        let bucket = self.bucket_bytes(target)?;
        let at_file = (&*self.path, self.bucket_offset(target));
        let found = format::find_in_bucket(&bucket, target, n, at_file, user_key, snapshot)?;
        Ok(found.map_or(HProbe::Missed, |e| hit(&e)))
    }

    /// The bucket holding a group homed in `home` with rank `rank`: follows migration records
    /// (in memory) while the group's rank in the bucket reached is at or above its mark.
    pub(super) fn locate(&self, home: u32, rank: u32) -> Result<u32> {
        let mut b = home;
        for _ in 0..=self.migrations.len() {
            match self.migration_of(b) {
                Some(m) if rank_at(rank, b) >= m.mark => b = m.dst,
                _ => return Ok(b),
            }
        }
        Err(Error::corruption(
            &*self.path,
            self.footer.migration.offset,
            "migration records form a cycle",
        ))
    }

    pub(super) fn migration_of(&self, bucket: u32) -> Option<&MigrationRecord> {
        self.migrations.get(self.migration_index.position(bucket)?)
    }

    pub(super) fn verify_checksums(&self) -> bool {
        self.opts.verify_checksums
    }

    pub(super) fn footer(&self) -> &HFooter {
        &self.footer
    }

    pub(super) fn raw_file(&self) -> &dyn RandomAccessFile {
        &*self.file
    }

    pub(super) fn num_buckets(&self) -> u32 {
        self.footer.num_buckets
    }

    pub(super) fn overflow_records(&self) -> &[OverflowRecord] {
        &self.overflow
    }

    pub(super) fn bucket_offset(&self, id: u32) -> u64 {
        u64::from(id) * u64::from(self.footer.bucket_bytes)
    }

    pub(super) fn open_bucket<'a>(
        &self,
        id: u32,
        buf: &'a [u8],
        verify: bool,
    ) -> Result<(format::BucketTail, Vec<Entry<'a>>)> {
        format::open_bucket(
            buf,
            id,
            self.footer.num_buckets,
            verify,
            &self.path,
            self.bucket_offset(id),
        )
    }

    /// The bytes of bucket `id`, its checksum checked (unless `verify_checksums` is off and
    /// the bucket is read for a probe alone): in place in a mapped file (checked the first time
    /// after open), else from the block cache (where a bucket is kept checked,
    /// [`BlockCache::insert_bytes`]) or the file. Nothing is copied but a read.
    pub(super) fn bucket_bytes(&self, id: u32) -> Result<Bytes> {
        let offset = self.bucket_offset(id);
        let len = self.footer.bucket_bytes as usize;
        if self.file.is_mapped() {
            let bytes = self.file.read_bytes(offset, len)?;
            if self.opts.verify_checksums && !self.checked.contains(id as usize) {
                self.open_bucket(id, &bytes, true)?;
                self.checked.insert(id as usize);
            }
            return Ok(bytes);
        }
        let key = (self.file_number, offset);
        if let Some(cache) = &self.block_cache
            && let Some(bytes) = cache.get_bytes(key, &self.icmp)
            && bytes.len() == len
        {
            return Ok(bytes);
        }
        let buf = self.file.read_vec(offset, len)?;
        // Only a bucket whose checksum holds is cached.
        if self.opts.verify_checksums || self.block_cache.is_some() {
            self.open_bucket(id, &buf, true)?;
        }
        if let Some(cache) = &self.block_cache {
            cache.insert_bytes(key, &buf, Arc::clone(&self.path), offset)?;
        }
        Ok(Bytes::from(buf))
    }

    /// The bytes of an overflow group (in place in a mapped file), checked if `verify`.
    pub(super) fn read_overflow(&self, rec: &OverflowRecord, verify: bool) -> Result<Bytes> {
        let data = self.file.read_bytes(rec.offset, rec.len as usize)?;
        if verify && crate::checksum::mask(crate::checksum::crc32c(&data)) != rec.crc {
            return Err(Error::corruption(
                &*self.path,
                rec.offset,
                "overflow group checksum mismatch",
            ));
        }
        Ok(data)
    }

    /// Decodes an overflow group: entries of one user key, homed where its record says.
    pub(super) fn overflow_entries<'a>(
        &self,
        rec: &OverflowRecord,
        data: &'a [u8],
    ) -> Result<Vec<Entry<'a>>> {
        let bad = |reason: String| Error::corruption(&*self.path, rec.offset, reason);
        let entries = format::decode_entries(data)
            .map_err(|at| bad(format!("bad overflow entry at byte {at}")))?;
        let first = entries
            .first()
            .ok_or_else(|| bad("empty overflow group".into()))?;
        if entries.iter().any(|e| e.user_key != first.user_key) {
            return Err(bad("overflow group mixes user keys".into()));
        }
        let h = KeyHash::of(self.props.hash_seed, first.user_key);
        if (h.bucket(self.footer.num_buckets), h.rank()) != (rec.bucket, rec.rank) {
            return Err(bad("overflow group is indexed under another hash".into()));
        }
        Ok(entries)
    }
}

/// The newest visible version of `user_key` among `entries` (versions are newest first).
fn answer(entries: &[Entry<'_>], user_key: &[u8], snapshot: u64) -> HProbe {
    entries
        .iter()
        .find(|e| e.user_key == user_key && e.seq() <= snapshot)
        .map_or(HProbe::Missed, hit)
}

/// The probe's answer for entry `e`.
fn hit(e: &Entry<'_>) -> HProbe {
    let kind = e.kind().unwrap_or(ValueKind::Deletion);
    let value = if kind == ValueKind::Value {
        e.value.to_vec()
    } else {
        Vec::new()
    };
    HProbe::Hit {
        kind,
        value,
        seq: e.seq(),
    }
}

fn decode_records<T>(data: &[u8], len: usize, decode: fn(&[u8]) -> Option<T>) -> Option<Vec<T>> {
    if !data.len().is_multiple_of(len) {
        return None;
    }
    data.chunks(len).map(decode).collect()
}

fn decode_filters(data: &[u8], n: u32) -> Option<Filters> {
    let probes = get_u32(data)?;
    if probes > MAX_FILTER_PROBES {
        return None;
    }
    let count = n as usize + 1;
    let offs = data.get(4..4 + 4 * count)?;
    let offsets: Vec<u32> = offs.chunks(4).map(get_u32).collect::<Option<_>>()?;
    let bits = data.get(4 + 4 * count..)?.to_vec();
    let ok = offsets.first() == Some(&0)
        && offsets.windows(2).all(|w| w[0] <= w[1])
        && offsets.last().map(|&l| l as usize) == Some(bits.len());
    ok.then_some(Filters {
        probes,
        offsets,
        bits,
    })
}
