//! A MANIFEST whose first record (the one naming the comparator and the layout) is damaged is
//! reported as the corruption it is, never as a layout mismatch (issue 15: an FLSM database cut
//! by one byte opened with "database was created with the leveled layout ... set
//! Options::layout to leveled", which was false).

#![allow(clippy::unwrap_used, reason = "test code")]

use screedb::{Db, Error, Layout, Options};

#[test]
fn a_torn_first_manifest_record_is_corruption_not_a_layout_mismatch() {
    for layout in [Layout::default(), Layout::Leveled] {
        let dir = tempfile::tempdir().unwrap();
        let options = Options {
            create_if_missing: true,
            layout: layout.clone(),
            ..Options::default()
        };
        let db = Db::open(dir.path(), options.clone()).unwrap();
        db.put("k", "v").unwrap();
        db.close().unwrap();
        let current = std::fs::read_to_string(dir.path().join("CURRENT")).unwrap();
        let manifest = dir.path().join(current.trim());
        let bytes = std::fs::read(&manifest).unwrap();
        // Cut inside the first record: its fragment is torn, nothing after it survives.
        std::fs::write(&manifest, &bytes[..12]).unwrap();

        let err = Db::open(dir.path(), options).unwrap_err();
        assert!(
            matches!(err, Error::Corruption { .. }),
            "layout {layout}: {err}"
        );
        let shown = err.to_string();
        assert!(
            shown.contains("records no comparator") && shown.contains("first record"),
            "layout {layout}: {shown}"
        );
    }
}
