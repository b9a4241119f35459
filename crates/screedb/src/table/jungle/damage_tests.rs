//! Damaged tree files: byte flips are reported with the file and offset and never returned as
//! data; a torn tail past the last commit is ignored.

use std::path::PathBuf;
use std::sync::Arc;

use super::node::{LZ4_VALUE_RECORD, Node, RECORD_TRAILER_LEN, record_trailer};
use super::tests::{icmp, ik, keep_all, ok_iter, open, overwritten_tree, scan, small_opts};
use super::*;
use crate::error::Error;
use crate::fs::{FaultFs, FaultKind, Fs, MemFs, read_all};
use crate::key::ValueKind;

#[test]
fn a_torn_tail_is_ignored_at_the_committed_length_and_by_find_last_commit() {
    let opts = small_opts();
    let (mem, path, commits) = overwritten_tree(&opts, 50, 1, 30);
    let committed = commits[1].clone();
    let fs = FaultFs::new(Arc::new(mem.clone()));
    let base = open(&fs, &path, committed.len, &opts).unwrap();
    let batch: Vec<_> = (0..50u64)
        .map(|i| {
            (
                ik(format!("k{i:06}").as_bytes(), 500 + i, ValueKind::Value),
                vec![9u8; 30],
            )
        })
        .collect();
    fs.fail_always(FaultKind::Sync);
    let file = fs.open_appendable(&path, committed.len).unwrap();
    assert!(append_segment(&opts, &icmp(), &base, file, ok_iter(batch), &mut keep_all()).is_err());
    fs.clear_faults();
    fs.crash_tearing_last_write(3);
    let len = fs.file_size(&path).unwrap();
    assert!(len > committed.len, "the torn segment left a tail");
    let file = fs.open(&path).unwrap();
    assert_eq!(
        find_last_commit(&*file, &path, len).unwrap(),
        Some(committed.clone())
    );
    assert_eq!(
        find_last_commit(&*file, &path, committed.len).unwrap(),
        Some(committed.clone())
    );
    assert_eq!(
        find_last_commit(&*file, &path, committed.len - 1).unwrap(),
        Some(commits[0].clone())
    );
    assert_eq!(find_last_commit(&*file, &path, 10).unwrap(), None);
    let t = open(&fs, &path, committed.len, &opts).unwrap();
    t.verify().unwrap();
    assert_eq!(scan(&t).unwrap().len(), 50);
    let err = open(&fs, &path, len, &opts).unwrap_err();
    assert!(err.is_corruption(), "{err}");
    // Garbage past the commit is ignored too, and cut by the next reopen.
    let mut w = fs.open_appendable(&path, len).unwrap();
    w.append(&TREE_MAGIC.to_le_bytes().repeat(40)).unwrap();
    w.sync().unwrap();
    let len = fs.file_size(&path).unwrap();
    let file = fs.open(&path).unwrap();
    assert_eq!(
        find_last_commit(&*file, &path, len).unwrap(),
        Some(committed.clone())
    );
    let w = fs.open_appendable(&path, committed.len).unwrap();
    assert_eq!(w.size(), committed.len);
    assert_eq!(read_all(&fs, &path).unwrap().len() as u64, committed.len);
}

#[test]
fn byte_flips_are_reported_with_file_and_offset_never_returned_as_data() {
    let opts = small_opts();
    let (mem, path, commits) = overwritten_tree(&opts, 24, 2, 20);
    let last = commits.last().unwrap().clone();
    let good = read_all(&mem, &path).unwrap();
    let want = scan(&open(&mem, &path, last.len, &opts).unwrap()).unwrap();
    // The last pass overwrote every key, so each byte of the last segment is reachable, and
    // so is every commit record (verify walks the chain); nothing else is (superseded nodes,
    // values and filters).
    let prev_len = commits[commits.len() - 2].len;
    let must_detect =
        |pos: u64| pos >= prev_len || commits.iter().any(|c| (c.offset..c.len).contains(&pos));
    let mut detected = 0;
    for pos in 0..good.len() {
        let mut bad = good.clone();
        bad[pos] ^= 0x20;
        let fs = MemFs::new();
        let mut w = fs.create(&path).unwrap();
        w.append(&bad).unwrap();
        let outcome = open(&fs, &path, last.len, &opts).and_then(|t| {
            let got = scan(&t)?;
            t.verify()?;
            Ok(got)
        });
        match outcome {
            Ok(got) => {
                assert_eq!(got, want, "flip at {pos} returned wrong data");
                assert!(!must_detect(pos as u64), "flip at {pos} went unnoticed");
            }
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!(file, path);
                assert!(offset <= pos as u64, "flip at {pos} reported at {offset}");
                detected += 1;
            }
            Err(e) => panic!("flip at {pos}: not a corruption: {e}"),
        }
    }
    assert!(
        detected as u64 >= good.len() as u64 - prev_len,
        "{detected} of {}",
        good.len()
    );
}

/// A FaultFs holding a synced two-commit tree at `/db/t`: the file system, the path, the
/// commits, and a batch that overwrites half the keys.
fn power_loss_setup() -> (
    FaultFs,
    std::path::PathBuf,
    Vec<Commit>,
    super::tests::Entries,
) {
    let opts = small_opts();
    let (mem, path, commits) = overwritten_tree(&opts, 40, 1, 30);
    let fs = FaultFs::new(Arc::new(mem));
    let batch = (0..40u64)
        .step_by(2)
        .map(|i| {
            let user = format!("k{i:06}");
            (
                ik(user.as_bytes(), 900 + i, ValueKind::Value),
                vec![7u8; 25],
            )
        })
        .collect();
    (fs, path, commits, batch)
}

#[test]
fn power_loss_at_every_write_of_an_append_leaves_the_base_commit_intact() {
    let opts = small_opts();
    // Count the writes of one append.
    let (fs, path, commits, batch) = power_loss_setup();
    let base_len = commits[1].len;
    let base = open(&fs, &path, base_len, &opts).unwrap();
    let want = scan(&base).unwrap();
    let before = fs.stats().writes;
    let file = fs.open_appendable(&path, base_len).unwrap();
    let full = append_segment(&opts, &icmp(), &base, file, ok_iter(batch), &mut keep_all());
    let new_commit = full.unwrap();
    let writes = fs.stats().writes - before;
    assert!(writes > 4, "{writes} writes");
    for n in 1..=writes + 1 {
        for tear in [None, Some(0), Some(7)] {
            let (fs, path, commits, batch) = power_loss_setup();
            let base = open(&fs, &path, base_len, &opts).unwrap();
            // Fail the n-th write (n = writes + 1: fail the sync instead), then cut the power.
            if n <= writes {
                fs.fail_nth(FaultKind::Write, n);
            } else {
                fs.fail_nth(FaultKind::Sync, 1);
            }
            let file = fs.open_appendable(&path, base_len).unwrap();
            let r = append_segment(&opts, &icmp(), &base, file, ok_iter(batch), &mut keep_all());
            assert!(r.is_err(), "write {n} was due to fail");
            match tear {
                None => fs.crash(),
                Some(keep) => fs.crash_tearing_last_write(keep),
            }
            let len = fs.file_size(&path).unwrap();
            assert!(
                len >= base_len,
                "write {n}, tear {tear:?}: the base was cut"
            );
            let file = fs.open(&path).unwrap();
            let last = find_last_commit(&*file, &path, len).unwrap();
            assert_eq!(last.as_ref(), Some(&commits[1]), "write {n}, tear {tear:?}");
            let t = open(&fs, &path, base_len, &opts).unwrap();
            t.verify().unwrap();
            assert_eq!(scan(&t).unwrap(), want, "write {n}, tear {tear:?}");
            // The next append cuts the tail and commits as if nothing had happened.
            let file = fs.open_appendable(&path, base_len).unwrap();
            let (_, _, _, batch) = power_loss_setup();
            let c = append_segment(&opts, &icmp(), &t, file, ok_iter(batch), &mut keep_all());
            assert_eq!(c.unwrap(), new_commit, "write {n}, tear {tear:?}");
        }
    }
}

#[test]
fn internal_nodes_are_read_and_checked_when_the_reader_opens() {
    let fs = MemFs::new();
    let path = PathBuf::from("/t");
    let opts = small_opts();
    let entries: Vec<(Vec<u8>, Vec<u8>)> = (0..400u32)
        .map(|i| {
            let ikey = ik(format!("key{i:05}").as_bytes(), 1, ValueKind::Value);
            (ikey, vec![b'v'; 8])
        })
        .collect();
    let c = write_tree(
        &opts,
        &icmp(),
        fs.create(&path).unwrap(),
        &path,
        ok_iter(entries),
    )
    .unwrap();
    assert!(c.height >= 3, "height {}", c.height);
    let t = open(&fs, &path, c.len, &opts).unwrap();
    let Some(Node::Internal(children)) = t.root_node().map(|n| &**n) else {
        panic!("the root of a tree of height {} is a leaf", c.height);
    };
    let child = children[0].handle;
    // Kept with the reader, as a table keeps its index: the metadata counts the root's
    // internal children besides the root.
    let fixed = t.filter_bytes().map_or(0, <[u8]>::len) + c.smallest.len() + c.largest.len();
    assert!(
        t.metadata_bytes() - fixed as u64 >= u64::from(c.root_size) + u64::from(child.size),
        "{} bytes of metadata",
        t.metadata_bytes()
    );
    // So a flip inside that child is found when a reader opens, before any get reaches it.
    let mut bad = read_all(&fs, &path).unwrap();
    bad[(child.offset + u64::from(child.size) / 2) as usize] ^= 0x20;
    let bad_path = PathBuf::from("/bad");
    fs.create(&bad_path).unwrap().append(&bad).unwrap();
    match open(&fs, &bad_path, c.len, &opts) {
        Err(Error::Corruption { file, .. }) => assert_eq!(file, bad_path),
        Err(e) => panic!("not a corruption: {e}"),
        Ok(_) => panic!("a damaged internal node was not read at open"),
    }
}

/// A value record read through a file's map is checked while its leaf's index is cached, once
/// (later reads through the map trust it, as a sorted table's blocks used in place): a byte
/// flipped before is reported by every get and scan, never returned as data, and the values
/// around it still read.
#[test]
fn a_value_flipped_under_a_map_is_reported_on_every_read() {
    for compression in [CompressionType::None, CompressionType::Lz4] {
        value_flipped_under_a_map(compression);
    }
}

/// A tree of `all` written to a file in a fresh directory, byte 3 of the file flipped (in the
/// first record of the segment), then opened through a map with a node cache.
fn flipped_under_a_map(
    opts: TreeOptions,
    all: &[(Vec<u8>, Vec<u8>)],
) -> (tempfile::TempDir, Commit, Arc<TreeReader>) {
    use crate::fs::OsFs;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("000009.sst");
    let fs = OsFs;
    let file = fs.create(&path).unwrap();
    let c = write_tree(&opts, &icmp(), file, &path, ok_iter(all.to_vec())).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[3] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let file = fs.open_mapped(&path).unwrap();
    assert!(file.is_mapped());
    let t = TreeReader::open(file, path.clone(), 9, c.len, opts, icmp())
        .unwrap()
        .with_node_cache(Some(Arc::new(NodeCache::new(1 << 20))));
    (dir, c, Arc::new(t))
}

fn value_flipped_under_a_map(compression: CompressionType) {
    let opts = TreeOptions {
        compression,
        ..small_opts()
    };
    let all: Vec<(Vec<u8>, Vec<u8>)> = (0..50u32)
        .map(|i| {
            (
                ik(format!("key{i:03}").as_bytes(), 1, ValueKind::Value),
                vec![b'v'; 40],
            )
        })
        .collect();
    // A new tree's segment starts with its value records, in key order: the first's flipped.
    let (_dir, _, t) = flipped_under_a_map(opts, &all);
    for _ in 0..2 {
        match t.get(&all[0].0) {
            Err(Error::Corruption { .. }) => {}
            other => panic!("a flipped value read as {other:?}"),
        }
        assert!(scan(&t).is_err());
        for (ikey, v) in &all[1..] {
            assert_eq!(t.get(ikey).unwrap(), Some((ikey.clone(), v.clone())));
        }
    }
}

/// An indexed leaf of a mapped file is checked (checksum and entries) the first time a reader
/// reads it and read in place after that: a byte flipped before is reported by every get and
/// scan that reaches the leaf, the other leaves still read, and their second reads (in place)
/// return what the first did.
#[test]
fn a_leaf_flipped_under_a_map_is_reported_on_every_read() {
    let all: Vec<(Vec<u8>, Vec<u8>)> = (0..200u32)
        .map(|i| {
            let ikey = ik(format!("key{i:03}").as_bytes(), 1, ValueKind::Value);
            (ikey, i.to_le_bytes().to_vec())
        })
        .collect();
    // Inline values only: the segment starts with the first leaf (its header flipped).
    let (_dir, c, t) = flipped_under_a_map(small_opts(), &all);
    assert!(c.height >= 2, "several leaves");
    let unread = t.metadata_bytes();
    let mut reads = Vec::new();
    for round in 0..2 {
        match t.get(&all[0].0) {
            Err(Error::Corruption { .. }) => {}
            other => panic!("a flipped leaf read as {other:?}"),
        }
        assert!(scan(&t).is_err());
        let got: Vec<_> = all.iter().map(|(ikey, _)| t.get(ikey).ok()).collect();
        if round == 1 {
            assert_eq!(got, reads, "read in place as when checked");
        }
        reads = got;
    }
    let good = reads.iter().filter(|r| r.is_some()).count();
    assert!((100..all.len()).contains(&good), "{good} keys read");
    for ((ikey, v), r) in all.iter().zip(&reads) {
        if let Some(r) = r {
            assert_eq!(r, &Some((ikey.clone(), v.clone())));
        }
    }
    assert!(
        t.metadata_bytes() > unread,
        "the reader keeps which leaves it checked"
    );
}

#[test]
fn a_compressed_value_that_does_not_decompress_is_corruption_not_data() {
    // A crafted file: the record's checksum holds, its LZ4 bytes claim a length they do not
    // decode to. Every read path reports it, naming the file and the record.
    let fs = MemFs::new();
    let path = PathBuf::from("/crafted");
    let opts = small_opts();
    let user = b"key".to_vec();
    let value = vec![b'z'; 1000];
    let c = write_tree(
        &opts,
        &icmp(),
        fs.create(&path).unwrap(),
        &path,
        ok_iter(vec![(ik(&user, 1, ValueKind::Value), value.clone())]),
    )
    .unwrap();
    let good = read_all(&fs, &path).unwrap();
    // The segment starts with the value record: `uncompressed_len: u32 | LZ4 block`.
    let size = c.segment.value_bytes as usize - RECORD_TRAILER_LEN;
    assert!(size < 100, "the value was compressed ({size} bytes)");
    assert_eq!(good[size], LZ4_VALUE_RECORD);
    let mut bad = good.clone();
    bad[..4].copy_from_slice(&999u32.to_le_bytes());
    let trailer = record_trailer(&bad[..size], LZ4_VALUE_RECORD);
    bad[size..size + RECORD_TRAILER_LEN].copy_from_slice(&trailer);
    let fs = MemFs::new();
    fs.create(&path).unwrap().append(&bad).unwrap();
    let t = open(&fs, &path, c.len, &opts).unwrap();
    let errors = [
        t.get(&ik(&user, 1, ValueKind::Value)).unwrap_err(),
        scan(&t).unwrap_err(),
        t.verify().unwrap_err(),
    ];
    for e in errors {
        match &e {
            Error::Corruption { file, offset, .. } => {
                assert_eq!((file, *offset), (&path, 0));
                assert!(e.to_string().contains("does not decompress"), "{e}");
            }
            other => panic!("not a corruption: {other}"),
        }
    }
}
