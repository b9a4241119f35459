//! Sorted-set commands as YCSB uses them: ZADD, ZREM, ZSCORE, ZCARD, ZRANGE, ZRANGEBYSCORE.
//!
//! A member is a subkey holding its score, plus an entry in the score index (`encoding`), so
//! ZRANGEBYSCORE is one seek and a walk.

use bytes::Bytes;
use screedb::{ReadOptions, WriteBatch};

use super::hash::hash_or_new;
use super::{is, parse_f64, parse_i64, syntax_error};
use crate::encoding::{
    Kind, Meta, SCORE, decode_score_value, meta_key, score_bits, score_from_bits, score_key,
    sub_key, versioned_prefix,
};
use crate::reply::Reply;
use crate::store::{Res, Store, db_err};
use crate::{Client, Shared};

fn arg(args: &[Bytes], i: usize) -> Bytes {
    args.get(i).cloned().unwrap_or_default()
}

fn score_of(shared: &Shared, key: &[u8], meta: &Meta, member: &[u8]) -> Res<Option<f64>> {
    let raw = shared
        .store
        .db()
        .get(sub_key(key, meta.version, member))
        .map_err(db_err)?;
    Ok(raw.and_then(|v| decode_score_value(&v)))
}

pub fn zadd(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let key = arg(args, 1);
    let (mut nx, mut xx, mut gt, mut lt, mut ch, mut incr) =
        (false, false, false, false, false, false);
    let mut i = 2;
    while let Some(opt) = args.get(i) {
        match () {
            () if is(opt, "nx") => nx = true,
            () if is(opt, "xx") => xx = true,
            () if is(opt, "gt") => gt = true,
            () if is(opt, "lt") => lt = true,
            () if is(opt, "ch") => ch = true,
            () if is(opt, "incr") => incr = true,
            () => break,
        }
        i += 1;
    }
    let pairs = args.get(i..).unwrap_or_default();
    if pairs.is_empty() || pairs.len() % 2 != 0 {
        return Err(syntax_error());
    }
    if nx && xx {
        return Err(Reply::err(
            "XX and NX options at the same time are not compatible",
        ));
    }
    if (gt && lt) || (nx && (gt || lt)) {
        return Err(Reply::err(
            "GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if incr && pairs.len() != 2 {
        return Err(Reply::err(
            "INCR option supports a single increment-element pair",
        ));
    }
    let mut parsed = Vec::with_capacity(pairs.len() / 2);
    for pair in pairs.chunks(2) {
        if let [s, m] = pair {
            parsed.push((parse_f64(s)?, m.clone()));
        }
    }
    let _lock = shared.store.lock(&key);
    let (mut meta, existed) = hash_or_new(shared, &key, Kind::Zset)?;
    let mut batch = WriteBatch::new();
    let (mut added, mut changed) = (0u64, 0u64);
    let mut pending: std::collections::HashMap<Bytes, Option<f64>> = Default::default();
    let mut incr_result = None;
    for (score, member) in parsed {
        let old = match pending.get(&member) {
            Some(s) => *s,
            None if existed => score_of(shared, &key, &meta, &member)?,
            None => None,
        };
        let mut new = score;
        if incr {
            new = old.unwrap_or(0.0) + score;
            if new.is_nan() {
                return Err(Reply::err("resulting score is not a number (NaN)"));
            }
        }
        let skip = (nx && old.is_some())
            || (xx && old.is_none())
            || old.is_some_and(|o| (gt && new <= o) || (lt && new >= o));
        if skip {
            continue;
        }
        incr_result = Some(new);
        match old {
            Some(o) if o == new => {}
            Some(o) => {
                batch.delete(score_key(&key, meta.version, o, &member));
                changed += 1;
            }
            None => added += 1,
        }
        if old != Some(new) {
            batch.put(
                sub_key(&key, meta.version, &member),
                new.to_bits().to_le_bytes(),
            );
            batch.put(score_key(&key, meta.version, new, &member), []);
        }
        pending.insert(member, Some(new));
    }
    if added > 0 {
        meta.size += added;
        Store::put_meta(&mut batch, &key, &meta);
    }
    shared.store.write(batch)?;
    if incr {
        return Ok(incr_result.map_or(Reply::Null, Reply::Double));
    }
    let n = if ch { added + changed } else { added };
    Ok(Reply::Int(i64::try_from(n).unwrap_or(i64::MAX)))
}

pub fn zrem(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let key = arg(args, 1);
    let _lock = shared.store.lock(&key);
    let Some(mut meta) = shared.store.meta_of(&key, Kind::Zset)? else {
        return Ok(Reply::Int(0));
    };
    let mut batch = WriteBatch::new();
    let mut removed = 0u64;
    let mut seen = std::collections::HashSet::new();
    for member in args.get(2..).unwrap_or_default() {
        if !seen.insert(member) {
            continue;
        }
        if let Some(score) = score_of(shared, &key, &meta, member)? {
            batch.delete(sub_key(&key, meta.version, member));
            batch.delete(score_key(&key, meta.version, score, member));
            removed += 1;
        }
    }
    if removed > 0 {
        meta.size = meta.size.saturating_sub(removed);
        if meta.size == 0 {
            batch.delete(meta_key(&key));
        } else {
            Store::put_meta(&mut batch, &key, &meta);
        }
    }
    shared.store.write(batch)?;
    Ok(Reply::Int(i64::try_from(removed).unwrap_or(i64::MAX)))
}

pub fn zscore(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let key = arg(args, 1);
    let Some(meta) = shared.store.meta_of(&key, Kind::Zset)? else {
        return Ok(Reply::Null);
    };
    Ok(score_of(shared, &key, &meta, &arg(args, 2))?.map_or(Reply::Null, Reply::Double))
}

pub fn zcard(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let size = shared
        .store
        .meta_of(&arg(args, 1), Kind::Zset)?
        .map_or(0, |m| m.size);
    Ok(Reply::Int(i64::try_from(size).unwrap_or(i64::MAX)))
}

/// Walks the score index of `key` from `min` upwards: skips `offset` entries, then collects
/// `(member, score)` while `keep(score)` and fewer than `limit`.
fn walk(
    shared: &Shared,
    key: &[u8],
    meta: &Meta,
    (min, min_exclusive): (f64, bool),
    offset: usize,
    limit: usize,
    keep: impl Fn(f64) -> bool,
) -> Res<Vec<(Vec<u8>, f64)>> {
    let prefix = versioned_prefix(SCORE, key, meta.version);
    let mut start = prefix.clone();
    start.extend_from_slice(&score_bits(min).to_be_bytes());
    let mut it = shared
        .store
        .db()
        .iter(&ReadOptions::default())
        .map_err(db_err)?;
    it.seek(&start);
    let mut out = Vec::new();
    let mut skipped = 0;
    while it.valid() && out.len() < limit {
        let Some(rest) = it.key().strip_prefix(prefix.as_slice()) else {
            break;
        };
        let (Some(bits), Some(member)) = (rest.get(..8), rest.get(8..)) else {
            break;
        };
        let score = score_from_bits(u64::from_be_bytes(bits.try_into().unwrap_or([0; 8])));
        if !keep(score) {
            break;
        }
        if min_exclusive && score <= min {
            // below the bound
        } else if skipped < offset {
            skipped += 1;
        } else {
            out.push((member.to_vec(), score));
        }
        it.next();
    }
    it.status().map_err(db_err)?;
    Ok(out)
}

fn range_reply(items: Vec<(Vec<u8>, f64)>, with_scores: bool, proto: u8) -> Reply {
    if !with_scores {
        return Reply::Array(items.into_iter().map(|(m, _)| Reply::bulk(m)).collect());
    }
    if proto >= 3 {
        Reply::Array(
            items
                .into_iter()
                .map(|(m, s)| Reply::Array(vec![Reply::bulk(m), Reply::Double(s)]))
                .collect(),
        )
    } else {
        Reply::Array(
            items
                .into_iter()
                .flat_map(|(m, s)| [Reply::bulk(m), Reply::Double(s)])
                .collect(),
        )
    }
}

pub fn zrange(shared: &Shared, client: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let key = arg(args, 1);
    let (start, stop) = (parse_i64(&arg(args, 2))?, parse_i64(&arg(args, 3))?);
    let mut with_scores = false;
    for opt in args.get(4..).unwrap_or_default() {
        if is(opt, "withscores") {
            with_scores = true;
        } else {
            return Err(syntax_error());
        }
    }
    let Some(meta) = shared.store.meta_of(&key, Kind::Zset)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let size = i64::try_from(meta.size).unwrap_or(i64::MAX);
    // As Redis: negative indices count from the end; a start before the first element is 0, a
    // stop before it makes the range empty.
    let from_end = |i: i64| if i < 0 { size.saturating_add(i) } else { i };
    let (start, stop) = (from_end(start).max(0), from_end(stop).min(size - 1));
    if start > stop || start >= size {
        return Ok(Reply::Array(Vec::new()));
    }
    let offset = usize::try_from(start).unwrap_or(0);
    let limit = usize::try_from(stop - start + 1).unwrap_or(0);
    let items = walk(
        shared,
        &key,
        &meta,
        (f64::NEG_INFINITY, false),
        offset,
        limit,
        |_| true,
    )?;
    Ok(range_reply(items, with_scores, client.proto))
}

/// A ZRANGEBYSCORE bound: `(1.5` is exclusive; `-inf`, `+inf`.
fn parse_bound(b: &[u8]) -> Res<(f64, bool)> {
    let err = || Reply::err("min or max is not a float");
    match b.strip_prefix(b"(") {
        Some(rest) => Ok((parse_f64(rest).map_err(|_| err())?, true)),
        None => Ok((parse_f64(b).map_err(|_| err())?, false)),
    }
}

pub fn zrangebyscore(shared: &Shared, client: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let key = arg(args, 1);
    let (min, min_ex) = parse_bound(&arg(args, 2))?;
    let (max, max_ex) = parse_bound(&arg(args, 3))?;
    let (mut with_scores, mut offset, mut limit) = (false, 0usize, usize::MAX);
    let mut i = 4;
    while let Some(opt) = args.get(i) {
        if is(opt, "withscores") {
            with_scores = true;
            i += 1;
        } else if is(opt, "limit") {
            let (Some(o), Some(c)) = (args.get(i + 1), args.get(i + 2)) else {
                return Err(syntax_error());
            };
            let (o, c) = (parse_i64(o)?, parse_i64(c)?);
            if o < 0 {
                return Ok(Reply::Array(Vec::new()));
            }
            offset = usize::try_from(o).unwrap_or(usize::MAX);
            limit = usize::try_from(c).unwrap_or(usize::MAX);
            i += 3;
        } else {
            return Err(syntax_error());
        }
    }
    let Some(meta) = shared.store.meta_of(&key, Kind::Zset)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let keep = |s: f64| if max_ex { s < max } else { s <= max };
    let items = walk(shared, &key, &meta, (min, min_ex), offset, limit, keep)?;
    Ok(range_reply(items, with_scores, client.proto))
}
