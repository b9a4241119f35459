//! Regression (found by db_model, seed 8): `compact_range` over a narrow range moved a newer
//! level-0 table down while an older, overlapping level-0 table stayed behind.
//!
//! postmortem: `compact_range` took only the level-0 tables overlapping the requested range.
//! Level-0 tables overlap each other, so a newer table `[a..m]` holding `k=new` went to level 1
//! while an older table `[j..l]` holding `k=old` (outside the requested `[a, b]`) stayed in
//! level 0, which reads search first: `get(k)` returned the old value. The level-0 inputs are now
//! grown until no other level-0 table overlaps them, as LevelDB's `GetOverlappingInputs` does.
#![allow(clippy::unwrap_used, reason = "test code")]

use std::sync::Arc;

use screedb::fs::MemFs;
use screedb::{Db, Options};

#[test]
fn compact_range_takes_every_overlapping_level0_table() {
    let options = Options {
        create_if_missing: true,
        // Keep both tables in level 0 until the manual compaction.
        l0_compaction_trigger: 8,
        l0_slowdown_trigger: 20,
        l0_stop_trigger: 36,
        fs: Arc::new(MemFs::new()),
        ..Options::default()
    };
    let db = Db::open("/db", options).unwrap();
    for k in ["j", "k", "l"] {
        db.put(k, "old").unwrap();
    }
    db.flush().unwrap();
    for k in ["a", "k", "m"] {
        db.put(k, "new").unwrap();
    }
    db.flush().unwrap();
    assert_eq!(db.stats().files_per_level[0], 2);

    db.compact_range(Some(b"a"), Some(b"b")).unwrap();

    assert_eq!(db.get("k").unwrap().as_deref(), Some(&b"new"[..]));
    for k in ["a", "m"] {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(&b"new"[..]), "{k}");
    }
    for k in ["j", "l"] {
        assert_eq!(db.get(k).unwrap().as_deref(), Some(&b"old"[..]), "{k}");
    }
    // Both tables went down together.
    assert_eq!(db.stats().files_per_level[0], 0);
}
