//! [`Fs`] in memory, for fast tests.
//!
//! Each file is a byte vector shared by every handle on it (like an inode): a writer keeps
//! writing to the same bytes after its file is renamed, and a reader sees the current bytes.
//! Directories are a set of paths; the root `/` and the current directory `.` always exist.
//! Paths are normalised lexically (`a/./b` is `a/b`, `./a` is `a`, `a/../b` is `b`).
//! Nothing is ever lost: `sync` and `sync_dir` only check that their target exists. A reader
//! reads only below its length at open, though the shared bytes may have grown since. Use
//! [`super::FaultFs`] over a `MemFs` to simulate crashes.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

use super::{FileLock, Fs, RandomAccessFile, WritableFile};
use crate::error::{Error, Result};

/// The bytes of one file, shared by its directory entry and its open handles.
type Inode = Arc<RwLock<Vec<u8>>>;

/// An in-memory file system. Clones share the same files.
#[derive(Clone, Default)]
pub struct MemFs {
    state: Arc<Mutex<MemState>>,
}

/// Counts, not contents: an options dump (the info log's) must not copy every file.
impl fmt::Debug for MemFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("MemFs")
            .field("files", &state.files.len())
            .field("dirs", &state.dirs.len())
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct MemState {
    /// Normalised path -> contents.
    files: HashMap<PathBuf, Inode>,
    /// Normalised paths of created directories (never `/` or `.`, which always exist).
    dirs: BTreeSet<PathBuf>,
    /// Normalised paths of the LOCK files currently held.
    locks: HashSet<PathBuf>,
}

impl MemState {
    fn dir_exists(&self, dir: &Path) -> bool {
        is_root(dir) || self.dirs.contains(dir)
    }

    /// Fails with `NotFound` (naming `path`) unless the parent directory of `path` exists.
    fn require_parent(&self, op: &'static str, path: &Path) -> Result<()> {
        match parent(path) {
            Some(p) if self.dir_exists(&p) => Ok(()),
            _ => Err(Error::io(
                op,
                path,
                io::Error::new(io::ErrorKind::NotFound, "parent directory does not exist"),
            )),
        }
    }
}

/// Normalises `path` lexically: drops `.` components and resolves `..` against earlier
/// components. An empty result is `.`.
pub(super) fn normalize(path: &Path) -> PathBuf {
    let mut absolute = false;
    let mut parts: Vec<OsString> = Vec::new();
    for component in path.components() {
        match component {
            Component::Prefix(p) => parts.push(p.as_os_str().to_owned()),
            Component::RootDir => absolute = true,
            Component::CurDir => {}
            Component::ParentDir => {
                if parts.last().is_some_and(|last| last != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push(OsString::from(".."));
                }
            }
            Component::Normal(name) => parts.push(name.to_owned()),
        }
    }
    let mut out = if absolute {
        PathBuf::from("/")
    } else {
        PathBuf::new()
    };
    out.extend(parts);
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// True for the directories that always exist.
fn is_root(dir: &Path) -> bool {
    dir == Path::new("/") || dir == Path::new(".")
}

/// Parent of a normalised path; `None` for `/` and `.`.
fn parent(path: &Path) -> Option<PathBuf> {
    if is_root(path) {
        return None;
    }
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => Some(p.to_path_buf()),
        Some(_) => Some(PathBuf::from(".")),
        None => None,
    }
}

fn not_found(op: &'static str, path: &Path, what: &str) -> Error {
    Error::io(
        op,
        path,
        io::Error::new(io::ErrorKind::NotFound, what.to_owned()),
    )
}

fn lock_mutex<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MemFs {
    /// An empty file system holding only `/` and `.`.
    pub fn new() -> MemFs {
        MemFs::default()
    }

    fn state(&self) -> MutexGuard<'_, MemState> {
        lock_mutex(&self.state)
    }
}

#[derive(Debug)]
struct MemWritable {
    data: Inode,
    size: u64,
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        self.data
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(data);
        self.size += data.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn size(&self) -> u64 {
        self.size
    }
}

#[derive(Debug)]
struct MemRandomAccess {
    path: PathBuf,
    data: Inode,
    size: u64,
}

impl RandomAccessFile for MemRandomAccess {
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<()> {
        let data = self.data.read().unwrap_or_else(PoisonError::into_inner);
        // Only the length at open is this reader's: a file may grow by appends since.
        super::check_within(&self.path, offset, buf.len(), self.size)?;
        buf.copy_from_slice(super::slice_at(&data, offset, buf.len(), &self.path)?);
        Ok(())
    }

    fn size(&self) -> u64 {
        self.size
    }
}

#[derive(Debug)]
struct MemLock {
    state: Arc<Mutex<MemState>>,
    path: PathBuf,
}

impl FileLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        lock_mutex(&self.state).locks.remove(&self.path);
    }
}

impl Fs for MemFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let norm = normalize(path);
        let mut state = self.state();
        state.require_parent("create", path)?;
        if state.dir_exists(&norm) {
            return Err(Error::io(
                "create",
                path,
                io::Error::new(io::ErrorKind::IsADirectory, "is a directory"),
            ));
        }
        // Truncate in place, like O_TRUNC: the inode is kept.
        let data = state.files.entry(norm).or_default().clone();
        data.write().unwrap_or_else(PoisonError::into_inner).clear();
        Ok(Box::new(MemWritable { data, size: 0 }))
    }

    fn open_appendable(&self, path: &Path, committed_len: u64) -> Result<Box<dyn WritableFile>> {
        let state = self.state();
        let data = state
            .files
            .get(&normalize(path))
            .ok_or_else(|| not_found("open for appending", path, "no such file"))?
            .clone();
        let mut bytes = data.write().unwrap_or_else(PoisonError::into_inner);
        let len = bytes.len() as u64;
        let keep = usize::try_from(committed_len)
            .ok()
            .filter(|&k| k <= bytes.len())
            .ok_or_else(|| super::shorter_than_committed(path, len, committed_len))?;
        bytes.truncate(keep);
        drop(bytes);
        Ok(Box::new(MemWritable {
            data,
            size: committed_len,
        }))
    }

    fn open(&self, path: &Path) -> Result<Arc<dyn RandomAccessFile>> {
        let state = self.state();
        let data = state
            .files
            .get(&normalize(path))
            .ok_or_else(|| not_found("open", path, "no such file"))?
            .clone();
        let size = data.read().unwrap_or_else(PoisonError::into_inner).len() as u64;
        Ok(Arc::new(MemRandomAccess {
            path: path.to_path_buf(),
            data,
            size,
        }))
    }

    fn exists(&self, path: &Path) -> bool {
        let norm = normalize(path);
        let state = self.state();
        state.files.contains_key(&norm) || state.dir_exists(&norm)
    }

    fn file_size(&self, path: &Path) -> Result<u64> {
        let state = self.state();
        let data = state
            .files
            .get(&normalize(path))
            .ok_or_else(|| not_found("stat", path, "no such file"))?;
        Ok(data.read().unwrap_or_else(PoisonError::into_inner).len() as u64)
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let (from_n, to_n) = (normalize(from), normalize(to));
        let mut state = self.state();
        if !state.files.contains_key(&from_n) {
            return Err(not_found("rename", from, "no such file"));
        }
        state.require_parent("rename", to)?;
        if state.dir_exists(&to_n) {
            return Err(Error::io(
                "rename",
                to,
                io::Error::new(io::ErrorKind::IsADirectory, "target is a directory"),
            ));
        }
        if let Some(data) = state.files.remove(&from_n) {
            state.files.insert(to_n, data);
        }
        Ok(())
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let mut state = self.state();
        match state.files.remove(&normalize(path)) {
            Some(_) => Ok(()),
            None => Err(not_found("remove", path, "no such file")),
        }
    }

    fn list(&self, dir: &Path) -> Result<Vec<String>> {
        let norm = normalize(dir);
        let state = self.state();
        if !state.dir_exists(&norm) {
            return Err(not_found("list", dir, "no such directory"));
        }
        let inside = |p: &&PathBuf| parent(p).as_deref() == Some(norm.as_path());
        Ok(state
            .files
            .keys()
            .filter(inside)
            .chain(state.dirs.iter().filter(inside))
            .filter_map(|p| p.file_name()?.to_str().map(str::to_owned))
            .collect())
    }

    fn create_dir_all(&self, dir: &Path) -> Result<()> {
        let norm = normalize(dir);
        let mut state = self.state();
        let mut missing = Vec::new();
        let mut cur = Some(norm);
        while let Some(d) = cur {
            if state.dir_exists(&d) {
                break;
            }
            if state.files.contains_key(&d) {
                return Err(Error::io(
                    "create directory",
                    dir,
                    io::Error::new(
                        io::ErrorKind::AlreadyExists,
                        format!("{} is a file", d.display()),
                    ),
                ));
            }
            cur = parent(&d);
            missing.push(d);
        }
        state.dirs.extend(missing);
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        let norm = normalize(dir);
        let mut state = self.state();
        if is_root(&norm) {
            return Err(Error::io(
                "remove directory",
                dir,
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "cannot remove the root directory",
                ),
            ));
        }
        if !state.dirs.contains(&norm) {
            return Err(not_found("remove directory", dir, "no such directory"));
        }
        let inside = |p: &PathBuf| parent(p).as_deref() == Some(norm.as_path());
        if state.files.keys().any(inside) || state.dirs.iter().any(inside) {
            return Err(Error::io(
                "remove directory",
                dir,
                io::Error::new(io::ErrorKind::DirectoryNotEmpty, "directory not empty"),
            ));
        }
        state.dirs.remove(&norm);
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        if self.state().dir_exists(&normalize(dir)) {
            Ok(())
        } else {
            Err(not_found("sync directory", dir, "no such directory"))
        }
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let norm = normalize(path);
        let mut state = self.state();
        state.require_parent("open lock file", path)?;
        if state.dir_exists(&norm) {
            return Err(Error::io(
                "open lock file",
                path,
                io::Error::new(io::ErrorKind::IsADirectory, "is a directory"),
            ));
        }
        if !state.locks.insert(norm.clone()) {
            return Err(Error::Locked(path.to_path_buf()));
        }
        state.files.entry(norm.clone()).or_default();
        Ok(Box::new(MemLock {
            state: Arc::clone(&self.state),
            path: norm,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(fs: &MemFs, path: &str, data: &[u8]) {
        let mut w = fs.create(Path::new(path)).unwrap();
        w.append(data).unwrap();
        w.sync().unwrap();
    }

    fn sorted(mut v: Vec<String>) -> Vec<String> {
        v.sort();
        v
    }

    #[test]
    fn create_append_read() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db")).unwrap();
        let path = Path::new("/db/a");
        let mut w = fs.create(path).unwrap();
        w.append(b"hello ").unwrap();
        w.append(b"world").unwrap();
        assert_eq!(w.size(), 11);
        w.sync().unwrap();
        let r = fs.open(path).unwrap();
        assert_eq!(r.size(), 11);
        assert_eq!(r.read_vec(6, 5).unwrap(), b"world");
        assert_eq!(fs.file_size(path).unwrap(), 11);
        assert_eq!(super::super::read_all(&fs, path).unwrap(), b"hello world");
        // Re-creating truncates.
        drop(fs.create(path).unwrap());
        assert_eq!(fs.file_size(path).unwrap(), 0);
    }

    #[test]
    fn open_appendable_cuts_the_tail_and_old_readers_keep_their_length() {
        let fs = MemFs::new();
        write(&fs, "/f", b"0123456789");
        let old = fs.open(Path::new("/f")).unwrap();
        let mut w = fs.open_appendable(Path::new("/f"), 4).unwrap();
        assert_eq!((w.size(), fs.file_size(Path::new("/f")).unwrap()), (4, 4));
        w.append(b"abcdefgh").unwrap();
        assert_eq!(w.size(), 12);
        assert_eq!(old.read_vec(0, 4).unwrap(), b"0123");
        assert!(old.read_vec(8, 4).is_err(), "past the reader's length");
        assert!(fs.open_appendable(Path::new("/f"), 13).is_err());
        assert!(fs.open_appendable(Path::new("/g"), 0).is_err());
    }

    #[test]
    fn read_past_end_fails_with_unexpected_eof_naming_the_file() {
        let fs = MemFs::new();
        write(&fs, "/f", b"0123456789");
        let r = fs.open(Path::new("/f")).unwrap();
        let err = r.read_vec(8, 5).unwrap_err();
        assert_eq!(err.io_kind(), Some(io::ErrorKind::UnexpectedEof));
        assert!(err.to_string().contains("/f"), "{err}");
        assert!(r.read_vec(u64::MAX, 1).is_err());
        assert_eq!(r.read_vec(10, 0).unwrap(), b"");
    }

    #[test]
    fn clones_share_files() {
        let fs = MemFs::new();
        let other = fs.clone();
        write(&fs, "x", b"abc");
        assert_eq!(other.file_size(Path::new("./x")).unwrap(), 3);
        assert!(other.exists(Path::new("x")));
    }

    #[test]
    fn rename_replaces_target_and_keeps_writer() {
        let fs = MemFs::new();
        write(&fs, "/old", b"old");
        let mut w = fs.create(Path::new("/tmp")).unwrap();
        w.append(b"new").unwrap();
        fs.rename(Path::new("/tmp"), Path::new("/old")).unwrap();
        w.append(b"er").unwrap();
        assert!(!fs.exists(Path::new("/tmp")));
        assert_eq!(
            super::super::read_all(&fs, Path::new("/old")).unwrap(),
            b"newer"
        );
        let err = fs
            .rename(Path::new("/missing"), Path::new("/b"))
            .unwrap_err();
        assert_eq!(err.io_kind(), Some(io::ErrorKind::NotFound));
        assert!(err.to_string().contains("/missing"), "{err}");
    }

    #[test]
    fn remove_and_list() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/db/sub")).unwrap();
        write(&fs, "/db/a", b"1");
        write(&fs, "/db/b", b"2");
        write(&fs, "/db/sub/c", b"3");
        write(&fs, "/top", b"4");
        assert_eq!(
            sorted(fs.list(Path::new("/db")).unwrap()),
            vec!["a", "b", "sub"]
        );
        assert_eq!(fs.list(Path::new("/db/sub/")).unwrap(), vec!["c"]);
        assert_eq!(sorted(fs.list(Path::new("/")).unwrap()), vec!["db", "top"]);
        fs.remove(Path::new("/db/a")).unwrap();
        assert!(!fs.exists(Path::new("/db/a")));
        assert_eq!(sorted(fs.list(Path::new("/db")).unwrap()), vec!["b", "sub"]);
        let err = fs.remove(Path::new("/db/a")).unwrap_err();
        assert_eq!(err.io_kind(), Some(io::ErrorKind::NotFound));
        assert!(err.to_string().contains("/db/a"), "{err}");
        let err = fs.list(Path::new("/nope")).unwrap_err();
        assert!(err.to_string().contains("/nope"), "{err}");
    }

    #[test]
    fn create_in_missing_directory_fails() {
        let fs = MemFs::new();
        let err = fs.create(Path::new("/no/such/file")).err().unwrap();
        assert_eq!(err.io_kind(), Some(io::ErrorKind::NotFound));
        assert!(err.to_string().contains("/no/such/file"), "{err}");
        assert!(fs.create(Path::new("rel/file")).is_err());
        // The root and the current directory always exist.
        write(&fs, "/at-root", b"");
        write(&fs, "here", b"");
        fs.create_dir_all(Path::new("rel")).unwrap();
        write(&fs, "rel/file", b"");
        assert_eq!(fs.list(Path::new("./rel")).unwrap(), vec!["file"]);
        assert!(fs.sync_dir(Path::new("rel")).is_ok());
        assert!(fs.sync_dir(Path::new("/no")).is_err());
    }

    #[test]
    fn remove_dir_refuses_non_empty_directories() {
        let fs = MemFs::new();
        fs.create_dir_all(Path::new("/d/e")).unwrap();
        let err = fs.remove_dir(Path::new("/d")).unwrap_err();
        assert_eq!(err.io_kind(), Some(io::ErrorKind::DirectoryNotEmpty));
        assert!(err.to_string().contains("/d"), "{err}");
        fs.remove_dir(Path::new("/d/e")).unwrap();
        write(&fs, "/d/f", b"x");
        assert!(fs.remove_dir(Path::new("/d")).is_err());
        fs.remove(Path::new("/d/f")).unwrap();
        fs.remove_dir(Path::new("/d")).unwrap();
        assert!(!fs.exists(Path::new("/d")));
        assert!(fs.remove_dir(Path::new("/d")).is_err());
        assert!(fs.remove_dir(Path::new("/")).is_err());
    }

    #[test]
    fn lock_is_exclusive_until_dropped() {
        let fs = MemFs::new();
        let path = Path::new("/LOCK");
        let first = fs.lock(path).unwrap();
        assert!(fs.exists(path), "lock creates the file");
        let err = fs.clone().lock(Path::new("/./LOCK")).unwrap_err();
        assert!(matches!(err, Error::Locked(_)), "{err}");
        assert!(err.to_string().contains("/LOCK"), "{err}");
        drop(first);
        let _again = fs.lock(path).unwrap();
        assert!(fs.lock(Path::new("/missing/LOCK")).is_err());
    }

    #[test]
    fn normalize_paths() {
        let cases = [
            ("a", "a"),
            ("./a", "a"),
            ("a/./b/", "a/b"),
            ("a/../b", "b"),
            ("/..", "/"),
            ("", "."),
            (".", "."),
            ("../x", "../x"),
            ("/a//b", "/a/b"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(Path::new(input)), PathBuf::from(want), "{input}");
        }
    }
}
