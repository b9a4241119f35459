//! Pluggable filter policies: a filter over a table's user keys built and probed by code the
//! caller supplies (LevelDB's `FilterPolicy`, used by the C API's `leveldb_filterpolicy_create`).
//!
//! ```text
//! custom filter block := bytes returned by FilterPolicy::create_filter, stored as is
//! meta-index name     := "screedb.filter.custom." ++ policy name bytes
//! ```
//!
//! The block sits where the built-in Bloom filter would (right after the data blocks, counted in
//! `screedb.filter_bytes`); a table holds at most one filter. Because the policy's name is part
//! of the meta-index name, a table is probed only by a policy of the same name: opened with
//! another policy (or none), the table is read without a filter. The bytes are never compressed,
//! so `key_may_match` receives exactly what `create_filter` returned.

use std::fmt;
use std::sync::Arc;

/// Prefix of the meta-index name of a custom filter block. Written to disk: never change it.
pub const CUSTOM_FILTER_PREFIX: &[u8] = b"screedb.filter.custom.";

/// A filter over the distinct user keys of one table.
///
/// REQUIRES: `key_may_match(k, &create_filter(keys))` is true for every `k` in `keys`; the
/// methods may be called from several threads at once.
pub trait FilterPolicy: Send + Sync + 'static {
    /// A stable name, stored with every filter the policy writes. Change it whenever the
    /// encoding changes.
    fn name(&self) -> &str;

    /// Builds the filter of `keys` (distinct user keys in comparator order).
    fn create_filter(&self, keys: &[&[u8]]) -> Vec<u8>;

    /// False only if `key` was certainly not among the keys `filter` was built from.
    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool;
}

impl fmt::Debug for dyn FilterPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilterPolicy")
            .field("name", &self.name())
            .finish()
    }
}

/// The meta-index name of a filter written by `policy`.
pub fn custom_filter_block_name(policy: &dyn FilterPolicy) -> Vec<u8> {
    let mut name = CUSTOM_FILTER_PREFIX.to_vec();
    name.extend_from_slice(policy.name().as_bytes());
    name
}

/// Collects the distinct user keys of a table for a custom policy.
#[derive(Debug, Clone)]
pub struct CustomFilterBuilder {
    policy: Arc<dyn FilterPolicy>,
    /// All keys, concatenated.
    bytes: Vec<u8>,
    /// Start of each key in `bytes`.
    starts: Vec<usize>,
}

impl CustomFilterBuilder {
    /// A builder for `policy`.
    pub fn new(policy: Arc<dyn FilterPolicy>) -> Self {
        CustomFilterBuilder {
            policy,
            bytes: Vec::new(),
            starts: Vec::new(),
        }
    }

    fn last_key(&self) -> Option<&[u8]> {
        self.starts.last().map(|&s| &self.bytes[s..])
    }

    /// Adds a user key. Consecutive repeats of one key (several versions) count once.
    pub fn add_key(&mut self, user_key: &[u8]) {
        if self.last_key() == Some(user_key) {
            return;
        }
        self.starts.push(self.bytes.len());
        self.bytes.extend_from_slice(user_key);
    }

    /// Distinct keys added.
    pub fn num_keys(&self) -> usize {
        self.starts.len()
    }

    /// The filter, as the policy built it.
    pub fn finish(&self) -> Vec<u8> {
        let ends = self
            .starts
            .iter()
            .skip(1)
            .copied()
            .chain([self.bytes.len()]);
        let keys: Vec<&[u8]> = self
            .starts
            .iter()
            .zip(ends)
            .map(|(&s, e)| &self.bytes[s..e])
            .collect();
        self.policy.create_filter(&keys)
    }

    /// The policy.
    pub fn policy(&self) -> &Arc<dyn FilterPolicy> {
        &self.policy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stores the keys verbatim, length-prefixed: an exact filter.
    #[derive(Debug)]
    struct Exact;

    impl FilterPolicy for Exact {
        fn name(&self) -> &str {
            "test.exact"
        }
        fn create_filter(&self, keys: &[&[u8]]) -> Vec<u8> {
            let mut out = Vec::new();
            for k in keys {
                out.push(k.len() as u8);
                out.extend_from_slice(k);
            }
            out
        }
        fn key_may_match(&self, key: &[u8], mut filter: &[u8]) -> bool {
            while let Some((&len, rest)) = filter.split_first() {
                let (k, rest) = rest.split_at(usize::from(len).min(rest.len()));
                if k == key {
                    return true;
                }
                filter = rest;
            }
            false
        }
    }

    #[test]
    fn builder_passes_distinct_keys_in_order() {
        let mut b = CustomFilterBuilder::new(Arc::new(Exact));
        for k in [&b"a"[..], b"a", b"", b"bc", b"bc", b"d"] {
            b.add_key(k);
        }
        assert_eq!(b.num_keys(), 4);
        assert_eq!(b.finish(), b"\x01a\x00\x02bc\x01d".to_vec());
        let name = custom_filter_block_name(b.policy().as_ref());
        assert_eq!(name, b"screedb.filter.custom.test.exact".to_vec());
    }

    #[test]
    fn an_empty_builder_gives_the_policy_no_keys() {
        let b = CustomFilterBuilder::new(Arc::new(Exact));
        assert!(b.finish().is_empty());
    }
}
