//! LevelDB's C API (`include/leveldb/c.h`) as a table of function pointers.
//!
//! The table, [`Api`], is filled either from the library linked at build time (feature
//! `leveldb`: the system's libleveldb) or from a shared library opened at run time
//! (`--engine leveldb-c:/path/to/lib.so`), so PebblesDB, HyperLevelDB or any other fork a user
//! built runs the same workloads through one engine implementation.

use std::ffi::{c_char, c_int, c_void};
use std::path::Path;
use std::sync::Arc;

use screedb::{Error, Result};

/// An opaque LevelDB object (`leveldb_t*`, `leveldb_options_t*`, ...).
pub type P = *mut c_void;
/// Where LevelDB stores an error message (`char** errptr`).
pub type Err = *mut *mut c_char;

/// LevelDB's C API as function pointers (names as in `c.h`, without `leveldb_`).
#[derive(Clone)]
pub struct Api {
    pub(super) _lib: Option<Arc<libloading::Library>>,
    pub(super) open: unsafe extern "C" fn(P, *const c_char, Err) -> P,
    pub(super) close: unsafe extern "C" fn(P),
    pub(super) put: unsafe extern "C" fn(P, P, *const c_char, usize, *const c_char, usize, Err),
    pub(super) delete: unsafe extern "C" fn(P, P, *const c_char, usize, Err),
    pub(super) write: unsafe extern "C" fn(P, P, P, Err),
    pub(super) get:
        unsafe extern "C" fn(P, P, *const c_char, usize, *mut usize, Err) -> *mut c_char,
    pub(super) create_iterator: unsafe extern "C" fn(P, P) -> P,
    pub(super) property_value: unsafe extern "C" fn(P, *const c_char) -> *mut c_char,
    pub(super) free: unsafe extern "C" fn(*mut c_void),
    pub(super) iter_destroy: unsafe extern "C" fn(P),
    pub(super) iter_valid: unsafe extern "C" fn(P) -> u8,
    pub(super) iter_seek_to_first: unsafe extern "C" fn(P),
    pub(super) iter_seek_to_last: unsafe extern "C" fn(P),
    pub(super) iter_seek: unsafe extern "C" fn(P, *const c_char, usize),
    pub(super) iter_next: unsafe extern "C" fn(P),
    pub(super) iter_prev: unsafe extern "C" fn(P),
    pub(super) iter_key: unsafe extern "C" fn(P, *mut usize) -> *const c_char,
    pub(super) iter_value: unsafe extern "C" fn(P, *mut usize) -> *const c_char,
    pub(super) iter_get_error: unsafe extern "C" fn(P, Err),
    pub(super) writebatch_create: unsafe extern "C" fn() -> P,
    pub(super) writebatch_destroy: unsafe extern "C" fn(P),
    pub(super) writebatch_put: unsafe extern "C" fn(P, *const c_char, usize, *const c_char, usize),
    pub(super) writebatch_delete: unsafe extern "C" fn(P, *const c_char, usize),
    pub(super) options_create: unsafe extern "C" fn() -> P,
    pub(super) options_destroy: unsafe extern "C" fn(P),
    pub(super) options_set_create_if_missing: unsafe extern "C" fn(P, u8),
    pub(super) options_set_write_buffer_size: unsafe extern "C" fn(P, usize),
    pub(super) options_set_cache: unsafe extern "C" fn(P, P),
    pub(super) options_set_filter_policy: unsafe extern "C" fn(P, P),
    pub(super) options_set_compression: unsafe extern "C" fn(P, c_int),
    pub(super) readoptions_create: unsafe extern "C" fn() -> P,
    pub(super) readoptions_destroy: unsafe extern "C" fn(P),
    pub(super) writeoptions_create: unsafe extern "C" fn() -> P,
    pub(super) writeoptions_destroy: unsafe extern "C" fn(P),
    pub(super) writeoptions_set_sync: unsafe extern "C" fn(P, u8),
    pub(super) cache_create_lru: unsafe extern "C" fn(usize) -> P,
    pub(super) cache_destroy: unsafe extern "C" fn(P),
    pub(super) filterpolicy_create_bloom: unsafe extern "C" fn(c_int) -> P,
    pub(super) filterpolicy_destroy: unsafe extern "C" fn(P),
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("loaded", &self._lib.is_some())
            .finish_non_exhaustive()
    }
}

/// Fills an [`Api`] from a function-name lookup `$get!("name")`.
macro_rules! api_from {
    ($lib:expr, $get:ident) => {
        Api {
            _lib: $lib,
            open: $get!(open),
            close: $get!(close),
            put: $get!(put),
            delete: $get!(delete),
            write: $get!(write),
            get: $get!(get),
            create_iterator: $get!(create_iterator),
            property_value: $get!(property_value),
            free: $get!(free),
            iter_destroy: $get!(iter_destroy),
            iter_valid: $get!(iter_valid),
            iter_seek_to_first: $get!(iter_seek_to_first),
            iter_seek_to_last: $get!(iter_seek_to_last),
            iter_seek: $get!(iter_seek),
            iter_next: $get!(iter_next),
            iter_prev: $get!(iter_prev),
            iter_key: $get!(iter_key),
            iter_value: $get!(iter_value),
            iter_get_error: $get!(iter_get_error),
            writebatch_create: $get!(writebatch_create),
            writebatch_destroy: $get!(writebatch_destroy),
            writebatch_put: $get!(writebatch_put),
            writebatch_delete: $get!(writebatch_delete),
            options_create: $get!(options_create),
            options_destroy: $get!(options_destroy),
            options_set_create_if_missing: $get!(options_set_create_if_missing),
            options_set_write_buffer_size: $get!(options_set_write_buffer_size),
            options_set_cache: $get!(options_set_cache),
            options_set_filter_policy: $get!(options_set_filter_policy),
            options_set_compression: $get!(options_set_compression),
            readoptions_create: $get!(readoptions_create),
            readoptions_destroy: $get!(readoptions_destroy),
            writeoptions_create: $get!(writeoptions_create),
            writeoptions_destroy: $get!(writeoptions_destroy),
            writeoptions_set_sync: $get!(writeoptions_set_sync),
            cache_create_lru: $get!(cache_create_lru),
            cache_destroy: $get!(cache_destroy),
            filterpolicy_create_bloom: $get!(filterpolicy_create_bloom),
            filterpolicy_destroy: $get!(filterpolicy_destroy),
        }
    };
}

#[cfg(feature = "leveldb")]
mod linked {
    use super::{Err, P};
    use std::ffi::{c_char, c_int, c_void};

    #[link(name = "leveldb")]
    unsafe extern "C" {
        pub fn leveldb_open(o: P, name: *const c_char, e: Err) -> P;
        pub fn leveldb_close(db: P);
        pub fn leveldb_put(
            db: P,
            o: P,
            k: *const c_char,
            kl: usize,
            v: *const c_char,
            vl: usize,
            e: Err,
        );
        pub fn leveldb_delete(db: P, o: P, k: *const c_char, kl: usize, e: Err);
        pub fn leveldb_write(db: P, o: P, b: P, e: Err);
        pub fn leveldb_get(
            db: P,
            o: P,
            k: *const c_char,
            kl: usize,
            vl: *mut usize,
            e: Err,
        ) -> *mut c_char;
        pub fn leveldb_create_iterator(db: P, o: P) -> P;
        pub fn leveldb_property_value(db: P, name: *const c_char) -> *mut c_char;
        pub fn leveldb_free(p: *mut c_void);
        pub fn leveldb_iter_destroy(it: P);
        pub fn leveldb_iter_valid(it: P) -> u8;
        pub fn leveldb_iter_seek_to_first(it: P);
        pub fn leveldb_iter_seek_to_last(it: P);
        pub fn leveldb_iter_seek(it: P, k: *const c_char, kl: usize);
        pub fn leveldb_iter_next(it: P);
        pub fn leveldb_iter_prev(it: P);
        pub fn leveldb_iter_key(it: P, kl: *mut usize) -> *const c_char;
        pub fn leveldb_iter_value(it: P, vl: *mut usize) -> *const c_char;
        pub fn leveldb_iter_get_error(it: P, e: Err);
        pub fn leveldb_writebatch_create() -> P;
        pub fn leveldb_writebatch_destroy(b: P);
        pub fn leveldb_writebatch_put(
            b: P,
            k: *const c_char,
            kl: usize,
            v: *const c_char,
            vl: usize,
        );
        pub fn leveldb_writebatch_delete(b: P, k: *const c_char, kl: usize);
        pub fn leveldb_options_create() -> P;
        pub fn leveldb_options_destroy(o: P);
        pub fn leveldb_options_set_create_if_missing(o: P, v: u8);
        pub fn leveldb_options_set_write_buffer_size(o: P, v: usize);
        pub fn leveldb_options_set_cache(o: P, c: P);
        pub fn leveldb_options_set_filter_policy(o: P, f: P);
        pub fn leveldb_options_set_compression(o: P, v: c_int);
        pub fn leveldb_readoptions_create() -> P;
        pub fn leveldb_readoptions_destroy(o: P);
        pub fn leveldb_writeoptions_create() -> P;
        pub fn leveldb_writeoptions_destroy(o: P);
        pub fn leveldb_writeoptions_set_sync(o: P, v: u8);
        pub fn leveldb_cache_create_lru(capacity: usize) -> P;
        pub fn leveldb_cache_destroy(c: P);
        pub fn leveldb_filterpolicy_create_bloom(bits: c_int) -> P;
        pub fn leveldb_filterpolicy_destroy(f: P);
    }
}

impl Api {
    /// The LevelDB linked at build time.
    #[cfg(feature = "leveldb")]
    pub fn linked() -> Api {
        macro_rules! linked_fn {
            (open) => {
                linked::leveldb_open
            };
            (close) => {
                linked::leveldb_close
            };
            (put) => {
                linked::leveldb_put
            };
            (delete) => {
                linked::leveldb_delete
            };
            (write) => {
                linked::leveldb_write
            };
            (get) => {
                linked::leveldb_get
            };
            (create_iterator) => {
                linked::leveldb_create_iterator
            };
            (property_value) => {
                linked::leveldb_property_value
            };
            (free) => {
                linked::leveldb_free
            };
            (iter_destroy) => {
                linked::leveldb_iter_destroy
            };
            (iter_valid) => {
                linked::leveldb_iter_valid
            };
            (iter_seek_to_first) => {
                linked::leveldb_iter_seek_to_first
            };
            (iter_seek_to_last) => {
                linked::leveldb_iter_seek_to_last
            };
            (iter_seek) => {
                linked::leveldb_iter_seek
            };
            (iter_next) => {
                linked::leveldb_iter_next
            };
            (iter_prev) => {
                linked::leveldb_iter_prev
            };
            (iter_key) => {
                linked::leveldb_iter_key
            };
            (iter_value) => {
                linked::leveldb_iter_value
            };
            (iter_get_error) => {
                linked::leveldb_iter_get_error
            };
            (writebatch_create) => {
                linked::leveldb_writebatch_create
            };
            (writebatch_destroy) => {
                linked::leveldb_writebatch_destroy
            };
            (writebatch_put) => {
                linked::leveldb_writebatch_put
            };
            (writebatch_delete) => {
                linked::leveldb_writebatch_delete
            };
            (options_create) => {
                linked::leveldb_options_create
            };
            (options_destroy) => {
                linked::leveldb_options_destroy
            };
            (options_set_create_if_missing) => {
                linked::leveldb_options_set_create_if_missing
            };
            (options_set_write_buffer_size) => {
                linked::leveldb_options_set_write_buffer_size
            };
            (options_set_cache) => {
                linked::leveldb_options_set_cache
            };
            (options_set_filter_policy) => {
                linked::leveldb_options_set_filter_policy
            };
            (options_set_compression) => {
                linked::leveldb_options_set_compression
            };
            (readoptions_create) => {
                linked::leveldb_readoptions_create
            };
            (readoptions_destroy) => {
                linked::leveldb_readoptions_destroy
            };
            (writeoptions_create) => {
                linked::leveldb_writeoptions_create
            };
            (writeoptions_destroy) => {
                linked::leveldb_writeoptions_destroy
            };
            (writeoptions_set_sync) => {
                linked::leveldb_writeoptions_set_sync
            };
            (cache_create_lru) => {
                linked::leveldb_cache_create_lru
            };
            (cache_destroy) => {
                linked::leveldb_cache_destroy
            };
            (filterpolicy_create_bloom) => {
                linked::leveldb_filterpolicy_create_bloom
            };
            (filterpolicy_destroy) => {
                linked::leveldb_filterpolicy_destroy
            };
        }
        api_from!(None, linked_fn)
    }

    /// The C API of the shared library at `path`.
    pub fn load(path: &Path) -> Result<Api> {
        // SAFETY: loading a library runs its initialisers; the user named this library as a
        // LevelDB build to benchmark, which is the trust `--engine leveldb-c:` asks for.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| {
            Error::invalid(format!(
                "cannot load {} as a LevelDB C API library: {e}",
                path.display()
            ))
        })?;
        let lib = Arc::new(lib);
        macro_rules! sym {
            ($name:ident) => {{
                let name = concat!("leveldb_", stringify!($name));
                // SAFETY: the symbol is declared in LevelDB's c.h with the signature of the
                // field it fills (the field's type is inferred from the struct); a library that
                // exported it with another signature would not be LevelDB's C API.
                match unsafe { lib.get(concat!("leveldb_", stringify!($name), "\0").as_bytes()) } {
                    Ok(f) => *f,
                    Err(_) => {
                        return Err(Error::invalid(format!(
                            "{} does not export {name}: it is not a LevelDB C API library",
                            path.display()
                        )));
                    }
                }
            }};
        }
        Ok(api_from!(Some(Arc::clone(&lib)), sym))
    }
}
