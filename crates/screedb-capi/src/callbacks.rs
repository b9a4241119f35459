//! Comparators and filter policies given as C callbacks, and the built-in Bloom filter policy.
//!
//! The C state is shared by reference counting: a database keeps the comparator or policy it was
//! opened with alive, and the C destructor runs when the last user lets go (at
//! `leveldb_*_destroy` in the usual order, where LevelDB runs it; later if a database opened with
//! it is still open, where LevelDB would crash). Callbacks may run on the engine's background
//! threads: like LevelDB, this requires them to be thread-safe.

use std::cmp::Ordering;
use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use engine::Comparator;
use engine::table::FilterPolicy;

use crate::ffi::{c_str, free_c, guard};
use crate::options::drop_boxed;

type Destructor = Option<unsafe extern "C" fn(*mut c_void)>;
type NameFn = Option<unsafe extern "C" fn(*mut c_void) -> *const c_char>;
type CompareFn =
    Option<unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize) -> c_int>;
type CreateFilterFn = Option<
    unsafe extern "C" fn(
        *mut c_void,
        *const *const c_char,
        *const usize,
        c_int,
        *mut usize,
    ) -> *mut c_char,
>;
type KeyMayMatchFn =
    Option<unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const c_char, usize) -> u8>;

/// The caller's state pointer and destructor.
struct State {
    state: *mut c_void,
    destructor: Destructor,
}

// SAFETY: the C API requires callbacks and their state to be usable from any thread (LevelDB
// calls them from its background thread too); the pointer itself is only passed back to them.
unsafe impl Send for State {}
// SAFETY: as above.
unsafe impl Sync for State {}

impl Drop for State {
    fn drop(&mut self) {
        if let Some(d) = self.destructor {
            // SAFETY: the destructor given with this state, called exactly once.
            unsafe { d(self.state) }
        }
    }
}

impl std::fmt::Debug for CComparator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CComparator")
            .field("name", &self.name)
            .finish()
    }
}

impl std::fmt::Debug for CFilterPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CFilterPolicy")
            .field("name", &self.name)
            .finish()
    }
}

/// The name a callback returns, read once at creation (names are stable by contract).
fn read_name(name: NameFn, state: *mut c_void) -> String {
    // SAFETY: the callback returns NULL or a NUL-terminated string (C API contract).
    name.and_then(|f| unsafe { c_str(f(state)) })
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A comparator implemented by C callbacks.
pub struct CComparator {
    state: State,
    compare: CompareFn,
    name: String,
}

impl Comparator for CComparator {
    fn name(&self) -> &str {
        &self.name
    }

    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        let Some(f) = self.compare else {
            return a.cmp(b);
        };
        // SAFETY: the callback reads `len` bytes at each pointer, which the slices hold.
        let r = unsafe {
            f(
                self.state.state,
                a.as_ptr().cast(),
                a.len(),
                b.as_ptr().cast(),
                b.len(),
            )
        };
        r.cmp(&0)
    }
}

/// `leveldb_comparator_t`.
#[derive(Debug)]
pub struct leveldb_comparator_t {
    pub(crate) inner: Arc<CComparator>,
}

/// A filter policy implemented by C callbacks.
pub struct CFilterPolicy {
    state: State,
    create: CreateFilterFn,
    may_match: KeyMayMatchFn,
    name: String,
}

impl FilterPolicy for CFilterPolicy {
    fn name(&self) -> &str {
        &self.name
    }

    fn create_filter(&self, keys: &[&[u8]]) -> Vec<u8> {
        let Some(f) = self.create else {
            return Vec::new();
        };
        let ptrs: Vec<*const c_char> = keys.iter().map(|k| k.as_ptr().cast()).collect();
        let lens: Vec<usize> = keys.iter().map(|k| k.len()).collect();
        let n = c_int::try_from(keys.len()).unwrap_or(c_int::MAX);
        let mut len = 0usize;
        // SAFETY: `ptrs`/`lens` describe `n` live keys; the callback writes the length.
        let out = unsafe { f(self.state.state, ptrs.as_ptr(), lens.as_ptr(), n, &mut len) };
        if out.is_null() {
            return Vec::new();
        }
        // SAFETY: the callback returns a malloc'ed buffer of `len` bytes, which we own (LevelDB
        // frees it the same way).
        let filter = unsafe { std::slice::from_raw_parts(out.cast::<u8>(), len) }.to_vec();
        free_c(out.cast());
        filter
    }

    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        let Some(f) = self.may_match else {
            return true;
        };
        // SAFETY: both slices are live for the call.
        unsafe {
            f(
                self.state.state,
                key.as_ptr().cast(),
                key.len(),
                filter.as_ptr().cast(),
                filter.len(),
            ) != 0
        }
    }
}

/// What a `leveldb_filterpolicy_t` stands for.
#[derive(Debug, Clone)]
pub enum Policy {
    /// The engine's built-in Bloom filter with this many bits per key.
    Bloom(u32),
    /// C callbacks.
    Custom(Arc<CFilterPolicy>),
}

/// `leveldb_filterpolicy_t`.
#[derive(Debug)]
pub struct leveldb_filterpolicy_t {
    pub(crate) policy: Policy,
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_comparator_create(
    state: *mut c_void,
    destructor: Destructor,
    compare: CompareFn,
    name: NameFn,
) -> *mut leveldb_comparator_t {
    let state = State { state, destructor };
    guard(std::ptr::null_mut(), std::ptr::null_mut(), move || {
        let name = read_name(name, state.state);
        Box::into_raw(Box::new(leveldb_comparator_t {
            inner: Arc::new(CComparator {
                state,
                compare,
                name,
            }),
        }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_comparator_destroy(cmp: *mut leveldb_comparator_t) {
    // SAFETY: API contract: `cmp` came from leveldb_comparator_create.
    guard(std::ptr::null_mut(), (), || unsafe { drop_boxed(cmp) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_filterpolicy_create(
    state: *mut c_void,
    destructor: Destructor,
    create_filter: CreateFilterFn,
    key_may_match: KeyMayMatchFn,
    name: NameFn,
) -> *mut leveldb_filterpolicy_t {
    let state = State { state, destructor };
    guard(std::ptr::null_mut(), std::ptr::null_mut(), move || {
        let name = read_name(name, state.state);
        Box::into_raw(Box::new(leveldb_filterpolicy_t {
            policy: Policy::Custom(Arc::new(CFilterPolicy {
                state,
                create: create_filter,
                may_match: key_may_match,
                name,
            })),
        }))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_filterpolicy_destroy(policy: *mut leveldb_filterpolicy_t) {
    // SAFETY: API contract: `policy` came from a leveldb_filterpolicy_create* function.
    guard(std::ptr::null_mut(), (), || unsafe { drop_boxed(policy) })
}

/// The engine's Bloom filter (whole-table, xxh3-based; see docs/format.md), not LevelDB's
/// per-2KiB `leveldb.BuiltinBloomFilter2`. Bits per key are clamped to 1..=64.
#[unsafe(no_mangle)]
pub extern "C" fn leveldb_filterpolicy_create_bloom(
    bits_per_key: c_int,
) -> *mut leveldb_filterpolicy_t {
    let bits = u32::try_from(bits_per_key.clamp(1, 64)).unwrap_or(10);
    Box::into_raw(Box::new(leveldb_filterpolicy_t {
        policy: Policy::Bloom(bits),
    }))
}
