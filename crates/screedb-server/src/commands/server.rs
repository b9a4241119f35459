//! Connection and server commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET, CLIENT,
//! COMMAND, CONFIG GET, INFO, SHUTDOWN.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::{COMMANDS, Spec, is, parse_i64, syntax_error, wrong_args};
use crate::reply::{OK, Reply};
use crate::store::Res;
use crate::{Client, Shared, client_count, encoding};

/// The Redis version reported to clients (what they check features against).
pub const REDIS_VERSION: &str = "7.0.0";

pub fn ping(_: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    match args {
        [_] => Ok(Reply::Simple("PONG")),
        [_, msg] => Ok(Reply::Bulk(msg.clone())),
        _ => Err(wrong_args("ping")),
    }
}

pub fn echo(_: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    Ok(Reply::Bulk(args.get(1).cloned().unwrap_or_default()))
}

/// Compares in time that depends only on the lengths, never on where the bytes differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for (i, x) in a.iter().enumerate() {
        // Compare against b cyclically so the work is the same whatever b's length.
        let y = b.get(i % b.len().max(1)).copied().unwrap_or(0);
        diff |= x ^ y;
    }
    diff == 0
}

fn check_password(
    shared: &Shared,
    client: &mut Client,
    user: Option<&[u8]>,
    pass: &[u8],
) -> Res<()> {
    let Some(expected) = &shared.config.requirepass else {
        return Err(Reply::err(
            "AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?",
        ));
    };
    let user_ok = user.is_none_or(|u| u == b"default");
    if constant_time_eq(pass, expected.as_bytes()) && user_ok {
        client.authenticated = true;
        Ok(())
    } else {
        Err(Reply::Error(
            "WRONGPASS invalid username-password pair or user is disabled.".to_string(),
        ))
    }
}

pub fn auth(shared: &Shared, client: &mut Client, args: &[Bytes]) -> Res<Reply> {
    match args {
        [_, pass] => check_password(shared, client, None, pass)?,
        [_, user, pass] => check_password(shared, client, Some(user), pass)?,
        _ => return Err(syntax_error()),
    }
    Ok(OK)
}

pub fn hello(shared: &Shared, client: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let mut proto = client.proto;
    if let Some(v) = args.get(1) {
        proto = match parse_i64(v) {
            Ok(2) => 2,
            Ok(3) => 3,
            Ok(_) => return Err(Reply::Error("NOPROTO unsupported protocol version".into())),
            Err(_) => {
                return Err(Reply::err(
                    "Protocol version is not an integer or out of range",
                ));
            }
        };
    }
    let mut i = 2;
    while let Some(opt) = args.get(i) {
        if is(opt, "auth") {
            let (Some(user), Some(pass)) = (args.get(i + 1), args.get(i + 2)) else {
                return Err(syntax_error());
            };
            check_password(shared, client, Some(user), pass)?;
            i += 3;
        } else if is(opt, "setname") {
            let Some(name) = args.get(i + 1) else {
                return Err(syntax_error());
            };
            client.name = Some(name.clone());
            i += 2;
        } else {
            return Err(Reply::err(format!(
                "Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    if !client.authenticated {
        return Err(Reply::Error(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the \
             HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and \
             select the RESP protocol version at the same time"
                .to_string(),
        ));
    }
    client.proto = proto;
    let s = |t: &'static str| Reply::bulk(t);
    Ok(Reply::Map(vec![
        (s("server"), s("redis")),
        (s("version"), s(REDIS_VERSION)),
        (s("proto"), Reply::Int(i64::from(proto))),
        (s("id"), Reply::Int(i64::try_from(client.id).unwrap_or(0))),
        (s("mode"), s("standalone")),
        (s("role"), s("master")),
        (s("modules"), Reply::Array(Vec::new())),
    ]))
}

pub fn select(_: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    match args.get(1).map(|a| parse_i64(a)) {
        Some(Ok(0)) => Ok(OK),
        Some(Ok(_)) => Err(Reply::err("DB index is out of range")),
        _ => Err(Reply::err("value is not an integer or out of range")),
    }
}

pub fn quit(_: &Shared, client: &mut Client, _: &[Bytes]) -> Res<Reply> {
    client.quit = true;
    Ok(OK)
}

pub fn reset(shared: &Shared, client: &mut Client, _: &[Bytes]) -> Res<Reply> {
    client.proto = 2;
    client.name = None;
    client.authenticated = shared.config.requirepass.is_none();
    Ok(Reply::Simple("RESET"))
}

pub fn client(shared: &Shared, client: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let sub = args.get(1).cloned().unwrap_or_default();
    if is(&sub, "setname") && args.len() == 3 {
        client.name = args.get(2).cloned().filter(|n| !n.is_empty());
        Ok(OK)
    } else if is(&sub, "getname") {
        Ok(Reply::opt(client.name.clone()))
    } else if is(&sub, "id") {
        Ok(Reply::Int(i64::try_from(client.id).unwrap_or(0)))
    } else if is(&sub, "setinfo") && args.len() == 4 {
        Ok(OK)
    } else if is(&sub, "info") || is(&sub, "list") {
        let name = client.name.as_deref().map(String::from_utf8_lossy);
        let mut line = format!(
            "id={} name={} db=0 resp={}\n",
            client.id,
            name.unwrap_or_default(),
            client.proto
        );
        if is(&sub, "list") {
            let _ = write!(line, "# {} clients connected", client_count(shared));
            line.push('\n');
        }
        Ok(Reply::Verbatim(line))
    } else {
        Err(Reply::err(format!(
            "unknown subcommand '{}'. Try CLIENT HELP.",
            String::from_utf8_lossy(&sub)
        )))
    }
}

fn command_entry(c: &Spec) -> Reply {
    Reply::Array(vec![
        Reply::bulk(c.name),
        Reply::Int(c.arity),
        Reply::Set(c.flags.iter().map(|f| Reply::Simple(f)).collect()),
        Reply::Int(c.first_key),
        Reply::Int(c.last_key),
        Reply::Int(c.step),
        Reply::Set(Vec::new()),
        Reply::Set(Vec::new()),
        Reply::Array(Vec::new()),
        Reply::Array(Vec::new()),
    ])
}

pub fn command(_: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let Some(sub) = args.get(1) else {
        return Ok(Reply::Array(COMMANDS.iter().map(command_entry).collect()));
    };
    let find = |name: &Bytes| COMMANDS.iter().find(|c| is(name, c.name));
    if is(sub, "count") {
        Ok(Reply::Int(i64::try_from(COMMANDS.len()).unwrap_or(0)))
    } else if is(sub, "info") {
        Ok(Reply::Array(
            args.iter()
                .skip(2)
                .map(|n| find(n).map_or(Reply::NullArray, command_entry))
                .collect(),
        ))
    } else if is(sub, "docs") {
        // No documentation to give: an empty map (redis-cli then uses its built-in hints).
        Ok(Reply::Map(Vec::new()))
    } else if is(sub, "list") {
        Ok(Reply::Array(
            COMMANDS.iter().map(|c| Reply::bulk(c.name)).collect(),
        ))
    } else {
        Err(Reply::err(format!(
            "unknown subcommand '{}'. Try COMMAND HELP.",
            String::from_utf8_lossy(sub)
        )))
    }
}

/// Redis-style glob matching (`*`, `?`, `[...]`, `\x`), used by CONFIG GET, KEYS and SCAN.
pub fn glob_match(pattern: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0, 0);
    let (mut star_p, mut star_i) = (None, 0);
    while i < s.len() {
        let c = s.get(i).copied();
        let matched = match pattern.get(p) {
            Some(b'*') => {
                star_p = Some(p);
                star_i = i;
                p += 1;
                continue;
            }
            Some(b'?') => Some(p + 1),
            Some(b'[') => match_class(pattern, p, c),
            Some(b'\\') if pattern.get(p + 1).is_some() => {
                (pattern.get(p + 1).copied() == c).then_some(p + 2)
            }
            Some(&x) => (Some(x) == c).then_some(p + 1),
            None => None,
        };
        match matched {
            Some(next) => {
                p = next;
                i += 1;
            }
            None => match star_p {
                Some(sp) => {
                    p = sp + 1;
                    star_i += 1;
                    i = star_i;
                }
                None => return false,
            },
        }
    }
    pattern
        .get(p..)
        .unwrap_or_default()
        .iter()
        .all(|&b| b == b'*')
}

/// Matches `c` against the class starting at `pattern[p] == '['`; the position after it.
fn match_class(pattern: &[u8], p: usize, c: Option<u8>) -> Option<usize> {
    let c = c?;
    let mut j = p + 1;
    let negate = pattern.get(j) == Some(&b'^');
    if negate {
        j += 1;
    }
    let mut found = false;
    loop {
        match pattern.get(j) {
            None => break,
            Some(b']') => break,
            Some(b'\\') => {
                found |= pattern.get(j + 1) == Some(&c);
                j += 2;
            }
            Some(&lo)
                if pattern.get(j + 1) == Some(&b'-')
                    && pattern.get(j + 2).is_some_and(|&h| h != b']') =>
            {
                let hi = pattern.get(j + 2).copied().unwrap_or(lo);
                let (lo, hi) = if lo <= hi { (lo, hi) } else { (hi, lo) };
                found |= (lo..=hi).contains(&c);
                j += 3;
            }
            Some(&x) => {
                found |= x == c;
                j += 1;
            }
        }
    }
    (found != negate).then_some(j + 1)
}

pub fn config(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let sub = args.get(1).cloned().unwrap_or_default();
    if is(&sub, "resetstat") || is(&sub, "rewrite") {
        return Ok(OK);
    }
    if is(&sub, "set") {
        return Err(Reply::err("CONFIG SET is not supported by screedb serve"));
    }
    if !is(&sub, "get") || args.len() < 3 {
        return Err(wrong_args("config|get"));
    }
    let c = &shared.config;
    let params: Vec<(&str, String)> = vec![
        ("save", String::new()),
        ("appendonly", "yes".to_string()),
        ("appendfsync", c.sync.name().to_string()),
        ("databases", "1".to_string()),
        ("port", shared.port.to_string()),
        ("bind", c.bind.clone()),
        ("maxclients", c.max_clients.to_string()),
        ("proto-max-bulk-len", c.limits.max_bulk_len.to_string()),
        (
            "client-query-buffer-limit",
            c.limits.max_query_buffer.to_string(),
        ),
        ("protected-mode", "yes".to_string()),
        ("dir", c.db_path.display().to_string()),
    ];
    let mut out = Vec::new();
    for pattern in args.iter().skip(2) {
        let pattern = pattern.to_ascii_lowercase();
        for (name, value) in &params {
            if glob_match(&pattern, name.as_bytes()) && !out.iter().any(|(n, _)| n == name) {
                out.push((*name, value.clone()));
            }
        }
    }
    Ok(Reply::Map(
        out.into_iter()
            .map(|(n, v)| (Reply::bulk(n), Reply::bulk(v)))
            .collect(),
    ))
}

pub fn info(shared: &Shared, _: &mut Client, args: &[Bytes]) -> Res<Reply> {
    let wanted: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .collect();
    let all = wanted.is_empty()
        || wanted
            .iter()
            .any(|w| w == "all" || w == "everything" || w == "default");
    let want = |s: &str| all || wanted.iter().any(|w| w == s);
    let mut out = String::new();
    let uptime = shared.started.elapsed().as_secs();
    if want("server") {
        let _ = write!(
            out,
            "# Server\r\nredis_version:{REDIS_VERSION}\r\nscreedb_version:{}\r\n\
             redis_mode:standalone\r\nos:{}\r\narch_bits:64\r\nprocess_id:{}\r\ntcp_port:{}\r\n\
             uptime_in_seconds:{uptime}\r\nuptime_in_days:{}\r\nappendfsync:{}\r\n\r\n",
            env!("CARGO_PKG_VERSION"),
            std::env::consts::OS,
            std::process::id(),
            shared.port,
            uptime / 86400,
            shared.config.sync.name(),
        );
    }
    if want("clients") {
        let _ = write!(
            out,
            "# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\n\r\n",
            client_count(shared),
            shared.config.max_clients
        );
    }
    if want("persistence") {
        out.push_str(
            "# Persistence\r\nloading:0\r\naof_enabled:1\r\nrdb_changes_since_last_save:0\r\n\r\n",
        );
    }
    if want("stats") {
        let _ = write!(
            out,
            "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\n\
             rejected_connections:{}\r\nexpired_keys:{}\r\nconnections_moved:{}\r\n\r\n",
            shared.connections_received.load(Ordering::Relaxed),
            shared.command_stats.total_calls(),
            shared.rejected_connections.load(Ordering::Relaxed),
            shared.expired_keys.load(Ordering::Relaxed),
            shared.connections_moved.load(Ordering::Relaxed),
        );
    }
    if want("replication") {
        out.push_str("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n\r\n");
    }
    if want("commandstats") {
        out.push_str("# Commandstats\r\n");
        for (name, calls, usec, failed) in shared.command_stats.rows() {
            let per = usec as f64 / calls.max(1) as f64;
            let _ = write!(
                out,
                "cmdstat_{name}:calls={calls},usec={usec},usec_per_call={per:.2},\
                 rejected_calls=0,failed_calls={failed}\r\n"
            );
        }
        out.push_str("\r\n");
    }
    if want("keyspace") {
        out.push_str("# Keyspace\r\n");
        // Only when asked: counting keys is a scan (see docs/server.md).
        if !all || wanted.iter().any(|w| w == "keyspace" || w == "everything") {
            let keys = super::keys::count_keys(shared)?;
            if keys > 0 {
                let _ = write!(out, "db0:keys={keys},expires=0,avg_ttl=0\r\n");
            }
        }
        out.push_str("\r\n");
    }
    if want("screedb") || want("engine") {
        out.push_str("# Screedb\r\n");
        let db = shared.store.db();
        for line in db.stats().to_string().lines() {
            let _ = write!(out, "{}\r\n", line.trim_end());
        }
        for prop in [
            "screedb.levels",
            "screedb.approximate-memory-usage",
            "screedb.write-amplification",
            "screedb.memory",
        ] {
            // A value of several lines (the level table) becomes one INFO line each.
            for line in db.property(prop).unwrap_or_default().lines() {
                let _ = write!(
                    out,
                    "{}:{}\r\n",
                    prop.replace(['.', '-'], "_"),
                    line.trim_end()
                );
            }
        }
        let _ = write!(
            out,
            "encoding_tags:meta={} sub={} score={}\r\n\r\n",
            char::from(encoding::META),
            char::from(encoding::SUB),
            char::from(encoding::SCORE)
        );
    }
    let out = out.trim_end_matches("\r\n").to_string() + "\r\n";
    Ok(Reply::Verbatim(out))
}

pub fn shutdown(shared: &Shared, client: &mut Client, _: &[Bytes]) -> Res<Reply> {
    shared.request_shutdown();
    client.quit = true;
    Ok(OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match(b"*", b"anything"));
        assert!(glob_match(b"h?llo", b"hello"));
        assert!(glob_match(b"h*llo", b"heeeello"));
        assert!(glob_match(b"h[ae]llo", b"hallo"));
        assert!(!glob_match(b"h[^e]llo", b"hello"));
        assert!(glob_match(b"h[a-b]llo", b"hbllo"));
        assert!(glob_match(b"user:*:x", b"user:12:x"));
        assert!(!glob_match(b"user:*:x", b"user:12:y"));
        assert!(glob_match(b"a\\*", b"a*"));
        assert!(!glob_match(b"a", b"ab"));
    }

    #[test]
    fn constant_time_compare() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret1"));
        assert!(!constant_time_eq(b"", b"x"));
        assert!(constant_time_eq(b"", b""));
    }
}
