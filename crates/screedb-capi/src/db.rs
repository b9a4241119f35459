//! The database: open, close, destroy, repair, reads, writes, snapshots, properties, sizes and
//! manual compaction.

use std::ffi::{CStr, c_char, c_int};
use std::ptr::null_mut;

use engine::{Db, Snapshot};

use crate::batch::leveldb_writebatch_t;
use crate::ffi::{bytes, c_str, guard, malloc_copy, malloc_cstring, path_of, set_error};
use crate::iter::leveldb_iterator_t;
use crate::options::{leveldb_options_t, leveldb_readoptions_t, leveldb_writeoptions_t};
use crate::{property, status};

/// `leveldb_t`: an open database.
#[derive(Debug)]
pub struct leveldb_t {
    db: Db,
}

/// `leveldb_snapshot_t`.
#[derive(Debug)]
pub struct leveldb_snapshot_t {
    snap: Snapshot,
}

impl leveldb_snapshot_t {
    pub(crate) fn snapshot(&self) -> &Snapshot {
        &self.snap
    }
}

/// Reports `what is NULL` through `errptr` and returns `None` when `p` is NULL.
///
/// # Safety
/// `p` is NULL or valid for `'a`.
unsafe fn non_null<'a, T>(p: *const T, what: &str, errptr: *mut *mut c_char) -> Option<&'a T> {
    // SAFETY: guaranteed by the caller.
    let r = unsafe { p.as_ref() };
    if r.is_none() {
        set_error(errptr, &format!("Invalid argument: {what} is NULL"));
    }
    r
}

/// The database name, or an error through `errptr`.
///
/// # Safety
/// `name` is NULL or a NUL-terminated string.
unsafe fn db_name<'a>(name: *const c_char, errptr: *mut *mut c_char) -> Option<&'a CStr> {
    // SAFETY: guaranteed by the caller.
    let n = unsafe { c_str(name) };
    if n.is_none() {
        set_error(errptr, "Invalid argument: database name is NULL");
    }
    n
}

/// Reports an engine result through `errptr`; `name` is quoted in open errors.
fn report<T>(r: engine::Result<T>, errptr: *mut *mut c_char, name: Option<&CStr>) -> Option<T> {
    r.map_err(|e| {
        let name = name.map(|n| n.to_string_lossy());
        set_error(errptr, &status::message(&e, name.as_deref()));
    })
    .ok()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_open(
    options: *const leveldb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) -> *mut leveldb_t {
    guard(errptr, null_mut(), || {
        // SAFETY: API contract.
        let (Some(o), Some(name)) = (unsafe { non_null(options, "options", errptr) }, unsafe {
            db_name(name, errptr)
        }) else {
            return null_mut();
        };
        report(Db::open(path_of(name), o.to_engine()), errptr, Some(name))
            .map_or(null_mut(), |db| Box::into_raw(Box::new(leveldb_t { db })))
    })
}

/// Closes the database (waiting for background work) and frees the handle. NULL is ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_close(db: *mut leveldb_t) {
    guard(null_mut(), (), || {
        if !db.is_null() {
            // SAFETY: API contract: `db` came from leveldb_open and is not used again.
            let db = unsafe { Box::from_raw(db) };
            let _ = db.db.close();
        }
    });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_put(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    key: *const c_char,
    keylen: usize,
    val: *const c_char,
    vallen: usize,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: API contract for every pointer.
        let (Some(db), Some(o)) = (unsafe { non_null(db, "db", errptr) }, unsafe {
            non_null(options, "write options", errptr)
        }) else {
            return;
        };
        // SAFETY: API contract.
        let (Some(k), Some(v)) = (unsafe { bytes(key, keylen) }, unsafe { bytes(val, vallen) })
        else {
            return set_error(errptr, "Invalid argument: key or value is NULL");
        };
        let mut batch = engine::WriteBatch::new();
        batch.put(k, v);
        report(db.db.write(batch, &o.to_engine()), errptr, None);
    });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_delete(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    key: *const c_char,
    keylen: usize,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: API contract for every pointer.
        let (Some(db), Some(o)) = (unsafe { non_null(db, "db", errptr) }, unsafe {
            non_null(options, "write options", errptr)
        }) else {
            return;
        };
        // SAFETY: API contract.
        let Some(k) = (unsafe { bytes(key, keylen) }) else {
            return set_error(errptr, "Invalid argument: key is NULL");
        };
        let mut batch = engine::WriteBatch::new();
        batch.delete(k);
        report(db.db.write(batch, &o.to_engine()), errptr, None);
    });
}

/// Applies the batch atomically; the batch is left as it was (it can be written again).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_write(
    db: *mut leveldb_t,
    options: *const leveldb_writeoptions_t,
    batch: *mut leveldb_writebatch_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: API contract for every pointer.
        let (Some(db), Some(o), Some(b)) = (
            unsafe { non_null(db, "db", errptr) },
            unsafe { non_null(options, "write options", errptr) },
            unsafe { non_null(batch, "write batch", errptr) },
        ) else {
            return;
        };
        report(db.db.write(b.batch.clone(), &o.to_engine()), errptr, None);
    });
}

/// The value of `key` (malloc'ed, length in `*vallen`), or NULL with `*vallen = 0` if absent.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_get(
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
    key: *const c_char,
    keylen: usize,
    vallen: *mut usize,
    errptr: *mut *mut c_char,
) -> *mut c_char {
    let (ptr, len) = guard(errptr, (null_mut(), 0), || {
        // SAFETY: API contract for every pointer.
        let (Some(db), Some(o)) = (unsafe { non_null(db, "db", errptr) }, unsafe {
            non_null(options, "read options", errptr)
        }) else {
            return (null_mut(), 0);
        };
        // SAFETY: API contract.
        let Some(k) = (unsafe { bytes(key, keylen) }) else {
            set_error(errptr, "Invalid argument: key is NULL");
            return (null_mut(), 0);
        };
        // SAFETY: API contract: a snapshot named in `options` is unreleased.
        let ro = unsafe { o.as_engine() };
        match report(db.db.get_with(k, &ro), errptr, None) {
            Some(Some(v)) => (malloc_copy(&v), v.len()),
            _ => (null_mut(), 0),
        }
    });
    if !vallen.is_null() {
        // SAFETY: a non-null `vallen` is writable (API contract).
        unsafe { *vallen = len };
    }
    ptr
}

/// A new iterator (unpositioned). Never NULL unless `db` or `options` is NULL; a failure to
/// create it shows in `leveldb_iter_get_error`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_create_iterator(
    db: *mut leveldb_t,
    options: *const leveldb_readoptions_t,
) -> *mut leveldb_iterator_t {
    guard(null_mut(), null_mut(), || {
        // SAFETY: API contract.
        let (Some(db), Some(o)) = (unsafe { db.as_ref() }, unsafe { options.as_ref() }) else {
            return null_mut();
        };
        // SAFETY: API contract: a snapshot named in `options` is unreleased.
        let it = db.db.iter(&unsafe { o.as_engine() });
        Box::into_raw(Box::new(leveldb_iterator_t { it }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_create_snapshot(db: *mut leveldb_t) -> *const leveldb_snapshot_t {
    guard(null_mut(), std::ptr::null(), || {
        // SAFETY: API contract.
        unsafe { db.as_ref() }.map_or(std::ptr::null(), |db| {
            Box::into_raw(Box::new(leveldb_snapshot_t {
                snap: db.db.snapshot(),
            }))
            .cast_const()
        })
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_release_snapshot(
    db: *mut leveldb_t,
    snapshot: *const leveldb_snapshot_t,
) {
    let _ = db;
    guard(null_mut(), (), || {
        if !snapshot.is_null() {
            // SAFETY: API contract: the snapshot came from leveldb_create_snapshot and is not
            // used again.
            drop(unsafe { Box::from_raw(snapshot.cast_mut()) });
        }
    });
}

/// A property's value (malloc'ed, NUL-terminated), or NULL if the name is unknown.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_property_value(
    db: *mut leveldb_t,
    propname: *const c_char,
) -> *mut c_char {
    guard(null_mut(), null_mut(), || {
        // SAFETY: API contract.
        let (Some(db), Some(name)) = (unsafe { db.as_ref() }, unsafe { c_str(propname) }) else {
            return null_mut();
        };
        let Ok(name) = name.to_str() else {
            return null_mut();
        };
        property::engine_name(name)
            .and_then(|n| db.db.property(&n))
            .map_or(null_mut(), |v| malloc_cstring(&v))
    })
}

/// Approximate bytes on disk of each range `[start[i], limit[i])`; 0 for a range that could not
/// be measured (the API has no error channel).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_approximate_sizes(
    db: *mut leveldb_t,
    num_ranges: c_int,
    range_start_key: *const *const c_char,
    range_start_key_len: *const usize,
    range_limit_key: *const *const c_char,
    range_limit_key_len: *const usize,
    sizes: *mut u64,
) {
    guard(null_mut(), (), || {
        let n = usize::try_from(num_ranges).unwrap_or(0);
        let arrays = [range_start_key.is_null(), range_limit_key.is_null()];
        let lens = [range_start_key_len.is_null(), range_limit_key_len.is_null()];
        if n == 0 || sizes.is_null() || arrays.contains(&true) || lens.contains(&true) {
            return;
        }
        // SAFETY: API contract: every array holds `n` elements and `sizes` has room for `n`.
        let (starts, start_lens, limits, limit_lens, out) = unsafe {
            (
                std::slice::from_raw_parts(range_start_key, n),
                std::slice::from_raw_parts(range_start_key_len, n),
                std::slice::from_raw_parts(range_limit_key, n),
                std::slice::from_raw_parts(range_limit_key_len, n),
                std::slice::from_raw_parts_mut(sizes, n),
            )
        };
        out.fill(0);
        // SAFETY: API contract.
        let Some(db) = (unsafe { db.as_ref() }) else {
            return;
        };
        let mut ranges = Vec::with_capacity(n);
        for i in 0..n {
            // SAFETY: API contract: each key holds its length.
            let (s, l) = unsafe {
                (
                    bytes(starts[i], start_lens[i]),
                    bytes(limits[i], limit_lens[i]),
                )
            };
            ranges.push((s.unwrap_or_default(), l.unwrap_or_default()));
        }
        if let Ok(got) = db.db.approximate_sizes(&ranges) {
            out.copy_from_slice(&got[..n.min(got.len())]);
        }
    });
}

/// Compacts the key range `[start, limit]`; a NULL key means "unbounded" on that side.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_compact_range(
    db: *mut leveldb_t,
    start_key: *const c_char,
    start_key_len: usize,
    limit_key: *const c_char,
    limit_key_len: usize,
) {
    guard(null_mut(), (), || {
        // SAFETY: API contract.
        let Some(db) = (unsafe { db.as_ref() }) else {
            return;
        };
        // SAFETY: API contract: a non-null key holds its length.
        let start = (!start_key.is_null())
            .then(|| unsafe { bytes(start_key, start_key_len) })
            .flatten();
        // SAFETY: as above.
        let limit = (!limit_key.is_null())
            .then(|| unsafe { bytes(limit_key, limit_key_len) })
            .flatten();
        let _ = db.db.compact_range(start, limit);
    });
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_destroy_db(
    options: *const leveldb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: API contract.
        let (Some(o), Some(name)) = (unsafe { non_null(options, "options", errptr) }, unsafe {
            db_name(name, errptr)
        }) else {
            return;
        };
        report(
            Db::destroy(path_of(name), &o.to_engine()),
            errptr,
            Some(name),
        );
    });
}

/// Rebuilds the database from its tables and logs (see the engine's `repair` module).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_repair_db(
    options: *const leveldb_options_t,
    name: *const c_char,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: API contract.
        let (Some(o), Some(name)) = (unsafe { non_null(options, "options", errptr) }, unsafe {
            db_name(name, errptr)
        }) else {
            return;
        };
        report(
            engine::repair_db(path_of(name), &o.to_engine()),
            errptr,
            Some(name),
        );
    });
}
