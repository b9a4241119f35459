//! LevelDB (or a fork with its C API) behind [`Engine`].
//!
//! Settings: write buffer and LRU block cache as configured, bloom filter of `bloom_bits` bits
//! per key, no compression (LevelDB knows only Snappy, so `--compression=lz4` is refused), WAL
//! on, sync only when asked; everything else is LevelDB's default (4 KiB blocks, 1000 open
//! files, 2 MiB tables).
//!
//! LevelDB has no "wait until idle" call. [`Engine::settle`] polls `leveldb.stats` and
//! `leveldb.approximate-memory-usage` until no level is over its compaction trigger (level 0:
//! 4 files; level L >= 1: 10^L MB, LevelDB's `MaxBytesForLevel`) and both readings stay the same
//! for 200 ms (so a flush of the immutable memtable, which changes memory usage, is waited for).

use std::ffi::{CStr, CString, c_char};
use std::path::Path;
use std::time::{Duration, Instant};

use screedb::{Error, Result};

use super::leveldb_api::{Api, P};
use super::peer_stats::{UserBytes, leveldb_bytes_written};
use super::{Compression, Engine, EngineConfig, Op};

/// A LevelDB database opened through [`Api`].
#[derive(Debug)]
pub struct LevelDbEngine {
    api: Api,
    name: &'static str,
    db: P,
    options: P,
    cache: P,
    filter: P,
    read: P,
    write_async: P,
    write_sync: P,
    user: UserBytes,
}

// SAFETY: LevelDB's `DB` is safe for concurrent use from many threads without external
// synchronisation (its documentation, "Concurrency"); the option objects are created in `open`,
// never changed afterwards, and only read by LevelDB; all are destroyed once, in `Drop`.
unsafe impl Send for LevelDbEngine {}
// SAFETY: as for `Send`.
unsafe impl Sync for LevelDbEngine {}

/// Takes LevelDB's error message out of `err` (freeing it), if there is one.
fn take_error(api: &Api, err: *mut c_char, op: &'static str) -> Result<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: LevelDB stores a NUL-terminated string allocated with malloc in `errptr`; we copy
    // it and free it once with `leveldb_free`.
    let msg = unsafe {
        let m = CStr::from_ptr(err).to_string_lossy().into_owned();
        (api.free)(err.cast());
        m
    };
    Err(Error::io(op, "leveldb", std::io::Error::other(msg)))
}

impl LevelDbEngine {
    /// Opens (creating it if missing and `config` says so) the database in `dir` through `api`.
    pub fn open(api: Api, name: &'static str, dir: &Path, config: &EngineConfig) -> Result<Self> {
        if config.compression != Compression::None {
            return Err(Error::invalid(
                "LevelDB has no LZ4 compression: run it with --compression=none",
            ));
        }
        let path = CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| Error::invalid("the database path contains a NUL byte"))?;
        let bits = i32::try_from(config.bloom_bits)
            .map_err(|_| Error::invalid("--bloom_bits is too large"))?;
        // SAFETY: each object is created by its constructor and handed to the setters of the
        // same library; `open` reads `options` and `path`, both live for the call.
        unsafe {
            let options = (api.options_create)();
            (api.options_set_create_if_missing)(options, u8::from(config.create_if_missing));
            (api.options_set_write_buffer_size)(options, config.write_buffer_size);
            let cache = (api.cache_create_lru)(config.cache_size);
            (api.options_set_cache)(options, cache);
            let filter = if bits > 0 {
                let f = (api.filterpolicy_create_bloom)(bits);
                (api.options_set_filter_policy)(options, f);
                f
            } else {
                std::ptr::null_mut()
            };
            (api.options_set_compression)(options, 0);
            let read = (api.readoptions_create)();
            let write_async = (api.writeoptions_create)();
            let write_sync = (api.writeoptions_create)();
            (api.writeoptions_set_sync)(write_sync, 1);
            let mut err = std::ptr::null_mut();
            let db = (api.open)(options, path.as_ptr(), &mut err);
            let engine = LevelDbEngine {
                api,
                name,
                db,
                options,
                cache,
                filter,
                read,
                write_async,
                write_sync,
                user: UserBytes::default(),
            };
            take_error(&engine.api, err, "open")?;
            if engine.db.is_null() {
                return Err(Error::invalid("LevelDB's open returned no database"));
            }
            Ok(engine)
        }
    }

    fn wo(&self, sync: bool) -> P {
        if sync {
            self.write_sync
        } else {
            self.write_async
        }
    }

    fn property(&self, name: &str) -> Option<String> {
        let name = CString::new(name).ok()?;
        // SAFETY: `db` is open; the returned string is malloc'ed by LevelDB (or null), copied
        // and freed once.
        unsafe {
            let v = (self.api.property_value)(self.db, name.as_ptr());
            if v.is_null() {
                return None;
            }
            let s = CStr::from_ptr(v).to_string_lossy().into_owned();
            (self.api.free)(v.cast());
            Some(s)
        }
    }
}

/// True when `leveldb.stats` shows a level over its compaction trigger.
pub fn compaction_pending(stats: &str) -> bool {
    for line in stats.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let (Some(level), Some(files), Some(mb)) = (cols.first(), cols.get(1), cols.get(2)) else {
            continue;
        };
        let (Ok(level), Ok(files), Ok(mb)) = (
            level.parse::<u32>(),
            files.parse::<u64>(),
            mb.parse::<f64>(),
        ) else {
            continue;
        };
        let over = if level == 0 {
            files >= 4
        } else {
            mb > 10f64.powi(level as i32)
        };
        if over {
            return true;
        }
    }
    false
}

impl Engine for LevelDbEngine {
    fn name(&self) -> &'static str {
        self.name
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> Result<()> {
        self.user.put(key, value);
        let mut err = std::ptr::null_mut();
        // SAFETY: `db` and the write options are live; LevelDB copies key and value.
        unsafe {
            (self.api.put)(
                self.db,
                self.wo(sync),
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                &mut err,
            );
        }
        take_error(&self.api, err, "put")
    }

    fn delete(&self, key: &[u8], sync: bool) -> Result<()> {
        self.user.delete(key);
        let mut err = std::ptr::null_mut();
        // SAFETY: as in `put`.
        unsafe {
            (self.api.delete)(
                self.db,
                self.wo(sync),
                key.as_ptr().cast(),
                key.len(),
                &mut err,
            );
        }
        take_error(&self.api, err, "delete")
    }

    fn write_batch(&self, ops: &[Op<'_>], sync: bool) -> Result<()> {
        self.user.batch(ops);
        let mut err = std::ptr::null_mut();
        // SAFETY: the batch is created, filled (LevelDB copies the bytes), written and destroyed
        // here; `db` and the write options are live.
        unsafe {
            let b = (self.api.writebatch_create)();
            for op in ops {
                match *op {
                    Op::Put(k, v) => (self.api.writebatch_put)(
                        b,
                        k.as_ptr().cast(),
                        k.len(),
                        v.as_ptr().cast(),
                        v.len(),
                    ),
                    Op::Delete(k) => (self.api.writebatch_delete)(b, k.as_ptr().cast(), k.len()),
                }
            }
            (self.api.write)(self.db, self.wo(sync), b, &mut err);
            (self.api.writebatch_destroy)(b);
        }
        take_error(&self.api, err, "write")
    }

    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let mut err = std::ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: `get` returns a malloc'ed copy of the value (or null) of `len` bytes, which we
        // copy and free once.
        let value = unsafe {
            let v = (self.api.get)(
                self.db,
                self.read,
                key.as_ptr().cast(),
                key.len(),
                &mut len,
                &mut err,
            );
            if v.is_null() {
                None
            } else {
                let out = std::slice::from_raw_parts(v.cast::<u8>(), len).to_vec();
                (self.api.free)(v.cast());
                Some(out)
            }
        };
        take_error(&self.api, err, "get")?;
        Ok(value)
    }

    fn scan(
        &self,
        start: Option<&[u8]>,
        reverse: bool,
        limit: u64,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<u64> {
        let api = &self.api;
        let mut n = 0;
        let mut err = std::ptr::null_mut();
        // SAFETY: the iterator is created, used and destroyed here while `db` is open; the key
        // and value slices it returns are valid until it moves, and `visit` sees them before.
        unsafe {
            let it = (api.create_iterator)(self.db, self.read);
            let slice =
                |p: *const c_char, len: usize| std::slice::from_raw_parts(p.cast::<u8>(), len);
            let key_of = |it: P| {
                let mut len = 0;
                let p = (api.iter_key)(it, &mut len);
                slice(p, len)
            };
            match (start, reverse) {
                (None, false) => (api.iter_seek_to_first)(it),
                (None, true) => (api.iter_seek_to_last)(it),
                (Some(k), false) => (api.iter_seek)(it, k.as_ptr().cast(), k.len()),
                (Some(k), true) => {
                    (api.iter_seek)(it, k.as_ptr().cast(), k.len());
                    if (api.iter_valid)(it) == 0 {
                        (api.iter_seek_to_last)(it);
                    } else if key_of(it) > k {
                        (api.iter_prev)(it);
                    }
                }
            }
            while n < limit && (api.iter_valid)(it) != 0 {
                let mut vlen = 0;
                let v = (api.iter_value)(it, &mut vlen);
                let more = visit(key_of(it), slice(v, vlen));
                n += 1;
                if !more {
                    break;
                }
                if reverse {
                    (api.iter_prev)(it);
                } else {
                    (api.iter_next)(it);
                }
            }
            (api.iter_get_error)(it, &mut err);
            (api.iter_destroy)(it);
        }
        take_error(api, err, "iterate")?;
        Ok(n)
    }

    fn settle(&self) -> Result<()> {
        let reading = || {
            (
                self.property("leveldb.stats").unwrap_or_default(),
                self.property("leveldb.approximate-memory-usage"),
            )
        };
        let mut last = reading();
        let mut since = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let now = reading();
            if now != last || compaction_pending(&now.0) {
                last = now;
                since = Instant::now();
            } else if since.elapsed() >= Duration::from_millis(200) {
                return Ok(());
            }
        }
    }

    fn write_amplification(&self) -> Option<f64> {
        self.user
            .amplification(leveldb_bytes_written(&self.stats_text()))
    }

    fn stats_text(&self) -> String {
        self.property("leveldb.stats").unwrap_or_default()
    }

    fn close(self: Box<Self>) -> Result<()> {
        drop(self);
        Ok(())
    }
}

impl Drop for LevelDbEngine {
    fn drop(&mut self) {
        let api = &self.api;
        // SAFETY: each object was created in `open` and is destroyed once, the database first
        // (it uses the cache and the filter policy until closed).
        unsafe {
            (api.close)(self.db);
            (api.options_destroy)(self.options);
            (api.cache_destroy)(self.cache);
            if !self.filter.is_null() {
                (api.filterpolicy_destroy)(self.filter);
            }
            (api.readoptions_destroy)(self.read);
            (api.writeoptions_destroy)(self.write_async);
            (api.writeoptions_destroy)(self.write_sync);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compaction_triggers_are_read_from_leveldb_stats() {
        let stats = concat!(
            "                               Compactions\n",
            "Level  Files Size(MB) Time(sec) Read(MB) Write(MB)\n",
            "--------------------------------------------------\n",
            "  0        2        3         0        0         3\n",
            "  1        5        9         1       12        10\n",
        );
        assert!(!compaction_pending(stats));
        assert!(compaction_pending(
            &stats.replace("  0        2", "  0        4")
        ));
        assert!(compaction_pending(
            &stats.replace("  1        5        9", "  1        5       11")
        ));
        assert!(!compaction_pending(""));
    }

    /// Debian's libleveldb, where installed (scripts/install-peers.sh).
    fn system_leveldb() -> Option<std::path::PathBuf> {
        [
            "/usr/lib/x86_64-linux-gnu/libleveldb.so.1d",
            "/usr/lib/x86_64-linux-gnu/libleveldb.so",
        ]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists())
    }

    #[test]
    fn a_loaded_leveldb_writes_reads_and_scans() {
        let Some(lib) = system_leveldb() else {
            eprintln!("skipped: no system libleveldb (run scripts/install-peers.sh)");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let config = EngineConfig::with_buffers(1 << 20, 1 << 20);
        let e = LevelDbEngine::open(Api::load(&lib).unwrap(), "leveldb-c", dir.path(), &config)
            .unwrap();
        e.write_batch(
            &[
                Op::Put(b"b", b"2"),
                Op::Put(b"d", b"4"),
                Op::Put(b"x", b"-"),
            ],
            false,
        )
        .unwrap();
        e.put(b"a", b"1", true).unwrap();
        e.delete(b"x", false).unwrap();
        assert_eq!(e.get(b"b").unwrap(), Some(b"2".to_vec()));
        assert_eq!(e.get(b"x").unwrap(), None);
        let mut keys = Vec::new();
        e.scan(Some(b"c"), true, 10, &mut |k, _| {
            keys.push(k.to_vec());
            true
        })
        .unwrap();
        assert_eq!(keys, [b"b".to_vec(), b"a".to_vec()]);
        keys.clear();
        e.scan(None, false, 2, &mut |k, _| {
            keys.push(k.to_vec());
            true
        })
        .unwrap();
        assert_eq!(keys, [b"a".to_vec(), b"b".to_vec()]);
        e.settle().unwrap();
        assert!(e.stats_text().contains("Level"));
        let lz4 = EngineConfig {
            compression: Compression::Lz4,
            layout: None,
            memory: None,
            ..config
        };
        let other = tempfile::tempdir().unwrap();
        assert!(
            LevelDbEngine::open(Api::load(&lib).unwrap(), "leveldb-c", other.path(), &lz4).is_err()
        );
        Box::new(e).close().unwrap();
    }
}
