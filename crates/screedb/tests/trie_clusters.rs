//! BloomClusters of the trie's last level (docs/lsm-trie.md, "Clustered Bloom filters"): once
//! the data sits in the last level, gets ask each container's cluster and the tables never load
//! their own filters (the metadata held does not grow with the reads); a database whose cluster files are gone still answers every get (each
//! table then asks its own filters), and the next compaction into a container rebuilds its
//! cluster; `screedb check` verifies every cluster against the keys of its tables.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::path::Path;
use std::sync::Arc;

use screedb::check::check_database;
use screedb::fs::{Fs, MemFs};
use screedb::{Db, Layout, Options, TrieOptions};

fn options(fs: Arc<MemFs>) -> Options {
    Options {
        create_if_missing: true,
        fs,
        layout: Layout::Trie(TrieOptions {
            bucket_bytes: 512,
            split_tables: 2,
            max_tables_per_container: 4,
            ..TrieOptions::default()
        }),
        write_buffer_size: 16 << 10,
        target_file_size: 16 << 10,
        l0_compaction_trigger: 2,
        num_levels: 3,
        ..Options::default()
    }
}

fn key(i: u64) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

fn value(i: u64) -> Vec<u8> {
    format!("value-{i}-{}", "v".repeat((i % 40) as usize)).into_bytes()
}

const KEYS: u64 = 4000;

fn metadata_bytes(db: &Db) -> u64 {
    db.property("screedb.table-metadata-bytes")
        .unwrap()
        .parse()
        .unwrap()
}

fn clusters(fs: &MemFs, dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs
        .list(dir)
        .unwrap()
        .into_iter()
        .filter(|n| n.ends_with(".bfc"))
        .collect();
    names.sort();
    names
}

/// Reads every key and as many missing ones; returns the table metadata held afterwards.
fn read_all(db: &Db) -> u64 {
    for i in 0..KEYS {
        assert_eq!(db.get(key(i)).unwrap(), Some(value(i)), "key {i}");
        assert_eq!(db.get(key(i + KEYS)).unwrap(), None, "missing key {i}");
    }
    metadata_bytes(db)
}

/// A database in `dir` holding every key, all compacted down to the trie's last level.
fn filled(fs: &Arc<MemFs>, dir: &Path) -> Db {
    let db = Db::open(dir, options(fs.clone())).unwrap();
    for i in 0..KEYS {
        db.put(key(i), value(i)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.compact_range(None, None).unwrap();
    db
}

#[test]
fn gets_ask_the_clusters_and_survive_their_loss() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/db");
    let db = filled(&fs, dir);
    let stats = db.stats();
    let levels = &stats.files_per_level;
    assert!(
        levels[0] == 0 && levels.iter().filter(|&&n| n > 8).count() == 1,
        "everything in the trie's last level: {levels:?}"
    );
    db.close().unwrap();
    let written = clusters(&fs, dir);
    assert!(!written.is_empty(), "no cluster was written");
    let report = check_database(dir, &options(fs.clone())).unwrap();
    assert_eq!(report.clusters, written.len(), "{report:?}");

    // With clusters, the tables' own filters stay on disk.
    let db = Db::open(dir, options(fs.clone())).unwrap();
    let opened = metadata_bytes(&db);
    assert_eq!(read_all(&db), opened, "a table loaded its own filters");
    let reads = db.stats().hashed_reads;
    // One cluster page per get (the data is all in one level); the missing keys' tables are
    // ruled out by it, so buckets are read for (nearly) the existing keys only.
    assert_eq!(reads.cluster_reads, 2 * KEYS, "{reads:?}");
    assert!(reads.cluster_rejections > KEYS * 9 / 10, "{reads:?}");
    assert!(reads.bucket_reads < KEYS + KEYS / 50, "{reads:?}");
    db.close().unwrap();

    // Without them, every table loads its own: more metadata, the same answers.
    for name in &written {
        fs.remove(&dir.join(name)).unwrap();
    }
    let db = Db::open(dir, options(fs.clone())).unwrap();
    let opened = metadata_bytes(&db);
    let read = read_all(&db);
    // 16 bits for each of the KEYS keys, in the filters of the tables.
    assert!(
        read >= opened + 2 * KEYS,
        "own filters loaded without clusters: {read} bytes after the reads, {opened} before"
    );

    // New writes pushed down to the last level rebuild the clusters of their containers from
    // the tables' keys.
    for i in 0..KEYS {
        db.put(key(i), value(i)).unwrap();
    }
    db.compact_range(None, None).unwrap();
    db.compact_range(None, None).unwrap();
    read_all(&db);
    db.close().unwrap();
    assert!(!clusters(&fs, dir).is_empty(), "clusters rebuilt");
    let report = check_database(dir, &options(fs.clone())).unwrap();
    assert!(report.clusters > 0, "{report:?}");
    let db = Db::open(dir, options(fs)).unwrap();
    read_all(&db);
}

#[test]
fn a_damaged_cluster_page_is_an_error_naming_the_file() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/db");
    filled(&fs, dir).close().unwrap();
    let name = clusters(&fs, dir).pop().unwrap();
    let path = dir.join(&name);
    let mut bytes = screedb::fs::read_all(fs.as_ref(), &path).unwrap();
    bytes[10] ^= 0x40;
    screedb::fs::write_all_synced(fs.as_ref(), &path, &bytes).unwrap();
    let err = check_database(dir, &options(fs.clone())).unwrap_err();
    assert!(err.to_string().contains(&name), "{err}");
    // Gets that reach the damaged page fail naming it; none returns wrong data.
    let db = Db::open(dir, options(fs)).unwrap();
    let mut failed = 0;
    for i in 0..KEYS {
        match db.get(key(i)) {
            Ok(v) => assert_eq!(v, Some(value(i)), "key {i}"),
            Err(e) => {
                assert!(e.to_string().contains(&name), "{e}");
                failed += 1;
            }
        }
    }
    assert!(failed > 0, "no get read the damaged page");
}

/// Only a container's highest-numbered table holds its cluster: when a job adds tables to a
/// container whose older tables stay, the cluster the old highest held is superseded and its
/// file goes once the edit is installed (and at the next open, for stores written before).
#[test]
fn superseded_clusters_are_deleted() {
    let fs = Arc::new(MemFs::new());
    let dir = Path::new("/db");
    let db = filled(&fs, dir);
    // Every cluster file seen between the rounds, as it was.
    let mut seen: std::collections::BTreeMap<String, Vec<u8>> = Default::default();
    let keep = |seen: &mut std::collections::BTreeMap<String, Vec<u8>>| {
        for n in clusters(&fs, dir) {
            let bytes = screedb::fs::read_all(fs.as_ref(), &dir.join(&n)).unwrap();
            seen.insert(n, bytes);
        }
    };
    keep(&mut seen);
    // Rounds of overwrites of a tenth of the keys each, left to the background compactions,
    // add tables to the last level's containers beside those that stay.
    for round in 0..6u64 {
        for i in (round..KEYS).step_by(10) {
            db.put(key(i), value(i)).unwrap();
        }
        db.flush().unwrap();
        db.wait_for_idle().unwrap();
        keep(&mut seen);
    }
    read_all(&db);
    db.close().unwrap();
    let on_disk = clusters(&fs, dir).len();
    let report = check_database(dir, &options(fs.clone())).unwrap();
    assert!(report.clusters > 0, "{report:?}");
    assert_eq!(
        on_disk, report.clusters,
        "cluster files on disk against clusters the containers' holders name"
    );

    // A superseded cluster left by an older build goes at the next open: one of the clusters
    // seen above, whose table stayed and is no longer its container's holder, put back as it
    // was.
    let (stale, bytes) = seen
        .into_iter()
        .find(|(name, _)| {
            !clusters(&fs, dir).contains(name) && fs.exists(&dir.join(name.replace(".bfc", ".sst")))
        })
        .unwrap();
    screedb::fs::write_all_synced(fs.as_ref(), &dir.join(&stale), &bytes).unwrap();
    let holders = clusters(&fs, dir);
    let db = Db::open(dir, options(fs.clone())).unwrap();
    assert_eq!(
        clusters(&fs, dir),
        holders
            .into_iter()
            .filter(|n| *n != stale)
            .collect::<Vec<_>>(),
        "{stale} kept"
    );
    read_all(&db);
}
