//! Typed access to the engine: metadata lookups with expiry, versioned subkey ranges, atomic
//! batches, and the striped locks that serialise read-modify-write commands per key.
//!
//! Lock rule: a command that writes takes the stripe locks of all its keys (in stripe order,
//! through [`Store::lock_keys`]) before it reads what it will change, and holds them until its
//! batch is written. Readers take no lock: each reads a consistent engine state per call.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use screedb::{Db, WriteBatch, WriteOptions};

use crate::encoding::{self, Kind, Meta};
use crate::reply::Reply;

/// A command's result: `Err` is the error reply to send.
pub type Res<T> = Result<T, Reply>;

/// Number of stripe locks.
const STRIPES: usize = 1024;

/// The WRONGTYPE error, in Redis's words.
pub fn wrongtype() -> Reply {
    Reply::Error("WRONGTYPE Operation against a key holding the wrong kind of value".to_string())
}

/// An engine error as an error reply.
pub fn db_err(e: screedb::Error) -> Reply {
    Reply::err(e)
}

/// Unix time in milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The database and what the server keeps beside it.
#[derive(Debug)]
pub struct Store {
    db: Db,
    stripes: Box<[Mutex<()>]>,
    write_options: WriteOptions,
    /// Next hash/zset version: starts at the open time in microseconds, so versions stay
    /// increasing across restarts as long as the clock does not go back.
    next_version: AtomicU64,
}

impl Store {
    /// Wraps `db`; every write is synced when `sync`.
    pub fn new(db: Db, sync: bool) -> Store {
        let micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| u64::try_from(d.as_micros()).unwrap_or(1));
        Store {
            db,
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            write_options: WriteOptions { sync },
            next_version: AtomicU64::new(micros),
        }
    }

    /// The engine.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Gives the engine back (to close it).
    pub fn into_db(self) -> Db {
        self.db
    }

    fn stripe(key: &[u8]) -> usize {
        // FNV-1a: cheap and good enough to spread keys over the stripes.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &b in key {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        usize::try_from(h % STRIPES as u64).unwrap_or(0)
    }

    /// Locks the stripes of `keys` (each once, in stripe order, so two commands never deadlock).
    pub fn lock_keys<'a>(
        &self,
        keys: impl IntoIterator<Item = &'a [u8]>,
    ) -> Vec<MutexGuard<'_, ()>> {
        let mut idx: Vec<usize> = keys.into_iter().map(Self::stripe).collect();
        idx.sort_unstable();
        idx.dedup();
        idx.into_iter()
            .filter_map(|i| self.stripes.get(i))
            .map(|m| m.lock().unwrap_or_else(PoisonError::into_inner))
            .collect()
    }

    /// Locks the stripe of one key.
    pub fn lock(&self, key: &[u8]) -> Vec<MutexGuard<'_, ()>> {
        self.lock_keys([key])
    }

    /// A fresh hash/zset version.
    pub fn new_version(&self) -> u64 {
        self.next_version.fetch_add(1, Ordering::Relaxed)
    }

    /// Applies `batch` atomically (synced when the server runs with `--sync always`).
    pub fn write(&self, batch: WriteBatch) -> Res<()> {
        if batch.is_empty() {
            return Ok(());
        }
        self.db.write(batch, &self.write_options).map_err(db_err)
    }

    /// The metadata of `key`, even if expired.
    pub fn meta_raw(&self, key: &[u8]) -> Res<Option<Meta>> {
        let raw = self.db.get(encoding::meta_key(key)).map_err(db_err)?;
        Ok(raw.and_then(Meta::decode))
    }

    /// The metadata of `key` if it exists and has not expired.
    pub fn meta(&self, key: &[u8]) -> Res<Option<Meta>> {
        let now = now_ms();
        Ok(self.meta_raw(key)?.filter(|m| !m.expired(now)))
    }

    /// The live metadata of each of `keys`, all read at one point in time (one engine
    /// multi-get: faster than a read per key, and MGET sees no write half done).
    pub fn metas(&self, keys: &[&[u8]]) -> Res<Vec<Option<Meta>>> {
        let meta_keys: Vec<Vec<u8>> = keys.iter().map(|k| encoding::meta_key(k)).collect();
        let raws = self.db.multi_get(&meta_keys).map_err(db_err)?;
        let now = now_ms();
        Ok(raws
            .into_iter()
            .map(|raw| raw.and_then(Meta::decode).filter(|m| !m.expired(now)))
            .collect())
    }

    /// The live metadata of `key` if it is of `kind`; WRONGTYPE if it is of another.
    pub fn meta_of(&self, key: &[u8], kind: Kind) -> Res<Option<Meta>> {
        match self.meta(key)? {
            Some(m) if m.kind != kind => Err(wrongtype()),
            other => Ok(other),
        }
    }

    /// The value of string `key`; WRONGTYPE if it holds another type.
    pub fn get_string(&self, key: &[u8]) -> Res<Option<Bytes>> {
        Ok(self.meta_of(key, Kind::String)?.map(|m| m.value))
    }

    /// Adds the write of string `key` = `value` to `batch`.
    pub fn put_string(batch: &mut WriteBatch, key: &[u8], value: Bytes, expire_ms: u64) {
        let meta = Meta {
            kind: Kind::String,
            expire_ms,
            version: 0,
            size: 0,
            value,
        };
        batch.put(encoding::meta_key(key), meta.encode());
    }

    /// Adds the write of `meta` for `key` to `batch`.
    pub fn put_meta(batch: &mut WriteBatch, key: &[u8], meta: &Meta) {
        batch.put(encoding::meta_key(key), meta.encode());
    }

    /// Every `(key, value)` in `[start, end)` (`end = None`: to the end).
    pub fn range(&self, start: &[u8], end: Option<&[u8]>) -> Res<Vec<(Vec<u8>, Vec<u8>)>> {
        let start = start.to_vec();
        let iter = match end {
            Some(end) => self.db.range(start..end.to_vec()),
            None => self.db.range(start..),
        }
        .map_err(db_err)?;
        iter.map(|r| r.map_err(db_err)).collect()
    }

    /// The `(field, value)` subkeys (or score-index entries, with `tag = SCORE`) of one version,
    /// in key order, the field with its prefix removed.
    pub fn versioned(&self, tag: u8, key: &[u8], version: u64) -> Res<Vec<(Vec<u8>, Vec<u8>)>> {
        let prefix = encoding::versioned_prefix(tag, key, version);
        let end = encoding::prefix_end(&prefix);
        let mut out = self.range(&prefix, end.as_deref())?;
        for (k, _) in &mut out {
            k.drain(..prefix.len());
        }
        Ok(out)
    }
}
