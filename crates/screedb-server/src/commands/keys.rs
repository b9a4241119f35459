//! Key-space commands: DEL, UNLINK, EXISTS, TYPE, EXPIRE and friends, TTL, PTTL, PERSIST,
//! SCAN, KEYS, DBSIZE, FLUSHDB.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use bytes::Bytes;
use screedb::{ReadOptions, WriteBatch};

use super::server::glob_match;
use super::{is, parse_i64, syntax_error};
use crate::encoding::{self, META};
use crate::reply::{OK, Reply};
use crate::store::{Res, Store, db_err, now_ms};
use crate::{Client, Shared};

/// Most SCAN cursors remembered at once; the oldest are forgotten first.
const MAX_CURSORS: usize = 16 << 10;

/// SCAN cursors: a number stands for the last key a SCAN returned (keys are arbitrary bytes,
/// and clients want an integer cursor).
#[derive(Debug, Default)]
pub(crate) struct ScanCursors {
    inner: Mutex<(u64, BTreeMap<u64, Vec<u8>>)>,
}

impl ScanCursors {
    fn save(&self, key: Vec<u8>) -> u64 {
        let mut g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        g.0 += 1;
        let id = g.0;
        g.1.insert(id, key);
        while g.1.len() > MAX_CURSORS {
            g.1.pop_first();
        }
        id
    }

    fn load(&self, id: u64) -> Option<Vec<u8>> {
        let g = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        g.1.get(&id).cloned()
    }
}

/// Number of live keys: a scan of the metadata keys (there is no maintained counter).
pub(crate) fn count_keys(shared: &Shared) -> Res<u64> {
    let now = now_ms();
    let mut n = 0;
    let end = [META + 1];
    for (_, v) in shared.store.range(&[META], Some(&end))? {
        if encoding::Meta::decode(v).is_some_and(|m| !m.expired(now)) {
            n += 1;
        }
    }
    Ok(n)
}

pub fn dbsize(shared: &Shared, _: &mut Client, _: &[Bytes]) -> Res<Reply> {
    Ok(Reply::Int(
        i64::try_from(count_keys(shared)?).unwrap_or(i64::MAX),
    ))
}

pub fn flushdb(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    if let Some(mode) = args.get(1)
        && !(is(mode, "sync") || is(mode, "async"))
    {
        return Err(syntax_error());
    }
    // Every key of every tag, deleted in batches of bounded size.
    let db = shared.store.db();
    let mut it = db.iter(&ReadOptions::default()).map_err(db_err)?;
    it.seek_to_first();
    let mut batch = WriteBatch::new();
    while it.valid() {
        batch.delete(it.key());
        if batch.count() >= 10_000 {
            shared.store.write(std::mem::take(&mut batch))?;
        }
        it.next();
    }
    it.status().map_err(db_err)?;
    shared.store.write(batch)?;
    Ok(OK)
}

pub fn del(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let keys = args.get(1..).unwrap_or_default();
    let _locks = shared.store.lock_keys(keys.iter().map(|k| k.as_ref()));
    let now = now_ms();
    let mut batch = WriteBatch::new();
    let mut deleted = 0;
    let mut seen = std::collections::HashSet::new();
    for key in keys {
        if !seen.insert(key) {
            continue;
        }
        if let Some(meta) = shared.store.meta_raw(key)? {
            // Subkeys of a hash or zset stay behind for the sweeper: one write whatever its size.
            batch.delete(encoding::meta_key(key));
            if !meta.expired(now) {
                deleted += 1;
            }
        }
    }
    shared.store.write(batch)?;
    Ok(Reply::Int(deleted))
}

pub fn exists(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let mut n = 0;
    for key in args.get(1..).unwrap_or_default() {
        if shared.store.meta(key)?.is_some() {
            n += 1;
        }
    }
    Ok(Reply::Int(n))
}

pub fn type_(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let key = args.get(1).cloned().unwrap_or_default();
    Ok(Reply::Simple(
        shared.store.meta(&key)?.map_or("none", |m| m.kind.name()),
    ))
}

pub fn expire(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let name = args.first().cloned().unwrap_or_default();
    let key = args.get(1).cloned().unwrap_or_default();
    let n = parse_i64(&args.get(2).cloned().unwrap_or_default())?;
    let now = now_ms();
    let invalid = || {
        Reply::err(format!(
            "invalid expire time in '{}' command",
            String::from_utf8_lossy(&name).to_lowercase()
        ))
    };
    let at: i64 = if is(&name, "expire") {
        n.checked_mul(1000)
            .and_then(|ms| ms.checked_add(now as i64))
            .ok_or_else(invalid)?
    } else if is(&name, "pexpire") {
        n.checked_add(now as i64).ok_or_else(invalid)?
    } else if is(&name, "expireat") {
        n.checked_mul(1000).ok_or_else(invalid)?
    } else {
        n
    };
    let (mut nx, mut xx, mut gt, mut lt) = (false, false, false, false);
    for opt in args.get(3..).unwrap_or_default() {
        match () {
            () if is(opt, "nx") => nx = true,
            () if is(opt, "xx") => xx = true,
            () if is(opt, "gt") => gt = true,
            () if is(opt, "lt") => lt = true,
            () => {
                return Err(Reply::err(format!(
                    "Unsupported option {}",
                    String::from_utf8_lossy(opt)
                )));
            }
        }
    }
    if nx && (xx || gt || lt) {
        return Err(Reply::err(
            "NX and XX, GT or LT options at the same time are not compatible",
        ));
    }
    if gt && lt {
        return Err(Reply::err(
            "GT and LT options at the same time are not compatible",
        ));
    }
    let _lock = shared.store.lock(&key);
    let Some(mut meta) = shared.store.meta(&key)? else {
        return Ok(Reply::Int(0));
    };
    let current = meta.expire_ms;
    // No expiry counts as an infinite TTL for GT and LT.
    let new = u64::try_from(at.max(1)).unwrap_or(1);
    let skip = (nx && current != 0)
        || (xx && current == 0)
        || (gt && (current == 0 || new <= current))
        || (lt && current != 0 && new >= current);
    if skip {
        return Ok(Reply::Int(0));
    }
    let mut batch = WriteBatch::new();
    if at <= now as i64 {
        batch.delete(encoding::meta_key(&key));
    } else {
        meta.expire_ms = new;
        Store::put_meta(&mut batch, &key, &meta);
    }
    shared.store.write(batch)?;
    Ok(Reply::Int(1))
}

pub fn ttl(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let ms = is(&args.first().cloned().unwrap_or_default(), "pttl");
    let key = args.get(1).cloned().unwrap_or_default();
    let Some(meta) = shared.store.meta(&key)? else {
        return Ok(Reply::Int(-2));
    };
    if meta.expire_ms == 0 {
        return Ok(Reply::Int(-1));
    }
    let left = i64::try_from(meta.expire_ms.saturating_sub(now_ms())).unwrap_or(i64::MAX);
    Ok(Reply::Int(if ms { left } else { (left + 500) / 1000 }))
}

pub fn persist(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let key = args.get(1).cloned().unwrap_or_default();
    let _lock = shared.store.lock(&key);
    match shared.store.meta(&key)? {
        Some(mut meta) if meta.expire_ms != 0 => {
            meta.expire_ms = 0;
            let mut batch = WriteBatch::new();
            Store::put_meta(&mut batch, &key, &meta);
            shared.store.write(batch)?;
            Ok(Reply::Int(1))
        }
        _ => Ok(Reply::Int(0)),
    }
}

/// Live keys after `after` (exclusive; `None`: from the start), looking at no more than `budget`
/// metadata entries. Returns the keys that pass the filters, and the last key looked at if the
/// scan should go on.
fn scan_keys(
    shared: &Shared,
    after: Option<&[u8]>,
    budget: usize,
    pattern: Option<&[u8]>,
    kind: Option<&[u8]>,
) -> Res<(Vec<Bytes>, Option<Vec<u8>>)> {
    let now = now_ms();
    let db = shared.store.db();
    let mut it = db.iter(&ReadOptions::default()).map_err(db_err)?;
    let start = match after {
        Some(k) => {
            let mut s = encoding::meta_key(k);
            s.push(0);
            s
        }
        None => vec![META],
    };
    it.seek(&start);
    let mut out = Vec::new();
    let mut looked = 0;
    let mut last = None;
    while it.valid() && it.key().first() == Some(&META) {
        if looked == budget {
            it.status().map_err(db_err)?;
            return Ok((out, last));
        }
        looked += 1;
        let user = it.key().get(1..).unwrap_or_default();
        if let Some(meta) = encoding::Meta::decode(it.value().to_vec())
            && !meta.expired(now)
            && pattern.is_none_or(|p| glob_match(p, user))
            && kind.is_none_or(|t| is(t, meta.kind.name()))
        {
            out.push(Bytes::copy_from_slice(user));
        }
        last = Some(user.to_vec());
        it.next();
    }
    it.status().map_err(db_err)?;
    Ok((out, None))
}

pub fn scan(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let cursor = std::str::from_utf8(args.get(1).map_or(&b""[..], |c| c.as_ref()))
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .ok_or_else(|| Reply::err("invalid cursor"))?;
    let (mut count, mut pattern, mut kind) = (10usize, None, None);
    let mut i = 2;
    while let Some(opt) = args.get(i) {
        let value = args.get(i + 1).ok_or_else(syntax_error)?;
        if is(opt, "count") {
            count = usize::try_from(parse_i64(value)?)
                .ok()
                .filter(|&c| c >= 1)
                .ok_or_else(syntax_error)?;
        } else if is(opt, "match") {
            pattern = Some(value.clone());
        } else if is(opt, "type") {
            kind = Some(value.clone());
        } else {
            return Err(syntax_error());
        }
        i += 2;
    }
    let after = match cursor {
        0 => None,
        id => Some(
            shared
                .scan_cursors
                .load(id)
                .ok_or_else(|| Reply::err("invalid cursor"))?,
        ),
    };
    let (keys, last) = scan_keys(
        shared,
        after.as_deref(),
        count,
        pattern.as_deref(),
        kind.as_deref(),
    )?;
    let next = last.map_or(0, |k| shared.scan_cursors.save(k));
    Ok(Reply::Array(vec![
        Reply::bulk(next.to_string()),
        Reply::Array(keys.into_iter().map(Reply::Bulk).collect()),
    ]))
}

pub fn keys(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let pattern = args.get(1).cloned().unwrap_or_default();
    let (keys, _) = scan_keys(shared, None, usize::MAX, Some(&pattern), None)?;
    Ok(Reply::Array(keys.into_iter().map(Reply::Bulk).collect()))
}
