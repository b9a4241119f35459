//! A database written by LevelDB itself (Debian's libleveldb, through a C helper) is refused by
//! open, check and repair with its format named and left untouched, and `screedb import
//! --from-leveldb` brings back every key (issue 15). Skipped, loudly, where libleveldb-dev is not
//! installed (`.ci/run` and scripts/install-peers.sh install it).

#![allow(clippy::unwrap_used, reason = "test code")]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::screedb;

use screedb::{Db, Error, ForeignFormat, Options};

/// Builds tests/c/make_leveldb.c against libleveldb; `None` when it cannot be built here.
fn helper(dir: &Path) -> Option<PathBuf> {
    if !Path::new("/usr/include/leveldb/c.h").exists() {
        return None;
    }
    let exe = dir.join("make_leveldb");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/make_leveldb.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let status = Command::new(cc)
        .args(["-std=c99", "-Wall", "-Werror"])
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .arg("-lleveldb")
        .status()
        .ok()?;
    status.success().then_some(exe)
}

/// What make_leveldb.c leaves in the database.
fn model() -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut m = BTreeMap::new();
    let val = |round: &str, i: u32| format!("{round}-{i}-payload-payload-payload").into_bytes();
    let key = |i: u32| format!("key{i:05}").into_bytes();
    for i in 0..3000 {
        m.insert(key(i), val("v1", i));
    }
    for i in (0..3000).step_by(3) {
        m.insert(key(i), val("v2", i));
    }
    for i in (0..3000).step_by(7) {
        m.remove(&key(i));
    }
    for i in (0..3000).step_by(5) {
        m.insert(key(i), val("v3", i));
    }
    m.remove(&key(1));
    m.insert(key(7), val("v4", 7));
    m
}

/// Every file of `dir` but LOCK, with its bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != "LOCK")
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_leveldb_database_is_refused_untouched_and_imported_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(make) = helper(tmp.path()) else {
        eprintln!(
            "SKIPPED a_leveldb_database_is_refused_untouched_and_imported_whole: libleveldb-dev \
             is not installed (scripts/install-peers.sh installs it)"
        );
        return;
    };
    let src = tmp.path().join("leveldb");
    let status = Command::new(&make).arg(&src).status().unwrap();
    assert!(status.success());
    let before = files(&src);
    assert!(
        before.keys().any(|n| n.ends_with(".ldb")) && before.keys().any(|n| n.ends_with(".log")),
        "{:?}",
        before.keys()
    );

    // Open names the format and says what to do.
    let err = Db::open(&src, Options::default().create_if_missing(true)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ForeignFormat {
                format: ForeignFormat::LevelDb,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("screedb import --from-leveldb"),
        "{err}"
    );
    // check and repair refuse it too, and nothing is changed.
    for command in ["check", "repair"] {
        let out = screedb(&[command, "--db", src.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{command}: {stderr}");
        assert!(stderr.contains("LevelDB database"), "{command}: {stderr}");
    }
    assert!(files(&src) == before, "the LevelDB database was changed");

    let dst = tmp.path().join("screedb");
    let import = || {
        screedb(&[
            "import",
            "--from-leveldb",
            src.to_str().unwrap(),
            "--db",
            dst.to_str().unwrap(),
        ])
    };
    let out = import();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = model();
    assert!(
        stdout.contains(&format!("imported {} keys", want.len())),
        "{stdout}"
    );
    assert!(files(&src) == before, "import changed the LevelDB database");
    let db = Db::open(&dst, Options::default()).unwrap();
    let got: BTreeMap<Vec<u8>, Vec<u8>> =
        db.range::<&[u8]>(..).unwrap().map(|r| r.unwrap()).collect();
    assert!(
        got == want,
        "{} keys imported, {} expected",
        got.len(),
        want.len()
    );
    // A second import into the same destination is refused.
    let out = import();
    assert!(!out.status.success());
}
