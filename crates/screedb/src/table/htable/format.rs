//! Encoders and bounds-checked decoders of the HTable structures laid out in `mod.rs`.
//!
//! Decoders never panic: they return `None` (or a Corruption naming the file and offset) on any
//! short, overlong or impossible input.

use std::path::Path;

use crate::checksum;
use crate::coding::{get_u32, get_u64, get_varint32, put_u32, put_u64, put_varint32};
use crate::error::{Error, Result};
use crate::key::{TRAILER_LEN, ValueKind};
use crate::table::BlockHandle;

use super::{
    BUCKET_TAIL_LEN, HTABLE_FOOTER_LEN, HTABLE_FORMAT_VERSION, HTABLE_MAGIC, NO_MIGRATION,
};
use super::{HTableProperties, is_htable};

/// One decoded entry, borrowing from its bucket or group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Entry<'a> {
    pub user_key: &'a [u8],
    pub trailer: u64,
    pub value: &'a [u8],
}

impl Entry<'_> {
    pub fn seq(&self) -> u64 {
        self.trailer >> 8
    }
    pub fn kind(&self) -> Option<ValueKind> {
        ValueKind::from_u8((self.trailer & 0xff) as u8)
    }
}

/// Bytes `put_entry` writes.
pub(super) fn entry_len(klen: usize, vlen: usize) -> usize {
    crate::coding::varint_len(klen as u64)
        + klen
        + TRAILER_LEN
        + crate::coding::varint_len(vlen as u64)
        + vlen
}

/// Appends one entry.
pub(super) fn put_entry(dst: &mut Vec<u8>, user_key: &[u8], trailer: u64, value: &[u8]) {
    put_varint32(dst, user_key.len() as u32);
    dst.extend_from_slice(user_key);
    put_u64(dst, trailer);
    put_varint32(dst, value.len() as u32);
    dst.extend_from_slice(value);
}

/// Decodes every entry of `src`, which must be exactly entries (no trailing bytes), with known
/// kinds. `Err(at)` gives the byte offset in `src` of the first bad entry.
pub(super) fn decode_entries(src: &[u8]) -> std::result::Result<Vec<Entry<'_>>, usize> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while at < src.len() {
        let e = decode_one(src.get(at..).unwrap_or_default()).ok_or(at)?;
        out.push(e.0);
        at += e.1;
    }
    Ok(out)
}

fn decode_one(src: &[u8]) -> Option<(Entry<'_>, usize)> {
    let (klen, n) = get_varint32(src)?;
    let kend = n.checked_add(klen as usize)?;
    let user_key = src.get(n..kend)?;
    let trailer = get_u64(src.get(kend..)?)?;
    let vat = kend + TRAILER_LEN;
    let (vlen, m) = get_varint32(src.get(vat..)?)?;
    let vstart = vat + m;
    let vend = vstart.checked_add(vlen as usize)?;
    let value = src.get(vstart..vend)?;
    let e = Entry {
        user_key,
        trailer,
        value,
    };
    e.kind()?;
    Some((e, vend))
}

/// The decoded tail of a bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct BucketTail {
    pub dst: u32,
    pub mark: u32,
    pub used: u16,
    pub count: u16,
}

/// The checksum stored in bucket `id` whose bytes before the crc are `body`.
pub(super) fn bucket_crc(body: &[u8], id: u32) -> u32 {
    checksum::mask(checksum::crc32c_extend(
        checksum::crc32c(body),
        &id.to_le_bytes(),
    ))
}

/// Fills the tail of the bucket `buf` (already `bucket_bytes` long) and its crc.
pub(super) fn seal_bucket(buf: &mut [u8], id: u32, tail: BucketTail) {
    let b = buf.len();
    let mut t = Vec::with_capacity(12);
    put_u32(&mut t, tail.dst);
    put_u32(&mut t, tail.mark);
    t.extend_from_slice(&tail.used.to_le_bytes());
    t.extend_from_slice(&tail.count.to_le_bytes());
    buf[b - BUCKET_TAIL_LEN..b - 4].copy_from_slice(&t);
    let crc = bucket_crc(&buf[..b - 4], id);
    buf[b - 4..].copy_from_slice(&crc.to_le_bytes());
}

/// Checks bucket `id` (read from `path` at `offset`) and returns its tail and entries.
/// `verify`: check the crc. Every other check always runs: the entries must decode, fill exactly
/// `used` bytes and number `count`, and a dst must be another bucket.
pub(super) fn open_bucket<'a>(
    buf: &'a [u8],
    id: u32,
    num_buckets: u32,
    verify: bool,
    path: &Path,
    offset: u64,
) -> Result<(BucketTail, Vec<Entry<'a>>)> {
    let bad = |reason: String| Error::corruption(path, offset, format!("bucket {id}: {reason}"));
    let (tail, area) = bucket_area(buf, id, num_buckets, verify, path, offset)?;
    let entries = decode_entries(area).map_err(|at| bad(format!("bad entry at byte {at}")))?;
    if entries.len() != usize::from(tail.count) {
        return Err(bad(format!(
            "{} entries, tail says {}",
            entries.len(),
            tail.count
        )));
    }
    Ok((tail, entries))
}

/// The newest entry of `user_key` with a sequence number at or below `snapshot` in bucket `id`
/// (read from `path` at `offset`, its checksum already checked or not asked for): decodes
/// entries only up to the answer (groups are in user-key order, newest version first).
pub(super) fn find_in_bucket<'a>(
    buf: &'a [u8],
    id: u32,
    num_buckets: u32,
    at_file: (&Path, u64),
    user_key: &[u8],
    snapshot: u64,
) -> Result<Option<Entry<'a>>> {
    let (path, offset) = at_file;
    let (_, area) = bucket_area(buf, id, num_buckets, false, path, offset)?;
    let mut at = 0usize;
    while at < area.len() {
        let Some((e, len)) = decode_one(area.get(at..).unwrap_or_default()) else {
            return Err(Error::corruption(
                path,
                offset,
                format!("bucket {id}: bad entry at byte {at}"),
            ));
        };
        match e.user_key.cmp(user_key) {
            std::cmp::Ordering::Less => {}
            std::cmp::Ordering::Equal if e.seq() <= snapshot => return Ok(Some(e)),
            std::cmp::Ordering::Equal => {}
            std::cmp::Ordering::Greater => return Ok(None),
        }
        at += len;
    }
    Ok(None)
}

/// The tail of bucket `id` and its bytes of entries; checks the crc if `verify`, and that the
/// entries fit and a dst is another bucket.
fn bucket_area<'a>(
    buf: &'a [u8],
    id: u32,
    num_buckets: u32,
    verify: bool,
    path: &Path,
    offset: u64,
) -> Result<(BucketTail, &'a [u8])> {
    let bad = |reason: String| Error::corruption(path, offset, format!("bucket {id}: {reason}"));
    let b = buf.len();
    let body_end = b
        .checked_sub(4)
        .filter(|_| b >= BUCKET_TAIL_LEN)
        .ok_or_else(|| bad("short read".into()))?;
    let t = buf.get(b - BUCKET_TAIL_LEN..).unwrap_or_default();
    if verify {
        let stored = get_u32(t.get(12..).unwrap_or_default()).unwrap_or_default();
        if stored != bucket_crc(buf.get(..body_end).unwrap_or_default(), id) {
            return Err(bad("checksum mismatch".into()));
        }
    }
    let u16_at = |at: usize| {
        t.get(at..at + 2)
            .map_or(0, |s| u16::from_le_bytes([s[0], s[1]]))
    };
    let tail = BucketTail {
        dst: get_u32(t).unwrap_or_default(),
        mark: get_u32(t.get(4..).unwrap_or_default()).unwrap_or_default(),
        used: u16_at(8),
        count: u16_at(10),
    };
    if tail.dst != NO_MIGRATION && (tail.dst >= num_buckets || tail.dst == id) {
        return Err(bad(format!(
            "migration destination {} is not another bucket",
            tail.dst
        )));
    }
    let used = usize::from(tail.used);
    let area = buf.get(..used).filter(|_| used <= b - BUCKET_TAIL_LEN);
    let area = area.ok_or_else(|| bad(format!("{used} bytes of entries do not fit")))?;
    Ok((tail, area))
}

/// A record of the overflow index (24 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct OverflowRecord {
    pub bucket: u32,
    pub rank: u32,
    pub offset: u64,
    pub len: u32,
    pub crc: u32,
}

pub(super) const OVERFLOW_RECORD_LEN: usize = 24;

impl OverflowRecord {
    pub fn encode_to(&self, dst: &mut Vec<u8>) {
        put_u32(dst, self.bucket);
        put_u32(dst, self.rank);
        put_u64(dst, self.offset);
        put_u32(dst, self.len);
        put_u32(dst, self.crc);
    }
    pub fn decode(src: &[u8]) -> Option<OverflowRecord> {
        Some(OverflowRecord {
            bucket: get_u32(src)?,
            rank: get_u32(src.get(4..)?)?,
            offset: get_u64(src.get(8..)?)?,
            len: get_u32(src.get(16..)?)?,
            crc: get_u32(src.get(20..)?)?,
        })
    }
}

/// A migration record (12 bytes): groups homed in `bucket` with rank >= `mark` are in `dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct MigrationRecord {
    pub bucket: u32,
    pub dst: u32,
    pub mark: u32,
}

pub(super) const MIGRATION_RECORD_LEN: usize = 12;

impl MigrationRecord {
    pub fn encode_to(&self, out: &mut Vec<u8>) {
        put_u32(out, self.bucket);
        put_u32(out, self.dst);
        put_u32(out, self.mark);
    }
    pub fn decode(src: &[u8]) -> Option<MigrationRecord> {
        Some(MigrationRecord {
            bucket: get_u32(src)?,
            dst: get_u32(src.get(4..)?)?,
            mark: get_u32(src.get(8..)?)?,
        })
    }
}

/// The footer's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct HFooter {
    pub num_buckets: u32,
    pub bucket_bytes: u32,
    pub overflow: BlockHandle,
    pub overflow_index: BlockHandle,
    pub filter: BlockHandle,
    pub migration: BlockHandle,
    pub properties: BlockHandle,
}

impl HFooter {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(HTABLE_FOOTER_LEN);
        put_u32(&mut v, self.num_buckets);
        put_u32(&mut v, self.bucket_bytes);
        for h in [
            self.overflow,
            self.overflow_index,
            self.filter,
            self.migration,
            self.properties,
        ] {
            h.encode_to(&mut v);
        }
        put_u32(&mut v, HTABLE_FORMAT_VERSION);
        let crc = checksum::mask(checksum::crc32c(&v));
        put_u32(&mut v, crc);
        put_u64(&mut v, HTABLE_MAGIC);
        v
    }

    /// Decodes the last `HTABLE_FOOTER_LEN` bytes `src` of a `file_size`-byte file and checks
    /// that the regions tile the file exactly: buckets from 0, then the overflow area, then each
    /// block with its 5-byte trailer, then the footer.
    pub fn decode(src: &[u8], path: &Path, file_size: u64) -> Result<HFooter> {
        let start = file_size.saturating_sub(HTABLE_FOOTER_LEN as u64);
        let bad = |at: u64, reason: String| Error::corruption(path, start + at, reason);
        if src.len() != HTABLE_FOOTER_LEN || file_size < HTABLE_FOOTER_LEN as u64 {
            return Err(Error::corruption(
                path,
                0,
                format!("file of {file_size} bytes is too short to hold an HTable footer"),
            ));
        }
        if !is_htable(src) {
            return Err(bad(96, "bad HTable magic number (not an HTable?)".into()));
        }
        let field = |at: usize| src.get(at..).unwrap_or_default();
        let version = get_u32(field(88)).unwrap_or_default();
        if version != HTABLE_FORMAT_VERSION {
            return Err(bad(88, format!("unknown HTable format version {version}")));
        }
        let stored = get_u32(field(92)).unwrap_or_default();
        if stored != checksum::mask(checksum::crc32c(src.get(..92).unwrap_or_default())) {
            return Err(bad(92, "footer checksum mismatch".into()));
        }
        let handle = |i: usize| {
            let at = 8 + 16 * i;
            src.get(at..at + 16)
                .and_then(BlockHandle::decode)
                .unwrap_or_default()
        };
        let f = HFooter {
            num_buckets: get_u32(src).unwrap_or_default(),
            bucket_bytes: get_u32(field(4)).unwrap_or_default(),
            overflow: handle(0),
            overflow_index: handle(1),
            filter: handle(2),
            migration: handle(3),
            properties: handle(4),
        };
        if !valid_bucket_bytes(f.bucket_bytes as usize) || f.num_buckets == 0 {
            return Err(bad(
                0,
                format!(
                    "impossible geometry: {} buckets of {} bytes",
                    f.num_buckets, f.bucket_bytes
                ),
            ));
        }
        let mut expect = u64::from(f.num_buckets) * u64::from(f.bucket_bytes);
        let regions = [
            ("overflow area", f.overflow, 0u64),
            ("overflow index", f.overflow_index, 5),
            ("filter", f.filter, 5),
            ("migration", f.migration, 5),
            ("properties", f.properties, 5),
        ];
        for (i, (what, h, trailer)) in regions.into_iter().enumerate() {
            let end = h
                .offset
                .checked_add(h.size)
                .and_then(|e| e.checked_add(trailer));
            match end {
                Some(end) if h.offset == expect && end <= start => expect = end,
                _ => {
                    return Err(bad(
                        8 + 16 * i as u64,
                        format!(
                            "{what} (offset {}, size {}) does not follow at {expect}",
                            h.offset, h.size
                        ),
                    ));
                }
            }
        }
        if expect != start {
            return Err(bad(
                72,
                format!("blocks end at {expect}, footer starts at {start}"),
            ));
        }
        Ok(f)
    }
}

/// True for a bucket size this format allows: a power of two in 512..=65536.
pub(super) fn valid_bucket_bytes(b: usize) -> bool {
    b.is_power_of_two() && (512..=65536).contains(&b)
}

/// Encodes the stored properties.
pub(super) fn encode_properties(p: &HTableProperties) -> Vec<u8> {
    let mut v = Vec::with_capacity(88 + p.smallest_key.len() + p.largest_key.len() + 10);
    for n in [
        p.num_entries,
        p.num_deletions,
        p.raw_key_bytes,
        p.raw_value_bytes,
        p.smallest_seq,
        p.largest_seq,
        p.item_bytes,
        p.distinct_keys,
        p.overflow_entries,
        p.migrated_entries,
        p.hash_seed,
    ] {
        put_u64(&mut v, n);
    }
    crate::coding::put_length_prefixed(&mut v, &p.smallest_key);
    crate::coding::put_length_prefixed(&mut v, &p.largest_key);
    if let Some(sketch) = &p.sketch {
        v.extend_from_slice(sketch.as_bytes());
    }
    v
}

/// Decodes the stored properties (the derived fields stay default).
pub(super) fn decode_properties(src: &[u8]) -> Option<HTableProperties> {
    let n = |i: usize| get_u64(src.get(8 * i..)?);
    let (small, a) = crate::coding::get_length_prefixed(src.get(88..)?)?;
    let (large, b) = crate::coding::get_length_prefixed(src.get(88 + a..)?)?;
    // The sketch, when there are enough bytes for it (older tables end here); malformed
    // registers make the properties unreadable like any other bad field.
    let sketch = match src.get(88 + a + b..88 + a + b + crate::sketch::REGISTERS) {
        Some(bytes) => Some(std::sync::Arc::new(
            crate::sketch::DistinctSketch::from_bytes(bytes)?,
        )),
        None => None,
    };
    Some(HTableProperties {
        num_entries: n(0)?,
        num_deletions: n(1)?,
        raw_key_bytes: n(2)?,
        raw_value_bytes: n(3)?,
        smallest_seq: n(4)?,
        largest_seq: n(5)?,
        item_bytes: n(6)?,
        distinct_keys: n(7)?,
        overflow_entries: n(8)?,
        migrated_entries: n(9)?,
        hash_seed: n(10)?,
        smallest_key: small.to_vec(),
        largest_key: large.to_vec(),
        sketch,
        ..HTableProperties::default()
    })
}
