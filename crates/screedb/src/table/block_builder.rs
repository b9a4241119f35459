//! Builds blocks in the LevelDB entry format with prefix-compressed keys.
//!
//! ```text
//! block   := entry* | restarts: u32 LE * num_restarts | num_restarts: u32 LE
//! entry   := shared: varint32 | non_shared: varint32 | value_len: varint32
//!            | key_delta: [u8; non_shared] | value: [u8; value_len]
//! ```
//!
//! An entry's key is the first `shared` bytes of the previous entry's key followed by
//! `key_delta`. Every `restart_interval` entries a restart point stores its key whole
//! (`shared` = 0) and its offset goes into `restarts`, so a reader can binary-search the restart
//! points and decode forward from one. The first restart is always offset 0, so
//! `num_restarts >= 1` even for an empty block. Keys must be added in increasing order.

use crate::coding::{put_u32, put_varint32};

/// Accumulates sorted entries into one block.
#[derive(Debug, Clone)]
pub struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    counter: usize,
    restart_interval: usize,
    last_key: Vec<u8>,
    entries: usize,
}

impl BlockBuilder {
    /// A builder placing a restart point every `restart_interval` entries (0 is treated as 1).
    pub fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            counter: 0,
            restart_interval: restart_interval.max(1),
            last_key: Vec::new(),
            entries: 0,
        }
    }

    /// Forgets every entry, keeping the allocations.
    pub fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.last_key.clear();
        self.entries = 0;
    }

    /// True if no entry was added since the last reset.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Entries added since the last reset.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// The last key added (empty if none).
    pub fn last_key(&self) -> &[u8] {
        &self.last_key
    }

    /// Size of the block [`BlockBuilder::finish`] would return now.
    pub fn current_size_estimate(&self) -> usize {
        self.buf.len() + 4 * self.restarts.len() + 4
    }

    /// Appends an entry. REQUIRES: `key` sorts after every key added since the last reset, and
    /// the key, value and block stay under 4 GiB (the caller checks the size limits).
    pub fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if self.counter < self.restart_interval {
            self.last_key
                .iter()
                .zip(key)
                .take_while(|(a, b)| a == b)
                .count()
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        };
        let non_shared = &key[shared..];
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, non_shared.len() as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(non_shared);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(non_shared);
        self.counter += 1;
        self.entries += 1;
    }

    /// Appends the restart array and returns the finished block. Call
    /// [`BlockBuilder::reset`] before adding again.
    pub fn finish(&mut self) -> &[u8] {
        for &r in &self.restarts {
            put_u32(&mut self.buf, r);
        }
        put_u32(&mut self.buf, self.restarts.len() as u32);
        &self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_documented_format() {
        let mut b = BlockBuilder::new(2);
        b.add(b"apple", b"1");
        b.add(b"apricot", b"22");
        b.add(b"banana", b"");
        let expected: Vec<u8> = [
            &[0, 5, 1][..],
            b"apple",
            b"1",
            &[2, 5, 2],
            b"ricot",
            b"22",
            &[0, 6, 0], // restart point: whole key
            b"banana",
            &0u32.to_le_bytes(),
            &19u32.to_le_bytes(),
            &2u32.to_le_bytes(),
        ]
        .concat();
        assert_eq!(b.finish(), &expected[..]);
    }

    #[test]
    fn empty_block_has_one_restart() {
        let mut b = BlockBuilder::new(16);
        assert!(b.is_empty());
        assert_eq!(b.current_size_estimate(), 8);
        assert_eq!(b.finish(), &[0, 0, 0, 0, 1, 0, 0, 0]);
        b.reset();
        b.add(b"k", b"v");
        assert_eq!(b.len(), 1);
        assert_eq!(b.last_key(), b"k");
        let est = b.current_size_estimate();
        assert_eq!(b.finish().len(), est);
    }
}
