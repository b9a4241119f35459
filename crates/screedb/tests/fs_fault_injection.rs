//! FaultFs over MemFs and over OsFs: injected failures, crashes, torn writes, dead handles.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions unwrap too"
)]

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;
use screedb::Error;
use screedb::fs::{FaultFs, FaultKind, FaultStats, Fs, MemFs, OsFs, read_all};

/// One backend under test: a FaultFs and an existing, dir-synced directory in it.
struct Env {
    name: &'static str,
    fs: FaultFs,
    dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
}

impl Env {
    fn mem() -> Env {
        let fs = FaultFs::new(Arc::new(MemFs::new()));
        let dir = PathBuf::from("/db");
        fs.create_dir_all(&dir).unwrap();
        Env {
            name: "MemFs",
            fs,
            dir,
            _tmp: None,
        }
    }

    fn os() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let fs = FaultFs::new(Arc::new(OsFs));
        Env {
            name: "OsFs",
            fs,
            dir: tmp.path().to_path_buf(),
            _tmp: Some(tmp),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn read(&self, name: &str) -> Vec<u8> {
        read_all(&self.fs, &self.path(name)).unwrap()
    }

    fn exists(&self, name: &str) -> bool {
        self.fs.exists(&self.path(name))
    }

    /// Creates `name` with `data`, syncs it and the directory.
    fn write_durable(&self, name: &str, data: &[u8]) {
        let mut w = self.fs.create(&self.path(name)).unwrap();
        w.append(data).unwrap();
        w.sync().unwrap();
        self.fs.sync_dir(&self.dir).unwrap();
    }
}

fn for_each_backend(scenario: impl Fn(&Env)) {
    for env in [Env::mem(), Env::os()] {
        eprintln!("backend: {}", env.name);
        scenario(&env);
    }
}

#[test]
fn unsynced_bytes_vanish_and_synced_bytes_stay() {
    for_each_backend(|env| {
        let mut w = env.fs.create(&env.path("log")).unwrap();
        env.fs.sync_dir(&env.dir).unwrap();
        w.append(b"synced ").unwrap();
        w.sync().unwrap();
        w.append(b"lost").unwrap();
        assert_eq!(env.read("log"), b"synced lost", "visible before the crash");
        env.fs.crash();
        assert_eq!(env.read("log"), b"synced ", "{}", env.name);
        assert_eq!(env.fs.file_size(&env.path("log")).unwrap(), 7);
    });
}

#[test]
fn file_created_and_never_synced_is_gone_after_crash() {
    for_each_backend(|env| {
        let mut never = env.fs.create(&env.path("never")).unwrap();
        never.append(b"data").unwrap();
        let mut synced = env.fs.create(&env.path("synced")).unwrap();
        synced.append(b"kept").unwrap();
        synced.sync().unwrap();
        env.fs.crash();
        assert!(!env.exists("never"), "{}", env.name);
        assert_eq!(env.read("synced"), b"kept", "{}", env.name);

        // With the directory synced the entry survives, but unsynced bytes do not.
        let mut w = env.fs.create(&env.path("entry-only")).unwrap();
        env.fs.sync_dir(&env.dir).unwrap();
        w.append(b"gone").unwrap();
        env.fs.crash();
        assert!(env.exists("entry-only"), "{}", env.name);
        assert_eq!(env.read("entry-only"), b"", "{}", env.name);
    });
}

#[test]
fn fail_nth_hits_exactly_the_nth_op_and_only_once() {
    for_each_backend(|env| {
        let mut w = env.fs.create(&env.path("f")).unwrap();
        env.fs.fail_nth(FaultKind::Write, 3);
        w.append(b"1").unwrap();
        w.append(b"2").unwrap();
        let err = w.append(b"3").unwrap_err();
        assert_eq!(err.io_kind(), Some(io::ErrorKind::StorageFull), "{err}");
        assert!(err.to_string().contains("injected"), "{err}");
        assert!(err.to_string().contains(&*env.path("f").to_string_lossy()));
        w.append(b"4").unwrap();
        w.flush().unwrap();
        assert_eq!(env.read("f"), b"124", "{}", env.name);
        assert_eq!(w.size(), 3);

        // Sync faults count file syncs and directory syncs alike.
        env.fs.fail_nth(FaultKind::Sync, 2);
        w.sync().unwrap();
        let err = env.fs.sync_dir(&env.dir).unwrap_err();
        assert!(err.to_string().contains("fsync failed (injected)"), "{err}");
        w.sync().unwrap();
        env.fs.sync_dir(&env.dir).unwrap();
    });
}

#[test]
fn fail_always_is_sticky_until_cleared_and_leaves_the_file_unchanged() {
    for_each_backend(|env| {
        let mut w = env.fs.create(&env.path("f")).unwrap();
        w.append(b"before").unwrap();
        let stats = env.fs.stats();
        env.fs.fail_always(FaultKind::Write);
        for _ in 0..3 {
            let err = w.append(b"never written").unwrap_err();
            assert_eq!(err.io_kind(), Some(io::ErrorKind::StorageFull));
        }
        assert!(w.flush().is_err());
        assert_eq!(w.size(), 6);
        assert_eq!(env.read("f"), b"before", "{}", env.name);
        assert_eq!(
            env.fs.stats(),
            stats,
            "failed ops do not reach the inner fs"
        );
        w.sync().unwrap();
        env.fs.clear_faults();
        w.append(b" after").unwrap();
        assert_eq!(env.read("f"), b"before after");

        env.fs.fail_always(FaultKind::Sync);
        assert!(w.sync().is_err());
        assert!(w.sync().is_err());
        assert!(env.fs.sync_dir(&env.dir).is_err());
        env.fs.crash();
        // Faults survive the crash; the file kept only what the last good sync covered.
        assert!(env.fs.sync_dir(&env.dir).is_err());
        env.fs.clear_faults();
        assert_eq!(env.read("f"), b"before", "{}", env.name);
    });
}

#[test]
fn torn_tail_keeps_exactly_keep_bytes_of_the_last_unsynced_write() {
    for_each_backend(|env| {
        let mut a = env.fs.create(&env.path("a")).unwrap();
        let mut b = env.fs.create(&env.path("b")).unwrap();
        a.append(b"AAAA").unwrap();
        a.sync().unwrap();
        b.append(b"bb").unwrap();
        b.sync().unwrap();
        a.append(b"aaaa").unwrap(); // unsynced, but not the last write
        b.append(b"0123456789").unwrap(); // the torn one
        env.fs.crash_tearing_last_write(3);
        assert_eq!(env.read("a"), b"AAAA", "{}", env.name);
        assert_eq!(env.read("b"), b"bb012", "{}", env.name);

        // `keep` is capped at the write's length; a synced last write is not torn.
        let mut c = env.fs.create(&env.path("c")).unwrap();
        c.append(b"xy").unwrap();
        c.sync().unwrap();
        c.append(b"zz").unwrap();
        env.fs.crash_tearing_last_write(100);
        assert_eq!(env.read("c"), b"xyzz", "{}", env.name);
        let mut d = env.fs.create(&env.path("d")).unwrap();
        d.append(b"synced").unwrap();
        d.sync().unwrap();
        env.fs.crash_tearing_last_write(2);
        assert_eq!(env.read("d"), b"synced", "{}", env.name);
    });
}

#[test]
fn dead_handles_fail_after_crash() {
    for_each_backend(|env| {
        env.write_durable("f", b"data");
        let reader = env.fs.open(&env.path("f")).unwrap();
        let mut writer = env.fs.create(&env.path("g")).unwrap();
        let lock = env.fs.lock(&env.path("LOCK")).unwrap();
        assert!(matches!(
            env.fs.lock(&env.path("LOCK")),
            Err(Error::Locked(_))
        ));
        env.fs.crash();
        for err in [
            reader.read_vec(0, 4).unwrap_err(),
            writer.append(b"x").unwrap_err(),
            writer.sync().unwrap_err(),
            writer.flush().unwrap_err(),
        ] {
            assert!(err.to_string().contains("crashed"), "{err}");
        }
        // The crash released the lock; new handles work.
        let _relock = env.fs.lock(&env.path("LOCK")).unwrap();
        drop(lock);
        assert_eq!(
            env.fs.open(&env.path("f")).unwrap().read_vec(0, 4).unwrap(),
            b"data"
        );
        let mut w = env.fs.create(&env.path("h")).unwrap();
        w.append(b"ok").unwrap();
        w.sync().unwrap();
    });
}

#[test]
fn rename_is_undone_by_crash_unless_directory_synced() {
    for_each_backend(|env| {
        env.write_durable("CURRENT", b"old");
        let mut tmp = env.fs.create(&env.path("tmp")).unwrap();
        tmp.append(b"new").unwrap();
        tmp.sync().unwrap();
        env.fs
            .rename(&env.path("tmp"), &env.path("CURRENT"))
            .unwrap();
        assert_eq!(env.read("CURRENT"), b"new");
        env.fs.crash();
        assert_eq!(env.read("CURRENT"), b"old", "{}", env.name);
        assert_eq!(env.read("tmp"), b"new", "{}", env.name);

        env.fs
            .rename(&env.path("tmp"), &env.path("CURRENT"))
            .unwrap();
        env.fs.sync_dir(&env.dir).unwrap();
        env.fs.crash();
        assert_eq!(env.read("CURRENT"), b"new", "{}", env.name);
        assert!(!env.exists("tmp"), "{}", env.name);
    });
}

#[test]
fn stats_count_ops_that_reached_the_inner_fs() {
    for_each_backend(|env| {
        let mut w = env.fs.create(&env.path("f")).unwrap();
        w.append(b"abc").unwrap();
        w.append(b"de").unwrap();
        env.fs.fail_nth(FaultKind::Write, 1);
        assert!(w.append(b"failed").is_err());
        w.sync().unwrap();
        env.fs.sync_dir(&env.dir).unwrap();
        let want = FaultStats {
            writes: 2,
            syncs: 2,
            bytes_written: 5,
            write_backs: 0,
        };
        assert_eq!(env.fs.stats(), want, "{}", env.name);
    });
}

#[derive(Clone, Debug)]
enum Op {
    Append(Vec<u8>),
    AppendFailing(Vec<u8>),
    Sync,
    SyncFailing,
    Crash,
    CrashTorn(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let bytes = proptest::collection::vec(any::<u8>(), 0..20);
    prop_oneof![
        4 => bytes.clone().prop_map(Op::Append),
        1 => bytes.prop_map(Op::AppendFailing),
        2 => Just(Op::Sync),
        1 => Just(Op::SyncFailing),
        1 => Just(Op::Crash),
        1 => (0usize..25).prop_map(Op::CrashTorn),
    ]
}

/// Runs `ops` on one file and checks it against a model after every crash.
fn check_model(fs: &FaultFs, dir: &Path, ops: &[Op]) -> Result<(), TestCaseError> {
    let path = dir.join("file");
    let mut w = fs.create(&path).unwrap();
    fs.sync_dir(dir).unwrap();
    let mut content: Vec<u8> = Vec::new();
    let mut durable = 0usize;
    // (offset, len) of the last append.
    let mut last: Option<(usize, usize)> = None;
    for op in ops {
        match op {
            Op::Append(data) => {
                w.append(data).unwrap();
                last = Some((content.len(), data.len()));
                content.extend_from_slice(data);
            }
            Op::AppendFailing(data) => {
                fs.fail_nth(FaultKind::Write, 1);
                prop_assert!(w.append(data).is_err());
            }
            Op::Sync => {
                w.sync().unwrap();
                durable = content.len();
            }
            Op::SyncFailing => {
                fs.fail_nth(FaultKind::Sync, 1);
                prop_assert!(w.sync().is_err());
            }
            Op::Crash | Op::CrashTorn(_) => {
                let mut survive = durable;
                if let Op::CrashTorn(keep) = op {
                    fs.crash_tearing_last_write(*keep);
                    if let Some((off, len)) = last
                        && off + len > durable
                    {
                        survive = off + len.min(*keep);
                    }
                } else {
                    fs.crash();
                }
                content.truncate(survive);
                prop_assert_eq!(read_all(fs, &path).unwrap(), content.clone());
                prop_assert!(w.append(b"dead").is_err());
                // Reopen: rewrite the survivors durably, as a recovering engine would.
                w = fs.create(&path).unwrap();
                w.append(&content).unwrap();
                w.sync().unwrap();
                durable = content.len();
                last = None;
            }
        }
        prop_assert_eq!(w.size(), content.len() as u64);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn crash_keeps_the_durable_prefix_mem(ops in proptest::collection::vec(op(), 1..40)) {
        let fs = FaultFs::new(Arc::new(MemFs::new()));
        check_model(&fs, Path::new("/"), &ops)?;
    }

    #[test]
    fn crash_keeps_the_durable_prefix_os(ops in proptest::collection::vec(op(), 1..40)) {
        let tmp = tempfile::tempdir().unwrap();
        let fs = FaultFs::new(Arc::new(OsFs));
        check_model(&fs, tmp.path(), &ops)?;
    }
}
