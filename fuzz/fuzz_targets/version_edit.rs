//! Decoding an arbitrary version edit never panics; what decodes re-encodes to an equal edit.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use screedb::manifest::VersionEdit;

fuzz_target!(|data: &[u8]| {
    if let Ok(edit) = VersionEdit::decode(data, Path::new("/MANIFEST-000001"), 0) {
        let mut again = Vec::new();
        edit.encode(&mut again);
        let back = VersionEdit::decode(&again, Path::new("/MANIFEST-000001"), 0).expect("re-decode");
        assert_eq!(back, edit);
    }
});
