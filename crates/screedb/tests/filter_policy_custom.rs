//! A custom filter policy: its filter is written instead of the Bloom filter, probed with exactly
//! the bytes it produced, and only by a policy of the same name.

#![allow(clippy::unwrap_used, reason = "test code")]

use std::sync::{Arc, Mutex};

use screedb::table::FilterPolicy;
use screedb::{Db, Options};

/// An exact filter (length-prefixed keys) that records what it was given.
#[derive(Default)]
struct Recording {
    name: &'static str,
    created: Mutex<Vec<Vec<u8>>>,
    probed_with: Mutex<Vec<Vec<u8>>>,
}

impl FilterPolicy for Recording {
    fn name(&self) -> &str {
        self.name
    }
    fn create_filter(&self, keys: &[&[u8]]) -> Vec<u8> {
        let mut out = b"v1".to_vec();
        for k in keys {
            out.push(u8::try_from(k.len()).unwrap());
            out.extend_from_slice(k);
        }
        self.created.lock().unwrap().push(out.clone());
        out
    }
    fn key_may_match(&self, key: &[u8], filter: &[u8]) -> bool {
        self.probed_with.lock().unwrap().push(filter.to_vec());
        let mut rest = filter.strip_prefix(b"v1").unwrap();
        while let Some((&len, tail)) = rest.split_first() {
            let (k, tail) = tail.split_at(usize::from(len));
            if k == key {
                return true;
            }
            rest = tail;
        }
        false
    }
}

fn policy(name: &'static str) -> Arc<Recording> {
    Arc::new(Recording {
        name,
        ..Recording::default()
    })
}

fn options(policy: Option<Arc<Recording>>) -> Options {
    Options {
        create_if_missing: true,
        filter_policy: policy.map(|p| p as Arc<dyn FilterPolicy>),
        ..Options::default()
    }
}

#[test]
fn custom_filter_is_written_probed_verbatim_and_only_by_its_own_policy() {
    let dir = tempfile::tempdir().unwrap();
    let exact = policy("test.exact");
    {
        let db = Db::open(dir.path(), options(Some(Arc::clone(&exact)))).unwrap();
        for i in 0..50u32 {
            db.put(format!("k{i:03}"), format!("v{i}")).unwrap();
            db.put(format!("k{i:03}"), format!("w{i}")).unwrap(); // two versions count once
        }
        db.flush().unwrap();
        let created = exact.created.lock().unwrap().clone();
        assert_eq!(created.len(), 1, "one table, one filter");
        assert_eq!(created[0].len(), 2 + 50 * 5, "50 distinct keys of 4 bytes");
        assert_eq!(db.get("k007").unwrap(), Some(b"w7".to_vec()));
        assert_eq!(db.get("k0071").unwrap(), None);
        let probed = exact.probed_with.lock().unwrap().clone();
        assert_eq!(probed.len(), 2);
        assert!(
            probed.iter().all(|f| *f == created[0]),
            "filter bytes changed"
        );
        db.close().unwrap();
    }
    let sst: Vec<u8> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sst"))
        .flat_map(|p| std::fs::read(p).unwrap())
        .collect();
    let name = b"screedb.filter.custom.test.exact";
    assert!(sst.windows(name.len()).any(|w| w == name));
    assert!(!sst.windows(20).any(|w| w == b"screedb.filter.bloom"));

    // Another policy's tables are read without a filter: correct answers, never probed.
    let other = policy("test.other");
    let db = Db::open(dir.path(), options(Some(Arc::clone(&other)))).unwrap();
    assert_eq!(db.get("k049").unwrap(), Some(b"w49".to_vec()));
    assert_eq!(db.get("k0305").unwrap(), None);
    assert!(other.probed_with.lock().unwrap().is_empty());
    db.close().unwrap();

    // Without a policy too.
    let db = Db::open(dir.path(), options(None)).unwrap();
    assert_eq!(db.get("k000").unwrap(), Some(b"w0".to_vec()));
    db.close().unwrap();

    // The writer's policy probes again after a reopen.
    let again = policy("test.exact");
    let db = Db::open(dir.path(), options(Some(Arc::clone(&again)))).unwrap();
    assert_eq!(db.get("k0305").unwrap(), None); // inside the key range
    assert_eq!(again.probed_with.lock().unwrap().len(), 1);
}

#[test]
fn a_bloom_table_is_probed_by_its_bloom_filter_whatever_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path(), options(None)).unwrap();
    db.put("a", "1").unwrap();
    db.flush().unwrap();
    db.close().unwrap();
    let p = policy("test.exact");
    let db = Db::open(dir.path(), options(Some(Arc::clone(&p)))).unwrap();
    assert_eq!(db.get("a").unwrap(), Some(b"1".to_vec()));
    assert_eq!(db.get("b").unwrap(), None);
    assert!(p.probed_with.lock().unwrap().is_empty());
}
