//! A bump allocator for memtable nodes.
//!
//! The arena hands out aligned, uninitialised byte regions carved from large chunks
//! ([`CHUNK_SIZE`]); a request larger than a quarter of a chunk gets a chunk of its own so that it
//! does not waste the rest of the current one. Nothing is freed before the arena drops, so a
//! pointer returned by [`Arena::allocate`] stays valid (and never moves) for the arena's whole
//! life. That is what lets readers follow pointers into the arena without any lock while the
//! writer keeps allocating.
//!
//! Chunks are raw allocations from `std::alloc`, never `Box`es or `Vec`s: moving a `Box` would
//! assert unique ownership of its bytes and invalidate the pointers readers hold into them.

use std::alloc::{self, Layout};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

/// Bytes in a regular chunk (1 MiB; 4 KiB under Miri to keep it fast).
pub(crate) const CHUNK_SIZE: usize = if cfg!(miri) { 4 << 10 } else { 1 << 20 };

/// Requests above this size get a dedicated chunk.
const OVERSIZE: usize = CHUNK_SIZE / 4;

/// Alignment of every chunk; requests may ask for at most this alignment.
pub(crate) const MAX_ALIGN: usize = 16;

/// An append-only allocator whose regions live until it drops.
#[derive(Debug)]
pub(crate) struct Arena {
    /// Allocation state; only the (serialized) writer takes this lock.
    inner: Mutex<Chunks>,
    /// Bytes reserved from the system, readable without the lock.
    usage: AtomicUsize,
    /// Bytes handed out to callers.
    allocated: AtomicUsize,
}

/// The chunks owned by an arena and the free tail of the current one.
#[derive(Debug)]
struct Chunks {
    /// Every chunk, freed on drop with the layout it was allocated with.
    owned: Vec<(NonNull<u8>, Layout)>,
    /// Next free byte of the current chunk (dangling when there is none).
    cursor: NonNull<u8>,
    /// Free bytes after `cursor` in the current chunk.
    remaining: usize,
}

// SAFETY: `Chunks` owns its allocations exclusively (raw pointers only to keep `Box` aliasing
// rules out of the way); moving it to another thread moves that ownership, like a `Vec<u8>`.
unsafe impl Send for Chunks {}

impl Arena {
    /// An empty arena; the first chunk is allocated on first use.
    pub(crate) fn new() -> Self {
        Arena {
            inner: Mutex::new(Chunks {
                owned: Vec::new(),
                cursor: NonNull::dangling(),
                remaining: 0,
            }),
            usage: AtomicUsize::new(0),
            allocated: AtomicUsize::new(0),
        }
    }

    /// Returns `size` uninitialised bytes aligned to `align` (a power of two <= [`MAX_ALIGN`]).
    /// The region is exclusively the caller's and stays valid until the arena drops.
    ///
    /// Panics if `size` is so large that no layout can describe it (over `isize::MAX`), like
    /// `Vec::with_capacity`; aborts via `handle_alloc_error` when the system is out of memory.
    pub(crate) fn allocate(&self, size: usize, align: usize) -> NonNull<u8> {
        assert!(
            align.is_power_of_two() && align <= MAX_ALIGN,
            "arena alignment {align} is not a power of two <= {MAX_ALIGN}"
        );
        // A poisoned lock is harmless: `Chunks` is only changed after the last point that can
        // panic, so it is always consistent.
        let mut chunks = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        self.allocated.fetch_add(size, Ordering::Relaxed);
        let pad = chunks.cursor.as_ptr().align_offset(align);
        if pad <= chunks.remaining && size <= chunks.remaining - pad {
            // SAFETY: `pad + size <= remaining`, so both offsets stay inside the current chunk.
            let (ptr, next) = unsafe {
                let ptr = chunks.cursor.add(pad);
                (ptr, ptr.add(size))
            };
            chunks.cursor = next;
            chunks.remaining -= pad + size;
            return ptr;
        }
        if size > OVERSIZE {
            return self.new_chunk(&mut chunks, size);
        }
        // Start a fresh chunk; the tail of the old one is wasted (at most OVERSIZE bytes).
        let base = self.new_chunk(&mut chunks, CHUNK_SIZE);
        // SAFETY: `size <= OVERSIZE < CHUNK_SIZE`, and the chunk base is MAX_ALIGN-aligned.
        chunks.cursor = unsafe { base.add(size) };
        chunks.remaining = CHUNK_SIZE - size;
        base
    }

    /// Allocates a chunk of `size` bytes, records it and returns its base.
    fn new_chunk(&self, chunks: &mut Chunks, size: usize) -> NonNull<u8> {
        let Ok(layout) = Layout::from_size_align(size.max(1), MAX_ALIGN) else {
            panic!("arena allocation of {size} bytes is larger than any layout allows");
        };
        chunks.owned.reserve(1);
        // SAFETY: `layout` has a non-zero size.
        let raw = unsafe { alloc::alloc(layout) };
        let Some(base) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        chunks.owned.push((base, layout));
        self.usage.fetch_add(
            layout.size() + size_of::<(NonNull<u8>, Layout)>(),
            Ordering::Relaxed,
        );
        base
    }

    /// Bytes reserved from the system so far (chunks plus their bookkeeping).
    pub(crate) fn memory_usage(&self) -> usize {
        self.usage.load(Ordering::Relaxed)
    }

    /// Bytes handed out by `allocate` so far: what the entries really occupy. The memtable's
    /// size for flush decisions, independent of the chunk size.
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        let chunks = self.inner.get_mut().unwrap_or_else(PoisonError::into_inner);
        for &(base, layout) in &chunks.owned {
            // SAFETY: `base` was returned by `alloc::alloc(layout)` and is freed exactly once;
            // `&mut self` proves no region handed out is still borrowed through the arena.
            unsafe { alloc::dealloc(base.as_ptr(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_aligned_disjoint_and_writable() {
        let arena = Arena::new();
        let mut regions = Vec::new();
        for i in 0..200usize {
            let size = (i * 37) % 300 + 1;
            let align = 1 << (i % 5);
            let p = arena.allocate(size, align);
            assert_eq!(p.as_ptr() as usize % align, 0);
            // SAFETY: the region is `size` bytes, exclusively ours.
            unsafe { p.as_ptr().write_bytes(i as u8, size) };
            regions.push((p, size, i as u8));
        }
        for (p, size, byte) in regions {
            // SAFETY: the region is still live and was fully initialised above.
            let s = unsafe { std::slice::from_raw_parts(p.as_ptr(), size) };
            assert!(s.iter().all(|&b| b == byte), "region was overwritten");
        }
    }

    #[test]
    fn oversize_allocations_get_their_own_chunk() {
        let arena = Arena::new();
        let small = arena.allocate(8, 8);
        let before = arena.memory_usage();
        let big = arena.allocate(CHUNK_SIZE * 2, 8);
        assert!(arena.memory_usage() >= before + CHUNK_SIZE * 2);
        // The current chunk is kept: the next small allocation follows the first.
        let small2 = arena.allocate(8, 8);
        assert_eq!(small2.as_ptr() as usize, small.as_ptr() as usize + 8);
        // SAFETY: the big region is ours; touch its last byte.
        unsafe { big.as_ptr().add(CHUNK_SIZE * 2 - 1).write(1) };
    }

    #[test]
    fn memory_usage_grows_with_chunks() {
        let arena = Arena::new();
        assert_eq!(arena.memory_usage(), 0);
        arena.allocate(1, 1);
        let one = arena.memory_usage();
        assert!(one >= CHUNK_SIZE);
        for _ in 0..8 {
            arena.allocate(OVERSIZE, 8);
        }
        assert!(arena.memory_usage() >= one + CHUNK_SIZE);
    }

    #[test]
    fn zero_sized_allocations_work() {
        let arena = Arena::new();
        let p = arena.allocate(0, 8);
        assert_eq!(p.as_ptr() as usize % 8, 0);
        let q = arena.allocate(4, 4);
        // SAFETY: `q` is a 4-byte region aligned for u32, exclusively ours.
        unsafe { q.cast::<u32>().write(7) };
        assert_eq!(
            arena.allocate(0, 1).as_ptr() as usize,
            q.as_ptr() as usize + 4
        );
    }
}
