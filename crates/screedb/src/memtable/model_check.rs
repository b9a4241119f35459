#![allow(clippy::unwrap_used, reason = "test code")]
//! Model check of the membuffer protocol with shuttle (`--features model-check`; see
//! `docs/memory.md`, "Model check").
//!
//! A 2-neighbourhood membuffer of 2 entries per bucket, two writers serialized by a leader
//! mutex that hands out sequence numbers (as the write leader does, locking the snapshot list
//! only when a put meets a buffered version of its key and holding it until it publishes), a
//! drainer, a reader of the latest state and a snapshot reader, on three keys of which two share
//! a neighbourhood and one is hot. One of the drains pauses admission first, as an iterator's does, so writes also go
//! past the buffer for keys it does not hold and come back to it when the pause runs out. The
//! skiplist is modelled by a mutex-guarded ordered map receiving what a drain hands over
//! (duplicates skipped, as `SkipList::insert_sorted` does); its own concurrency (one inserting
//! thread under its writer mutex, lock-free readers) is not modelled here, nor are the atomics'
//! orderings (shuttle runs every atomic as SeqCst). Shuttle's random scheduler runs many
//! interleavings; each run checks that:
//!
//! - a snapshot read gives the value written last at or below the snapshot, every time (no
//!   version a snapshot needs is overwritten in place or lost by a drain);
//! - reads of the latest state never go backwards, per key, and find each write right after it;
//! - at the end every key's newest version is readable, no version appears that was never
//!   written, and the entry and byte counts return to zero (nothing counted twice).

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::sync::Arc;

use shuttle::sync::Mutex;
use shuttle::sync::atomic::{AtomicU64, Ordering};
use shuttle::thread;

use super::bucket::BufferedEntry;
use super::membuffer::{Membuffer, PutOutcome};
use crate::key::{SequenceNumber, ValueKind};

/// Keys: "a" (hot) and "b" in neighbourhood 0, "c" in neighbourhood 1 (by their hashes;
/// `scenario` checks it).
const KEYS: [&[u8]; 3] = [b"a", b"b", b"c"];

/// The modelled skiplist: (key, seq) -> value.
#[derive(Default)]
struct List {
    map: BTreeMap<(Vec<u8>, SequenceNumber), Vec<u8>>,
}

impl List {
    fn insert(&mut self, key: &[u8], seq: SequenceNumber, value: &[u8]) {
        self.map
            .entry((key.to_vec(), seq))
            .or_insert_with(|| value.to_vec());
    }

    /// The newest version of `key` at or below `upto`.
    fn get(&self, key: &[u8], upto: SequenceNumber) -> Option<(SequenceNumber, Vec<u8>)> {
        self.map
            .range((key.to_vec(), 0)..=(key.to_vec(), upto))
            .next_back()
            .map(|((_, s), v)| (*s, v.clone()))
    }
}

/// The leader's state: the last sequence number handed out, every write made.
#[derive(Default)]
struct Leader {
    last: SequenceNumber,
    written: Vec<(Vec<u8>, SequenceNumber, Vec<u8>)>,
}

struct World {
    buffer: Membuffer,
    list: Mutex<List>,
    leader: Mutex<Leader>,
    /// The live snapshots (`SnapshotList`); a snapshot reads `visible` under this lock.
    snapshots: Mutex<Vec<SequenceNumber>>,
    /// The last published sequence number (`visible_sequence`).
    visible: AtomicU64,
}

impl World {
    /// One write, as the leader does it: next sequence, membuffer put (in place only if no
    /// snapshot can read the old version), else the skiplist; then the publish. The snapshot
    /// list is locked only if the put meets a buffered version, and held until the publish.
    fn write(&self, key: &[u8], value: &[u8]) {
        let mut leader = self.leader.lock().unwrap();
        leader.last += 1;
        let seq = leader.last;
        let held = OnceCell::new();
        let newest = || {
            held.get_or_init(|| {
                let live = self.snapshots.lock().unwrap();
                let newest = live.iter().max().copied();
                (live, newest)
            })
            .1
        };
        let may_drop = |old: SequenceNumber| newest().is_none_or(|s| old > s);
        let keep = |old: BufferedEntry<'_>| {
            self.list
                .lock()
                .unwrap()
                .insert(old.key(), old.seq, old.value())
        };
        let out = self
            .buffer
            .put(key, seq, ValueKind::Value, value, may_drop, keep);
        if let PutOutcome::Full | PutOutcome::Paused = out {
            self.list.lock().unwrap().insert(key, seq, value);
        }
        leader.written.push((key.to_vec(), seq, value.to_vec()));
        self.visible.store(seq, Ordering::SeqCst);
        drop(held);
        // Under the leader lock no other write can come between: the latest read must find this
        // one (a buffered older version in front of a newer skiplist one would fail here).
        assert_eq!(
            self.get_latest(key),
            Some(seq),
            "latest read right after write {seq}"
        );
    }

    /// `MemTable::get_latest`: the membuffer's version, else the skiplist's newest.
    fn get_latest(&self, key: &[u8]) -> Option<SequenceNumber> {
        if let Some(seq) = self.buffer.get(key, |e| e.seq) {
            return Some(seq);
        }
        self.list.lock().unwrap().get(key, u64::MAX).map(|(s, _)| s)
    }

    /// `MemTable::get` at a snapshot: the buffered version if visible, else the skiplist.
    fn get_at(&self, key: &[u8], snapshot: SequenceNumber) -> Option<Vec<u8>> {
        if let Some(value) = self
            .buffer
            .get(key, |e| (e.seq <= snapshot).then(|| e.value().to_vec()))
            .flatten()
        {
            return Some(value);
        }
        self.list.lock().unwrap().get(key, snapshot).map(|(_, v)| v)
    }

    fn drain(&self, hood: usize) {
        self.buffer
            .drain_hoods(hood..hood + 1, u64::MAX, |entries| {
                let mut list = self.list.lock().unwrap();
                for e in entries.iter() {
                    list.insert(e.user_key, e.seq, e.value);
                }
            });
    }
}

fn scenario() {
    // 2 buckets of 2 entries, one per neighbourhood: "a" and "b" fill bucket 0.
    let buffer = Membuffer::new(2 * 128, 2);
    assert_eq!(buffer.hoods(), 2);
    let hoods: Vec<usize> = KEYS.iter().map(|k| buffer.hood(k)).collect();
    assert_eq!(
        hoods,
        [0, 0, 1],
        "the scenario needs two keys sharing a neighbourhood"
    );
    let world = Arc::new(World {
        buffer,
        list: Mutex::new(List::default()),
        leader: Mutex::new(Leader::default()),
        snapshots: Mutex::new(Vec::new()),
        visible: AtomicU64::new(0),
    });
    let mut threads = Vec::new();
    for w in 0..2u8 {
        let world = Arc::clone(&world);
        threads.push(thread::spawn(move || {
            for i in 0..3u8 {
                let key = if i == 1 {
                    KEYS[1 + w as usize]
                } else {
                    KEYS[0]
                };
                world.write(key, &[w, i]);
            }
        }));
    }
    let drainer = Arc::clone(&world);
    threads.push(thread::spawn(move || {
        for round in 0..3 {
            if round == 1 {
                // An iterator's drain (`MemTable::drain_for_scan`): the next three puts admit
                // no new key, so some land in the skiplist while the buffer holds other keys,
                // and a key put there may be buffered again once the pause runs out.
                drainer.buffer.pause_admission(3);
            }
            drainer.drain(round % 2);
        }
    }));
    let reader = Arc::clone(&world);
    threads.push(thread::spawn(move || {
        let mut seen = [0; 3];
        for _ in 0..3 {
            for (k, key) in KEYS.iter().enumerate() {
                let now = reader.get_latest(key).unwrap_or(0);
                assert!(
                    now >= seen[k],
                    "latest read went back from {} to {now}",
                    seen[k]
                );
                seen[k] = now;
            }
        }
    }));
    let snap = Arc::clone(&world);
    threads.push(thread::spawn(move || {
        let s = {
            let mut live = snap.snapshots.lock().unwrap();
            let s = snap.visible.load(Ordering::SeqCst);
            live.push(s);
            s
        };
        // Every write at or below `s` was recorded before it was published.
        let expected = snap
            .leader
            .lock()
            .unwrap()
            .written
            .iter()
            .filter(|(k, seq, _)| k == KEYS[0] && *seq <= s)
            .map(|(_, _, v)| v.clone())
            .next_back();
        for _ in 0..2 {
            assert_eq!(snap.get_at(KEYS[0], s), expected, "snapshot {s} read");
            thread::yield_now();
        }
        snap.snapshots.lock().unwrap().clear();
    }));
    for t in threads {
        t.join().unwrap();
    }
    world.drain(0);
    world.drain(1);
    assert_eq!((world.buffer.len(), world.buffer.bytes()), (0, 0));
    let leader = world.leader.lock().unwrap();
    let list = world.list.lock().unwrap();
    for ((key, seq), value) in &list.map {
        let written = (key.clone(), *seq, value.clone());
        assert!(
            leader.written.contains(&written),
            "never written: {written:?}"
        );
    }
    for key in KEYS {
        let newest = leader.written.iter().rfind(|(k, _, _)| k == key);
        let found = list.get(key, u64::MAX);
        assert_eq!(
            newest.map(|(_, s, v)| (*s, v.clone())),
            found,
            "newest version of {key:?}"
        );
    }
}

#[test]
fn model_check_membuffer_writers_drainer_readers() {
    shuttle::check_random(scenario, 20_000);
}
