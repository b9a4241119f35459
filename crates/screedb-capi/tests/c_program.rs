//! Builds the C test program (tests/c/c_test.c) with the system C compiler against the
//! `libscreedb.so` cargo built for this test run (linked as the install script installs it), and
//! runs it; checks the library's SONAME.
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

/// The library as `scripts/install-capi.sh` installs it, in `dir`: `libscreedb.so.1` (its
/// SONAME, which programs linked against it load) and `libscreedb.so` (what `-lscreedb` finds),
/// both links to the `libscreedb_capi.so` built for this run. Returns `dir`.
fn installed_library(dir: &Path) -> PathBuf {
    let built = library_dir().join(LIBRARY);
    std::fs::create_dir_all(dir).unwrap();
    for name in ["libscreedb.so.1", "libscreedb.so"] {
        std::os::unix::fs::symlink(&built, dir.join(name)).unwrap();
    }
    dir.to_path_buf()
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
        .arg("-lscreedb")
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {cc:?}: {e}"));
    assert!(status.success(), "compiling {} failed", source.display());
}

#[test]
fn c_test_program_passes() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let lib_dir = installed_library(&tmp.path().join("lib"));
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

/// The library carries its SONAME, and a program linked against it records that name.
#[test]
fn the_library_has_a_soname_and_programs_record_it() {
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let lib_dir = installed_library(&tmp.path().join("lib"));
    let exe = tmp.path().join("c_test");
    compile(&crate_dir().join("tests/c/c_test.c"), &exe, &lib_dir);
    let dynamic = |file: &Path| {
        let out = Command::new("readelf")
            .arg("-d")
            .arg(file)
            .output()
            .unwrap_or_else(|e| panic!("cannot run readelf (binutils): {e}"));
        assert!(out.status.success(), "readelf -d {} failed", file.display());
        String::from_utf8(out.stdout).unwrap()
    };
    let lib = dynamic(&library_dir().join(LIBRARY));
    assert!(
        lib.contains("(SONAME)") && lib.contains("[libscreedb.so.1]"),
        "{lib}"
    );
    let program = dynamic(&exe);
    assert!(
        program.contains("(NEEDED)") && program.contains("[libscreedb.so.1]"),
        "{program}"
    );
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
