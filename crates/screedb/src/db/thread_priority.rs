//! The CPU priority of the database's own threads (`Options::background_nice`).
//!
//! Linux keeps a nice value per thread, and a thread starts with its creator's: a background
//! thread lowers its own priority once, as it starts, and the helper threads its jobs spawn
//! inherit it. Raising a nice value needs no privilege; lowering it back would, so nothing does.

/// Adds `by` (0..=19) to the calling thread's nice value, capped at 19 (the lowest priority).
#[cfg(target_os = "linux")]
pub(super) fn lower_this_thread(by: i32) -> std::io::Result<()> {
    if by == 0 {
        return Ok(());
    }
    // SAFETY: getpriority takes two integers and touches no memory of ours; with
    // PRIO_PROCESS and 0 it reads the calling thread's nice value and cannot fail.
    let now = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    let target = now.saturating_add(by).min(19);
    // SAFETY: as above; with PRIO_PROCESS and 0, setpriority changes the calling thread only.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, target) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Elsewhere the option is accepted and has no effect (documented on the option).
#[cfg(not(target_os = "linux"))]
pub(super) fn lower_this_thread(_by: i32) -> std::io::Result<()> {
    Ok(())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    /// The nice value of the calling thread, from /proc (field 19 of its stat line).
    fn nice_of_this_thread() -> i32 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let after_name = &stat[stat.rfind(')').unwrap() + 2..];
        after_name.split(' ').nth(16).unwrap().parse().unwrap()
    }

    #[test]
    fn lowers_only_the_calling_thread_and_caps_at_19() {
        let own = nice_of_this_thread();
        std::thread::spawn(|| {
            let before = nice_of_this_thread();
            lower_this_thread(3).unwrap();
            assert_eq!(nice_of_this_thread(), (before + 3).min(19));
            lower_this_thread(19).unwrap();
            assert_eq!(nice_of_this_thread(), 19);
            let child = std::thread::spawn(nice_of_this_thread).join().unwrap();
            assert_eq!(child, 19, "a thread inherits its creator's nice value");
        })
        .join()
        .unwrap();
        assert_eq!(nice_of_this_thread(), own, "the test thread is unchanged");
    }
}
