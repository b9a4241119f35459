//! The write path: group commit through the WAL, then the memtable.
//!
//! Writers queue up under the database mutex. The writer at the front is the leader: it makes room
//! (switching memtables, stalling when background work is behind), merges the batches of the
//! writers behind it into one group, and — outside the mutex — appends the group to the WAL as one
//! record (fsyncing once if any writer asked for sync), then inserts it into the memtable. Back
//! under the mutex it publishes the new sequence number and wakes the group. A failed WAL append or
//! sync is sticky: the database refuses every later write.

use std::cell::OnceCell;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::write_queue::Writer;
use super::write_rate::{Debt, Triggers};
use super::{DbInner, DbState, Immutable, OldWal, stats::Counters};
use crate::error::{Error, Result};
use crate::filename;
use crate::fs::Fs;
use crate::key::{SequenceNumber, ValueKind};
use crate::memtable::MemTable;
use crate::options::{Memory, Options};
use crate::sync::{lock, wait_timeout};
use crate::table::CompressionType;
use crate::wal::{COMPRESS_RECORDS_FROM, LogWriter, Packed, Piece};
use crate::write_batch::{BatchOp, HEADER_LEN, WriteBatch};
use std::sync::MutexGuard;

/// Largest group the leader builds (bytes of batch encoding).
const MAX_GROUP_BYTES: usize = 1 << 20;

pub(super) fn write(inner: &DbInner, batch: WriteBatch, sync: bool) -> Result<()> {
    inner.check_open()?;
    // Compressed here, in the writer's own thread and before it queues, so that a leader
    // never compresses for its group (writers waiting for a leader would only spin).
    let packed = (inner.options.wal_compression == CompressionType::Lz4
        && batch.data().len() >= COMPRESS_RECORDS_FROM)
        .then(|| Packed::new(&batch.data()[HEADER_LEN..]))
        .flatten();
    let writer = Arc::new(Writer::new(Some(batch), packed, sync));
    let mut st = lock(&inner.state);
    st.writers.push_back(Arc::clone(&writer));
    st = writer.wait_until(&inner.state, st, |st| {
        lock(&writer.done).is_some() || is_front(st, &writer)
    });
    if let Some(result) = lock(&writer.done).take() {
        return result;
    }

    // Leader.
    let (st, group_size, result) = lead(inner, st);
    let mut st = st;
    // Wake the group (the leader is the first of it) and the next leader.
    for _ in 0..group_size.max(1) {
        if let Some(w) = st.writers.pop_front()
            && !Arc::ptr_eq(&w, &writer)
        {
            *lock(&w.done) = Some(result.clone());
            w.wake();
        }
    }
    if let Some(next) = st.writers.front() {
        next.wake();
    }
    result
}

/// True when `writer` is at the front of the queue (the leader).
fn is_front(st: &DbState, writer: &Arc<Writer>) -> bool {
    st.writers.front().is_some_and(|w| Arc::ptr_eq(w, writer))
}

/// Switches the memtable (if it is not empty) as the leader of the writer queue, and returns the
/// result with the state still locked. Only a leader may replace the WAL: another leader may be
/// appending to it outside the mutex, and would put the old WAL back afterwards.
pub(super) fn switch_memtable_as_leader(inner: &DbInner) -> (Result<()>, MutexGuard<'_, DbState>) {
    // A writer without a batch: write groups stop in front of it, so it leads alone.
    let writer = Arc::new(Writer::new(None, None, false));
    let mut st = lock(&inner.state);
    st.writers.push_back(Arc::clone(&writer));
    st = writer.wait_until(&inner.state, st, |st| is_front(st, &writer));
    let (result, mut st) = make_room_for_write(inner, st, true);
    st.writers.pop_front();
    if let Some(next) = st.writers.front() {
        next.wake();
    }
    (result, st)
}

/// Commits the group led by the front writer. Returns the re-locked state, the number of writers
/// in the group and the group's result.
fn lead<'a>(
    inner: &'a DbInner,
    st: MutexGuard<'a, DbState>,
) -> (MutexGuard<'a, DbState>, usize, Result<()>) {
    let (room, st) = make_room_for_write(inner, st, false);
    if let Err(e) = room {
        return (st, 1, Err(e));
    }
    let (mut group, members, sync_any) = build_group(&st);
    let group_size = members.len();
    let mut st = pace(inner, st, group.data().len() as u64);
    let first_seq = st.versions.last_sequence() + 1;
    group.set_sequence(first_seq);
    let last_seq = first_seq + u64::from(group.count()).saturating_sub(1);
    let Some(mut wal) = st.wal.take() else {
        return (st, group_size, Err(Error::Closed));
    };
    let mem = Arc::clone(&st.mem);
    // A synced write acknowledges every write before it, including those in older WALs, which
    // were not synced when they were replaced, and the new WALs' directory entries.
    let older: Vec<Arc<Mutex<LogWriter>>> = if sync_any {
        st.old_wals.iter().map(|w| Arc::clone(&w.log)).collect()
    } else {
        Vec::new()
    };
    let sync_dir = sync_any && !st.wal_dir_synced;
    drop(st);

    let written = make_older_durable(inner, &older, sync_dir)
        .and_then(|()| append(inner, &mut wal, &group, &members, sync_any));
    if written.is_ok() && inner.options.memory == Memory::Flodb {
        // The first put of the group that meets a buffered version of its key locks the
        // snapshot list and reads the newest snapshot; the lock is held until the group is
        // published. Snapshots are taken under it, so none appears between that read and the
        // publish: in-place overwrites never hide a version a snapshot reads. A group that
        // meets no buffered version (keys in order, most new keys) overwrites nothing in place
        // and publishes without the lock: a snapshot taken meanwhile reads below the group.
        let held = OnceCell::new();
        let newest = || {
            held.get_or_init(|| {
                let list = inner.snapshots.hold();
                let newest = list.keys().next_back().copied();
                (list, newest)
            })
            .1
        };
        put_buffered(&mem, &group, &newest);
        if group.count() > 0 {
            inner.visible_sequence.store(last_seq, Ordering::Release);
        }
        drop(held);
        inner.drain_bell.ring();
    } else if written.is_ok() {
        mem.add_write_batch(&group);
    }

    let mut st = lock(&inner.state);
    st.wal = Some(wal);
    if written.is_ok() && sync_dir {
        // Only a leader replaces the WAL, so the one synced above is still the current one.
        st.wal_dir_synced = true;
    }
    let result = match written {
        Ok(()) => {
            if group.count() > 0 {
                st.versions.set_last_sequence(last_seq);
                inner.visible_sequence.store(last_seq, Ordering::Release);
            }
            Ok(())
        }
        Err(e) => {
            st.bg_error.get_or_insert_with(|| e.clone());
            Err(e)
        }
    };
    (st, group_size, result)
}

/// A writer of a group and where its records lie in the group's encoding.
type Member = (Arc<Writer>, Range<usize>);

/// Merges the batches of the writers at the front of the queue (the leader first) into one, up to
/// `MAX_GROUP_BYTES`. The group is synced if any of its writers asked for sync.
/// The leader's own batch becomes the group (taken, not copied: a lone writer, the common case,
/// costs no copy); the others' batches are appended to it. Returns the group, its members
/// (the leader first) and whether to sync.
fn build_group(st: &DbState) -> (WriteBatch, Vec<Member>, bool) {
    let mut group: Option<WriteBatch> = None;
    let mut members = Vec::new();
    let mut sync_any = false;
    for w in &st.writers {
        let mut slot = lock(&w.batch);
        let Some(batch) = slot.as_ref() else { break };
        let start = group.as_ref().map_or(HEADER_LEN, |g| g.data().len());
        match group.as_mut() {
            None => group = slot.take(),
            Some(g) if g.approximate_size() + batch.approximate_size() > MAX_GROUP_BYTES => break,
            Some(g) => g.append(batch),
        }
        let end = group.as_ref().map_or(start, |g| g.data().len());
        sync_any |= w.sync;
        members.push((Arc::clone(w), start..end));
    }
    (group.unwrap_or_default(), members, sync_any)
}

/// Finishes (syncs and trims) the replaced WALs in `older`, oldest first, and syncs the
/// directory if `sync_dir`. A log already finished costs nothing.
fn make_older_durable(
    inner: &DbInner,
    older: &[Arc<Mutex<LogWriter>>],
    sync_dir: bool,
) -> Result<()> {
    for log in older {
        lock(log).finish()?;
    }
    if sync_dir {
        inner.fs.sync_dir(&inner.dir)?;
    }
    Ok(())
}

/// Logs `group` as one WAL record: plain, or, when a member's writer compressed its batch,
/// compressed (the group's header, then each member's records, packed or as they are).
fn append(
    inner: &DbInner,
    wal: &mut LogWriter,
    group: &WriteBatch,
    members: &[Member],
    sync: bool,
) -> Result<()> {
    let before = wal.size();
    let data = group.data();
    if members.iter().any(|(w, _)| w.packed.is_some()) {
        let pieces: Vec<Piece<'_>> = members
            .iter()
            .map(|(w, range)| match &w.packed {
                Some(p) => Piece::Packed(p),
                None => Piece::Raw(data.get(range.clone()).unwrap_or_default()),
            })
            .collect();
        wal.add_compressed_record(data.get(..HEADER_LEN).unwrap_or_default(), &pieces)?;
    } else {
        wal.add_record(data)?;
    }
    if sync {
        wal.sync()?;
        Counters::add(&inner.counters.wal_syncs, 1);
    } else {
        wal.flush()?;
    }
    Counters::add(&inner.counters.wal_bytes_written, wal.size() - before);
    Counters::add(&inner.counters.write_groups, 1);
    let user_bytes: usize = group
        .iter()
        .map(|op| match op {
            Ok(BatchOp::Put { key, value }) => key.len() + value.len(),
            Ok(BatchOp::Delete { key }) => key.len(),
            Err(_) => 0,
        })
        .sum();
    Counters::add(&inner.counters.user_bytes_written, user_bytes as u64);
    Ok(())
}

/// Writes a committed batch through the memtable's membuffer, in sequence order. `newest`
/// gives the newest live snapshot (see `MemTable::put`), held fixed by the caller once asked.
fn put_buffered(mem: &MemTable, batch: &WriteBatch, newest: &impl Fn() -> Option<SequenceNumber>) {
    for (seq, op) in (batch.sequence()..).zip(batch.iter()) {
        match op {
            Ok(BatchOp::Put { key, value }) => mem.put(seq, ValueKind::Value, key, value, newest),
            Ok(BatchOp::Delete { key }) => mem.put(seq, ValueKind::Deletion, key, b"", newest),
            Err(_) => break, // validated before it was queued
        }
    }
}

/// Waits until the memtable has room (switching to a new one when full) and applies the stall
/// policy. With `force`, switches even if the memtable is not full (used by flush).
/// The guard is released while waiting and handed back.
pub(super) fn make_room_for_write<'a>(
    inner: &'a DbInner,
    mut st: MutexGuard<'a, DbState>,
    mut force: bool,
) -> (Result<()>, MutexGuard<'a, DbState>) {
    let opts = &inner.options;
    loop {
        if let Some(e) = &st.bg_error {
            let e = Error::ReadOnly(Arc::new(e.clone()));
            return (Err(e), st);
        }
        if inner.shutting_down.load(Ordering::Acquire) {
            return (Err(Error::Closed), st);
        }
        let empty = st.mem.is_empty();
        if (!force && st.mem.approximate_memory_usage() <= opts.write_buffer_size)
            || (force && empty)
        {
            return (Ok(()), st);
        }
        // The debt matters only to a switch: the common case above does not read it.
        let version = st.versions.current();
        let l0 = version.files(0).len();
        let pending = inner.strategy.pending_bytes(&version, opts);
        drop(version);
        if st.imms.len() + 1 >= opts.max_write_buffers
            || l0 >= opts.l0_stop_trigger
            || pending >= opts.hard_pending_compaction_bytes
        {
            let start = Instant::now();
            Counters::add(&inner.counters.stall_stops, 1);
            inner.bg_cv.notify_all();
            st = wait_timeout(&inner.bg_cv, st, Duration::from_millis(100)).0;
            Counters::add(
                &inner.counters.stall_micros,
                start.elapsed().as_micros() as u64,
            );
            report_stalls(inner);
            continue;
        }
        if let Err(e) = switch_memtable(inner, &mut st) {
            return (Err(e), st);
        }
        force = false;
    }
}

/// The slowdown stage of write stalls (`write_rate.rs`): while compaction is behind, sleeps as
/// long as the delayed write rate asks for a group of `bytes`, with the mutex released (the
/// writers behind the leader wait for it, as they do for its WAL append).
fn pace<'a>(
    inner: &'a DbInner,
    mut st: MutexGuard<'a, DbState>,
    bytes: u64,
) -> MutexGuard<'a, DbState> {
    let opts = &inner.options;
    let version = st.versions.current();
    let debt = Debt {
        l0_tables: version.files(0).len(),
        pending_bytes: inner.strategy.pending_bytes(&version, opts),
    };
    drop(version);
    let triggers = Triggers {
        l0_slowdown: opts.l0_slowdown_trigger,
        l0_stop: opts.l0_stop_trigger,
        soft_pending_bytes: opts.soft_pending_compaction_bytes,
        max_rate: opts.delayed_write_rate,
    };
    let now = inner.opened_at.elapsed();
    let delay = st.write_rate.delay(now, bytes, debt, &triggers);
    if delay.is_zero() {
        return st;
    }
    let start = Instant::now();
    let deadline = start + delay;
    // Background threads signal the same condition variable: wait out the whole delay.
    while let Some(left) = deadline.checked_duration_since(Instant::now())
        && !left.is_zero()
        && !inner.shutting_down.load(Ordering::Acquire)
    {
        st = wait_timeout(&inner.bg_cv, st, left).0;
    }
    Counters::add(&inner.counters.stall_slowdowns, 1);
    Counters::add(
        &inner.counters.stall_micros,
        start.elapsed().as_micros() as u64,
    );
    report_stalls(inner);
    st
}

/// Hands the stall counters to the info log, which reports them at most every ten seconds.
fn report_stalls(inner: &DbInner) {
    let c = &inner.counters;
    inner.info_log.stalls([
        c.stall_slowdowns.load(Ordering::Relaxed),
        c.stall_stops.load(Ordering::Relaxed),
        c.stall_micros.load(Ordering::Relaxed),
    ]);
}

/// Creates WAL number `number` in `dir`, through a memory map if `options.mmap_wal`.
pub(super) fn create_wal(
    fs: &dyn Fs,
    options: &Options,
    dir: &Path,
    number: u64,
) -> Result<LogWriter> {
    let path = filename::log_file(dir, number);
    let file = if options.mmap_wal {
        fs.create_mapped_log(&path)?
    } else {
        fs.create(&path)?
    };
    Ok(LogWriter::new(file))
}

/// Starts a new WAL and memtable; the old memtable becomes immutable and a flush is requested.
///
/// The old WAL is neither synced nor is the directory here: with the mutex held that would stop
/// every writer for as long as the disk takes to write a whole log (measured: over 100 ms for
/// 64 MiB). The old WAL joins `old_wals`: the first synced write finishes it (and syncs the
/// directory) before it is acknowledged, its memtable's flush retires it. An older WAL may thus
/// lose an unsynced tail in a power loss while a newer one keeps later writes; recovery
/// (`open.rs`) stops at the first gap in sequence numbers, so what it recovers is always a
/// prefix of the writes.
fn switch_memtable(inner: &DbInner, st: &mut DbState) -> Result<()> {
    let number = st.versions.new_file_number();
    let wal = match create_wal(inner.fs.as_ref(), &inner.options, &inner.dir, number) {
        Ok(w) => w,
        Err(e) => {
            st.bg_error.get_or_insert_with(|| e.clone());
            return Err(e);
        }
    };
    let old_number = std::mem::replace(&mut st.wal_number, number);
    if let Some(old) = st.wal.replace(wal) {
        st.old_wals.push_back(OldWal {
            number: old_number,
            log: Arc::new(Mutex::new(old)),
        });
    }
    st.wal_dir_synced = false;
    let new_mem = inner
        .options
        .new_memtable(inner.icmp.clone(), Some(&st.mem));
    let old_mem = std::mem::replace(&mut st.mem, Arc::new(new_mem));
    // Only a leader switches: every earlier group is in the old memtable and published.
    let last_sequence = st.versions.last_sequence();
    st.imms.push_back(Immutable {
        mem: old_mem,
        log_number: old_number,
        last_sequence,
    });
    inner.install_super_version(st);
    inner.bg_cv.notify_all();
    Ok(())
}
