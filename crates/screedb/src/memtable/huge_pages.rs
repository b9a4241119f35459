//! Transparent huge pages for the memtable's large, randomly addressed tables.
//!
//! The membuffer's bucket array, the key filter and the point index are each one allocation
//! read and written at random. Once they outgrow the caches, every access is a cache miss and,
//! with 4 KiB pages, a TLB miss too, whose page walk (two-dimensional under a hypervisor) misses
//! the caches as well: the page tables of a 1 GiB membuffer are 2 MiB. On Linux these tables
//! are advised `MADV_HUGEPAGE` before their first write, so the kernel backs them with 2 MiB
//! pages where it can (with `/sys/kernel/mm/transparent_hugepage/enabled` at `madvise`, the
//! common default, or `always`). Measured in docs/memory.md ("Huge pages for the membuffer").
//!
//! The arena's chunks are not advised: 2 MiB arena chunks in huge pages made the drain slower
//! (its CPU per entry +55% at 4 GiB), as the kernel compacts memory to find each huge page.

/// A huge page on x86-64 and aarch64 (with 4 KiB base pages).
const HUGE_PAGE: usize = 2 << 20;

/// Tables smaller than this stay in base pages (they fit the caches' reach anyway).
const MIN_BYTES: usize = 4 * HUGE_PAGE;

/// A boxed slice of `len` elements made by `init`, advised for huge pages when it is large.
pub(super) fn boxed_slice<T>(len: usize, init: impl FnMut(usize) -> T) -> Box<[T]> {
    let mut v: Vec<T> = Vec::with_capacity(len);
    advise(v.as_mut_ptr().cast(), len.saturating_mul(size_of::<T>()));
    v.extend((0..len).map(init));
    v.into_boxed_slice()
}

/// Advises the whole huge pages inside `len` bytes from `start` (an allocation not yet
/// written), if there are enough of them to matter. Advice only: an error changes nothing.
fn advise(start: *mut u8, len: usize) {
    let (first, end) = (
        start.addr().next_multiple_of(HUGE_PAGE),
        start.addr().saturating_add(len) / HUGE_PAGE * HUGE_PAGE,
    );
    if len < MIN_BYTES || end <= first {
        return;
    }
    #[cfg(all(target_os = "linux", not(miri)))]
    // SAFETY: `first..end` lies inside the caller's allocation, which this process owns;
    // `MADV_HUGEPAGE` only sets how the kernel backs those pages and never changes their
    // contents, so no Rust object is affected.
    unsafe {
        libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_slices_hold_what_init_made() {
        // Under Miri (which compiles the advice out) the large case would take minutes.
        let large = if cfg!(miri) {
            4097
        } else {
            (MIN_BYTES / 8) + 4097
        };
        for len in [0, 1, 1000, large] {
            let s = boxed_slice(len, |i| i as u64 * 3);
            assert_eq!(s.len(), len);
            assert!(s.iter().enumerate().all(|(i, &x)| x == i as u64 * 3));
        }
    }
}
