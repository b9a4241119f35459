//! String commands: GET, SET, SETNX, SETEX, PSETEX, GETDEL, MGET, MSET, INCR, DECR, INCRBY,
//! DECRBY, APPEND, STRLEN.

use bytes::{Bytes, BytesMut};
use screedb::WriteBatch;

use super::{is, parse_i64, syntax_error, wrong_args};
use crate::encoding::{self, Kind};
use crate::reply::{OK, Reply};
use crate::store::{Res, Store, now_ms, wrongtype};
use crate::{Client, Shared};

fn arg(args: &[Bytes], i: usize) -> Bytes {
    args.get(i).cloned().unwrap_or_default()
}

pub fn get(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    Ok(Reply::opt(shared.store.get_string(&arg(args, 1))?))
}

fn invalid_expire(cmd: &str) -> Reply {
    Reply::err(format!("invalid expire time in '{cmd}' command"))
}

/// An absolute expiry in Unix ms from `EX`/`PX`/`EXAT`/`PXAT` and its argument.
fn expire_at(cmd: &str, unit: &[u8], n: &[u8]) -> Res<u64> {
    let n = parse_i64(n)?;
    if n <= 0 {
        return Err(invalid_expire(cmd));
    }
    let now = i64::try_from(now_ms()).unwrap_or(i64::MAX);
    let at = if is(unit, "ex") {
        n.checked_mul(1000).and_then(|ms| ms.checked_add(now))
    } else if is(unit, "px") {
        n.checked_add(now)
    } else if is(unit, "exat") {
        n.checked_mul(1000)
    } else {
        Some(n)
    };
    at.and_then(|a| u64::try_from(a).ok())
        .ok_or_else(|| invalid_expire(cmd))
}

pub fn set(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let (key, value) = (arg(args, 1), arg(args, 2));
    let (mut nx, mut xx, mut get, mut keepttl) = (false, false, false, false);
    let mut expire = None;
    let mut i = 3;
    while let Some(opt) = args.get(i) {
        if is(opt, "nx") && !xx {
            nx = true;
        } else if is(opt, "xx") && !nx {
            xx = true;
        } else if is(opt, "get") {
            get = true;
        } else if is(opt, "keepttl") && expire.is_none() {
            keepttl = true;
        } else if ["ex", "px", "exat", "pxat"].iter().any(|u| is(opt, u))
            && expire.is_none()
            && !keepttl
        {
            let n = args.get(i + 1).ok_or_else(syntax_error)?;
            expire = Some(expire_at("set", opt, n)?);
            i += 1;
        } else {
            return Err(syntax_error());
        }
        i += 1;
    }
    let _lock = shared.store.lock(&key);
    let old = if nx || xx || get || keepttl {
        shared.store.meta(&key)?
    } else {
        None
    };
    let old_value = match &old {
        Some(m) if get && m.kind != Kind::String => return Err(wrongtype()),
        Some(m) => Some(m.value.clone()),
        None => None,
    };
    if (nx && old.is_some()) || (xx && old.is_none()) {
        return Ok(if get {
            Reply::opt(old_value)
        } else {
            Reply::Null
        });
    }
    let ttl = match (&old, keepttl) {
        (Some(m), true) => m.expire_ms,
        _ => expire.unwrap_or(0),
    };
    let mut batch = WriteBatch::new();
    Store::put_string(&mut batch, &key, value, ttl);
    shared.store.write(batch)?;
    Ok(if get { Reply::opt(old_value) } else { OK })
}

pub fn setnx(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let key = arg(args, 1);
    let _lock = shared.store.lock(&key);
    if shared.store.meta(&key)?.is_some() {
        return Ok(Reply::Int(0));
    }
    let mut batch = WriteBatch::new();
    Store::put_string(&mut batch, &key, arg(args, 2), 0);
    shared.store.write(batch)?;
    Ok(Reply::Int(1))
}

pub fn setex(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let name = arg(args, 0);
    let cmd = if is(&name, "setex") {
        "setex"
    } else {
        "psetex"
    };
    let unit: &[u8] = if cmd == "setex" { b"ex" } else { b"px" };
    let at = expire_at(cmd, unit, &arg(args, 2))?;
    let key = arg(args, 1);
    let _lock = shared.store.lock(&key);
    let mut batch = WriteBatch::new();
    Store::put_string(&mut batch, &key, arg(args, 3), at);
    shared.store.write(batch)?;
    Ok(OK)
}

pub fn getdel(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let key = arg(args, 1);
    let _lock = shared.store.lock(&key);
    let Some(value) = shared.store.get_string(&key)? else {
        return Ok(Reply::Null);
    };
    let mut batch = WriteBatch::new();
    batch.delete(encoding::meta_key(&key));
    shared.store.write(batch)?;
    Ok(Reply::Bulk(value))
}

pub fn mget(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let keys: Vec<&[u8]> = args
        .get(1..)
        .unwrap_or_default()
        .iter()
        .map(|k| &k[..])
        .collect();
    let out = shared.store.metas(&keys)?.into_iter().map(|meta| {
        // A key of another type reads as nil, as in Redis.
        Reply::opt(meta.filter(|m| m.kind == Kind::String).map(|m| m.value))
    });
    Ok(Reply::Array(out.collect()))
}

pub fn mset(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let pairs = args.get(1..).unwrap_or_default();
    if pairs.len() % 2 != 0 {
        return Err(wrong_args("mset"));
    }
    let _locks = shared.store.lock_keys(
        pairs
            .chunks(2)
            .filter_map(|p| p.first())
            .map(|k| k.as_ref()),
    );
    let mut batch = WriteBatch::new();
    for pair in pairs.chunks(2) {
        if let [k, v] = pair {
            Store::put_string(&mut batch, k, v.clone(), 0);
        }
    }
    shared.store.write(batch)?;
    Ok(OK)
}

/// Plain `SET key value` requests a pipeline sent in a row (see [`super::is_plain_set`]),
/// written as MSET writes its pairs: one batch under the stripe locks of all their keys, a later
/// SET of a key after an earlier one.
pub fn set_run(shared: &Shared, sets: &[crate::resp::Request]) -> Res<()> {
    let _locks = shared
        .store
        .lock_keys(sets.iter().filter_map(|r| r.get(1)).map(|k| k.as_ref()));
    let mut batch = WriteBatch::new();
    for r in sets {
        if let [_, key, value] = r.as_slice() {
            Store::put_string(&mut batch, key, value.clone(), 0);
        }
    }
    shared.store.write(batch)
}

pub fn incr(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let name = arg(args, 0);
    let delta = if is(&name, "incr") {
        1
    } else if is(&name, "decr") {
        -1
    } else if is(&name, "incrby") {
        parse_i64(&arg(args, 2))?
    } else {
        parse_i64(&arg(args, 2))?
            .checked_neg()
            .ok_or_else(|| Reply::err("decrement would overflow"))?
    };
    let key = arg(args, 1);
    let _lock = shared.store.lock(&key);
    let old = shared.store.meta_of(&key, Kind::String)?;
    let (current, ttl) = match &old {
        Some(m) => {
            let n = std::str::from_utf8(&m.value)
                .ok()
                .filter(|s| s.len() <= 20 && !s.starts_with('+') && !s.starts_with(' '))
                .and_then(|s| s.parse::<i64>().ok())
                .ok_or_else(|| Reply::err("value is not an integer or out of range"))?;
            (n, m.expire_ms)
        }
        None => (0, 0),
    };
    let new = current
        .checked_add(delta)
        .ok_or_else(|| Reply::err("increment or decrement would overflow"))?;
    let mut batch = WriteBatch::new();
    Store::put_string(&mut batch, &key, Bytes::from(new.to_string()), ttl);
    shared.store.write(batch)?;
    Ok(Reply::Int(new))
}

pub fn append(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let key = arg(args, 1);
    let _lock = shared.store.lock(&key);
    let old = shared.store.meta_of(&key, Kind::String)?;
    let ttl = old.as_ref().map_or(0, |m| m.expire_ms);
    let mut value = BytesMut::from(old.map(|m| m.value).unwrap_or_default().as_ref());
    value.extend_from_slice(&arg(args, 2));
    let len = i64::try_from(value.len()).unwrap_or(i64::MAX);
    let mut batch = WriteBatch::new();
    Store::put_string(&mut batch, &key, value.freeze(), ttl);
    shared.store.write(batch)?;
    Ok(Reply::Int(len))
}

pub fn strlen(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let len = shared
        .store
        .get_string(&arg(args, 1))?
        .map_or(0, |v| v.len());
    Ok(Reply::Int(i64::try_from(len).unwrap_or(i64::MAX)))
}
