//! Write batches.

use std::ffi::{c_char, c_void};

use engine::WriteBatch;
use engine::write_batch::BatchOp;

use crate::ffi::{bytes, guard};
use crate::options::drop_boxed;

/// `leveldb_writebatch_t`.
#[derive(Debug, Default)]
pub struct leveldb_writebatch_t {
    pub(crate) batch: WriteBatch,
}

type PutFn = Option<unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize)>;
type DeletedFn = Option<unsafe extern "C" fn(*mut c_void, *const c_char, usize)>;

/// Applies `f` to the batch unless it is NULL (batch functions have no error channel).
///
/// # Safety
/// `b` is NULL or a live batch not used concurrently.
unsafe fn with(b: *mut leveldb_writebatch_t, f: impl FnOnce(&mut WriteBatch)) {
    guard(std::ptr::null_mut(), (), || {
        // SAFETY: guaranteed by the caller.
        if let Some(b) = unsafe { b.as_mut() } {
            f(&mut b.batch);
        }
    });
}

#[unsafe(no_mangle)]
pub extern "C" fn leveldb_writebatch_create() -> *mut leveldb_writebatch_t {
    Box::into_raw(Box::default())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_destroy(b: *mut leveldb_writebatch_t) {
    // SAFETY: API contract.
    unsafe { drop_boxed(b) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_clear(b: *mut leveldb_writebatch_t) {
    // SAFETY: API contract.
    unsafe { with(b, WriteBatch::clear) }
}

/// Adds a put. A NULL key or value with a non-zero length is ignored (nothing valid to add).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_put(
    b: *mut leveldb_writebatch_t,
    key: *const c_char,
    klen: usize,
    val: *const c_char,
    vlen: usize,
) {
    // SAFETY: API contract: the buffers hold the lengths given.
    let (k, v) = unsafe { (bytes(key, klen), bytes(val, vlen)) };
    if let (Some(k), Some(v)) = (k, v) {
        // SAFETY: API contract.
        unsafe {
            with(b, |b| {
                b.put(k, v);
            });
        }
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_delete(
    b: *mut leveldb_writebatch_t,
    key: *const c_char,
    klen: usize,
) {
    // SAFETY: API contract.
    if let Some(k) = unsafe { bytes(key, klen) } {
        // SAFETY: API contract.
        unsafe {
            with(b, |b| {
                b.delete(k);
            });
        }
    }
}

/// Calls `put` or `deleted` for every update, in order. NULL callbacks are skipped.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_iterate(
    b: *const leveldb_writebatch_t,
    state: *mut c_void,
    put: PutFn,
    deleted: DeletedFn,
) {
    guard(std::ptr::null_mut(), (), || {
        // SAFETY: API contract.
        let Some(b) = (unsafe { b.as_ref() }) else {
            return;
        };
        for op in b.batch.iter() {
            match op {
                Ok(BatchOp::Put { key, value }) => {
                    if let Some(f) = put {
                        // SAFETY: the slices are live for the call.
                        unsafe {
                            f(
                                state,
                                key.as_ptr().cast(),
                                key.len(),
                                value.as_ptr().cast(),
                                value.len(),
                            );
                        }
                    }
                }
                Ok(BatchOp::Delete { key }) => {
                    if let Some(f) = deleted {
                        // SAFETY: the slice is live for the call.
                        unsafe { f(state, key.as_ptr().cast(), key.len()) }
                    }
                }
                Err(_) => break, // batches built here are always well formed
            }
        }
    });
}

/// Appends the updates of `source` to `destination`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writebatch_append(
    destination: *mut leveldb_writebatch_t,
    source: *const leveldb_writebatch_t,
) {
    if std::ptr::eq(destination, source) {
        // SAFETY: API contract; one handle, so copy before appending.
        if let Some(copy) = unsafe { source.as_ref() }.map(|s| s.batch.clone()) {
            // SAFETY: API contract.
            unsafe { with(destination, |d| d.append(&copy)) }
        }
        return;
    }
    // SAFETY: API contract: distinct live handles.
    if let Some(src) = unsafe { source.as_ref() } {
        // SAFETY: API contract.
        unsafe { with(destination, |d| d.append(&src.batch)) }
    }
}
