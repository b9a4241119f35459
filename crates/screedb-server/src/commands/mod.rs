//! The command table and dispatch: name lookup (case-insensitive), arity, authentication, and
//! the per-command counters behind INFO commandstats.

mod hash;
mod keys;
mod server;
mod strings;
mod zset;

pub(crate) use keys::ScanCursors;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bytes::Bytes;

use crate::encoding::Kind;
use crate::reply::Reply;
use crate::store::{Res, wrongtype};
use crate::{Client, Shared};

/// A command handler: `args[0]` is the command name.
type Handler = fn(&Shared, &mut Client, &[Bytes]) -> Res<Reply>;

/// One command of the table (what COMMAND reports).
#[derive(Debug)]
pub struct Spec {
    /// Lower-case name.
    pub name: &'static str,
    /// Redis arity: `n` exactly n arguments (name included), `-n` at least n.
    pub arity: i64,
    /// Flags COMMAND reports (`write`, `readonly`, `fast`, ...).
    pub flags: &'static [&'static str],
    /// Position of the first key, 0 if none.
    pub first_key: i64,
    /// Position of the last key (-1: the last argument).
    pub last_key: i64,
    /// Step between keys.
    pub step: i64,
    handler: Handler,
}

const fn spec(
    name: &'static str,
    arity: i64,
    flags: &'static [&'static str],
    keys: (i64, i64, i64),
    handler: Handler,
) -> Spec {
    Spec {
        name,
        arity,
        flags,
        first_key: keys.0,
        last_key: keys.1,
        step: keys.2,
        handler,
    }
}

const W: &[&str] = &["write"];
const WF: &[&str] = &["write", "fast"];
const R: &[&str] = &["readonly"];
const RF: &[&str] = &["readonly", "fast"];
const ADMIN: &[&str] = &["admin", "noscript"];
const CONN: &[&str] = &["fast", "noscript", "loading", "stale", "no_auth"];
const NONE: (i64, i64, i64) = (0, 0, 0);
const K1: (i64, i64, i64) = (1, 1, 1);
const KALL: (i64, i64, i64) = (1, -1, 1);

/// Every command the server knows.
pub static COMMANDS: &[Spec] = &[
    spec("ping", -1, CONN, NONE, server::ping),
    spec("echo", 2, CONN, NONE, server::echo),
    spec("hello", -1, CONN, NONE, server::hello),
    spec("auth", -2, CONN, NONE, server::auth),
    spec("select", 2, CONN, NONE, server::select),
    spec("quit", -1, CONN, NONE, server::quit),
    spec("reset", 1, CONN, NONE, server::reset),
    spec("client", -2, CONN, NONE, server::client),
    spec("command", -1, &["loading", "stale"], NONE, server::command),
    spec("config", -2, ADMIN, NONE, server::config),
    spec("info", -1, &["loading", "stale"], NONE, server::info),
    spec("dbsize", 1, R, NONE, keys::dbsize),
    spec("flushdb", -1, W, NONE, keys::flushdb),
    spec("flushall", -1, W, NONE, keys::flushdb),
    spec("shutdown", -1, ADMIN, NONE, server::shutdown),
    spec("get", 2, RF, K1, strings::get),
    spec("set", -3, W, K1, strings::set),
    spec("setnx", 3, WF, K1, strings::setnx),
    spec("setex", 4, W, K1, strings::setex),
    spec("psetex", 4, W, K1, strings::setex),
    spec("getdel", 2, WF, K1, strings::getdel),
    spec("mget", -2, RF, KALL, strings::mget),
    spec("mset", -3, W, (1, -1, 2), strings::mset),
    spec("incr", 2, WF, K1, strings::incr),
    spec("decr", 2, WF, K1, strings::incr),
    spec("incrby", 3, WF, K1, strings::incr),
    spec("decrby", 3, WF, K1, strings::incr),
    spec("append", 3, W, K1, strings::append),
    spec("strlen", 2, RF, K1, strings::strlen),
    spec("del", -2, W, KALL, keys::del),
    spec("unlink", -2, WF, KALL, keys::del),
    spec("exists", -2, RF, KALL, keys::exists),
    spec("type", 2, RF, K1, keys::type_),
    spec("expire", -3, WF, K1, keys::expire),
    spec("pexpire", -3, WF, K1, keys::expire),
    spec("expireat", -3, WF, K1, keys::expire),
    spec("pexpireat", -3, WF, K1, keys::expire),
    spec("ttl", 2, RF, K1, keys::ttl),
    spec("pttl", 2, RF, K1, keys::ttl),
    spec("persist", 2, WF, K1, keys::persist),
    spec("scan", -2, R, NONE, keys::scan),
    spec("keys", 2, R, NONE, keys::keys),
    spec("hset", -4, WF, K1, hash::hset),
    spec("hmset", -4, WF, K1, hash::hset),
    spec("hget", 3, RF, K1, hash::hget),
    spec("hmget", -3, RF, K1, hash::hmget),
    spec("hgetall", 2, R, K1, hash::hgetall),
    spec("hkeys", 2, R, K1, hash::hgetall),
    spec("hvals", 2, R, K1, hash::hgetall),
    spec("hdel", -3, WF, K1, hash::hdel),
    spec("hexists", 3, RF, K1, hash::hexists),
    spec("hlen", 2, RF, K1, hash::hlen),
    spec("hincrby", 4, WF, K1, hash::hincrby),
    spec("zadd", -4, WF, K1, zset::zadd),
    spec("zrem", -3, WF, K1, zset::zrem),
    spec("zscore", 3, RF, K1, zset::zscore),
    spec("zcard", 2, RF, K1, zset::zcard),
    spec("zrange", -4, R, K1, zset::zrange),
    spec("zrangebyscore", -4, R, K1, zset::zrangebyscore),
];

/// Per-command calls, microseconds and failed calls, for INFO commandstats.
#[derive(Debug, Default)]
pub struct CommandStats {
    /// calls, usec, failed — one triple per entry of [`COMMANDS`].
    counters: Vec<[AtomicU64; 3]>,
    index: HashMap<&'static str, usize>,
}

impl CommandStats {
    /// Counters for every command of the table, at zero.
    pub fn new() -> CommandStats {
        CommandStats {
            counters: COMMANDS.iter().map(|_| Default::default()).collect(),
            index: COMMANDS
                .iter()
                .enumerate()
                .map(|(i, c)| (c.name, i))
                .collect(),
        }
    }

    /// `(name, calls, usec, failed)` of every command called at least once.
    pub fn rows(&self) -> Vec<(&'static str, u64, u64, u64)> {
        COMMANDS
            .iter()
            .zip(&self.counters)
            .map(|(c, [calls, usec, failed])| {
                let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
                (c.name, l(calls), l(usec), l(failed))
            })
            .filter(|r| r.1 > 0)
            .collect()
    }

    /// Total calls.
    pub fn total_calls(&self) -> u64 {
        self.counters
            .iter()
            .map(|c| c[0].load(Ordering::Relaxed))
            .sum()
    }
}

/// The table entry for `name` (any case).
pub fn lookup(stats: &CommandStats, name: &[u8]) -> Option<(usize, &'static Spec)> {
    if name.len() > 32 {
        return None;
    }
    let mut lower = [0u8; 32];
    let lower = lower.get_mut(..name.len())?;
    lower.copy_from_slice(name);
    lower.make_ascii_lowercase();
    let name = std::str::from_utf8(lower).ok()?;
    let &i = stats.index.get(name)?;
    Some((i, COMMANDS.get(i)?))
}

fn unknown_command(args: &[Bytes]) -> Reply {
    let show = |b: &Bytes| {
        let s = String::from_utf8_lossy(b);
        s.chars().take(128).collect::<String>()
    };
    let mut msg = format!(
        "unknown command '{}', with args beginning with: ",
        args.first().map(show).unwrap_or_default()
    );
    for a in args.iter().skip(1).take(16) {
        msg.push_str(&format!("'{}' ", show(a)));
    }
    Reply::err(msg)
}

/// Arity error in Redis's words.
pub fn wrong_args(name: &str) -> Reply {
    Reply::err(format!("wrong number of arguments for '{name}' command"))
}

/// Runs one request and returns its reply.
pub fn execute(shared: &Shared, client: &mut Client, args: &[Bytes]) -> Reply {
    let Some(name) = args.first() else {
        return Reply::err("empty command");
    };
    let Some((i, spec)) = lookup(&shared.command_stats, name) else {
        return unknown_command(args);
    };
    let n = i64::try_from(args.len()).unwrap_or(i64::MAX);
    if (spec.arity > 0 && n != spec.arity) || n < -spec.arity {
        return wrong_args(spec.name);
    }
    if !client.authenticated && !spec.flags.contains(&"no_auth") {
        return Reply::Error("NOAUTH Authentication required.".to_string());
    }
    let start = Instant::now();
    let reply = (spec.handler)(shared, client, args).unwrap_or_else(|e| e);
    let usec = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
    if let Some([calls, us, failed]) = shared.command_stats.counters.get(i) {
        calls.fetch_add(1, Ordering::Relaxed);
        us.fetch_add(usec, Ordering::Relaxed);
        if reply.is_error() {
            failed.fetch_add(1, Ordering::Relaxed);
        }
    }
    reply
}

/// True if `request` names a command that writes (flag `write`): with `--sync always` it waits
/// for an fsync.
pub fn writes(shared: &Shared, request: &[Bytes]) -> bool {
    request
        .first()
        .and_then(|name| lookup(&shared.command_stats, name))
        .is_some_and(|(_, spec)| spec.flags.contains(&"write"))
}

/// Largest key plus value a SET may have to join a run of SETs written as one batch
/// ([`execute_set_run`]); a larger one runs on its own (and meets the engine's limits alone).
const SET_RUN_MAX_ENTRY: usize = 64 << 10;

/// True for `SET key value` with no option, from a client that may write, and small enough to
/// join a run of SETs written as one batch.
pub fn is_plain_set(client: &Client, request: &[Bytes]) -> bool {
    matches!(request, [name, key, value]
        if name.eq_ignore_ascii_case(b"set")
            && key.len() + value.len() <= SET_RUN_MAX_ENTRY)
        && client.authenticated
}

/// Runs plain SETs a pipeline sent in a row ([`is_plain_set`]) as one engine write instead of
/// one each: in a pipeline of sixteen SETs, one group-commit entry instead of sixteen. Every
/// SET gets the returned reply; INFO counts each as a SET call.
pub fn execute_set_run(shared: &Shared, sets: &[crate::resp::Request]) -> Reply {
    let start = Instant::now();
    let reply = strings::set_run(shared, sets).map_or_else(|e| e, |()| crate::reply::OK);
    let n = sets.len() as u64;
    count_run(
        shared,
        b"set",
        n,
        start,
        if reply.is_error() { n } else { 0 },
    );
    reply
}

/// True for `GET key` from a client that may read: GETs a pipeline sends in a row are read
/// together ([`execute_get_run`]).
pub fn is_plain_get(client: &Client, request: &[Bytes]) -> bool {
    matches!(request, [name, _] if name.eq_ignore_ascii_case(b"get")) && client.authenticated
}

/// Runs plain GETs a pipeline sent in a row ([`is_plain_get`]) as one engine multi-get, whose
/// memtable lookups overlap their cache misses, and returns each GET's reply in order. INFO
/// counts each as a GET call.
pub fn execute_get_run(shared: &Shared, gets: &[crate::resp::Request]) -> Vec<Reply> {
    let start = Instant::now();
    let keys: Vec<&[u8]> = gets
        .iter()
        .map(|r| r.get(1).map_or(&[][..], |k| &k[..]))
        .collect();
    let replies: Vec<Reply> = match shared.store.metas(&keys) {
        Ok(metas) => metas
            .into_iter()
            .map(|meta| match meta {
                Some(m) if m.kind != Kind::String => wrongtype(),
                other => Reply::opt(other.map(|m| m.value)),
            })
            .collect(),
        Err(e) => vec![e; gets.len()],
    };
    let failed = replies.iter().filter(|r| r.is_error()).count() as u64;
    count_run(shared, b"get", gets.len() as u64, start, failed);
    replies
}

/// Adds a run of `n` calls of command `name` that started at `start`, `failed` of them with an
/// error, to INFO commandstats.
fn count_run(shared: &Shared, name: &[u8], n: u64, start: Instant, failed: u64) {
    let usec = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
    if let Some((i, _)) = lookup(&shared.command_stats, name)
        && let Some([calls, us, failures]) = shared.command_stats.counters.get(i)
    {
        calls.fetch_add(n, Ordering::Relaxed);
        us.fetch_add(usec, Ordering::Relaxed);
        failures.fetch_add(failed, Ordering::Relaxed);
    }
}

/// Parses an integer argument as Redis does (`value is not an integer or out of range`).
pub fn parse_i64(b: &[u8]) -> Res<i64> {
    std::str::from_utf8(b)
        .ok()
        .filter(|s| !(s.starts_with('+') || (s.len() > 1 && s.starts_with('0'))))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| Reply::err("value is not an integer or out of range"))
}

/// Parses a float argument (`value is not a valid float`); accepts `inf`, `+inf`, `-inf`.
pub fn parse_f64(b: &[u8]) -> Res<f64> {
    let s = std::str::from_utf8(b).map_err(|_| Reply::err("value is not a valid float"))?;
    let f = match s.to_ascii_lowercase().as_str() {
        "inf" | "+inf" | "infinity" | "+infinity" => f64::INFINITY,
        "-inf" | "-infinity" => f64::NEG_INFINITY,
        other if other.contains("inf") || other.contains("nan") => {
            return Err(Reply::err("value is not a valid float"));
        }
        _ => s
            .trim()
            .eq(s)
            .then(|| s.parse::<f64>().ok())
            .flatten()
            .ok_or_else(|| Reply::err("value is not a valid float"))?,
    };
    if f.is_nan() {
        return Err(Reply::err("value is not a valid float"));
    }
    Ok(f)
}

/// The syntax error reply.
pub fn syntax_error() -> Reply {
    Reply::err("syntax error")
}

/// `arg` equals `word`, ignoring ASCII case.
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}
