//! `screedb bench` drives libscreedb through its `leveldb-c:` adapter, as it would drive any
//! library exporting LevelDB's C API (PebblesDB, HyperLevelDB, LevelDB itself).
#![allow(clippy::unwrap_used, reason = "test code")]

use screedb_bench::{BenchArgs, run};

#[test]
fn bench_runs_libscreedb_through_the_leveldb_c_adapter() {
    // The cdylib is built next to this test's executable (see c_program.rs).
    let exe = std::env::current_exe().unwrap();
    let lib = exe.parent().unwrap().join("libscreedb_capi.so");
    assert!(lib.exists(), "{} not built", lib.display());
    let dir = tempfile::tempdir().unwrap();
    let args = BenchArgs::from_flags([
        format!("--engine=leveldb-c:{}", lib.display()),
        format!("--db={}", dir.path().join("db").display()),
        "--num=2000".to_string(),
        "--reads=1000".to_string(),
        "--benchmarks=fillrandom,readrandom,readseq,seekrandom,deleterandom".to_string(),
    ])
    .unwrap();
    let report = run(args).unwrap();
    let names: Vec<&str> = report.results.iter().map(|r| r.benchmark.name()).collect();
    assert_eq!(
        names,
        [
            "fillrandom",
            "readrandom",
            "readseq",
            "seekrandom",
            "deleterandom"
        ]
    );
    for r in &report.results {
        assert!(r.ops > 0, "{} did nothing", r.benchmark.name());
    }
    // The database the adapter wrote is a real ScreeDB database.
    let db = engine::Db::open(dir.path().join("db"), engine::Options::default()).unwrap();
    assert!(db.range::<&[u8]>(..).unwrap().count() > 0);
}
