//! Salvage of a damaged HTable, for repair (`table::salvage`): every bucket and overflow group
//! whose checksum holds and whose entries decode, each read on its own.

use crate::error::Result;
use crate::table::salvage::{LostBlock, Sink};

use super::format::Entry;
use super::reader::HTable;

impl HTable {
    /// Passes every entry of every intact bucket and overflow group to `sink` (internal key,
    /// value) and returns the ones it could not read.
    pub fn salvage(&self, sink: Sink<'_>) -> Result<Vec<LostBlock>> {
        let mut lost = Vec::new();
        let mut key = Vec::new();
        let mut emit = |entries: &[Entry<'_>]| {
            for e in entries {
                key.clear();
                key.extend_from_slice(e.user_key);
                key.extend_from_slice(&e.trailer.to_le_bytes());
                sink(&key, e.value);
            }
        };
        let mut note = |read: Result<()>, offset: u64, bytes: u64, what: String| {
            if let Err(e) = read {
                lost.push(LostBlock {
                    offset,
                    bytes,
                    keys: None,
                    reason: format!("{what}: {e}"),
                });
            }
        };
        let bytes = u64::from(self.footer().bucket_bytes);
        for id in 0..self.num_buckets() {
            let offset = self.bucket_offset(id);
            let read = self
                .raw_file()
                .read_vec(offset, bytes as usize)
                .and_then(|buf| self.open_bucket(id, &buf, true).map(|(_, e)| emit(&e)));
            note(read, offset, bytes, format!("bucket {id}"));
        }
        for rec in self.overflow_records() {
            let read = self
                .read_overflow(rec, true)
                .and_then(|data| self.overflow_entries(rec, &data).map(|e| emit(&e)));
            note(
                read,
                rec.offset,
                u64::from(rec.len),
                "overflow group".to_owned(),
            );
        }
        Ok(lost)
    }
}
