//! Iterators.

use std::ffi::c_char;

use engine::{DbIterator, Error};

use crate::ffi::{bytes, guard, set_error};
use crate::options::drop_boxed;
use crate::status;

/// `leveldb_iterator_t`: a database cursor, or the error that prevented creating one (LevelDB's
/// iterators cannot fail to be created either; the error shows in `leveldb_iter_get_error`).
#[derive(Debug)]
pub struct leveldb_iterator_t {
    pub(crate) it: Result<DbIterator, Error>,
}

/// Runs `f` on a live, well-created iterator.
///
/// # Safety
/// `it` is NULL or a live iterator not used concurrently.
unsafe fn with(it: *mut leveldb_iterator_t, f: impl FnOnce(&mut DbIterator)) {
    guard(std::ptr::null_mut(), (), || {
        // SAFETY: guaranteed by the caller.
        if let Some(Ok(it)) = unsafe { it.as_mut() }.map(|i| &mut i.it) {
            f(it);
        }
    });
}

/// The iterator if it is positioned on an entry.
///
/// # Safety
/// `it` is NULL or a live iterator.
unsafe fn positioned<'a>(it: *const leveldb_iterator_t) -> Option<&'a DbIterator> {
    // SAFETY: guaranteed by the caller.
    match unsafe { it.as_ref() } {
        Some(leveldb_iterator_t { it: Ok(it) }) if it.valid() => Some(it),
        _ => None,
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_destroy(it: *mut leveldb_iterator_t) {
    // SAFETY: API contract.
    guard(std::ptr::null_mut(), (), || unsafe { drop_boxed(it) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_valid(it: *const leveldb_iterator_t) -> u8 {
    // SAFETY: API contract.
    guard(std::ptr::null_mut(), 0, || {
        u8::from(unsafe { positioned(it) }.is_some())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_seek_to_first(it: *mut leveldb_iterator_t) {
    // SAFETY: API contract.
    unsafe { with(it, DbIterator::seek_to_first) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_seek_to_last(it: *mut leveldb_iterator_t) {
    // SAFETY: API contract.
    unsafe { with(it, DbIterator::seek_to_last) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_seek(
    it: *mut leveldb_iterator_t,
    k: *const c_char,
    klen: usize,
) {
    // SAFETY: API contract: `k` holds `klen` bytes.
    if let Some(k) = unsafe { bytes(k, klen) } {
        // SAFETY: API contract.
        unsafe { with(it, |i| i.seek(k)) }
    }
}

/// Moves to the next entry. REQUIRES (as LevelDB): valid; ignored otherwise.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_next(it: *mut leveldb_iterator_t) {
    // SAFETY: API contract.
    unsafe {
        with(it, |i| {
            if i.valid() {
                i.next();
            }
        });
    }
}

/// Moves to the previous entry. REQUIRES (as LevelDB): valid; ignored otherwise.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_prev(it: *mut leveldb_iterator_t) {
    // SAFETY: API contract.
    unsafe {
        with(it, |i| {
            if i.valid() {
                i.prev();
            }
        });
    }
}

/// The current key (valid until the iterator moves); NULL with length 0 if not valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_key(
    it: *const leveldb_iterator_t,
    klen: *mut usize,
) -> *const c_char {
    // SAFETY: API contract.
    let (ptr, len) = guard(std::ptr::null_mut(), (std::ptr::null(), 0), || {
        unsafe { positioned(it) }
            .map_or((std::ptr::null(), 0), |i| (i.key().as_ptr(), i.key().len()))
    });
    if !klen.is_null() {
        // SAFETY: a non-null `klen` points to writable memory (API contract).
        unsafe { *klen = len };
    }
    ptr.cast()
}

/// The current value (valid until the iterator moves); NULL with length 0 if not valid.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_value(
    it: *const leveldb_iterator_t,
    vlen: *mut usize,
) -> *const c_char {
    // SAFETY: API contract.
    let (ptr, len) = guard(std::ptr::null_mut(), (std::ptr::null(), 0), || {
        unsafe { positioned(it) }.map_or((std::ptr::null(), 0), |i| {
            (i.value().as_ptr(), i.value().len())
        })
    });
    if !vlen.is_null() {
        // SAFETY: a non-null `vlen` points to writable memory (API contract).
        unsafe { *vlen = len };
    }
    ptr.cast()
}

/// Reports the iterator's first error (corruption or I/O) through `errptr`; untouched if none.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_iter_get_error(
    it: *const leveldb_iterator_t,
    errptr: *mut *mut c_char,
) {
    guard(errptr, (), || {
        // SAFETY: API contract.
        let Some(it) = (unsafe { it.as_ref() }) else {
            set_error(errptr, "Invalid argument: iterator is NULL");
            return;
        };
        let status = match &it.it {
            Ok(i) => i.status(),
            Err(e) => Err(e.clone()),
        };
        if let Err(e) = status {
            set_error(errptr, &status::message(&e, None));
        }
    });
}
