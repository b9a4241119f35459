//! Background work: flushing immutable memtables and running compactions.
//!
//! `max_background_jobs` threads run [`run`]. Each loops under the database mutex: a pending
//! flush comes first (one at a time, oldest memtable first, so level-0 tables stay in write
//! order); otherwise the compaction strategy is asked for a choice that does not touch files or
//! key ranges other jobs are using. The job itself runs outside the mutex; its edit is applied
//! under it. A failure is sticky: it is stored in `bg_error` and all writes fail from then on.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::stats::Counters;
use super::write::switch_memtable_as_leader;
use super::{DbInner, DbState};
use crate::compaction::{Choice, MergeSpec, job, key_range};
use crate::error::{Error, Result};
use crate::filename;
use crate::info_log::info;
use crate::manifest::{FileMeta, VersionEdit};
use crate::options::Layout;
use crate::sync::{lock, wait, wait_timeout};
use std::sync::MutexGuard;

/// Body of a background thread.
pub(super) fn run(inner: &DbInner) {
    let mut st = lock(&inner.state);
    loop {
        if inner.shutting_down.load(Ordering::Acquire) {
            return;
        }
        if st.bg_error.is_none() {
            if !st.flush_running && !st.imms.is_empty() {
                st = flush_oldest(inner, st);
                continue;
            }
            // With several threads, one is always left free for flushes: a flush that waits
            // behind long compactions stalls every writer.
            let compaction_slots = inner.options.max_background_jobs.saturating_sub(1).max(1);
            let compactions_running = st.jobs_running - usize::from(st.flush_running);
            if !st.manual_running && compactions_running < compaction_slots {
                refresh_seek_budget(inner, &mut st);
                let choice =
                    inner
                        .strategy
                        .choose(&st.versions.current(), &inner.options, &st.compaction);
                if !matches!(choice, Choice::DoNothing) {
                    st = run_choice(inner, st, choice).1;
                    continue;
                }
            }
        }
        // Iterator sources kept for a replaced super version hold its tables. They are
        // released under the mutex, so that a thread that then finds the database idle
        // (`wait_for_idle`) finds their tables queued, or being deleted by the purge below,
        // which its own purge waits for.
        inner.iter_pool.release_stale(&inner.super_version);
        if inner.obsolete.has_queued() {
            // Tables released by the last job (or by readers) are deleted without the mutex.
            drop(st);
            inner.obsolete.purge();
            st = lock(&inner.state);
            continue;
        }
        st = wait(&inner.bg_cv, st);
    }
}

/// Sets the bytes seek-based compactions may still write: `seek_compaction_budget_percent` of
/// the user bytes written plus the block reads overlapping tables cost (`overlap_read_bytes`),
/// minus what they wrote (all three counters survive reopens).
fn refresh_seek_budget(inner: &DbInner, st: &mut DbState) {
    let percent = match &inner.options.layout {
        Layout::Flsm(flsm) => flsm.seek_compaction_budget_percent,
        Layout::Leveled | Layout::Trie(_) | Layout::Jungle(_) => 0,
    };
    let earned = inner
        .counters
        .user_bytes_written
        .load(Ordering::Relaxed)
        .saturating_add(inner.counters.overlap_read_bytes.load(Ordering::Relaxed));
    let spent = inner
        .counters
        .seek_compaction_bytes_written
        .load(Ordering::Relaxed);
    let budget = u64::try_from(u128::from(earned) * u128::from(percent) / 100).unwrap_or(u64::MAX);
    st.compaction.seek_budget_bytes = budget.saturating_sub(spent);
}

/// Called by readers when a guard's seek count reached the threshold: wakes the background
/// threads (taking the mutex first, so a thread about to wait cannot miss the notification).
pub(super) fn seek_threshold_crossed(inner: &DbInner) {
    drop(lock(&inner.state));
    inner.bg_cv.notify_all();
}

fn set_error(inner: &DbInner, st: &mut DbState, e: Error) {
    if st.bg_error.is_none() {
        info!(
            inner.info_log,
            "background error (the database is read-only until reopened): {e}"
        );
    }
    st.bg_error.get_or_insert(e);
    inner.bg_cv.notify_all();
}

/// `[#12 (1804311 bytes) #13 (...)]`: tables as the info log names them.
fn tables_line<'a>(files: impl IntoIterator<Item = &'a FileMeta>) -> String {
    let names: Vec<String> = files
        .into_iter()
        .map(|f| format!("#{} ({} bytes)", f.number, f.file_size))
        .collect();
    format!("[{}]", names.join(" "))
}

/// The context of a job started while the store's tables held `stored_bytes`.
fn job_context<'a>(
    inner: &'a DbInner,
    stored_bytes: u64,
    snapshots: &'a [u64],
    alloc: &'a (dyn Fn() -> u64 + Sync),
) -> job::JobContext<'a> {
    job::JobContext {
        // While the store fits in half the process's memory (`Options::populate_new_tables`).
        populate_new_tables: stored_bytes < inner.populate_limit,
        fs: inner.fs.as_ref(),
        dir: &inner.dir,
        icmp: &inner.icmp,
        table_options: &inner.table_options,
        format: inner.options.layout.kind().table_format(),
        compaction_filter: inner.options.compaction_filter.as_deref(),
        tables: &inner.tables,
        snapshots,
        new_file_number: alloc,
        cancel: Some(&inner.shutting_down),
    }
}

/// Level-1 trees a Jungle flush writes into (see [`claim_level1`]): busy until its edit is
/// installed.
struct Level1Claim {
    version: Arc<crate::version::Version>,
    plan: crate::compaction::OutputPlan,
    targets: Vec<crate::version::FileRef>,
    range: (usize, Vec<u8>, Vec<u8>),
}

/// For the Jungle layout, while level 0 is empty: claims the level-1 trees the memtable's keys
/// reach (busy files and range, as a merge would), so the flush appends to them instead of
/// writing a level-0 table (`Jungle::flush_plan`). `None` for other layouts, an empty
/// memtable, or when the plan is refused.
fn claim_level1(
    inner: &DbInner,
    mem: &crate::memtable::MemTable,
    it: &mut dyn crate::iter::InternalIterator,
) -> Option<Level1Claim> {
    if !matches!(inner.options.layout, Layout::Jungle(_)) {
        return None;
    }
    it.seek_to_first();
    let smallest = crate::key::user_key(it.valid().then(|| it.key())?).to_vec();
    it.seek_to_last();
    let largest = crate::key::user_key(it.valid().then(|| it.key())?).to_vec();
    let size = (mem.approximate_memory_usage() as u64, mem.len() as u64);
    let mut st = lock(&inner.state);
    let version = st.versions.current();
    let (plan, targets) = crate::layout::jungle::Jungle::flush_plan(
        &version,
        &inner.options,
        &st.compaction,
        (&smallest, &largest),
        size,
    )?;
    st.compaction
        .busy_files
        .extend(targets.iter().map(|f| f.number));
    let range = (1, smallest, largest);
    st.compaction.busy_ranges.push(range.clone());
    Some(Level1Claim {
        version,
        plan,
        targets,
        range,
    })
}

/// Lets go of what [`claim_level1`] claimed.
fn release_level1(st: &mut DbState, claim: &Level1Claim) {
    for f in &claim.targets {
        st.compaction.busy_files.remove(&f.number);
    }
    if let Some(i) = st
        .compaction
        .busy_ranges
        .iter()
        .position(|r| *r == claim.range)
    {
        st.compaction.busy_ranges.swap_remove(i);
    }
}

/// Flushes the oldest immutable memtable to level 0 (or, in the Jungle layout, into the trees
/// of level 1, [`claim_level1`]). REQUIRES: `!st.imms.is_empty()`.
fn flush_oldest<'a>(
    inner: &'a DbInner,
    mut st: MutexGuard<'a, DbState>,
) -> MutexGuard<'a, DbState> {
    let Some(imm) = st.imms.front() else {
        return st;
    };
    let mem = Arc::clone(&imm.mem);
    let flushed_to = imm.last_sequence;
    let stored_bytes = st.versions.current().total_bytes();
    st.flush_running = true;
    st.jobs_running += 1;
    drop(st);

    // The immutable membuffer takes no more writes: move all of it into the skiplist first.
    mem.drain(crate::key::MAX_SEQUENCE);
    let snapshots = inner.snapshots.sequences();
    let alloc = || lock(&inner.state).versions.new_file_number();
    let ctx = job_context(inner, stored_bytes, &snapshots, &alloc);
    let mut it = mem.iter();
    let started = Instant::now();
    let claim = claim_level1(inner, &mem, &mut it);
    let result = match &claim {
        Some(c) => {
            // Like every flush, it finishes even while the database closes.
            // The application's filter is asked when these trees merge down, as for level 0.
            let ctx = job::JobContext {
                cancel: None,
                compaction_filter: None,
                ..ctx
            };
            crate::compaction::tree_job::flush(&ctx, &c.version, c.plan, c.targets.clone(), &mut it)
        }
        None => job::flush(&ctx, &mut it).map(|(files, stats)| {
            let edit = VersionEdit {
                new_files: files.into_iter().map(|f| (0, f)).collect(),
                ..VersionEdit::default()
            };
            (edit, stats)
        }),
    };

    let mut st = lock(&inner.state);
    // `flush_running` stays set until the edit is installed (the mutex is released while it
    // is written): no other thread may flush this memtable again meanwhile.
    st = match result {
        Ok((mut edit, stats)) => {
            // The WAL of the next memtable (or the live one) becomes the oldest still needed.
            let next_log = st.imms.get(1).map_or(st.wal_number, |i| i.log_number);
            edit.log_number = Some(next_log);
            edit.log_start = Some(flushed_to + 1);
            let level = if claim.is_some() { 1 } else { 0 };
            Counters::add(&inner.counters.flush_bytes_written, stats.bytes_written);
            Counters::add(&inner.counters.flushes, 1);
            edit.stats = inner.counters.persisted();
            let line = tables_line(
                edit.new_files
                    .iter()
                    .chain(&edit.grown_files)
                    .map(|(_, f)| f),
            );
            let (applied, mut st) = super::edit::apply(inner, st, edit);
            if let Some(c) = &claim {
                release_level1(&mut st, c);
            }
            match applied {
                Ok(()) => {
                    info!(
                        inner.info_log,
                        "flush: {} bytes of memtable -> level {level} {line} in {} ms",
                        mem.approximate_memory_usage(),
                        started.elapsed().as_millis()
                    );
                    let done = st.imms.pop_front();
                    inner.install_super_version(&st);
                    if let Some(done) = done {
                        // The retired WALs are deleted and unmapped without the mutex.
                        let retired: Vec<_> = std::iter::from_fn(|| {
                            st.old_wals.pop_front_if(|w| w.number < next_log)
                        })
                        .collect();
                        drop(st);
                        remove_logs_before(inner, next_log, done.log_number);
                        drop(retired);
                        st = lock(&inner.state);
                    }
                }
                Err(e) => set_error(inner, &mut st, e),
            }
            st
        }
        Err(e) => {
            if let Some(c) = &claim {
                release_level1(&mut st, c);
            }
            set_error(inner, &mut st, e);
            st
        }
    };
    drop(claim);
    st.flush_running = false;
    st.jobs_running -= 1;
    inner.bg_cv.notify_all();
    st
}

/// Removes WAL files numbered in `[oldest, before)`: their writes are all in tables now.
fn remove_logs_before(inner: &DbInner, before: u64, oldest: u64) {
    for n in oldest..before {
        let path = filename::log_file(&inner.dir, n);
        if inner.fs.exists(&path) {
            // A leftover is removed by the sweep at the next open.
            let _ = inner.fs.remove(&path);
        }
    }
}

/// Runs a compaction choice; returns its result and the re-locked state.
fn run_choice<'a>(
    inner: &'a DbInner,
    mut st: MutexGuard<'a, DbState>,
    choice: Choice,
) -> (Result<()>, MutexGuard<'a, DbState>) {
    match choice {
        Choice::DoNothing => (Ok(()), st),
        Choice::Move {
            from_level,
            file,
            to_level,
            new_guard,
        } => {
            let mut edit = job::move_edit(&file, from_level, to_level);
            edit.added_guards
                .extend(new_guard.map(|key| (to_level as u32, key)));
            Counters::add(&inner.counters.trivial_moves, 1);
            edit.stats = inner.counters.persisted();
            // The move is a job while its edit is written (the mutex is released meanwhile):
            // its table and range at the target level are busy, and a manual compaction waits
            // for it (`jobs_running`).
            let busy_range = (
                to_level,
                file.smallest_user_key().to_vec(),
                file.largest_user_key().to_vec(),
            );
            st.compaction.busy_files.insert(file.number);
            st.compaction.busy_ranges.push(busy_range.clone());
            st.jobs_running += 1;
            let (result, mut st) = super::edit::apply(inner, st, edit);
            st.jobs_running -= 1;
            st.compaction.busy_files.remove(&file.number);
            if let Some(i) = st
                .compaction
                .busy_ranges
                .iter()
                .position(|r| *r == busy_range)
            {
                st.compaction.busy_ranges.swap_remove(i);
            }
            match &result {
                Ok(()) => {
                    info!(
                        inner.info_log,
                        "moved #{} ({} bytes) from L{from_level} to L{to_level}",
                        file.number,
                        file.file_size
                    );
                    set_pointer(&mut st, from_level, file.largest_user_key());
                    inner.install_super_version(&st);
                }
                Err(e) => set_error(inner, &mut st, e.clone()),
            }
            inner.bg_cv.notify_all();
            (result, st)
        }
        Choice::Merge(spec) => run_merge(inner, st, spec),
    }
}

/// Adds a finished merge's bytes to the counters.
fn count_merge(inner: &DbInner, output_level: usize, seek: bool, stats: &job::JobStats) {
    let c = &inner.counters;
    Counters::add(&c.compaction_bytes_read, stats.bytes_read);
    Counters::add(&c.compaction_bytes_written, stats.bytes_written);
    c.written_to_level.add(output_level, stats.bytes_written);
    Counters::add(&c.compactions, 1);
    Counters::add(
        &c.tree_appended_value_bytes,
        stats.tree_appended_value_bytes,
    );
    Counters::add(&c.tree_appended_node_bytes, stats.tree_appended_node_bytes);
    Counters::add(&c.tree_new_bytes, stats.tree_new_bytes);
    Counters::add(&c.tree_replacements, stats.tree_replacements);
    if seek {
        Counters::add(&c.seek_compactions, 1);
        Counters::add(&c.seek_compaction_bytes_written, stats.bytes_written);
    }
}

fn set_pointer(st: &mut DbState, level: usize, key: &[u8]) {
    let ptrs = &mut st.compaction.compact_pointers;
    if ptrs.len() <= level {
        ptrs.resize(level + 1, None);
    }
    ptrs[level] = Some(key.to_vec());
}

fn run_merge<'a>(
    inner: &'a DbInner,
    mut st: MutexGuard<'a, DbState>,
    spec: MergeSpec,
) -> (Result<()>, MutexGuard<'a, DbState>) {
    let version = st.versions.current();
    let range = key_range(&version, spec.all_inputs());
    for f in spec.all_inputs() {
        st.compaction.busy_files.insert(f.number);
    }
    if let Some((s, l)) = &range {
        st.compaction
            .busy_ranges
            .push((spec.output_level, s.clone(), l.clone()));
    }
    st.jobs_running += 1;
    drop(st);

    let snapshots = inner.snapshots.sequences();
    let alloc = || lock(&inner.state).versions.new_file_number();
    let ctx = job_context(inner, version.total_bytes(), &snapshots, &alloc);
    let started = Instant::now();
    let inputs_line: Vec<String> = spec
        .inputs
        .iter()
        .map(|(level, files)| {
            format!(
                "L{level} {}",
                tables_line(files.iter().map(|f| f.meta().as_ref()))
            )
        })
        .collect();
    let result = job::merge(&ctx, &version, &spec);

    // Let go of the inputs before the edit is installed, so they are deleted as soon as the old
    // version (and any iterator on it) is gone rather than when this function returns.
    let input_numbers: Vec<u64> = spec.all_inputs().map(|f| f.number).collect();
    let output_level = spec.output_level;
    let seek = spec.seek;
    let pointer = spec
        .inputs
        .first()
        .and_then(|(level, files)| Some((*level, key_range(&version, files)?.1)));
    drop(spec);
    drop(version);

    let mut st = lock(&inner.state);
    let result = match result {
        Ok((mut edit, stats)) => {
            let current = st.versions.current();
            // Other jobs may have changed the levels since this one started: the layout's
            // upkeep decides on the version the edit is applied to (which stays current until
            // the edit is installed: one edit is in flight at a time), and on the work of the
            // other jobs: this job's own range is left out of the state it sees (it stays busy
            // until the install, below).
            let own = range.as_ref().and_then(|(s, l)| {
                let ranges = &mut st.compaction.busy_ranges;
                let i = ranges
                    .iter()
                    .position(|(lv, a, b)| *lv == output_level && a == s && b == l)?;
                Some(ranges.swap_remove(i))
            });
            inner
                .strategy
                .upkeep(&current, &inner.options, &st.compaction, &mut edit);
            st.compaction.busy_ranges.extend(own);
            drop(current);
            count_merge(inner, output_level, seek, &stats);
            edit.stats = inner.counters.persisted();
            let outputs = tables_line(edit.new_files.iter().map(|(_, f)| f));
            let (applied, relocked) = super::edit::apply(inner, st, edit);
            st = relocked;
            if applied.is_ok() {
                info!(
                    inner.info_log,
                    "{}compaction: {} -> L{output_level} {outputs}: read {} bytes, wrote {} in \
                     {} ms",
                    if seek { "seek " } else { "" },
                    inputs_line.join(" + "),
                    stats.bytes_read,
                    stats.bytes_written,
                    started.elapsed().as_millis()
                );
            }
            applied
        }
        Err(e) => Err(e),
    };
    // The inputs and the output range stay busy until the edit is installed (the mutex was
    // released while it was written), so no other job took them meanwhile.
    st.jobs_running -= 1;
    for number in &input_numbers {
        st.compaction.busy_files.remove(number);
    }
    if let Some((s, l)) = &range
        && let Some(i) = st
            .compaction
            .busy_ranges
            .iter()
            .position(|(lv, a, b)| *lv == output_level && a == s && b == l)
    {
        st.compaction.busy_ranges.swap_remove(i);
    }
    match &result {
        Ok(()) => {
            if let Some((level, largest)) = &pointer {
                set_pointer(&mut st, *level, largest);
            }
            inner.install_super_version(&st);
        }
        // A merge the closing database stopped is no failure: its unfinished outputs are named
        // by no edit and removed at the next open.
        Err(Error::Closed) if inner.shutting_down.load(Ordering::Acquire) => {
            Counters::add(&inner.counters.compactions_stopped_by_close, 1);
        }
        Err(e) => set_error(inner, &mut st, e.clone()),
    }
    inner.bg_cv.notify_all();
    (result, st)
}

/// Switches the memtable (if non-empty) and waits until every immutable memtable is flushed.
pub(super) fn flush_and_wait(inner: &DbInner) -> Result<()> {
    inner.check_open()?;
    let (room, mut st) = switch_memtable_as_leader(inner);
    room?;
    inner.bg_cv.notify_all();
    while !st.imms.is_empty() {
        if let Some(e) = &st.bg_error {
            return Err(Error::ReadOnly(Arc::new(e.clone())));
        }
        st = wait_timeout(&inner.bg_cv, st, Duration::from_millis(50)).0;
    }
    Ok(())
}

/// Waits until no flush is pending and the strategy has nothing to do.
pub(super) fn wait_for_idle(inner: &DbInner) -> Result<()> {
    let mut st = lock(&inner.state);
    loop {
        if let Some(e) = &st.bg_error {
            return Err(Error::ReadOnly(Arc::new(e.clone())));
        }
        refresh_seek_budget(inner, &mut st);
        let idle = st.imms.is_empty()
            && st.jobs_running == 0
            && matches!(
                inner
                    .strategy
                    .choose(&st.versions.current(), &inner.options, &st.compaction),
                Choice::DoNothing
            );
        if idle || inner.shutting_down.load(Ordering::Acquire) {
            drop(st);
            inner.iter_pool.release_stale(&inner.super_version);
            inner.obsolete.purge();
            return Ok(());
        }
        inner.bg_cv.notify_all();
        st = wait_timeout(&inner.bg_cv, st, Duration::from_millis(50)).0;
    }
}

/// Merges every table overlapping `[start, end]` level by level into the level below, then
/// rewrites the overlapping tables of the last level in place. Runs in the caller's thread, with
/// background compactions paused.
pub(super) fn compact_range(
    inner: &DbInner,
    start: Option<&[u8]>,
    end: Option<&[u8]>,
) -> Result<()> {
    let mut st = lock(&inner.state);
    while st.manual_running {
        st = wait(&inner.bg_cv, st);
    }
    st.manual_running = true;
    // Let running jobs finish so the inputs below are free.
    while st.jobs_running > 0 {
        st = wait_timeout(&inner.bg_cv, st, Duration::from_millis(50)).0;
    }
    let mut result = Ok(());
    // The strategy names each level's merge into the level below; the last level's tables are
    // then rewritten in place, which drops what no snapshot can see (shadowed versions,
    // tombstones).
    for level in 0..inner.options.num_levels {
        let version = st.versions.current();
        let spec = inner
            .strategy
            .manual(&version, &inner.options, level, start, end);
        drop(version);
        let Some(spec) = spec else {
            continue;
        };
        let (r, guard) = run_merge(inner, st, spec);
        st = guard;
        if let Err(e) = r {
            result = Err(e);
            break;
        }
    }
    st.manual_running = false;
    inner.bg_cv.notify_all();
    drop(st);
    inner.iter_pool.release_stale(&inner.super_version);
    inner.obsolete.purge();
    result
}
