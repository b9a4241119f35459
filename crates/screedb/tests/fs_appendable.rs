//! Files that may grow: `Fs::open_appendable` on OsFs, MemFs and FaultFs. A reopen cuts the
//! unacknowledged tail and appends after the committed length; readers opened before an append
//! keep reading their prefix; at power loss synced appends survive, unsynced ones vanish or tear,
//! and nothing below the committed length changes.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers outside #[test] functions unwrap too"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use proptest::prelude::*;
use screedb::fs::{FaultFs, Fs, MemFs, OsFs, read_all};

/// One backend: its name, a file system, a directory in it, and the temp dir that keeps it.
type Backend = (
    &'static str,
    Arc<dyn Fs>,
    PathBuf,
    Option<tempfile::TempDir>,
);

/// Every backend under test.
fn backends() -> Vec<Backend> {
    let tmp = tempfile::tempdir().unwrap();
    let os_dir = tmp.path().to_path_buf();
    let mem = MemFs::new();
    mem.create_dir_all(Path::new("/db")).unwrap();
    let fault_mem = FaultFs::new(Arc::new(MemFs::new()));
    fault_mem.create_dir_all(Path::new("/db")).unwrap();
    let tmp2 = tempfile::tempdir().unwrap();
    let fault_os_dir = tmp2.path().to_path_buf();
    vec![
        ("OsFs", Arc::new(OsFs), os_dir, Some(tmp)),
        ("MemFs", Arc::new(mem), PathBuf::from("/db"), None),
        (
            "FaultFs/MemFs",
            Arc::new(fault_mem),
            PathBuf::from("/db"),
            None,
        ),
        (
            "FaultFs/OsFs",
            Arc::new(FaultFs::new(Arc::new(OsFs))),
            fault_os_dir,
            Some(tmp2),
        ),
    ]
}

fn write_synced(fs: &dyn Fs, path: &Path, data: &[u8]) {
    let mut w = fs.create(path).unwrap();
    w.append(data).unwrap();
    w.sync().unwrap();
}

#[test]
fn reopen_appends_after_the_committed_length_and_cuts_the_tail() {
    for (name, fs, dir, _tmp) in backends() {
        let path = dir.join("tree");
        write_synced(&*fs, &path, b"committed|unacknowledged tail");
        let mut w = fs.open_appendable(&path, 10).unwrap();
        assert_eq!(w.size(), 10, "{name}");
        assert_eq!(
            fs.file_size(&path).unwrap(),
            10,
            "{name}: the tail is cut at once"
        );
        w.append(b"more").unwrap();
        assert_eq!(w.size(), 14, "{name}");
        w.sync().unwrap();
        drop(w);
        assert_eq!(read_all(&*fs, &path).unwrap(), b"committed|more", "{name}");

        // Reopening at the full length cuts nothing; twice in a row is fine.
        let mut w = fs.open_appendable(&path, 14).unwrap();
        w.append(b"!").unwrap();
        w.sync().unwrap();
        drop(w);
        assert_eq!(read_all(&*fs, &path).unwrap(), b"committed|more!", "{name}");
    }
}

#[test]
fn reopen_refuses_a_missing_file_or_one_shorter_than_committed() {
    for (name, fs, dir, _tmp) in backends() {
        let missing = dir.join("missing");
        let err = fs.open_appendable(&missing, 0).err().unwrap();
        assert_eq!(
            err.io_kind(),
            Some(std::io::ErrorKind::NotFound),
            "{name}: {err}"
        );
        assert!(err.to_string().contains("missing"), "{name}: {err}");

        let short = dir.join("short");
        write_synced(&*fs, &short, b"abc");
        let err = fs.open_appendable(&short, 4).err().unwrap();
        assert!(err.is_corruption(), "{name}: {err}");
        assert!(err.to_string().contains("short"), "{name}: {err}");
        assert_eq!(
            read_all(&*fs, &short).unwrap(),
            b"abc",
            "{name}: nothing was cut"
        );
    }
}

#[test]
fn readers_opened_before_an_append_keep_reading_their_prefix() {
    for (name, fs, dir, _tmp) in backends() {
        let path = dir.join("grow");
        let first: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
        write_synced(&*fs, &path, &first);
        let plain = fs.open(&path).unwrap();
        let mapped = fs.open_mapped(&path).unwrap();
        let mut w = fs.open_appendable(&path, first.len() as u64).unwrap();
        w.append(&[7u8; 9000]).unwrap();
        w.sync().unwrap();
        for r in [&plain, &mapped] {
            assert_eq!(r.size(), 20_000, "{name}");
            assert_eq!(r.read_vec(0, 20_000).unwrap(), first, "{name}");
            assert_eq!(r.read_vec(19_990, 10).unwrap(), &first[19_990..], "{name}");
            let err = r.read_vec(19_995, 10).unwrap_err();
            assert!(err.to_string().contains("past the end"), "{name}: {err}");
        }
        // A reader opened after the append sees the whole file.
        let later = fs.open_mapped(&path).unwrap();
        assert_eq!(later.size(), 29_000, "{name}");
        assert_eq!(
            later.read_vec(20_000, 9000).unwrap(),
            vec![7u8; 9000],
            "{name}"
        );
        // Appending after a reopen at the reader's extent leaves its bytes alone.
        drop(w);
        let mut w = fs.open_appendable(&path, 20_000).unwrap();
        w.append(b"tail").unwrap();
        w.sync().unwrap();
        assert_eq!(plain.read_vec(0, 20_000).unwrap(), first, "{name}");
        assert_eq!(mapped.read_vec(0, 20_000).unwrap(), first, "{name}");
    }
}

/// A FaultFs over MemFs with `/db/t` holding `base` (synced, directory synced).
fn fault_with(base: &[u8]) -> (FaultFs, PathBuf) {
    let fs = FaultFs::new(Arc::new(MemFs::new()));
    fs.create_dir_all(Path::new("/db")).unwrap();
    let path = PathBuf::from("/db/t");
    write_synced(&fs, &path, base);
    fs.sync_dir(Path::new("/db")).unwrap();
    (fs, path)
}

#[test]
fn power_loss_keeps_synced_appends_and_drops_unsynced_ones() {
    let (fs, path) = fault_with(b"base");
    let mut w = fs.open_appendable(&path, 4).unwrap();
    w.append(b"+synced").unwrap();
    w.sync().unwrap();
    w.append(b"+lost").unwrap();
    fs.crash();
    assert_eq!(read_all(&fs, &path).unwrap(), b"base+synced");
    assert!(
        w.append(b"x").is_err(),
        "a handle from before the crash is dead"
    );
}

#[test]
fn power_loss_before_the_first_sync_may_bring_the_cut_tail_back() {
    let (fs, path) = fault_with(b"base|old tail");
    let mut w = fs.open_appendable(&path, 5).unwrap();
    w.append(b"new bytes").unwrap();
    fs.crash();
    // The cut was never synced: the durable bytes past the committed length come back, and the
    // caller cuts them again at its next reopen. Bytes below 5 never change.
    assert_eq!(read_all(&fs, &path).unwrap(), b"base|old tail");
    let mut w = fs.open_appendable(&path, 5).unwrap();
    w.sync().unwrap();
    fs.crash();
    assert_eq!(
        read_all(&fs, &path).unwrap(),
        b"base|",
        "a synced cut is durable"
    );
    drop(w);
}

#[test]
fn a_torn_append_after_a_reopen_keeps_a_prefix_or_garbage_above_the_committed_length() {
    for garble in [false, true] {
        for keep in [0usize, 3, 100] {
            let (fs, path) = fault_with(b"base|old tail");
            let mut w = fs.open_appendable(&path, 5).unwrap();
            w.append(b"first").unwrap();
            w.append(b"second").unwrap();
            if garble {
                fs.crash_garbling_last_write(keep);
            } else {
                fs.crash_tearing_last_write(keep);
            }
            let got = read_all(&fs, &path).unwrap();
            let kept = keep.min(6);
            assert_eq!(got.len(), 10 + kept, "garble {garble} keep {keep}");
            assert_eq!(&got[..10], b"base|first");
            let want: Vec<u8> = b"second"[..kept]
                .iter()
                .map(|&b| if garble { !b } else { b })
                .collect();
            assert_eq!(&got[10..], &want[..], "garble {garble} keep {keep}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random reopen/append/sync steps, then a crash (plain or torn): everything synced
    /// survives, the file holds a prefix of what was written after the last committed length
    /// (or the durable tail a pending cut removed), and nothing below the committed length of
    /// the last reopen changes.
    #[test]
    fn power_loss_never_changes_committed_or_synced_bytes(
        steps in prop::collection::vec((0u8..3, 1usize..40), 1..12),
        tear in prop::option::of((0usize..50, any::<bool>())),
    ) {
        let (fs, path) = fault_with(b"0123456789");
        let mut model = b"0123456789".to_vec(); // what the file holds now
        let mut synced = model.clone(); // what a plain crash restores
        let mut committed = 10usize; // the last reopen's committed length
        // Bytes below this length are what the last sync made durable, untouched since: the
        // smallest committed length of a reopen (a cut) since that sync.
        let mut untouched = 10usize;
        let mut w = fs.open_appendable(&path, 10).unwrap();
        for (i, (op, n)) in steps.into_iter().enumerate() {
            match op {
                0 => {
                    let data = vec![b'a' + (i % 26) as u8; n];
                    w.append(&data).unwrap();
                    model.extend_from_slice(&data);
                }
                1 => {
                    w.sync().unwrap();
                    synced = model.clone();
                    untouched = model.len();
                }
                _ => {
                    committed = n.min(model.len());
                    untouched = untouched.min(committed);
                    drop(w);
                    w = fs.open_appendable(&path, committed as u64).unwrap();
                    model.truncate(committed);
                }
            }
        }
        match tear {
            None => fs.crash(),
            Some((keep, false)) => fs.crash_tearing_last_write(keep),
            Some((keep, true)) => fs.crash_garbling_last_write(keep),
        }
        let got = read_all(&fs, &path).unwrap();
        // Bytes a pending (unsynced) cut may have replaced are not stable: a torn crash applies
        // the cut and the appends after it.
        let stable = untouched.min(synced.len());
        prop_assert_eq!(&got[..stable], &synced[..stable]);
        match tear {
            None => prop_assert_eq!(&got, &synced),
            // Either the synced state, or a prefix of the bytes written since (with the cut).
            Some((_, false)) => prop_assert!(
                got == synced || model.starts_with(&got) && got.len() >= committed
            ),
            // Or that, with the end of the last write garbled.
            Some((_, true)) => prop_assert!(
                got == synced
                    || got.len() <= model.len()
                        && got.len() >= committed
                        && got[..committed] == model[..committed]
            ),
        }
    }
}
