//! What the operating system says about the process and the database directory.
//!
//! `/proc/self/io` (Linux) counts bytes the process asked to read and write (`rchar`, `wchar`)
//! and bytes it caused to be fetched from or sent to storage (`read_bytes`, `write_bytes`; the
//! latter counted when pages are dirtied, so it includes WAL pages deleted before write-back,
//! which `cancelled_write_bytes` counts when the deletion happens). Elsewhere the counters are
//! unavailable. CPU time comes from `getrusage`, the peak resident set size from `VmHWM` in
//! `/proc/self/status` (reset per workload through `/proc/self/clear_refs`), the peak of
//! anonymous memory from `RssAnon` sampled every 20 ms, and space on disk from the blocks the
//! database's files occupy.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// A reading of `/proc/self/io`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// Bytes passed to read-like system calls.
    pub rchar: u64,
    /// Bytes passed to write-like system calls.
    pub wchar: u64,
    /// Bytes fetched from storage.
    pub read_bytes: u64,
    /// Bytes sent (or to be sent) to storage.
    pub write_bytes: u64,
    /// Bytes of `write_bytes` that never reached storage (their file was truncated or deleted).
    pub cancelled_write_bytes: u64,
}

impl IoCounters {
    /// The current counters, or `None` where `/proc/self/io` cannot be read.
    pub fn now() -> Option<IoCounters> {
        let text = std::fs::read_to_string("/proc/self/io").ok()?;
        Some(Self::parse(&text))
    }

    fn parse(text: &str) -> IoCounters {
        let mut c = IoCounters::default();
        for line in text.lines() {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let Ok(value) = value.trim().parse::<u64>() else {
                continue;
            };
            match name.trim() {
                "rchar" => c.rchar = value,
                "wchar" => c.wchar = value,
                "read_bytes" => c.read_bytes = value,
                "write_bytes" => c.write_bytes = value,
                "cancelled_write_bytes" => c.cancelled_write_bytes = value,
                _ => {}
            }
        }
        c
    }

    /// Counters accumulated from `earlier` to `self`.
    pub fn since(&self, earlier: &IoCounters) -> IoCounters {
        IoCounters {
            rchar: self.rchar.saturating_sub(earlier.rchar),
            wchar: self.wchar.saturating_sub(earlier.wchar),
            read_bytes: self.read_bytes.saturating_sub(earlier.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(earlier.write_bytes),
            cancelled_write_bytes: self
                .cancelled_write_bytes
                .saturating_sub(earlier.cancelled_write_bytes),
        }
    }
}

/// Bytes the files inside `dir` and its subdirectories occupy on disk (allocated blocks; file
/// lengths where blocks are not known). Unreadable entries count as 0; symbolic links are not
/// followed.
pub fn disk_usage(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut total = 0;
    for entry in entries.flatten() {
        let Ok(m) = entry.metadata() else { continue };
        if m.is_dir() {
            total += disk_usage(&entry.path());
        } else if m.is_file() {
            total += allocated_bytes(&m);
        }
    }
    total
}

/// Evicts the page cache of every regular file under `dir` (subdirectories too; symbolic links
/// are not followed): each file's dirty pages are written back (`fdatasync`), then
/// `posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED)` drops its cached pages, so the next reads
/// come from the device. Needs no privileges, only read access to the files. Pages the process
/// has mapped (mmap) may stay resident. Returns the number of files. A file removed meanwhile
/// (a compaction finishing) is skipped; a missing `dir` is an error naming it.
pub fn drop_page_cache(dir: &Path) -> screedb::Result<u64> {
    use screedb::Error;
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error::io("drop the page cache of", dir, e))?;
    let mut files = 0;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io("drop the page cache of", dir, e))?;
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            files += drop_page_cache(&path)?;
            continue;
        }
        if !kind.is_file() {
            continue;
        }
        let file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(Error::io("open", &path, e)),
        };
        file.sync_data()
            .map_err(|e| Error::io("drop the page cache of", &path, e))?;
        fadvise_dontneed(&file).map_err(|e| Error::io("drop the page cache of", &path, e))?;
        files += 1;
    }
    Ok(files)
}

#[cfg(target_os = "linux")]
fn fadvise_dontneed(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: `posix_fadvise` only reads its integer arguments; the descriptor is open for the
    // whole call because `file` is borrowed. Offset 0 and length 0 mean the whole file.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    // posix_fadvise returns the error number instead of setting errno.
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(rc))
    }
}

#[cfg(not(target_os = "linux"))]
fn fadvise_dontneed(_file: &std::fs::File) -> std::io::Result<()> {
    Err(std::io::Error::other(
        "--drop_cache needs posix_fadvise (Linux)",
    ))
}

/// User + system CPU seconds `getrusage(who)` reports.
#[cfg(unix)]
fn rusage_cpu_seconds(who: libc::c_int) -> Option<f64> {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: `getrusage` writes a whole `rusage` into the pointer it is given, which points at
    // enough space; we read it only when the call reports success.
    let ru = unsafe {
        if libc::getrusage(who, ru.as_mut_ptr()) != 0 {
            return None;
        }
        ru.assume_init()
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Some(secs(ru.ru_utime) + secs(ru.ru_stime))
}

/// CPU seconds (user + system) the whole process used so far, all threads included (the
/// engine's background threads too), from `getrusage(RUSAGE_SELF)`.
#[cfg(unix)]
pub fn cpu_seconds() -> Option<f64> {
    rusage_cpu_seconds(libc::RUSAGE_SELF)
}

/// CPU seconds are unknown off Unix.
#[cfg(not(unix))]
pub fn cpu_seconds() -> Option<f64> {
    None
}

/// CPU seconds (user + system) the calling thread used so far, from
/// `getrusage(RUSAGE_THREAD)`: what one benchmark thread's operations cost, without the time
/// it waited for a core (which wall time counts when other threads or processes share them).
#[cfg(target_os = "linux")]
pub fn thread_cpu_seconds() -> Option<f64> {
    rusage_cpu_seconds(libc::RUSAGE_THREAD)
}

/// A thread's CPU time is unknown off Linux.
#[cfg(not(target_os = "linux"))]
pub fn thread_cpu_seconds() -> Option<f64> {
    None
}

/// Measures the CPU time of the thread that calls [`ThreadCpu::start`] until it calls
/// [`ThreadCpu::seconds`].
#[derive(Debug, Clone, Copy)]
pub struct ThreadCpu(Option<f64>);

impl ThreadCpu {
    /// Starts measuring the calling thread.
    pub fn start() -> Self {
        ThreadCpu(thread_cpu_seconds())
    }

    /// CPU seconds the calling thread (the one that started this) used since the start.
    pub fn seconds(self) -> Option<f64> {
        thread_cpu_seconds()
            .zip(self.0)
            .map(|(end, start)| end - start)
    }
}

/// Resets the process's peak resident set size to the current one (Linux: writes `5` to
/// `/proc/self/clear_refs`), so [`peak_rss`] measures one workload. Returns false where that
/// is not possible; [`peak_rss`] is then the peak since the process started.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The peak resident set size in bytes: `VmHWM` of `/proc/self/status`. It counts the pages
/// of files the process maps (an engine reading its tables through maps) as well as its heap.
pub fn peak_rss() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// Resident anonymous memory in bytes (heap, stacks, anonymous maps; not the pages of mapped
/// files): `RssAnon` of `/proc/self/status`.
pub fn anon_rss() -> Option<u64> {
    status_bytes("RssAnon:")
}

/// A `field: N kB` line of `/proc/self/status`, in bytes.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line
        .trim_start_matches(field)
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// How often [`AnonPeak`] reads `RssAnon`.
const ANON_SAMPLE: Duration = Duration::from_millis(20);

/// The largest [`anon_rss`] seen while it runs, read every 20 ms by a thread of its own: the
/// kernel keeps no peak of anonymous memory alone (`VmHWM` counts mapped file pages too).
#[derive(Debug)]
pub struct AnonPeak {
    stop: Arc<AtomicBool>,
    sampler: Option<JoinHandle<Option<u64>>>,
}

impl AnonPeak {
    /// Starts sampling; `None` where `RssAnon` cannot be read.
    pub fn start() -> Option<AnonPeak> {
        let first = anon_rss()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let sampler = std::thread::Builder::new()
            .name("bench-anon-rss".into())
            .spawn(move || {
                let mut peak = first;
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(ANON_SAMPLE);
                    peak = peak.max(anon_rss().unwrap_or(0));
                }
                Some(peak)
            })
            .ok()?;
        Some(AnonPeak {
            stop,
            sampler: Some(sampler),
        })
    }

    /// Stops sampling and returns the peak (including a last reading now).
    pub fn finish(mut self) -> Option<u64> {
        let now = anon_rss();
        self.stop.store(true, Ordering::Relaxed);
        let peak = self.sampler.take()?.join().ok().flatten()?;
        Some(peak.max(now.unwrap_or(0)))
    }
}

impl Drop for AnonPeak {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(sampler) = self.sampler.take() {
            let _ = sampler.join();
        }
    }
}

#[cfg(unix)]
fn allocated_bytes(m: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    m.blocks() * 512
}

#[cfg(not(unix))]
fn allocated_bytes(m: &std::fs::Metadata) -> u64 {
    m.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_cache_drops_walk_the_directory_and_name_a_missing_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), vec![7u8; 10_000]).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub").join("b"), b"x").unwrap();
        assert_eq!(drop_page_cache(dir.path()).unwrap(), 2);
        assert_eq!(std::fs::read(dir.path().join("a")).unwrap().len(), 10_000);
        let missing = dir.path().join("nope");
        let err = drop_page_cache(&missing).unwrap_err().to_string();
        assert!(err.contains("nope"), "{err}");
    }

    #[test]
    fn proc_io_is_parsed_and_subtracted() {
        let a = IoCounters::parse(
            "rchar: 10\nwchar: 20\nsyscr: 1\nread_bytes: 4096\nwrite_bytes: 8192\n\
             cancelled_write_bytes: 4096\n",
        );
        assert_eq!(a.wchar, 20);
        assert_eq!((a.write_bytes, a.cancelled_write_bytes), (8192, 4096));
        let b = IoCounters { wchar: 25, ..a };
        assert_eq!(b.since(&a).wchar, 5);
        assert_eq!(a.since(&b).wchar, 0);
    }

    #[test]
    fn disk_usage_counts_allocated_blocks() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(disk_usage(dir.path()), 0);
        std::fs::write(dir.path().join("f"), vec![1u8; 10_000]).unwrap();
        assert!(disk_usage(dir.path()) >= 10_000);
        assert_eq!(disk_usage(&dir.path().join("missing")), 0);
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("g"), vec![1u8; 20_000]).unwrap();
        assert!(disk_usage(dir.path()) >= 30_000, "subdirectories count");
    }

    #[test]
    fn cpu_and_peak_memory_are_measured() {
        let before = cpu_seconds().unwrap();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(cpu_seconds().unwrap() >= before);
        if let Some(sampling) = AnonPeak::start() {
            let base = anon_rss().unwrap();
            let big = vec![1u8; 64 << 20];
            std::hint::black_box(&big);
            std::thread::sleep(ANON_SAMPLE * 3);
            drop(big);
            let peak = sampling.finish().unwrap();
            assert!(
                peak >= base + (32 << 20),
                "a 64 MiB buffer, freed before the end, raises the anonymous peak: {peak} {base}"
            );
        }
        if reset_peak_rss() {
            let base = peak_rss().unwrap();
            let big = vec![1u8; 64 << 20];
            std::hint::black_box(&big);
            assert!(
                peak_rss().unwrap() >= base + (32 << 20),
                "a 64 MiB buffer raises the peak"
            );
        }
    }
}
