//! Cache-line prefetch hints: for seeks over many sources, for the memtable's point index
//! (`memtable/point_index.rs`), whose slot a write touches under the skiplist's writer mutex,
//! and for the next entry of a block a scan walks (`table/block.rs`).
//!
//! A merging iterator seeks its children one after another, and each child's seek is a chain
//! of dependent cache misses (index entry, data block trailer, restart keys, entries): on a
//! store larger than the CPU caches the misses of one child are not overlapped with those of
//! the next. [`InternalIterator::prefetch_seek`](super::InternalIterator::prefetch_seek) lets
//! a child name the bytes its seek will read before any child seeks, so the loads of all
//! children are in flight together. A hint only: it reads nothing and changes no data.

/// Bytes per cache line on the targets we build for.
const LINE: usize = 64;

/// Asks the CPU to start loading every cache line of `bytes` into its caches, without
/// waiting for any of them.
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // The tail first: a table block ends with its restart array, which a seek reads first.
        let (body, tail) = bytes.split_at(bytes.len().saturating_sub(LINE));
        for line in tail.chunks(LINE).chain(body.chunks(LINE)) {
            // SAFETY: `_mm_prefetch` needs SSE, which every x86_64 CPU has (it is in the
            // target's baseline features); a prefetch never faults and reads nothing the
            // program sees, and the address lies in `bytes` anyway.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// Asks the CPU to start loading the cache line at `address`, without waiting for it. Any
/// address will do: a prefetch of memory the program may not read is dropped, never a fault.
pub(crate) fn prefetch_address<T>(address: *const T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: as in `prefetch`: SSE is baseline on x86_64, and a prefetch neither faults
        // nor reads anything the program sees, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(address.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
