//! The memory this process may use, which bounds the stores whose new tables are mapped in as
//! they are written (`Options::populate_new_tables`): the machine's physical memory, or the
//! limit of the process's control group where that is lower (a container's `memory.max`, or
//! cgroup v1's `memory.limit_in_bytes`). The files read here describe the system, not the
//! database, so they are read directly rather than through the database's `Fs`.
#![cfg_attr(not(target_os = "linux"), allow(dead_code, unused_imports))]

use std::path::{Path, PathBuf};

/// Bytes of memory the process may use; 0 where the system does not say.
#[cfg(target_os = "linux")]
pub(super) fn physical_memory_bytes() -> u64 {
    let machine = machine_bytes();
    let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let read = |path: &Path| std::fs::read_to_string(path).ok();
    match cgroup_limit(&cgroup, Path::new(CGROUP_ROOT), read) {
        Some(limit) if machine == 0 || limit < machine => limit,
        _ => machine,
    }
}

/// Elsewhere no table is populated (the option documents that it is Linux-only).
#[cfg(not(target_os = "linux"))]
pub(super) fn physical_memory_bytes() -> u64 {
    0
}

/// Bytes of physical memory of the machine; 0 where the system does not say.
#[cfg(target_os = "linux")]
fn machine_bytes() -> u64 {
    // SAFETY: sysconf takes an integer, touches no memory of ours and returns -1 for a name
    // the system does not know (mapped to 0 below).
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    // SAFETY: as above.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(pages)
        .unwrap_or(0)
        .saturating_mul(u64::try_from(page_size).unwrap_or(0))
}

/// Where control-group file systems are mounted.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// cgroup v1 writes "no limit" as a number near `i64::MAX` (rounded down to a page).
const UNLIMITED_V1: u64 = 1 << 62;

/// The lowest memory limit on the path of this process's control group, from the group up to
/// the root, given `/proc/self/cgroup`'s text, the mount root, and a reader of files (`None`
/// for a file that cannot be read). cgroup v2 (`0::/path`) reads `memory.max` ("max": none);
/// v1 reads `memory.limit_in_bytes` under the `memory` controller's mount. `None` when no
/// group on the path sets a limit.
fn cgroup_limit(
    proc_self_cgroup: &str,
    root: &Path,
    read: impl Fn(&Path) -> Option<String>,
) -> Option<u64> {
    limit_files(proc_self_cgroup, root)
        .iter()
        .filter_map(|file| parse_limit(&read(file)?))
        .min()
}

/// The limit files to read, from the process's group up to the mount root.
fn limit_files(proc_self_cgroup: &str, root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for line in proc_self_cgroup.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (mount, file) = if controllers.is_empty() {
            (root.to_path_buf(), "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            (root.join("memory"), "memory.limit_in_bytes")
        } else {
            continue;
        };
        let mut dir = mount.join(path.trim_start_matches('/'));
        loop {
            files.push(dir.join(file));
            if dir == mount || !dir.pop() || !dir.starts_with(&mount) {
                break;
            }
        }
    }
    files
}

/// A limit file's value: `None` for "max" (v2), a v1 "unlimited" or anything unreadable.
fn parse_limit(text: &str) -> Option<u64> {
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|&bytes| bytes > 0 && bytes < UNLIMITED_V1)
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::Db;
    use crate::fs::mapped_resident_bytes;
    use crate::options::Options;
    use crate::table::CompressionType;

    /// A reader of the files in `files` (path, contents).
    fn fake(files: &[(&str, &str)]) -> impl Fn(&Path) -> Option<String> {
        let files: Vec<(PathBuf, String)> = files
            .iter()
            .map(|(p, c)| (PathBuf::from(p), c.to_string()))
            .collect();
        move |path| {
            files
                .iter()
                .find(|(p, _)| p == path)
                .map(|(_, c)| c.clone())
        }
    }

    fn limit(cgroup: &str, files: &[(&str, &str)]) -> Option<u64> {
        super::cgroup_limit(cgroup, Path::new("/cg"), fake(files))
    }

    #[test]
    fn a_cgroup_v2_limit_is_the_lowest_on_the_path() {
        let files = [
            ("/cg/memory.max", "max\n"),
            ("/cg/app/memory.max", "2147483648\n"),
            ("/cg/app/worker/memory.max", "max\n"),
        ];
        assert_eq!(limit("0::/app/worker\n", &files), Some(2 << 30));
        assert_eq!(limit("0::/\n", &files), None, "the root sets none");
        assert_eq!(
            limit("0::/other\n", &files),
            None,
            "unreadable files set none"
        );
    }

    #[test]
    fn a_cgroup_v1_limit_is_read_under_the_memory_controller() {
        let files = [
            ("/cg/memory/memory.limit_in_bytes", "9223372036854771712\n"),
            ("/cg/memory/box/memory.limit_in_bytes", "1073741824\n"),
            ("/cg/cpu/box/memory.limit_in_bytes", "1\n"),
        ];
        let cgroup = "5:cpu,cpuacct:/box\n4:memory:/box\n1:name=systemd:/\n";
        assert_eq!(limit(cgroup, &files), Some(1 << 30));
        assert_eq!(
            limit("4:memory:/\n", &files),
            None,
            "v1's unlimited is no limit"
        );
        assert_eq!(limit("5:cpu:/box\n", &files), None, "no memory controller");
        assert_eq!(limit("garbage", &files), None);
    }

    #[test]
    fn the_bound_is_never_above_the_machine() {
        let bytes = super::physical_memory_bytes();
        assert!(bytes > 0 && bytes <= super::machine_bytes(), "{bytes}");
    }

    #[test]
    fn a_linux_machine_has_memory() {
        let bytes = super::physical_memory_bytes();
        assert!(bytes >= 64 << 20, "{bytes} bytes of physical memory");
    }

    /// Bytes of the tables a new database flushed (with `populate_new_tables` as given) and how
    /// many of them are mapped to pages in this process, before anything reads them.
    fn flushed_tables(populate: bool) -> (u64, u64) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        let options = Options {
            create_if_missing: true,
            populate_new_tables: populate,
            compression: CompressionType::None,
            ..Options::default()
        };
        let db = Db::open(&dir, options).unwrap();
        for i in 0..20_000u32 {
            db.put(format!("key{i:08}").as_bytes(), [i as u8; 100])
                .unwrap();
        }
        db.flush().unwrap();
        let (mut bytes, mut mapped) = (0, 0);
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "sst") {
                bytes += std::fs::metadata(&path).unwrap().len();
                mapped += mapped_resident_bytes(&path);
            }
        }
        drop(db);
        (bytes, mapped)
    }

    #[test]
    fn a_flushed_table_is_mapped_in_only_with_the_option() {
        let (bytes, mapped) = flushed_tables(true);
        assert!(bytes > 1 << 20, "{bytes} bytes of tables");
        assert!(mapped >= bytes, "{mapped} of {bytes} bytes mapped");
        let (bytes, mapped) = flushed_tables(false);
        assert!(
            mapped < bytes / 2,
            "{mapped} of {bytes} bytes mapped without the option"
        );
    }
}
