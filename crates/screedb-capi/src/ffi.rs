//! The plumbing every exported function shares: C memory, byte and string arguments, error
//! reporting through `errptr`, and catching panics at the boundary.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

unsafe extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn free(ptr: *mut c_void);
}

/// LevelDB's version this library implements: 1.23.
const MAJOR_VERSION: c_int = 1;
const MINOR_VERSION: c_int = 23;

/// A `malloc`ed copy of `bytes` (at least one byte is allocated, so an empty value is not NULL);
/// NULL only if memory is exhausted.
pub(crate) fn malloc_copy(bytes: &[u8]) -> *mut c_char {
    // SAFETY: malloc accepts any size; a non-null result is valid for `bytes.len().max(1)` bytes.
    let p = unsafe { malloc(bytes.len().max(1)) }.cast::<u8>();
    if !p.is_null() {
        // SAFETY: `p` holds at least `bytes.len()` bytes and cannot overlap `bytes`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len()) };
    }
    p.cast()
}

/// A `malloc`ed NUL-terminated copy of `s` (interior NULs are kept; C sees the prefix).
pub(crate) fn malloc_cstring(s: &str) -> *mut c_char {
    let mut bytes = Vec::with_capacity(s.len() + 1);
    bytes.extend_from_slice(s.as_bytes());
    bytes.push(0);
    malloc_copy(&bytes)
}

/// Frees memory this library returned (or any `malloc`ed pointer). NULL is ignored.
pub(crate) fn free_c(ptr: *mut c_void) {
    // SAFETY: the caller hands back a pointer from malloc (the API's contract); free(NULL) is a
    // no-op.
    unsafe { free(ptr) }
}

/// Reports `message` through `errptr`: frees the message already there and stores a `malloc`ed
/// copy. Does nothing if `errptr` is NULL.
pub(crate) fn set_error(errptr: *mut *mut c_char, message: &str) {
    if errptr.is_null() {
        return;
    }
    // SAFETY: a non-null `errptr` points to a `char*` that is NULL or malloc'ed (API contract).
    unsafe {
        free_c((*errptr).cast());
        *errptr = malloc_cstring(message);
    }
}

/// The bytes at `ptr..ptr+len`; `None` when `ptr` is NULL but `len` is not 0.
///
/// # Safety
/// A non-null `ptr` is valid for reads of `len` bytes for the lifetime `'a`.
pub(crate) unsafe fn bytes<'a>(ptr: *const c_char, len: usize) -> Option<&'a [u8]> {
    if len == 0 {
        Some(&[])
    } else if ptr.is_null() {
        None
    } else {
        // SAFETY: the caller guarantees `len` readable bytes at `ptr`.
        Some(unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) })
    }
}

/// The NUL-terminated string at `ptr`, or `None` for NULL.
///
/// # Safety
/// A non-null `ptr` points to a NUL-terminated string valid for `'a`.
pub(crate) unsafe fn c_str<'a>(ptr: *const c_char) -> Option<&'a CStr> {
    // SAFETY: guaranteed by the caller.
    (!ptr.is_null()).then(|| unsafe { CStr::from_ptr(ptr) })
}

/// A database path from its C name (bytes as given on Unix).
pub(crate) fn path_of(name: &CStr) -> PathBuf {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()))
    }
    #[cfg(not(unix))]
    {
        PathBuf::from(name.to_string_lossy().into_owned())
    }
}

/// Runs `f`; a panic becomes `on_panic` and an "IO error" message in `errptr` (if given), so no
/// unwinding ever crosses into C.
pub(crate) fn guard<R>(errptr: *mut *mut c_char, on_panic: R, f: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            // Dropping a payload can itself panic; leak it rather than risk unwinding.
            std::mem::forget(payload);
            set_error(
                errptr,
                &format!("IO error: internal error in libscreedb: {what}"),
            );
            on_panic
        }
    }
}

/// Frees `ptr` (a value, key, property or error message this library returned). NULL is fine.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_free(ptr: *mut c_void) {
    free_c(ptr);
}

/// 1: the major version of the LevelDB API implemented.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_major_version() -> c_int {
    MAJOR_VERSION
}

/// 23: the minor version of the LevelDB API implemented.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_minor_version() -> c_int {
    MINOR_VERSION
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_and_the_default_value() {
        let mut err: *mut c_char = malloc_cstring("old message");
        let r = guard(&mut err, 7, || -> i32 { panic!("boom") });
        assert_eq!(r, 7);
        // SAFETY: set_error stored a NUL-terminated malloc'ed string.
        let msg = unsafe { CStr::from_ptr(err) }.to_str().unwrap().to_owned();
        assert_eq!(msg, "IO error: internal error in libscreedb: boom");
        free_c(err.cast());
        // Without an error channel the panic is still contained.
        assert_eq!(guard(std::ptr::null_mut(), 1, || -> i32 { panic!("x") }), 1);
    }

    #[test]
    fn empty_values_are_not_null_and_null_slices_are_rejected() {
        let p = malloc_copy(b"");
        assert!(!p.is_null());
        free_c(p.cast());
        // SAFETY: a null pointer with a non-zero length is exactly the case checked.
        assert!(unsafe { bytes(std::ptr::null(), 3) }.is_none());
        // SAFETY: length 0 never reads.
        assert_eq!(unsafe { bytes(std::ptr::null(), 0) }, Some(&[][..]));
    }
}
