//! The C API driven from Rust: callbacks (and when their destructors run), error strings,
//! ownership of returned memory, and use from several threads.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};

use screedb_capi::*;

fn cstring(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// Takes the message out of `err` (freeing it), or `None`.
fn take_error(err: &mut *mut c_char) -> Option<String> {
    if err.is_null() {
        return None;
    }
    // SAFETY: the library stores malloc'ed NUL-terminated strings.
    let s = unsafe { CStr::from_ptr(*err) }
        .to_string_lossy()
        .into_owned();
    unsafe { leveldb_free((*err).cast()) };
    *err = null_mut();
    Some(s)
}

struct Fixture {
    options: *mut leveldb_options_t,
    ro: *mut leveldb_readoptions_t,
    wo: *mut leveldb_writeoptions_t,
    name: CString,
    _dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let name = cstring(dir.path().join("db").to_str().unwrap());
        let options = leveldb_options_create();
        // SAFETY: live handles throughout.
        unsafe { leveldb_options_set_create_if_missing(options, 1) };
        Fixture {
            options,
            ro: leveldb_readoptions_create(),
            wo: leveldb_writeoptions_create(),
            name,
            _dir: dir,
        }
    }

    fn open(&self) -> Result<*mut leveldb_t, String> {
        let mut err = null_mut();
        // SAFETY: live handles.
        let db = unsafe { leveldb_open(self.options, self.name.as_ptr(), &mut err) };
        take_error(&mut err).map_or(Ok(db), Err)
    }

    fn put(&self, db: *mut leveldb_t, k: &[u8], v: &[u8]) {
        let mut err = null_mut();
        // SAFETY: live handles; slices valid for the call.
        unsafe {
            leveldb_put(
                db,
                self.wo,
                k.as_ptr().cast(),
                k.len(),
                v.as_ptr().cast(),
                v.len(),
                &mut err,
            )
        };
        assert_eq!(take_error(&mut err), None);
    }

    fn get(&self, db: *mut leveldb_t, k: &[u8]) -> Option<Vec<u8>> {
        let (mut err, mut len) = (null_mut(), 99usize);
        // SAFETY: live handles.
        let v = unsafe { leveldb_get(db, self.ro, k.as_ptr().cast(), k.len(), &mut len, &mut err) };
        assert_eq!(take_error(&mut err), None);
        if v.is_null() {
            assert_eq!(len, 0);
            return None;
        }
        // SAFETY: the value is a malloc'ed buffer of `len` bytes, which we own and free.
        let out = unsafe { std::slice::from_raw_parts(v.cast::<u8>(), len) }.to_vec();
        unsafe { leveldb_free(v.cast()) };
        Some(out)
    }
}

// SAFETY: after setup the option handles are only read, which the C API allows from any thread.
unsafe impl Sync for Fixture {}

impl Drop for Fixture {
    fn drop(&mut self) {
        // SAFETY: handles created in `new`, destroyed once.
        unsafe {
            leveldb_options_destroy(self.options);
            leveldb_readoptions_destroy(self.ro);
            leveldb_writeoptions_destroy(self.wo);
        }
    }
}

static CMP_DROPS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn cmp_drop(_: *mut c_void) {
    CMP_DROPS.fetch_add(1, Ordering::SeqCst);
}
unsafe extern "C" fn cmp_compare(
    _: *mut c_void,
    a: *const c_char,
    al: usize,
    b: *const c_char,
    bl: usize,
) -> c_int {
    // SAFETY: the library passes valid buffers of the given lengths.
    let (a, b) = unsafe {
        (
            std::slice::from_raw_parts(a.cast::<u8>(), al),
            std::slice::from_raw_parts(b.cast::<u8>(), bl),
        )
    };
    b.cmp(a) as c_int // reverse order
}
unsafe extern "C" fn cmp_name(_: *mut c_void) -> *const c_char {
    c"rust.reverse".as_ptr()
}

#[test]
fn comparator_orders_keys_and_its_destructor_runs_once_after_the_last_user() {
    let f = Fixture::new();
    // SAFETY: callbacks are valid for the program's life.
    let cmp = unsafe {
        leveldb_comparator_create(
            null_mut(),
            Some(cmp_drop),
            Some(cmp_compare),
            Some(cmp_name),
        )
    };
    unsafe { leveldb_options_set_comparator(f.options, cmp) };
    let db = f.open().unwrap();
    for k in [b"a", b"b", b"c"] {
        f.put(db, k, b"v");
    }
    // Destroying the comparator while a database uses it is safe: the destructor waits.
    unsafe {
        leveldb_options_set_comparator(f.options, null_mut());
        leveldb_comparator_destroy(cmp);
    }
    assert_eq!(CMP_DROPS.load(Ordering::SeqCst), 0);
    let it = unsafe { leveldb_create_iterator(db, f.ro) };
    unsafe { leveldb_iter_seek_to_first(it) };
    let mut len = 0;
    let k = unsafe { leveldb_iter_key(it, &mut len) };
    assert_eq!(
        unsafe { std::slice::from_raw_parts(k.cast::<u8>(), len) },
        b"c"
    );
    unsafe {
        leveldb_iter_destroy(it);
        leveldb_close(db);
    }
    assert_eq!(CMP_DROPS.load(Ordering::SeqCst), 1);
}

static FILTER_BYTES: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());
static FILTER_PROBES: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());

unsafe extern "C" fn filter_create(
    _: *mut c_void,
    keys: *const *const c_char,
    lens: *const usize,
    n: c_int,
    out_len: *mut usize,
) -> *mut c_char {
    let n = usize::try_from(n).unwrap();
    let mut filter = b"bin\0ary\xff".to_vec(); // embedded NUL and high byte: copied verbatim
    for i in 0..n {
        // SAFETY: the library passes `n` keys with their lengths.
        let k = unsafe { std::slice::from_raw_parts((*keys.add(i)).cast::<u8>(), *lens.add(i)) };
        filter.extend_from_slice(k);
        filter.push(b'|');
    }
    FILTER_BYTES.lock().unwrap().push(filter.clone());
    // SAFETY: out_len is valid; the buffer is malloc'ed as the API requires (the library frees it).
    unsafe {
        *out_len = filter.len();
        let p = libc_malloc(filter.len());
        std::ptr::copy_nonoverlapping(filter.as_ptr(), p.cast::<u8>(), filter.len());
        p.cast()
    }
}

unsafe extern "C" {
    #[link_name = "malloc"]
    fn libc_malloc(n: usize) -> *mut c_void;
}

unsafe extern "C" fn filter_match(
    _: *mut c_void,
    key: *const c_char,
    kl: usize,
    f: *const c_char,
    fl: usize,
) -> u8 {
    // SAFETY: valid buffers of the given lengths.
    let (key, f) = unsafe {
        (
            std::slice::from_raw_parts(key.cast::<u8>(), kl),
            std::slice::from_raw_parts(f.cast::<u8>(), fl),
        )
    };
    FILTER_PROBES.lock().unwrap().push(f.to_vec());
    let mut needle = key.to_vec();
    needle.push(b'|');
    u8::from(f.windows(needle.len()).any(|w| w == needle))
}

unsafe extern "C" fn filter_name(_: *mut c_void) -> *const c_char {
    c"rust.filter".as_ptr()
}

#[test]
fn filter_policy_sees_exactly_the_bytes_it_produced() {
    let f = Fixture::new();
    let p = unsafe {
        leveldb_filterpolicy_create(
            null_mut(),
            None,
            Some(filter_create),
            Some(filter_match),
            Some(filter_name),
        )
    };
    unsafe { leveldb_options_set_filter_policy(f.options, p) };
    let db = f.open().unwrap();
    f.put(db, b"k1", b"v1");
    f.put(db, b"k3", b"v3");
    unsafe { leveldb_compact_range(db, null(), 0, null(), 0) };
    assert_eq!(f.get(db, b"k1"), Some(b"v1".to_vec()));
    assert_eq!(f.get(db, b"k2"), None);
    let made = FILTER_BYTES.lock().unwrap().clone();
    let probes = FILTER_PROBES.lock().unwrap().clone();
    assert!(!made.is_empty() && !probes.is_empty());
    assert!(
        probes.iter().all(|p| made.contains(p)),
        "probed with bytes never produced"
    );
    assert!(made.iter().any(|m| m.ends_with(b"k1|k3|")));
    unsafe {
        leveldb_close(db);
        leveldb_filterpolicy_destroy(p);
    }
}

#[test]
fn errors_use_leveldb_wording_and_success_leaves_errptr_alone() {
    let f = Fixture::new();
    unsafe { leveldb_options_set_create_if_missing(f.options, 0) };
    let name = f.name.to_str().unwrap();
    assert_eq!(
        f.open().unwrap_err(),
        format!("Invalid argument: {name}: does not exist (create_if_missing is false)")
    );
    unsafe { leveldb_options_set_create_if_missing(f.options, 1) };
    let db = f.open().unwrap();
    assert_eq!(
        f.open().unwrap_err(),
        format!("IO error: lock {name}/LOCK: already held by process")
    );
    // A previous message stays when the call succeeds.
    let mut err = null_mut();
    unsafe { leveldb_destroy_db(f.options, f.name.as_ptr(), &mut err) };
    let first = err;
    assert!(!first.is_null());
    unsafe { leveldb_put(db, f.wo, c"k".as_ptr(), 1, c"v".as_ptr(), 1, &mut err) };
    assert_eq!(err, first);
    assert!(take_error(&mut err).unwrap().starts_with("IO error: lock "));
    unsafe { leveldb_close(db) };
    unsafe { leveldb_options_set_error_if_exists(f.options, 1) };
    assert_eq!(
        f.open().unwrap_err(),
        format!("Invalid argument: {name}: exists (error_if_exists is true)")
    );
}

#[test]
fn values_and_properties_are_caller_owned_copies() {
    let f = Fixture::new();
    let db = f.open().unwrap();
    f.put(db, b"k", b"first");
    let v = f.get(db, b"k").unwrap();
    f.put(db, b"k", b"second"); // the earlier copy is unaffected
    assert_eq!(v, b"first");
    assert_eq!(f.get(db, b"k"), Some(b"second".to_vec()));
    f.put(db, b"empty", b"");
    assert_eq!(f.get(db, b"empty"), Some(Vec::new()));
    let p = unsafe { leveldb_property_value(db, c"leveldb.num-files-at-level0".as_ptr()) };
    assert_eq!(unsafe { CStr::from_ptr(p) }.to_str().unwrap(), "0");
    unsafe { leveldb_free(p.cast()) };
    assert!(unsafe { leveldb_property_value(db, c"leveldb.unknown".as_ptr()) }.is_null());
    unsafe { leveldb_close(db) };
}

#[test]
fn many_threads_share_one_database() {
    let f = Fixture::new();
    let db = f.open().unwrap() as usize; // handles are thread-safe, as LevelDB's
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let f = &f;
            s.spawn(move || {
                for i in 0..300u32 {
                    let k = format!("{t}-{i}");
                    f.put(db as *mut leveldb_t, k.as_bytes(), &i.to_le_bytes());
                    assert_eq!(
                        f.get(db as *mut leveldb_t, k.as_bytes()),
                        Some(i.to_le_bytes().to_vec())
                    );
                }
            });
        }
    });
    assert_eq!(
        f.get(db as *mut leveldb_t, b"3-299"),
        Some(299u32.to_le_bytes().to_vec())
    );
    unsafe { leveldb_close(db as *mut leveldb_t) };
}

/// Key-value pairs, in order.
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Keys and values from `leveldb_create_iterator(db, ro)`, front to back, or its error.
fn scan(db: *mut leveldb_t, ro: *const leveldb_readoptions_t) -> Result<Pairs, String> {
    let mut out = Vec::new();
    // SAFETY: live handles; key and value pointers are read before the iterator moves.
    unsafe {
        let it = leveldb_create_iterator(db, ro);
        leveldb_iter_seek_to_first(it);
        while leveldb_iter_valid(it) != 0 {
            let (mut kl, mut vl) = (0, 0);
            let k = leveldb_iter_key(it, &mut kl);
            let v = leveldb_iter_value(it, &mut vl);
            out.push((
                std::slice::from_raw_parts(k.cast::<u8>(), kl).to_vec(),
                std::slice::from_raw_parts(v.cast::<u8>(), vl).to_vec(),
            ));
            leveldb_iter_next(it);
        }
        let mut err = null_mut();
        leveldb_iter_get_error(it, &mut err);
        leveldb_iter_destroy(it);
        take_error(&mut err).map_or(Ok(out), Err)
    }
}

/// `leveldb_readoptions_set_snapshot` makes gets and iterators read the past; a snapshot of
/// another database is refused with "Invalid argument" (never read at a number that means
/// nothing there); NULL goes back to the latest state.
#[test]
fn a_snapshot_in_read_options_reads_the_past_and_another_databases_is_refused() {
    let f = Fixture::new();
    let db = f.open().unwrap();
    f.put(db, b"k", b"old");
    // SAFETY: live handles; each snapshot is released once, after its last use.
    let snap = unsafe { leveldb_create_snapshot(db) };
    f.put(db, b"k", b"new");
    f.put(db, b"later", b"x");

    // SAFETY: `snap` stays unreleased while `f.ro` names it.
    unsafe { leveldb_readoptions_set_snapshot(f.ro, snap) };
    assert_eq!(f.get(db, b"k").as_deref(), Some(&b"old"[..]));
    assert_eq!(f.get(db, b"later"), None);
    assert_eq!(
        scan(db, f.ro).unwrap(),
        vec![(b"k".to_vec(), b"old".to_vec())]
    );

    let g = Fixture::new();
    let other = g.open().unwrap();
    for i in 0..50u32 {
        g.put(other, format!("o{i}").as_bytes(), b"y");
    }
    // SAFETY: live handle.
    let foreign = unsafe { leveldb_create_snapshot(other) };
    // SAFETY: `foreign` stays unreleased while `f.ro` names it.
    unsafe { leveldb_readoptions_set_snapshot(f.ro, foreign) };
    let (mut err, mut len) = (null_mut(), 99usize);
    // SAFETY: live handles.
    let v = unsafe { leveldb_get(db, f.ro, c"k".as_ptr(), 1, &mut len, &mut err) };
    assert!(v.is_null());
    assert_eq!(len, 0);
    let msg = take_error(&mut err).unwrap();
    assert!(msg.starts_with("Invalid argument: "), "{msg}");
    assert!(msg.contains("another database"), "{msg}");
    let msg = scan(db, f.ro).unwrap_err();
    assert!(msg.starts_with("Invalid argument: "), "{msg}");

    // SAFETY: NULL resets; then both snapshots are released and the databases closed.
    unsafe {
        leveldb_readoptions_set_snapshot(f.ro, null());
        assert_eq!(f.get(db, b"k").as_deref(), Some(&b"new"[..]));
        leveldb_release_snapshot(other, foreign);
        leveldb_release_snapshot(db, snap);
        leveldb_close(other);
        leveldb_close(db);
    }
}
