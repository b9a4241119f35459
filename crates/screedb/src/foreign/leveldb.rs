//! Reading a LevelDB database (LevelDB 1.x's formats, `leveldb/doc/table_format.md` and
//! `log_format.md`), for [`super::import_leveldb`].
//!
//! What LevelDB shares with ScreeDB: the log framing (32 KiB blocks of checksummed fragments),
//! the write batch encoding, the internal key (`user key | (sequence << 8 | kind)` as u64 LE),
//! the block encoding (prefix-compressed entries, restart array) and the block trailer (type
//! byte, masked CRC32C of the block and type). What differs, and is read here:
//!
//! ```text
//! footer (48 bytes)  metaindex handle | index handle | zero padding to 40 bytes
//!                    | magic: u64 LE = 0xdb4775248b80fb57
//! handle             offset: varint64 | size: varint64
//! block type         0 = none, 1 = Snappy
//! MANIFEST record    (tag: varint32, field)*:
//!   1 comparator: varint32 length | name     2 log number: varint64
//!   3 next file number: varint64             4 last sequence: varint64
//!   5 compact pointer: varint32 level | varint32 length | internal key
//!   6 deleted file: varint32 level | varint64 number
//!   7 new file: varint32 level | varint64 number | varint64 size
//!               | varint32 length | smallest | varint32 length | largest
//!   9 prev log number: varint64
//! table files        NNNNNN.ldb (NNNNNN.sst before LevelDB 1.14)
//! ```

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::checksum;
use crate::coding::{get_u32, get_u64, get_varint32, get_varint64};
use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::fs::{Fs, RandomAccessFile};
use crate::iter::{InternalIterator, TwoLevelIterator};
use crate::table::{BLOCK_TRAILER_LEN, Block};
use crate::wal::{LogReader, RecoveryMode};

use super::LEVELDB_TABLE_MAGIC;

const FOOTER_LEN: u64 = 48;

/// True when `record` (a MANIFEST's first) starts as LevelDB's edits do: the comparator tag as
/// a one-byte varint, its name's length as a one-byte varint, then the name's first byte (a
/// ScreeDB edit has a 4-byte length there, whose second byte is 0 for any real name).
pub(super) fn starts_like_a_leveldb_edit(record: &[u8]) -> bool {
    match record {
        [1, len, first, ..] => {
            let len = usize::from(*len);
            (1..0x80).contains(&len)
                && *first != 0
                && record
                    .get(2..2 + len)
                    .is_some_and(|name| name.iter().all(|b| b.is_ascii_graphic()))
        }
        _ => false,
    }
}

/// The live state a LevelDB MANIFEST describes.
#[derive(Debug, Default)]
pub(super) struct Manifest {
    pub comparator: Option<String>,
    /// Live tables by number.
    pub tables: BTreeSet<u64>,
    pub log_number: u64,
    pub prev_log_number: u64,
}

/// Reads the MANIFEST that `dir`'s CURRENT names.
pub(super) fn read_manifest(fs: &dyn Fs, dir: &Path) -> Result<Manifest> {
    let Some(name) = super::current_manifest(fs, dir)? else {
        return Err(Error::corruption(
            crate::filename::current_file(dir),
            0,
            "CURRENT is missing or does not name a manifest",
        ));
    };
    let path = dir.join(&name);
    let mut reader = LogReader::new(
        fs.open(&path)?,
        path.clone(),
        RecoveryMode::TolerateTornTail,
    );
    let mut m = Manifest::default();
    while let Some(record) = reader.read_record()? {
        let offset = reader.last_record_offset();
        apply_edit(&mut m, &record).map_err(|reason| Error::corruption(&path, offset, reason))?;
    }
    Ok(m)
}

fn apply_edit(m: &mut Manifest, mut rec: &[u8]) -> std::result::Result<(), String> {
    fn varint32(rec: &mut &[u8], what: &str) -> std::result::Result<u32, String> {
        let (v, n) = get_varint32(rec).ok_or_else(|| format!("bad {what}"))?;
        *rec = &rec[n..];
        Ok(v)
    }
    fn varint64(rec: &mut &[u8], what: &str) -> std::result::Result<u64, String> {
        let (v, n) = get_varint64(rec).ok_or_else(|| format!("bad {what}"))?;
        *rec = &rec[n..];
        Ok(v)
    }
    fn slice<'a>(rec: &mut &'a [u8], what: &str) -> std::result::Result<&'a [u8], String> {
        let len = varint32(rec, what)? as usize;
        let (s, rest) = rec
            .split_at_checked(len)
            .ok_or_else(|| format!("truncated {what}"))?;
        *rec = rest;
        Ok(s)
    }
    while !rec.is_empty() {
        match varint32(&mut rec, "tag")? {
            1 => {
                m.comparator = Some(String::from_utf8_lossy(slice(&mut rec, "comparator")?).into())
            }
            2 => m.log_number = varint64(&mut rec, "log number")?,
            3 => {
                varint64(&mut rec, "next file number")?;
            }
            4 => {
                varint64(&mut rec, "last sequence")?;
            }
            5 => {
                varint32(&mut rec, "compact pointer level")?;
                slice(&mut rec, "compact pointer key")?;
            }
            6 => {
                varint32(&mut rec, "deleted file level")?;
                let n = varint64(&mut rec, "deleted file number")?;
                m.tables.remove(&n);
            }
            7 => {
                varint32(&mut rec, "new file level")?;
                let n = varint64(&mut rec, "new file number")?;
                varint64(&mut rec, "new file size")?;
                slice(&mut rec, "new file smallest key")?;
                slice(&mut rec, "new file largest key")?;
                m.tables.insert(n);
            }
            9 => m.prev_log_number = varint64(&mut rec, "prev log number")?,
            t => return Err(format!("unknown LevelDB manifest tag {t}")),
        }
    }
    Ok(())
}

/// The file of LevelDB table `n` in `dir`: `.ldb`, or `.sst` as older versions named it.
pub(super) fn table_path(fs: &dyn Fs, dir: &Path, n: u64) -> PathBuf {
    let ldb = dir.join(format!("{n:06}.ldb"));
    if fs.exists(&ldb) {
        ldb
    } else {
        dir.join(format!("{n:06}.sst"))
    }
}

/// A block handle: offset and size as varints.
fn decode_handle(src: &[u8]) -> Option<(u64, u64, usize)> {
    let (offset, a) = get_varint64(src)?;
    let (size, b) = get_varint64(src.get(a..)?)?;
    Some((offset, size, a + b))
}

/// Reads, checks and decompresses the block at `offset` of `size` bytes.
fn read_block(file: &dyn RandomAccessFile, path: &Path, offset: u64, size: u64) -> Result<Block> {
    let bad = |reason: String| Error::corruption(path, offset, reason);
    let len = usize::try_from(size)
        .ok()
        .filter(|_| offset.saturating_add(size) + BLOCK_TRAILER_LEN as u64 <= file.size())
        .ok_or_else(|| {
            bad(format!(
                "block of {size} bytes runs past the end of the file"
            ))
        })?;
    let buf = file.read_vec(offset, len + BLOCK_TRAILER_LEN)?;
    let (data, trailer) = buf.split_at(len);
    let stored = get_u32(&trailer[1..]).unwrap_or_default();
    let crc = checksum::crc32c_extend(checksum::crc32c(data), &trailer[..1]);
    if checksum::unmask(stored) != crc {
        return Err(bad("block checksum mismatch".to_owned()));
    }
    let raw = match trailer[0] {
        0 => data.to_vec(),
        1 => snap::raw::Decoder::new()
            .decompress_vec(data)
            .map_err(|e| bad(format!("bad Snappy block: {e}")))?,
        t => return Err(bad(format!("unknown LevelDB block type {t}"))),
    };
    Block::new(raw, Arc::from(path), offset)
}

/// Every entry of the LevelDB table `path`, in internal-key order, read block by block.
pub(super) fn table_iter(
    fs: &dyn Fs,
    path: &Path,
    icmp: &InternalKeyComparator,
) -> Result<Box<dyn InternalIterator>> {
    let file: Arc<dyn RandomAccessFile> = fs.open(path)?;
    let size = file.size();
    let bad = |offset: u64, reason: &str| Error::corruption(path, offset, reason.to_owned());
    let footer_at = size
        .checked_sub(FOOTER_LEN)
        .ok_or_else(|| bad(0, "too short to be a LevelDB table"))?;
    let footer = file.read_vec(footer_at, FOOTER_LEN as usize)?;
    if get_u64(&footer[40..]) != Some(LEVELDB_TABLE_MAGIC) {
        return Err(bad(footer_at + 40, "not a LevelDB table (bad magic)"));
    }
    let (_, _, used) =
        decode_handle(&footer).ok_or_else(|| bad(footer_at, "bad metaindex handle"))?;
    let (index_offset, index_size, _) =
        decode_handle(&footer[used..]).ok_or_else(|| bad(footer_at, "bad index handle"))?;
    let index = Arc::new(read_block(&*file, path, index_offset, index_size)?);
    let path: Arc<Path> = Arc::from(path);
    let child_cmp = icmp.clone();
    let open = Box::new(move |handle: &[u8]| -> Result<Box<dyn InternalIterator>> {
        let (offset, size, _) = decode_handle(handle).ok_or_else(|| {
            Error::corruption(&*path, index_offset, "bad block handle in the index")
        })?;
        let block = Arc::new(read_block(&*file, &path, offset, size)?);
        Ok(Box::new(block.iter(child_cmp.clone())))
    });
    Ok(Box::new(TwoLevelIterator::new(
        Box::new(index.iter(icmp.clone())),
        open,
    )))
}
