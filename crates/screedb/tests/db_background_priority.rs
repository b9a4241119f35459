//! `Options::background_nice`: the flush and compaction threads of a database run that much
//! lower in CPU priority than the thread that opened it, FloDB's drain thread at the lowest
//! priority (nice 19) whatever the option says, and the database works as before. One test in this file, so that no other database's threads share
//! the process's thread list.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used, reason = "test code")]

use std::time::{Duration, Instant};

use screedb::{Db, Memory, Options};

/// The nice value of thread `tid` of this process (field 19 of its stat line), and its name.
fn thread(tid: &str) -> Option<(String, i32)> {
    let task = format!("/proc/self/task/{tid}");
    let name = std::fs::read_to_string(format!("{task}/comm")).ok()?;
    let stat = std::fs::read_to_string(format!("{task}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    let nice = after_name.split(' ').nth(16)?.parse().ok()?;
    Some((name.trim().to_string(), nice))
}

/// The database's threads (named `screedb-...`) with their nice values.
fn database_threads() -> Vec<(String, i32)> {
    let mut out: Vec<_> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| thread(t.ok()?.file_name().to_str()?))
        .filter(|(name, _)| name.starts_with("screedb-"))
        .collect();
    out.sort();
    out
}

#[test]
fn background_threads_run_at_the_lower_priority_asked_for() {
    let (_, own) = thread(&format!("{}", std::process::id())).expect("the main thread's stat");
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        create_if_missing: true,
        background_nice: 5,
        memory: Memory::Flodb,
        write_buffer_size: 64 << 10,
        ..Options::default()
    };
    let db = Db::open(dir.path(), opts).unwrap();
    let want = |name: &str| {
        if name == "screedb-drain" {
            19
        } else {
            (own + 5).min(19)
        }
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let threads = database_threads();
        let names: Vec<_> = threads.iter().map(|(n, _)| n.as_str()).collect();
        let all_started = names.iter().filter(|n| n.starts_with("screedb-bg")).count() == 2
            && names.contains(&"screedb-drain");
        if all_started && threads.iter().all(|(name, nice)| *nice == want(name)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "background threads {threads:?}, expected nice {} for flushes and compactions, 19 \
             for the drain",
            want("screedb-bg")
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Flushes and compactions still run: enough writes for several memtables, read back.
    for i in 0..20_000u32 {
        db.put(format!("key{i:06}"), [b'v'; 100]).unwrap();
    }
    db.flush().unwrap();
    for i in (0..20_000u32).step_by(997) {
        assert_eq!(db.get(format!("key{i:06}")).unwrap(), Some(vec![b'v'; 100]));
    }
    assert!(db.stats().flushes >= 2, "{:?}", db.stats());
    let (_, after) = thread(&format!("{}", std::process::id())).unwrap();
    assert_eq!(after, own, "the opening thread keeps its priority");
    db.close().unwrap();
}
