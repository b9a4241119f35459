//! Options, read options, write options, the LRU cache, the environment and the info logger.
//!
//! Options keep LevelDB's values and defaults; they become engine options when a database is
//! opened, clipped to LevelDB's ranges (`SanitizeOptions` in db_impl.cc) so every value LevelDB
//! accepts is accepted here.

use std::ffi::{c_char, c_int};
use std::sync::Arc;

use engine::table::CompressionType;
use engine::{Options, ReadOptions, WriteOptions};

use crate::callbacks::{CComparator, Policy, leveldb_comparator_t, leveldb_filterpolicy_t};
use crate::db::leveldb_snapshot_t;
use crate::ffi::{guard, malloc_cstring};

/// `leveldb_options_t`: LevelDB's options, with LevelDB's defaults.
#[derive(Debug, Clone)]
pub struct leveldb_options_t {
    create_if_missing: bool,
    error_if_exists: bool,
    paranoid_checks: bool,
    write_buffer_size: usize,
    max_open_files: c_int,
    /// Capacity of the block cache set with `leveldb_options_set_cache`; LevelDB's 8 MiB if none.
    cache_capacity: Option<usize>,
    block_size: usize,
    block_restart_interval: c_int,
    max_file_size: usize,
    compression: c_int,
    comparator: Option<Arc<CComparator>>,
    filter_policy: Option<Policy>,
}

impl Default for leveldb_options_t {
    fn default() -> Self {
        leveldb_options_t {
            create_if_missing: false,
            error_if_exists: false,
            paranoid_checks: false,
            write_buffer_size: 4 << 20,
            max_open_files: 1000,
            cache_capacity: None,
            block_size: 4096,
            block_restart_interval: 16,
            max_file_size: 2 << 20,
            compression: 1,
            comparator: None,
            filter_policy: None,
        }
    }
}

/// LevelDB's `ClipToRange`.
fn clip(v: usize, min: usize, max: usize) -> usize {
    v.clamp(min, max)
}

impl leveldb_options_t {
    /// The engine options these stand for.
    pub(crate) fn to_engine(&self) -> Options {
        let mut o = Options {
            create_if_missing: self.create_if_missing,
            error_if_exists: self.error_if_exists,
            // ScreeDB verifies every block it reads, paranoid or not.
            verify_checksums: true,
            write_buffer_size: clip(self.write_buffer_size, 64 << 10, 1 << 30),
            block_size: clip(self.block_size, 1 << 10, 4 << 20),
            block_restart_interval: usize::try_from(self.block_restart_interval)
                .unwrap_or(1)
                .max(1),
            block_cache_bytes: self.cache_capacity.unwrap_or(8 << 20),
            // LevelDB keeps 10 descriptors for files other than tables.
            max_open_tables: usize::try_from(self.max_open_files)
                .unwrap_or(0)
                .clamp(64 + 10, 50_000)
                - 10,
            target_file_size: clip(self.max_file_size, 1 << 20, 1 << 30) as u64,
            compression: if self.compression == 0 {
                CompressionType::None
            } else {
                CompressionType::Lz4
            },
            bloom_bits_per_key: 0,
            filter_policy: None,
            ..Options::default()
        };
        if let Some(c) = &self.comparator {
            o.comparator = Arc::clone(c) as Arc<dyn engine::Comparator>;
        }
        match &self.filter_policy {
            Some(Policy::Bloom(bits)) => o.bloom_bits_per_key = *bits,
            Some(Policy::Custom(p)) => {
                o.filter_policy = Some(Arc::clone(p) as Arc<dyn engine::table::FilterPolicy>);
            }
            None => {}
        }
        o
    }
}

/// `leveldb_readoptions_t`.
#[derive(Debug, Clone, Copy)]
pub struct leveldb_readoptions_t {
    verify_checksums: bool,
    fill_cache: bool,
    /// Set by `leveldb_readoptions_set_snapshot`; NULL reads the latest state. Borrowed, as in
    /// LevelDB: the caller keeps the snapshot alive (unreleased) while these options are used.
    snapshot: *const leveldb_snapshot_t,
}

impl leveldb_readoptions_t {
    /// The engine's options for one read, borrowing the snapshot they name.
    ///
    /// # Safety
    /// The snapshot set with `leveldb_readoptions_set_snapshot`, if any, has not been released
    /// (LevelDB's contract: a snapshot stays live while read options naming it are used).
    pub(crate) unsafe fn as_engine(&self) -> ReadOptions<'_> {
        ReadOptions {
            // SAFETY: guaranteed by the caller.
            snapshot: unsafe { self.snapshot.as_ref() }.map(leveldb_snapshot_t::snapshot),
        }
    }
}

/// `leveldb_writeoptions_t`.
#[derive(Debug, Clone, Copy, Default)]
pub struct leveldb_writeoptions_t {
    sync: bool,
}

impl leveldb_writeoptions_t {
    pub(crate) fn to_engine(self) -> WriteOptions {
        WriteOptions { sync: self.sync }
    }
}

/// `leveldb_cache_t`: an LRU block cache's capacity. Each database opened with it gets its own
/// cache of that capacity (LevelDB shares one cache between them).
#[derive(Debug, Clone, Copy)]
pub struct leveldb_cache_t {
    capacity: usize,
}

/// `leveldb_env_t`: the operating system's file system (the only environment).
#[derive(Debug, Default)]
pub struct leveldb_env_t {
    _private: (),
}

/// `leveldb_logger_t`: the C API cannot create one; `leveldb_options_set_info_log` accepts NULL
/// or a pointer from elsewhere and ignores it: the info log is always the `LOG` file in the
/// database directory, LevelDB's default (docs/info-log.md).
#[derive(Debug)]
pub struct leveldb_logger_t {
    _private: (),
}

fn boxed<T>(v: T) -> *mut T {
    Box::into_raw(Box::new(v))
}

/// Drops a box made by [`boxed`]; NULL is ignored.
///
/// # Safety
/// `p` is NULL or came from [`boxed`] and is not used again.
pub(crate) unsafe fn drop_boxed<T>(p: *mut T) {
    if !p.is_null() {
        // SAFETY: guaranteed by the caller.
        drop(unsafe { Box::from_raw(p) });
    }
}

/// Applies `f` to `*p` unless `p` is NULL (setters have no error channel).
///
/// # Safety
/// `p` is NULL or a live handle not accessed concurrently by another thread.
unsafe fn with<T>(p: *mut T, f: impl FnOnce(&mut T)) {
    guard(std::ptr::null_mut(), (), || {
        // SAFETY: guaranteed by the caller.
        if let Some(v) = unsafe { p.as_mut() } {
            f(v);
        }
    });
}

#[unsafe(no_mangle)]
pub extern "C" fn leveldb_options_create() -> *mut leveldb_options_t {
    boxed(leveldb_options_t::default())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_destroy(o: *mut leveldb_options_t) {
    // SAFETY: API contract.
    unsafe { drop_boxed(o) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_comparator(
    o: *mut leveldb_options_t,
    cmp: *mut leveldb_comparator_t,
) {
    // SAFETY: API contract (both handles live).
    let c = unsafe { cmp.as_ref() }.map(|c| Arc::clone(&c.inner));
    // SAFETY: API contract.
    unsafe { with(o, |o| o.comparator = c) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_filter_policy(
    o: *mut leveldb_options_t,
    policy: *mut leveldb_filterpolicy_t,
) {
    // SAFETY: API contract (both handles live).
    let p = unsafe { policy.as_ref() }.map(|p| p.policy.clone());
    // SAFETY: API contract.
    unsafe { with(o, |o| o.filter_policy = p) }
}

macro_rules! setter {
    ($name:ident, $ty:ty, |$o:ident, $v:ident| $body:expr) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(o: *mut leveldb_options_t, $v: $ty) {
            // SAFETY: API contract.
            unsafe { with(o, |$o| $body) }
        }
    };
}

setter!(leveldb_options_set_create_if_missing, u8, |o, v| o
    .create_if_missing =
    v != 0);
setter!(leveldb_options_set_error_if_exists, u8, |o, v| o
    .error_if_exists =
    v != 0);
setter!(leveldb_options_set_paranoid_checks, u8, |o, v| o
    .paranoid_checks =
    v != 0);
setter!(leveldb_options_set_write_buffer_size, usize, |o, v| o
    .write_buffer_size =
    v);
setter!(leveldb_options_set_max_open_files, c_int, |o, v| o
    .max_open_files =
    v);
setter!(leveldb_options_set_block_size, usize, |o, v| o.block_size =
    v);
setter!(leveldb_options_set_block_restart_interval, c_int, |o, v| {
    o.block_restart_interval = v
});
setter!(leveldb_options_set_max_file_size, usize, |o, v| o
    .max_file_size =
    v);
setter!(leveldb_options_set_compression, c_int, |o, v| o
    .compression =
    v);

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_env(
    o: *mut leveldb_options_t,
    env: *mut leveldb_env_t,
) {
    // The default environment is the only one: nothing to record.
    let _ = env;
    // SAFETY: API contract.
    unsafe { with(o, |_| {}) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_info_log(
    o: *mut leveldb_options_t,
    logger: *mut leveldb_logger_t,
) {
    let _ = logger;
    // SAFETY: API contract.
    unsafe { with(o, |_| {}) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_options_set_cache(
    o: *mut leveldb_options_t,
    cache: *mut leveldb_cache_t,
) {
    // SAFETY: API contract.
    let capacity = unsafe { cache.as_ref() }.map(|c| c.capacity);
    // SAFETY: API contract.
    unsafe { with(o, |o| o.cache_capacity = capacity) }
}

#[unsafe(no_mangle)]
pub extern "C" fn leveldb_readoptions_create() -> *mut leveldb_readoptions_t {
    boxed(leveldb_readoptions_t {
        verify_checksums: false,
        fill_cache: true,
        snapshot: std::ptr::null(),
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_readoptions_destroy(o: *mut leveldb_readoptions_t) {
    // SAFETY: API contract.
    unsafe { drop_boxed(o) }
}

/// Accepted; ScreeDB verifies every block it reads anyway.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_readoptions_set_verify_checksums(
    o: *mut leveldb_readoptions_t,
    v: u8,
) {
    // SAFETY: API contract.
    unsafe { with(o, |o| o.verify_checksums = v != 0) }
}

/// Accepted; every block read goes through the cache.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_readoptions_set_fill_cache(o: *mut leveldb_readoptions_t, v: u8) {
    // SAFETY: API contract.
    unsafe { with(o, |o| o.fill_cache = v != 0) }
}

/// Reads with `o` see the database as of `snap` (NULL: the latest state). `o` keeps the
/// pointer, not a copy: `snap` must stay unreleased while `o` is used for a read (LevelDB's
/// contract). A snapshot of another database makes the read fail with "Invalid argument".
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_readoptions_set_snapshot(
    o: *mut leveldb_readoptions_t,
    snap: *const leveldb_snapshot_t,
) {
    // SAFETY: API contract.
    unsafe { with(o, |o| o.snapshot = snap) }
}

#[unsafe(no_mangle)]
pub extern "C" fn leveldb_writeoptions_create() -> *mut leveldb_writeoptions_t {
    boxed(leveldb_writeoptions_t::default())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writeoptions_destroy(o: *mut leveldb_writeoptions_t) {
    // SAFETY: API contract.
    unsafe { drop_boxed(o) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_writeoptions_set_sync(o: *mut leveldb_writeoptions_t, v: u8) {
    // SAFETY: API contract.
    unsafe { with(o, |o| o.sync = v != 0) }
}

#[unsafe(no_mangle)]
pub extern "C" fn leveldb_cache_create_lru(capacity: usize) -> *mut leveldb_cache_t {
    boxed(leveldb_cache_t { capacity })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_cache_destroy(cache: *mut leveldb_cache_t) {
    // SAFETY: API contract.
    unsafe { drop_boxed(cache) }
}

#[unsafe(no_mangle)]
pub extern "C" fn leveldb_create_default_env() -> *mut leveldb_env_t {
    boxed(leveldb_env_t::default())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_env_destroy(env: *mut leveldb_env_t) {
    // SAFETY: API contract.
    unsafe { drop_boxed(env) }
}

unsafe extern "C" {
    fn geteuid() -> u32;
}

/// LevelDB's test directory: `$TEST_TMPDIR`, else `/tmp/leveldbtest-<euid>`; created if
/// missing. NULL if it cannot be created.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn leveldb_env_get_test_directory(env: *mut leveldb_env_t) -> *mut c_char {
    let _ = env;
    guard(std::ptr::null_mut(), std::ptr::null_mut(), || {
        let dir = match std::env::var("TEST_TMPDIR") {
            Ok(d) if !d.is_empty() => d,
            // SAFETY: geteuid has no preconditions and cannot fail.
            _ => format!("/tmp/leveldbtest-{}", unsafe { geteuid() }),
        };
        match std::fs::create_dir_all(&dir) {
            Ok(()) => malloc_cstring(&dir),
            Err(_) => std::ptr::null_mut(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leveldb_defaults_and_clipping_give_valid_engine_options() {
        let d = leveldb_options_t::default().to_engine();
        d.validate().unwrap();
        assert_eq!(d.write_buffer_size, 4 << 20);
        assert_eq!(d.block_cache_bytes, 8 << 20);
        assert_eq!(d.bloom_bits_per_key, 0, "LevelDB has no filter by default");
        let tiny = leveldb_options_t {
            write_buffer_size: 1,
            max_open_files: 0,
            block_size: 0,
            block_restart_interval: -3,
            max_file_size: 0,
            ..leveldb_options_t::default()
        }
        .to_engine();
        tiny.validate().unwrap();
        assert_eq!(tiny.write_buffer_size, 64 << 10);
        assert_eq!(tiny.max_open_tables, 64);
        assert_eq!(tiny.block_size, 1024);
        assert_eq!(tiny.block_restart_interval, 1);
        assert_eq!(tiny.target_file_size, 1 << 20);
    }
}
