//! Builds the C test program (tests/c/c_test.c) with the system C compiler against the
//! `libscreedb.so` cargo built for this test run, and runs it.
//!
//! Finding the library: the crate's library is also an rlib, so cargo builds it before its
//! integration tests, and rustc emits the cdylib in the same run into the directory of the test
//! executable (`<target>/<profile>/deps/libscreedb_capi.so`). The test derives the path from its
//! own executable: it works for any target directory and profile, from a clean checkout, without
//! a recursive cargo invocation. `CC` overrides the compiler (default `cc`).

#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

const LIBRARY: &str = "libscreedb_capi.so";

/// The directory holding the `libscreedb_capi.so` built for this run.
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    assert!(
        deps.join(LIBRARY).exists(),
        "{LIBRARY} not found next to {}",
        exe.display()
    );
    deps.to_path_buf()
}

fn compile(source: &Path, out: &Path, lib_dir: &Path) {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let include = crate_dir().join("../../include");
    let status = Command::new(&cc)
        .args(["-std=c99", "-Wall", "-Wextra", "-Werror", "-pthread"])
        .arg("-I")
        .arg(&include)
        .arg(source)
        .arg("-o")
        .arg(out)
        .arg("-L")
        .arg(lib_dir)
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-lscreedb_capi")
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {cc:?}: {e}"));
    assert!(status.success(), "compiling {} failed", source.display());
}

#[test]
fn c_test_program_passes() {
    let lib_dir = library_dir();
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let exe = tmp.path().join("c_test");
    compile(&crate_dir().join("tests/c/c_test.c"), &exe, &lib_dir);
    // cargo test puts target/<profile> on LD_LIBRARY_PATH, which wins over the rpath; a stale
    // uplifted libscreedb_capi.so there would be loaded instead of the one built for this run.
    let out = Command::new(&exe)
        .env("LD_LIBRARY_PATH", &lib_dir)
        .env("TEST_TMPDIR", tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "c_test failed ({}):\n{stderr}",
        out.status
    );
    assert!(stderr.contains("PASS"), "{stderr}");
}

/// Every function the header declares is exercised by the C test program (which also proves
/// the library exports it: the program would not link otherwise).
#[test]
fn the_c_test_calls_every_declared_function() {
    let header = std::fs::read_to_string(crate_dir().join("../../include/screedb/c.h")).unwrap();
    let test = std::fs::read_to_string(crate_dir().join("tests/c/c_test.c")).unwrap();
    let declared: Vec<&str> = header
        .split("LEVELDB_EXPORT ")
        .skip(2) // the text before the first declaration, and the macro definition
        .filter_map(|decl| {
            let name_end = decl.find('(')?;
            decl[..name_end].rsplit(['*', ' ']).next()
        })
        .collect();
    assert_eq!(declared.len(), 68, "{declared:?}");
    let missing: Vec<_> = declared
        .iter()
        .filter(|f| !test.contains(&format!("{f}(")))
        .collect();
    assert!(missing.is_empty(), "not exercised by c_test.c: {missing:?}");
}
