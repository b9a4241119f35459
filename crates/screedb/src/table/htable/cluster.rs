//! BloomClusters (LSM-trie, section 2.4.3): the Bloom filters of a container's HTables grouped
//! by slot, so that one page read says which of the tables may hold a key.
//!
//! A cluster is a side file of one HTable, its *holder*: `NNNNNN.bfc` beside `NNNNNN.sst`. The
//! trie layout writes one with the newest table a job adds to a container of the last level,
//! covering every table of that container (listed by number), and deletes it with its holder.
//! Its filters are a function of the listed tables' keys only, so a cluster is right about
//! every table it lists wherever that table sits; a table it does not list is probed with its
//! own filters. All fixed-width integers are little-endian; the numbers are on disk and frozen.
//!
//! ```text
//! cluster := page * num_pages | index | footer
//! page    := box offset: u16 * (last slot - first slot + 1)
//!            | box(first slot) .. box(last slot) | zeros | crc: u32
//!            a page is page_bytes long, or the multiple of page_bytes that one box needs;
//!            box offset: where the slot's box starts, from the page's first byte;
//!            crc = mask(crc32c(page bytes before it ++ page number: u32))
//! box(s)  := filter(table 0, s) .. filter(table n-1, s), tables in index order
//! filter  := len: varint32 | bits (len bytes)   the Bloom filter (the HTable bucket filters'
//!            bit order and probes) of the distinct user keys of that table whose slot is s;
//!            len 0: the table holds no key of the slot
//! slot    := KeyHash::bucket(num_slots)          the HTable bucket bits, mod num_slots
//! index   := num_tables: u32 | table number: u64 * num_tables
//!            | num_pages: u32 | (page offset: u64, last slot: u32) * num_pages
//! footer  := index offset: u64 | index len: u32 | index crc: u32 | num_slots: u32
//!            | probes: u32 | page_bytes: u32 | format_version: u32 (= 2)
//!            | crc: u32 = mask(crc32c(footer bytes before it)) | magic: u64 = CLUSTER_MAGIC
//!            (44 bytes)
//! ```
//!
//! Format version 1 (written until 2026-11-30) is the same without the box offsets: a lookup
//! walks the page's boxes from its first slot. Both are read.
//!
//! Pages hold consecutive slots; the index (in memory once open) maps a slot to its page, so a
//! lookup reads one page (through the block cache) whatever the number of tables. `num_slots`
//! is the bucket count of a full HTable, so a table's filter per slot is about as large as its
//! filter per bucket; a cluster extended by a new table keeps its slot count.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use crate::checksum::{crc32c, crc32c_extend, mask};
use crate::coding::{get_u32, get_u64, get_varint32, put_u32, put_u64, put_varint32};
use crate::comparator::{InternalKeyComparator, default_comparator};
use crate::error::{Error, Result};
use crate::fs::{Fs, RandomAccessFile};
use crate::table::BlockCache;
use crate::table::checked_once::CheckedOnce;

use super::hash::{KeyHash, filter_add, filter_may_contain, probes_for};

/// The last 8 bytes of every cluster file: the first 8 bytes of SHA-1("screedb.bloomcluster")
/// as a big-endian integer, stored little-endian.
pub const CLUSTER_MAGIC: u64 = 0x8fee_4eda_bde3_67a6;
/// Bytes of the footer.
pub const CLUSTER_FOOTER_LEN: usize = 44;
/// The footer's `format_version` written: pages start with their boxes' offsets.
const CLUSTER_FORMAT_VERSION: u32 = 2;
/// The first format version, still read: pages without box offsets.
const CLUSTER_FORMAT_WALKED: u32 = 1;
/// Bytes of one box offset (format version 2).
const BOX_OFFSET_LEN: usize = 2;
/// Bytes of a page (a page one box overflows is a multiple of it).
pub const CLUSTER_PAGE_BYTES: u32 = 4096;
/// Block-cache ids of cluster pages: the holder's number with this bit set, so a page never
/// shares a key with one of the holder's buckets.
const CACHE_ID_BIT: u64 = 1 << 63;

/// One table's filters by slot, as a cluster stores them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotFilters {
    /// The table's file number.
    pub table: u64,
    /// The filter of each slot (`num_slots` of them; empty: no key of the table has the slot).
    pub filters: Vec<Vec<u8>>,
}

impl SlotFilters {
    /// The filters of table `table` whose distinct user keys hash to `hashes`, over
    /// `num_slots` slots with `bits_per_key` bits per key (0: no filters, every key passes).
    pub fn build(table: u64, hashes: &[KeyHash], num_slots: u32, bits_per_key: u32) -> Self {
        let num_slots = num_slots.max(1);
        let mut counts = vec![0u32; num_slots as usize];
        for h in hashes {
            counts[h.bucket(num_slots) as usize] += 1;
        }
        let mut filters: Vec<Vec<u8>> = counts
            .iter()
            .map(|&n| {
                let bits = u64::from(n) * u64::from(bits_per_key);
                vec![0u8; bits.div_ceil(8).max(u64::from(n.min(1))) as usize]
            })
            .collect();
        let probes = probes_for(bits_per_key);
        for h in hashes {
            filter_add(&mut filters[h.bucket(num_slots) as usize], probes, h);
        }
        SlotFilters { table, filters }
    }
}

/// Writes a cluster of `tables` (each with `num_slots` filters) to `path` and syncs it.
/// Returns the file's size.
pub fn write_cluster(
    fs: &dyn Fs,
    path: &Path,
    num_slots: u32,
    bits_per_key: u32,
    tables: &[SlotFilters],
) -> Result<u64> {
    let out = encode_cluster(num_slots, bits_per_key, tables, CLUSTER_FORMAT_VERSION);
    let mut file = fs.create(path)?;
    file.append(&out)?;
    file.sync()?;
    file.finish()?;
    Ok(out.len() as u64)
}

/// The bytes of a cluster in format `version` (1 or 2).
fn encode_cluster(
    num_slots: u32,
    bits_per_key: u32,
    tables: &[SlotFilters],
    version: u32,
) -> Vec<u8> {
    let probes = probes_for(bits_per_key);
    let page_bytes = CLUSTER_PAGE_BYTES as usize;
    let offset_len = match version {
        CLUSTER_FORMAT_WALKED => 0,
        _ => BOX_OFFSET_LEN,
    };
    let mut out: Vec<u8> = Vec::new();
    let mut pages: Vec<(u64, u32)> = Vec::new();
    // The open page: its boxes and where each starts among them.
    let mut boxes: Vec<u8> = Vec::with_capacity(page_bytes);
    let mut starts: Vec<usize> = Vec::new();
    let mut boxed: Vec<u8> = Vec::new();
    let mut seal = |boxes: &mut Vec<u8>, starts: &mut Vec<usize>, last_slot: u32| {
        let header = offset_len * starts.len();
        let mut page = Vec::with_capacity(header + boxes.len() + 4);
        if offset_len > 0 {
            for &start in starts.iter() {
                // A page of several boxes is one page long; a longer one holds one box.
                debug_assert!(header + start <= usize::from(u16::MAX));
                page.extend_from_slice(&((header + start) as u16).to_le_bytes());
            }
        }
        page.extend_from_slice(boxes);
        let len = (page.len() + 4).div_ceil(page_bytes) * page_bytes;
        page.resize(len - 4, 0);
        let crc = page_crc(&page, pages.len());
        put_u32(&mut page, crc);
        pages.push((out.len() as u64, last_slot));
        out.extend_from_slice(&page);
        boxes.clear();
        starts.clear();
    };
    for slot in 0..num_slots {
        boxed.clear();
        for t in tables {
            let bits = t.filters.get(slot as usize).map_or(&[][..], Vec::as_slice);
            put_varint32(&mut boxed, bits.len() as u32);
            boxed.extend_from_slice(bits);
        }
        let grown = offset_len * (starts.len() + 1) + boxes.len() + boxed.len() + 4;
        if !starts.is_empty() && grown > page_bytes {
            seal(&mut boxes, &mut starts, slot - 1);
        }
        starts.push(boxes.len());
        boxes.extend_from_slice(&boxed);
    }
    seal(&mut boxes, &mut starts, num_slots.saturating_sub(1));

    let index_offset = out.len() as u64;
    let mut index = Vec::new();
    put_u32(&mut index, tables.len() as u32);
    for t in tables {
        put_u64(&mut index, t.table);
    }
    put_u32(&mut index, pages.len() as u32);
    for (offset, last) in &pages {
        put_u64(&mut index, *offset);
        put_u32(&mut index, *last);
    }
    out.extend_from_slice(&index);
    let mut footer = Vec::with_capacity(CLUSTER_FOOTER_LEN);
    put_u64(&mut footer, index_offset);
    put_u32(&mut footer, index.len() as u32);
    put_u32(&mut footer, mask(crc32c(&index)));
    put_u32(&mut footer, num_slots);
    put_u32(&mut footer, probes);
    put_u32(&mut footer, CLUSTER_PAGE_BYTES);
    put_u32(&mut footer, version);
    let crc = mask(crc32c(&footer));
    put_u32(&mut footer, crc);
    put_u64(&mut footer, CLUSTER_MAGIC);
    out.extend_from_slice(&footer);
    out
}

/// An open cluster: its index in memory, pages read on demand.
pub struct Cluster {
    file: Arc<dyn RandomAccessFile>,
    path: Arc<Path>,
    cache_id: u64,
    num_slots: u32,
    probes: u32,
    /// The footer's format version: 2, pages begin with their boxes' offsets; 1, they do not.
    version: u32,
    tables: Vec<u64>,
    /// (offset, last slot) of each page, by slot.
    pages: Vec<(u64, u32)>,
    index_offset: u64,
    block_cache: Option<Arc<BlockCache>>,
    /// Pages of a mapped file whose checksum held (no bits if the file is not mapped).
    checked: CheckedOnce,
    /// Orders the one-entry blocks pages are cached as.
    icmp: InternalKeyComparator,
}

impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cluster")
            .field("path", &self.path)
            .field("tables", &self.tables)
            .field("pages", &self.pages.len())
            .finish()
    }
}

impl Cluster {
    /// Opens the cluster `file` (named `path`) of holder table `holder`; checks its footer and
    /// index. Pages are checked as they are read.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        holder: u64,
        block_cache: Option<Arc<BlockCache>>,
    ) -> Result<Cluster> {
        let size = file.size();
        let bad = |offset: u64, reason: &str| Error::corruption(&path, offset, reason);
        let footer_len = CLUSTER_FOOTER_LEN as u64;
        if size < footer_len {
            return Err(bad(0, "file too short to hold a cluster footer"));
        }
        let start = size - footer_len;
        let footer = file.read_vec(start, CLUSTER_FOOTER_LEN)?;
        let field = |at: usize| get_u32(&footer[at..]).unwrap_or_default();
        if get_u64(&footer[36..]) != Some(CLUSTER_MAGIC) {
            return Err(bad(start + 36, "bad cluster magic"));
        }
        if mask(crc32c(&footer[..32])) != field(32) {
            return Err(bad(start + 32, "cluster footer checksum mismatch"));
        }
        let version = field(28);
        if version != CLUSTER_FORMAT_VERSION && version != CLUSTER_FORMAT_WALKED {
            return Err(bad(start + 28, "unknown cluster format version"));
        }
        let index_offset = get_u64(&footer).unwrap_or_default();
        let index_len = u64::from(field(8));
        if index_offset.checked_add(index_len) != Some(start) {
            return Err(bad(start, "cluster index does not end at the footer"));
        }
        let index = file.read_vec(index_offset, index_len as usize)?;
        if mask(crc32c(&index)) != field(12) {
            return Err(bad(index_offset, "cluster index checksum mismatch"));
        }
        let (num_slots, probes, page_bytes) = (field(16), field(20), field(24));
        let (tables, pages) = decode_index(&index)
            .filter(|(_, pages)| {
                page_bytes == CLUSTER_PAGE_BYTES
                    && num_slots > 0
                    && pages.first().is_some_and(|p| p.0 == 0)
                    && pages.last().is_some_and(|p| p.1 == num_slots - 1)
                    && pages.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1)
                    && pages.last().is_some_and(|p| p.0 < index_offset)
                    && pages
                        .iter()
                        .map(|p| p.0)
                        .chain([index_offset])
                        .collect::<Vec<_>>()
                        .windows(2)
                        .all(|w| (w[1] - w[0]).is_multiple_of(u64::from(page_bytes)))
            })
            .ok_or_else(|| bad(index_offset, "cluster index does not decode"))?;
        let checked = CheckedOnce::new(match file.is_mapped() {
            true => pages.len(),
            false => 0,
        });
        Ok(Cluster {
            file,
            path: Arc::from(path),
            cache_id: holder | CACHE_ID_BIT,
            num_slots,
            probes,
            version,
            tables,
            pages,
            index_offset,
            block_cache,
            checked,
            icmp: InternalKeyComparator::new(default_comparator()),
        })
    }

    /// The tables the cluster covers, by file number.
    pub fn tables(&self) -> &[u64] {
        &self.tables
    }

    /// The number of slots.
    pub fn num_slots(&self) -> u32 {
        self.num_slots
    }

    /// The cluster's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes held in memory (the index, the checked-page bits of a mapped file).
    pub fn metadata_bytes(&self) -> u64 {
        (8 * self.tables.len()
            + 12 * self.pages.len()
            + self.checked.bytes()
            + size_of::<Cluster>()) as u64
    }

    /// For each table of [`Cluster::tables`], whether it may hold the key of `hash`: one page
    /// read (or a block-cache hit).
    pub fn may_hold(&self, hash: &KeyHash) -> Result<Vec<bool>> {
        let slot = hash.bucket(self.num_slots);
        let p = self.pages.partition_point(|page| page.1 < slot);
        let page = self.page(p)?;
        let mut at = self.box_start(&page, p, slot)?;
        let mut out = Vec::with_capacity(self.tables.len());
        for _ in &self.tables {
            let (bits, next) = self.filter_at(&page, at, p)?;
            out.push(filter_may_contain(bits, self.probes, hash));
            at = next;
        }
        Ok(out)
    }

    /// The offset in page `p` of `slot`'s box: read from the page's box offsets, or (format
    /// version 1) found by walking the boxes before it.
    fn box_start(&self, page: &[u8], p: usize, slot: u32) -> Result<usize> {
        let first = self.first_slot(p);
        let i = (slot - first) as usize;
        if self.version == CLUSTER_FORMAT_WALKED {
            let mut at = 0usize;
            for _ in 0..i * self.tables.len() {
                at = self.skip_filter(page, at, p)?;
            }
            return Ok(at);
        }
        let header = self.box_offsets_len(p);
        page.get(i * BOX_OFFSET_LEN..)
            .and_then(|b| b.get(..BOX_OFFSET_LEN))
            .map(|b| usize::from(u16::from_le_bytes([b[0], b[1]])))
            .filter(|&at| at >= header && at <= page.len())
            .ok_or_else(|| {
                Error::corruption(
                    &*self.path,
                    self.pages[p].0 + (i * BOX_OFFSET_LEN) as u64,
                    format!("cluster page {p} has a box offset outside its boxes"),
                )
            })
    }

    /// The first slot of page `p`.
    fn first_slot(&self, p: usize) -> u32 {
        p.checked_sub(1).map_or(0, |q| self.pages[q].1 + 1)
    }

    /// Bytes of page `p`'s box offsets (none in format version 1).
    fn box_offsets_len(&self, p: usize) -> usize {
        match self.version {
            CLUSTER_FORMAT_WALKED => 0,
            _ => BOX_OFFSET_LEN * (self.pages[p].1 - self.first_slot(p) + 1) as usize,
        }
    }

    /// Every table's filters (to extend the cluster with a new table, or to check it).
    pub fn slot_filters(&self) -> Result<Vec<SlotFilters>> {
        let mut out: Vec<SlotFilters> = self
            .tables
            .iter()
            .map(|&table| SlotFilters {
                table,
                filters: Vec::with_capacity(self.num_slots as usize),
            })
            .collect();
        for p in 0..self.pages.len() {
            let page = self.page(p)?;
            let mut at = self.box_offsets_len(p);
            for slot in self.first_slot(p)..=self.pages[p].1 {
                if self.version != CLUSTER_FORMAT_WALKED && self.box_start(&page, p, slot)? != at {
                    return Err(Error::corruption(
                        &*self.path,
                        self.pages[p].0,
                        format!("cluster page {p}: the box offset of slot {slot} is not its box"),
                    ));
                }
                for t in &mut out {
                    let (bits, next) = self.filter_at(&page, at, p)?;
                    t.filters.push(bits.to_vec());
                    at = next;
                }
            }
        }
        Ok(out)
    }

    /// Reads and checks every page.
    pub fn verify(&self) -> Result<()> {
        self.slot_filters().map(|_| ())
    }

    fn page_range(&self, p: usize) -> (u64, u64) {
        let start = self.pages[p].0;
        let end = self.pages.get(p + 1).map_or(self.index_offset, |q| q.0);
        (start, end)
    }

    /// Page `p`'s bytes (without its checksum), checked: in place in a mapped file (checked
    /// the first time after open, [`CheckedOnce`]), else shared from the block cache (pages are
    /// cached checked) or read from the file.
    fn page(&self, p: usize) -> Result<Bytes> {
        let (start, end) = self.page_range(p);
        let len = (end - start) as usize;
        if self.file.is_mapped() {
            let bytes = self.file.read_bytes(start, len)?;
            if !self.checked.contains(p) {
                self.check_page(&bytes, p, start)?;
                self.checked.insert(p);
            }
            return Ok(bytes.slice(..len.saturating_sub(4)));
        }
        let key = (self.cache_id, start);
        if let Some(cache) = &self.block_cache
            && let Some(page) = cache.get_bytes(key, &self.icmp)
        {
            return Ok(page);
        }
        let buf = self.file.read_vec(start, len)?;
        self.check_page(&buf, p, start)?;
        let page = Bytes::from(buf).slice(..len.saturating_sub(4));
        if let Some(cache) = &self.block_cache {
            cache.insert_bytes(key, &page, Arc::clone(&self.path), start)?;
        }
        Ok(page)
    }

    /// Checks the checksum at the end of page `p` (read at `start`, crc included).
    fn check_page(&self, buf: &[u8], p: usize, start: u64) -> Result<()> {
        let body = buf.len().saturating_sub(4);
        if get_u32(buf.get(body..).unwrap_or_default()) != Some(page_crc(&buf[..body], p)) {
            return Err(Error::corruption(
                &*self.path,
                start,
                format!("cluster page {p} checksum mismatch"),
            ));
        }
        Ok(())
    }

    fn filter_at<'p>(&self, page: &'p [u8], at: usize, p: usize) -> Result<(&'p [u8], usize)> {
        let bad = || {
            Error::corruption(
                &*self.path,
                self.pages[p].0 + at as u64,
                format!("cluster page {p} has a filter past its end"),
            )
        };
        let (len, n) = page.get(at..).and_then(get_varint32).ok_or_else(bad)?;
        let end = at + n + len as usize;
        let bits = page.get(at + n..end).ok_or_else(bad)?;
        Ok((bits, end))
    }

    fn skip_filter(&self, page: &[u8], at: usize, p: usize) -> Result<usize> {
        self.filter_at(page, at, p).map(|(_, next)| next)
    }
}

/// The checksum of page `p` whose bytes before the checksum are `page`.
fn page_crc(page: &[u8], p: usize) -> u32 {
    mask(crc32c_extend(crc32c(page), &(p as u32).to_le_bytes()))
}

type Index = (Vec<u64>, Vec<(u64, u32)>);

fn decode_index(src: &[u8]) -> Option<Index> {
    let n = get_u32(src)? as usize;
    let mut at = 4;
    let mut tables = Vec::with_capacity(n.min(src.len() / 8));
    for _ in 0..n {
        tables.push(get_u64(src.get(at..)?)?);
        at += 8;
    }
    let p = get_u32(src.get(at..)?)? as usize;
    at += 4;
    let mut pages = Vec::with_capacity(p.min(src.len() / 12));
    for _ in 0..p {
        let offset = get_u64(src.get(at..)?)?;
        let last = get_u32(src.get(at + 8..)?)?;
        pages.push((offset, last));
        at += 12;
    }
    (at == src.len()).then_some((tables, pages))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fs::{Fs, MemFs};

    fn hashes(range: std::ops::Range<u32>) -> Vec<KeyHash> {
        range.map(|i| KeyHash::of(3, &i.to_be_bytes())).collect()
    }

    fn open(fs: &MemFs, path: &Path) -> Result<Cluster> {
        Cluster::open(fs.open(path)?, path.to_path_buf(), 7, None)
    }

    #[test]
    fn every_key_passes_its_tables_filter_and_few_others_do() {
        let fs = MemFs::new();
        let path = Path::new("/c.bfc");
        let tables: Vec<SlotFilters> = (0..6u32)
            .map(|t| {
                SlotFilters::build(u64::from(t) + 10, &hashes(t * 1000..t * 1000 + 900), 97, 16)
            })
            .collect();
        write_cluster(&fs, path, 97, 16, &tables).unwrap();
        let c = open(&fs, path).unwrap();
        assert_eq!(c.tables(), &[10, 11, 12, 13, 14, 15]);
        assert_eq!(c.slot_filters().unwrap(), tables);
        let mut false_positives = 0;
        for t in 0..6u32 {
            for (i, h) in hashes(t * 1000..t * 1000 + 900).iter().enumerate() {
                let maybe = c.may_hold(h).unwrap();
                assert!(maybe[t as usize], "table {t} key {i}");
                false_positives += maybe.iter().filter(|&&m| m).count() - 1;
            }
        }
        // 16 bits per key: about 0.05% per table asked.
        assert!(false_positives < 30, "{false_positives}");
        let missing = hashes(100_000..110_000);
        let passed: usize = missing
            .iter()
            .map(|h| c.may_hold(h).unwrap().iter().filter(|&&m| m).count())
            .sum();
        assert!(passed < 60, "{passed}");
    }

    #[test]
    fn a_box_larger_than_a_page_gets_a_longer_page() {
        let fs = MemFs::new();
        let path = Path::new("/c.bfc");
        // 3 slots, 3000 keys each per table: 6 KB per filter.
        let tables: Vec<SlotFilters> = (0..2u32)
            .map(|t| SlotFilters::build(u64::from(t), &hashes(t * 9000..t * 9000 + 9000), 3, 16))
            .collect();
        write_cluster(&fs, path, 3, 16, &tables).unwrap();
        let c = open(&fs, path).unwrap();
        for h in hashes(0..9000) {
            assert!(c.may_hold(&h).unwrap()[0]);
        }
        assert_eq!(c.slot_filters().unwrap(), tables);
    }

    #[test]
    fn no_filters_let_every_key_through_and_empty_tables_none() {
        let fs = MemFs::new();
        let path = Path::new("/c.bfc");
        let tables = [
            SlotFilters::build(1, &hashes(0..50), 11, 0),
            SlotFilters::build(2, &[], 11, 0),
        ];
        write_cluster(&fs, path, 11, 0, &tables).unwrap();
        let c = open(&fs, path).unwrap();
        assert_eq!(c.may_hold(&hashes(7..8)[0]).unwrap(), vec![true, true]);
        let fs2 = MemFs::new();
        let tables = [SlotFilters::build(2, &[], 11, 16)];
        write_cluster(&fs2, path, 11, 16, &tables).unwrap();
        let c = open(&fs2, path).unwrap();
        assert_eq!(c.may_hold(&hashes(7..8)[0]).unwrap(), vec![false]);
    }

    /// Clusters written before pages carried box offsets (format version 1) answer as the
    /// current ones do, and the current pages' offsets lead to the boxes a walk finds.
    #[test]
    fn walked_pages_of_format_1_answer_as_offset_pages() {
        let tables: Vec<SlotFilters> = (0..5u32)
            .map(|t| SlotFilters::build(u64::from(t), &hashes(t * 700..t * 700 + 650), 61, 10))
            .collect();
        let (fs, old, new) = (MemFs::new(), Path::new("/1.bfc"), Path::new("/2.bfc"));
        let bytes = encode_cluster(61, 10, &tables, CLUSTER_FORMAT_WALKED);
        crate::fs::write_all_synced(&fs, old, &bytes).unwrap();
        write_cluster(&fs, new, 61, 10, &tables).unwrap();
        let (old, new) = (open(&fs, old).unwrap(), open(&fs, new).unwrap());
        assert!(new.pages.len() > 1 && old.version == 1 && new.version == 2);
        assert_eq!(old.slot_filters().unwrap(), tables);
        assert_eq!(new.slot_filters().unwrap(), tables);
        for h in hashes(0..5000) {
            assert_eq!(old.may_hold(&h).unwrap(), new.may_hold(&h).unwrap());
        }
    }

    /// A box offset that passes the page checksum but points elsewhere (a writer's bug) is a
    /// corruption for `verify` and never a panic for a lookup.
    #[test]
    fn a_box_offset_that_misses_its_box_is_reported() {
        let tables = [SlotFilters::build(1, &hashes(0..300), 7, 8)];
        let bytes = encode_cluster(7, 8, &tables, CLUSTER_FORMAT_VERSION);
        let fs = MemFs::new();
        let path = Path::new("/c.bfc");
        for (slot, to) in [(1usize, 0u16), (2, 3), (6, 4095), (6, 9000)] {
            let mut bad = bytes.clone();
            bad[2 * slot..2 * slot + 2].copy_from_slice(&to.to_le_bytes());
            let crc = page_crc(&bad[..4092], 0);
            bad[4092..4096].copy_from_slice(&crc.to_le_bytes());
            crate::fs::write_all_synced(&fs, path, &bad).unwrap();
            let c = open(&fs, path).unwrap();
            let e = c.verify().unwrap_err();
            assert!(e.to_string().contains("box offset"), "{e}");
            for h in hashes(0..300) {
                let _ = c.may_hold(&h);
            }
        }
    }

    #[test]
    fn every_byte_flip_is_an_error_or_a_superset_answer() {
        let fs = MemFs::new();
        let path = Path::new("/c.bfc");
        let keys = hashes(0..400);
        let tables = [
            SlotFilters::build(1, &keys[..200], 5, 8),
            SlotFilters::build(2, &keys[200..], 5, 8),
        ];
        let size = write_cluster(&fs, path, 5, 8, &tables).unwrap() as usize;
        let good = crate::fs::read_all(&fs, path).unwrap();
        assert_eq!(good.len(), size);
        for at in 0..size {
            let mut bad = good.clone();
            bad[at] ^= 0x20;
            crate::fs::write_all_synced(&fs, path, &bad).unwrap();
            let Ok(c) = open(&fs, path) else { continue };
            for (i, h) in keys.iter().enumerate() {
                match c.may_hold(h) {
                    Err(e) => assert!(e.to_string().contains("c.bfc"), "{e}"),
                    // A flip the checksums cannot see (zero padding is checked too, so none).
                    Ok(maybe) => assert!(maybe[i / 200], "flip at {at} lost key {i}"),
                }
            }
        }
    }

    /// Pages used in place from a mapped file (checked on their first read) or shared from the
    /// block cache answer as pages read from the file do, twice over; a flipped byte in a
    /// mapped page is still an error or a superset answer.
    #[test]
    fn mapped_and_cached_pages_answer_as_read_ones() {
        use crate::fs::OsFs;
        let fs = MemFs::new();
        let path = Path::new("/c.bfc");
        let keys = hashes(0..400);
        let tables = [
            SlotFilters::build(1, &keys[..200], 5, 8),
            SlotFilters::build(2, &keys[200..], 5, 8),
        ];
        write_cluster(&fs, path, 5, 8, &tables).unwrap();
        let good = crate::fs::read_all(&fs, path).unwrap();
        let read = open(&fs, path).unwrap();
        let want: Vec<Vec<bool>> = keys.iter().map(|h| read.may_hold(h).unwrap()).collect();
        let dir = tempfile::tempdir().unwrap();
        let disk = dir.path().join("c.bfc");
        std::fs::write(&disk, &good).unwrap();
        let cache = Some(Arc::new(BlockCache::new(1 << 20)));
        let cached = Cluster::open(OsFs.open(&disk).unwrap(), disk.clone(), 7, cache).unwrap();
        let file = OsFs.open_mapped(&disk).unwrap();
        assert!(file.is_mapped());
        let mapped = Cluster::open(file, disk.clone(), 7, None).unwrap();
        for _ in 0..2 {
            for (h, w) in keys.iter().zip(&want) {
                assert_eq!(&cached.may_hold(h).unwrap(), w);
                assert_eq!(&mapped.may_hold(h).unwrap(), w);
            }
        }
        let flip = dir.path().join("flip.bfc");
        let pages_end = mapped.index_offset as usize;
        for at in (0..pages_end).step_by(7) {
            let mut bad = good.clone();
            bad[at] ^= 0x20;
            std::fs::write(&flip, &bad).unwrap();
            let c = Cluster::open(OsFs.open_mapped(&flip).unwrap(), flip.clone(), 7, None).unwrap();
            for (i, h) in keys.iter().enumerate() {
                match c.may_hold(h) {
                    Err(e) => assert!(e.to_string().contains("flip.bfc"), "{e}"),
                    Ok(maybe) => assert!(maybe[i / 200], "flip at {at} lost key {i}"),
                }
            }
        }
    }
}
