//! Hash commands: HSET, HMSET, HGET, HMGET, HGETALL, HKEYS, HVALS, HDEL, HEXISTS, HLEN, HINCRBY.
//!
//! A hash is a metadata entry (version, size) and one subkey per field (`encoding`).

use std::collections::HashMap;

use bytes::Bytes;
use screedb::WriteBatch;

use super::{is, parse_i64, wrong_args};
use crate::encoding::{Kind, Meta, SUB, sub_key};
use crate::reply::{OK, Reply};
use crate::store::{Res, Store, db_err};
use crate::{Client, Shared};

/// HMGET of at least this many fields, and at least half the hash, reads the whole hash with
/// one range scan instead of one lookup per field.
const SCAN_FROM_FIELDS: u64 = 3;

fn arg(args: &[Bytes], i: usize) -> Bytes {
    args.get(i).cloned().unwrap_or_default()
}

/// The live hash at `key`, or a new empty one (version fresh, size 0) if there is none.
pub(super) fn hash_or_new(shared: &Shared, key: &[u8], kind: Kind) -> Res<(Meta, bool)> {
    Ok(match shared.store.meta_of(key, kind)? {
        Some(m) => (m, true),
        None => (
            Meta {
                kind,
                expire_ms: 0,
                version: shared.store.new_version(),
                size: 0,
                value: Bytes::new(),
            },
            false,
        ),
    })
}

/// The value of `field` in version `meta.version` of `key`.
fn field(shared: &Shared, key: &[u8], meta: &Meta, field: &[u8]) -> Res<Option<Vec<u8>>> {
    shared
        .store
        .db()
        .get(sub_key(key, meta.version, field))
        .map_err(db_err)
}

pub fn hset(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let name = arg(args, 0);
    let pairs = args.get(2..).unwrap_or_default();
    if pairs.len() % 2 != 0 {
        return Err(wrong_args(if is(&name, "hset") { "hset" } else { "hmset" }));
    }
    let key = arg(args, 1);
    let _lock = shared.store.lock(&key);
    let (mut meta, existed) = hash_or_new(shared, &key, Kind::Hash)?;
    // The last value of a field repeated in one command wins, as in Redis.
    let mut fields: HashMap<&[u8], &Bytes> = HashMap::with_capacity(pairs.len() / 2);
    let mut order = Vec::with_capacity(pairs.len() / 2);
    for pair in pairs.chunks(2) {
        if let [f, v] = pair
            && fields.insert(f.as_ref(), v).is_none()
        {
            order.push(f.as_ref());
        }
    }
    let mut batch = WriteBatch::new();
    let mut added = 0u64;
    for f in order {
        if !existed || field(shared, &key, &meta, f)?.is_none() {
            added += 1;
        }
        if let Some(v) = fields.get(f) {
            batch.put(sub_key(&key, meta.version, f), v);
        }
    }
    if added > 0 || !existed {
        meta.size += added;
        Store::put_meta(&mut batch, &key, &meta);
    }
    shared.store.write(batch)?;
    Ok(if is(&name, "hset") {
        Reply::Int(i64::try_from(added).unwrap_or(i64::MAX))
    } else {
        OK
    })
}

pub fn hget(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let key = arg(args, 1);
    let Some(meta) = shared.store.meta_of(&key, Kind::Hash)? else {
        return Ok(Reply::Null);
    };
    Ok(Reply::opt(field(shared, &key, &meta, &arg(args, 2))?))
}

pub fn hmget(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let key = arg(args, 1);
    let meta = shared.store.meta_of(&key, Kind::Hash)?;
    let fields = args.get(2..).unwrap_or_default();
    let wanted = u64::try_from(fields.len()).unwrap_or(u64::MAX);
    if let Some(m) = &meta
        && wanted >= SCAN_FROM_FIELDS
        && wanted.saturating_mul(2) >= m.size
    {
        // Most of the hash is asked for: one seek and a walk over its subkeys costs less than
        // a point lookup per field (each searches the memtables and a table block).
        let all: HashMap<Vec<u8>, Vec<u8>> = shared
            .store
            .versioned(SUB, &key, m.version)?
            .into_iter()
            .collect();
        return Ok(Reply::Array(
            fields
                .iter()
                .map(|f| Reply::opt(all.get(f.as_ref()).cloned()))
                .collect(),
        ));
    }
    let mut out = Vec::with_capacity(args.len());
    for f in fields {
        out.push(match &meta {
            Some(m) => Reply::opt(field(shared, &key, m, f)?),
            None => Reply::Null,
        });
    }
    Ok(Reply::Array(out))
}

pub fn hgetall(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let name = arg(args, 0);
    let key = arg(args, 1);
    let entries = match shared.store.meta_of(&key, Kind::Hash)? {
        Some(m) => shared.store.versioned(SUB, &key, m.version)?,
        None => Vec::new(),
    };
    Ok(if is(&name, "hkeys") {
        Reply::Array(entries.into_iter().map(|(f, _)| Reply::bulk(f)).collect())
    } else if is(&name, "hvals") {
        Reply::Array(entries.into_iter().map(|(_, v)| Reply::bulk(v)).collect())
    } else {
        Reply::Map(
            entries
                .into_iter()
                .map(|(f, v)| (Reply::bulk(f), Reply::bulk(v)))
                .collect(),
        )
    })
}

pub fn hdel(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let key = arg(args, 1);
    let _lock = shared.store.lock(&key);
    let Some(mut meta) = shared.store.meta_of(&key, Kind::Hash)? else {
        return Ok(Reply::Int(0));
    };
    let mut batch = WriteBatch::new();
    let mut removed = 0u64;
    let mut seen = std::collections::HashSet::new();
    for f in args.get(2..).unwrap_or_default() {
        if seen.insert(f) && field(shared, &key, &meta, f)?.is_some() {
            batch.delete(sub_key(&key, meta.version, f));
            removed += 1;
        }
    }
    if removed > 0 {
        meta.size = meta.size.saturating_sub(removed);
        if meta.size == 0 {
            batch.delete(crate::encoding::meta_key(&key));
        } else {
            Store::put_meta(&mut batch, &key, &meta);
        }
    }
    shared.store.write(batch)?;
    Ok(Reply::Int(i64::try_from(removed).unwrap_or(i64::MAX)))
}

pub fn hexists(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let key = arg(args, 1);
    let Some(meta) = shared.store.meta_of(&key, Kind::Hash)? else {
        return Ok(Reply::Int(0));
    };
    Ok(Reply::Int(i64::from(
        field(shared, &key, &meta, &arg(args, 2))?.is_some(),
    )))
}

pub fn hlen(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let size = shared
        .store
        .meta_of(&arg(args, 1), Kind::Hash)?
        .map_or(0, |m| m.size);
    Ok(Reply::Int(i64::try_from(size).unwrap_or(i64::MAX)))
}

pub fn hincrby(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let key = arg(args, 1);
    let f = arg(args, 2);
    let delta = parse_i64(&arg(args, 3))?;
    let _lock = shared.store.lock(&key);
    let (mut meta, existed) = hash_or_new(shared, &key, Kind::Hash)?;
    let old = if existed {
        field(shared, &key, &meta, &f)?
    } else {
        None
    };
    let current = match &old {
        Some(v) => std::str::from_utf8(v)
            .ok()
            .filter(|s| !s.starts_with('+') && !s.starts_with(' '))
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or_else(|| Reply::err("hash value is not an integer"))?,
        None => 0,
    };
    let new = current
        .checked_add(delta)
        .ok_or_else(|| Reply::err("increment or decrement would overflow"))?;
    let mut batch = WriteBatch::new();
    batch.put(sub_key(&key, meta.version, &f), new.to_string());
    if old.is_none() {
        meta.size += 1;
        Store::put_meta(&mut batch, &key, &meta);
    }
    shared.store.write(batch)?;
    Ok(Reply::Int(new))
}
