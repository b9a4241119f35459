//! Version edits: the records of the MANIFEST.
//!
//! An edit is a sequence of fields, each a one-byte tag followed by that tag's payload. All
//! integers are fixed-width little-endian; byte strings are `len: u32 LE | bytes`.
//!
//! ```text
//! edit  := field*
//! field := tag: u8 | payload
//!
//! tag  payload
//!  1   comparator:      name bytes (UTF-8)
//!  2   log number:      u64
//!  3   next file number: u64
//!  4   last sequence:   u64
//!  5   deleted file:    level: u32 | file number: u64
//!  6   new file:        level: u32 | FileMeta fields (see file_meta.rs)
//!  7   prev log number: u64
//!  8   added guard:     level: u32 | user key bytes
//!  9   removed guard:   level: u32 | user key bytes
//! 10   stat:            name bytes (UTF-8) | value: u64
//! 11   layout:          u8 (0 = leveled, 1 = FLSM, 2 = trie, 3 = Jungle); written with the
//!                       comparator, absent = leveled
//! 12   new table:       level: u32 | format: u8 | FileMeta fields | has end checksum: u8 |
//!                       end checksum: u32 | route: u64 [| live bytes: u64, format 2 (tree) only]
//!                       (a table tag 6 cannot describe: not sorted, routed, or growing)
//! 13   table grew:      the same payload as 12; the live table of that number at that level now
//!                       has this metadata (a larger extent: bytes were appended to its file)
//! 14   hash seed:       u64; the seed of the key hash of a hashed layout (trie), written with
//!                       the comparator
//! 15   log start:       u64; the sequence number of the first write in the log named by the
//!                       log number (every write below it is in a table); written with the log
//!                       number by flushes and recovery. Recovery replays the logs only as far
//!                       as their sequence numbers run on from it without a gap.
//! 16   table sketch:    file number: u64 | registers: bytes (256 of them, `crate::sketch`);
//!                       the distinct-key sketch of the table of that number that the same
//!                       edit adds (an HTable's: the trie estimates a container's garbage)
//! ```
//!
//! Sorted tables that never grow are still written with tag 6, so a database that holds only
//! those stays readable by builds that predate tags 12 and 13.
//!
//! Every byte of a record is either a tag or part of a field, so there is no trailing garbage to
//! detect: a cut that falls exactly between two fields decodes as a shorter, valid edit. Whole
//! records are protected by the CRC of the framing log the MANIFEST is written with, not by this
//! encoding.

use std::path::Path;

use crate::coding::{put_u32, put_u64};
use crate::error::Result;
use crate::layout::LayoutKind;

use super::file_meta::FileMeta;
use super::{FieldReader, put_bytes};

/// The highest level number a version edit may name; larger levels are corruption.
pub const MAX_LEVEL: u32 = 64;

/// Field tags of a version edit.
///
/// These numbers are written to disk and must never be changed or reused. A retired tag stays
/// here as a comment. Tag 0 is never written, so a zeroed record fails to decode.
pub mod tag {
    /// Name of the user comparator.
    pub const COMPARATOR: u8 = 1;
    /// Number of the write-ahead log holding writes not yet in tables.
    pub const LOG_NUMBER: u8 = 2;
    /// Next unused file number.
    pub const NEXT_FILE_NUMBER: u8 = 3;
    /// Last sequence number used.
    pub const LAST_SEQUENCE: u8 = 4;
    /// A table removed from a level.
    pub const DELETED_FILE: u8 = 5;
    /// A table added to a level.
    pub const NEW_FILE: u8 = 6;
    /// Number of the log before the current one (LevelDB compatibility; 0 if none).
    pub const PREV_LOG_NUMBER: u8 = 7;
    /// An FLSM guard added to a level.
    pub const ADDED_GUARD: u8 = 8;
    /// An FLSM guard removed from a level.
    pub const REMOVED_GUARD: u8 = 9;
    /// A persisted statistics counter.
    pub const STAT: u8 = 10;
    /// The layout of levels >= 1 (0 = leveled, 1 = FLSM, 2 = trie), fixed at creation.
    pub const LAYOUT: u8 = 11;
    /// A table added to a level, with its format and end checksum.
    pub const NEW_TABLE: u8 = 12;
    /// A live table whose file grew by appends: its new metadata.
    pub const TABLE_GREW: u8 = 13;
    /// The seed of the key hash of a hashed layout.
    pub const HASH_SEED: u8 = 14;
    /// The sequence number the log named by the log number starts at.
    pub const LOG_START: u8 = 15;
    /// The distinct-key sketch of a table the same edit adds.
    pub const TABLE_SKETCH: u8 = 16;
}

/// A change to the set of live tables and counters; the MANIFEST is a log of these.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VersionEdit {
    /// Name of the user comparator (written in the first edit of a MANIFEST).
    pub comparator: Option<String>,
    /// Layout of levels >= 1 (written in the first edit of a MANIFEST).
    pub layout: Option<LayoutKind>,
    /// Seed of the key hash of a hashed layout (written in the first edit of a MANIFEST).
    pub hash_seed: Option<u64>,
    /// Logs with smaller numbers are no longer needed.
    pub log_number: Option<u64>,
    /// The log before `log_number`, kept for LevelDB compatibility.
    pub prev_log_number: Option<u64>,
    /// Sequence number of the first write in log `log_number`: every write below it is in a
    /// table (absent in MANIFESTs written before it existed).
    pub log_start: Option<u64>,
    /// Next unused file number.
    pub next_file_number: Option<u64>,
    /// Last sequence number used by a write.
    pub last_sequence: Option<u64>,
    /// Tables removed: `(level, file number)`.
    pub deleted_files: Vec<(u32, u64)>,
    /// Tables added: `(level, metadata)`.
    pub new_files: Vec<(u32, FileMeta)>,
    /// Live tables that grew by appends: `(level, new metadata)`.
    pub grown_files: Vec<(u32, FileMeta)>,
    /// FLSM guards added: `(level, user key)`.
    pub added_guards: Vec<(u32, Vec<u8>)>,
    /// FLSM guards removed: `(level, user key)`.
    pub removed_guards: Vec<(u32, Vec<u8>)>,
    /// Persisted counters (bytes written per category and the like): `(name, value)`.
    pub stats: Vec<(String, u64)>,
}

impl VersionEdit {
    /// Appends the encoding of this edit to `dst`.
    ///
    /// Fields are written in a fixed order (comparator, log number, prev log number, next file
    /// number, last sequence, deleted files, new files, added guards, removed guards, stats); the
    /// decoder accepts any order.
    pub fn encode(&self, dst: &mut Vec<u8>) {
        if let Some(name) = &self.comparator {
            dst.push(tag::COMPARATOR);
            put_bytes(dst, name.as_bytes());
        }
        if let Some(layout) = self.layout {
            dst.push(tag::LAYOUT);
            dst.push(layout.code());
        }
        let counters = [
            (tag::HASH_SEED, self.hash_seed),
            (tag::LOG_NUMBER, self.log_number),
            (tag::PREV_LOG_NUMBER, self.prev_log_number),
            (tag::LOG_START, self.log_start),
            (tag::NEXT_FILE_NUMBER, self.next_file_number),
            (tag::LAST_SEQUENCE, self.last_sequence),
        ];
        for (t, v) in counters {
            if let Some(v) = v {
                dst.push(t);
                put_u64(dst, v);
            }
        }
        for &(level, number) in &self.deleted_files {
            debug_assert!(level <= MAX_LEVEL);
            dst.push(tag::DELETED_FILE);
            put_u32(dst, level);
            put_u64(dst, number);
        }
        for (level, meta) in &self.new_files {
            debug_assert!(*level <= MAX_LEVEL);
            if meta.is_plain() {
                dst.push(tag::NEW_FILE);
                put_u32(dst, *level);
                meta.encode_fields(dst);
            } else {
                dst.push(tag::NEW_TABLE);
                put_u32(dst, *level);
                meta.encode_framed(dst);
            }
            if let Some(sketch) = &meta.distinct_sketch {
                dst.push(tag::TABLE_SKETCH);
                put_u64(dst, meta.number);
                put_bytes(dst, sketch.as_bytes());
            }
        }
        for (level, meta) in &self.grown_files {
            debug_assert!(*level <= MAX_LEVEL);
            dst.push(tag::TABLE_GREW);
            put_u32(dst, *level);
            meta.encode_framed(dst);
        }
        for (t, guards) in [
            (tag::ADDED_GUARD, &self.added_guards),
            (tag::REMOVED_GUARD, &self.removed_guards),
        ] {
            for (level, key) in guards {
                debug_assert!(*level <= MAX_LEVEL);
                dst.push(t);
                put_u32(dst, *level);
                put_bytes(dst, key);
            }
        }
        for (name, value) in &self.stats {
            dst.push(tag::STAT);
            put_bytes(dst, name.as_bytes());
            put_u64(dst, *value);
        }
    }

    /// Decodes an edit from one whole MANIFEST record.
    ///
    /// `file` and `offset` (of the record in the manifest) are only used to name the corruption.
    /// A repeated single-valued field (comparator, counters) keeps its last value.
    pub fn decode(src: &[u8], file: &Path, offset: u64) -> Result<VersionEdit> {
        let mut r = FieldReader::new(src, file, offset);
        let mut edit = VersionEdit::default();
        while !r.is_done() {
            let tag_offset = r.offset();
            let t = r.u8("tag")?;
            match t {
                tag::COMPARATOR => edit.comparator = Some(r.string("comparator name")?),
                tag::LAYOUT => {
                    let code_offset = r.offset();
                    let code = r.u8("layout")?;
                    edit.layout = Some(LayoutKind::from_code(code).ok_or_else(|| {
                        crate::error::Error::corruption(
                            file,
                            code_offset,
                            format!("unknown layout code {code} (0 = leveled, 1 = FLSM, 2 = trie)"),
                        )
                    })?);
                }
                tag::HASH_SEED => edit.hash_seed = Some(r.u64("hash seed")?),
                tag::LOG_NUMBER => edit.log_number = Some(r.u64("log number")?),
                tag::PREV_LOG_NUMBER => edit.prev_log_number = Some(r.u64("prev log number")?),
                tag::LOG_START => edit.log_start = Some(r.u64("log start")?),
                tag::NEXT_FILE_NUMBER => edit.next_file_number = Some(r.u64("next file number")?),
                tag::LAST_SEQUENCE => edit.last_sequence = Some(r.u64("last sequence")?),
                tag::DELETED_FILE => {
                    let level = r.level("deleted file level")?;
                    let number = r.u64("deleted file number")?;
                    edit.deleted_files.push((level, number));
                }
                tag::NEW_FILE => {
                    let level = r.level("new file level")?;
                    let meta = FileMeta::decode_fields(&mut r)?;
                    edit.new_files.push((level, meta));
                }
                tag::NEW_TABLE => {
                    let level = r.level("new table level")?;
                    edit.new_files
                        .push((level, FileMeta::decode_framed(&mut r)?));
                }
                tag::TABLE_SKETCH => {
                    let number = r.u64("sketch file number")?;
                    let at = r.offset();
                    let bytes = r.bytes("sketch registers")?;
                    let bad = |why: String| crate::error::Error::corruption(file, at, why);
                    let sketch =
                        crate::sketch::DistinctSketch::from_bytes(bytes).ok_or_else(|| {
                            bad(format!(
                                "the sketch of table {number} is malformed ({} bytes)",
                                bytes.len()
                            ))
                        })?;
                    let (_, meta) = edit
                        .new_files
                        .iter_mut()
                        .find(|(_, m)| m.number == number)
                        .ok_or_else(|| {
                            bad(format!(
                                "a sketch for table {number}, which this edit does not add"
                            ))
                        })?;
                    meta.distinct_sketch = Some(std::sync::Arc::new(sketch));
                }
                tag::TABLE_GREW => {
                    let level = r.level("grown table level")?;
                    edit.grown_files
                        .push((level, FileMeta::decode_framed(&mut r)?));
                }
                tag::ADDED_GUARD => {
                    let level = r.level("added guard level")?;
                    let key = r.bytes("added guard key")?.to_vec();
                    edit.added_guards.push((level, key));
                }
                tag::REMOVED_GUARD => {
                    let level = r.level("removed guard level")?;
                    let key = r.bytes("removed guard key")?.to_vec();
                    edit.removed_guards.push((level, key));
                }
                tag::STAT => {
                    let name = r.string("stat name")?;
                    let value = r.u64("stat value")?;
                    edit.stats.push((name, value));
                }
                unknown => {
                    return Err(crate::error::Error::corruption(
                        file,
                        tag_offset,
                        format!("unknown version edit tag {unknown}"),
                    ));
                }
            }
        }
        Ok(edit)
    }

    /// True when the edit changes nothing (it encodes to zero bytes).
    pub fn is_empty(&self) -> bool {
        self.comparator.is_none()
            && self.layout.is_none()
            && self.hash_seed.is_none()
            && self.log_number.is_none()
            && self.prev_log_number.is_none()
            && self.log_start.is_none()
            && self.next_file_number.is_none()
            && self.last_sequence.is_none()
            && self.deleted_files.is_empty()
            && self.new_files.is_empty()
            && self.grown_files.is_empty()
            && self.added_guards.is_empty()
            && self.removed_guards.is_empty()
            && self.stats.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::collection::vec;
    use proptest::prelude::*;
    use std::path::PathBuf;

    fn path() -> PathBuf {
        PathBuf::from("MANIFEST-000001")
    }

    fn arb_bytes() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(any::<u8>(), 0..24)
    }

    fn arb_meta() -> impl Strategy<Value = FileMeta> {
        (
            any::<(u64, u64)>(),
            arb_bytes(),
            arb_bytes(),
            any::<(u64, u64, u64, u64)>(),
            proptest::option::of(any::<u32>()),
            any::<u64>(),
            (0..crate::table::TableFormat::ALL.len(), any::<u64>()),
            proptest::option::of(vec(any::<u64>(), 0..40)),
        )
            .prop_map(
                |(
                    (number, file_size),
                    smallest,
                    largest,
                    (s, l, e, d),
                    end_checksum,
                    route,
                    (format, live),
                    sketch_keys,
                )| {
                    let format = crate::table::TableFormat::ALL[format];
                    FileMeta {
                        number,
                        file_size,
                        smallest,
                        largest,
                        smallest_seq: s,
                        largest_seq: l,
                        num_entries: e,
                        num_deletions: d,
                        format,
                        end_checksum,
                        route,
                        live_bytes: if format == crate::table::TableFormat::Tree {
                            live
                        } else {
                            0
                        },
                        distinct_sketch: sketch_keys.map(|keys| {
                            let mut sketch = crate::sketch::DistinctSketch::new();
                            keys.into_iter().for_each(|k| sketch.add(k));
                            std::sync::Arc::new(sketch)
                        }),
                    }
                },
            )
    }

    fn arb_edit() -> impl Strategy<Value = VersionEdit> {
        let level = 0..=MAX_LEVEL;
        (
            (
                proptest::option::of(".{0,12}"),
                proptest::option::of(any::<u64>()),
                proptest::option::of(any::<u64>()),
                proptest::option::of(any::<u64>()),
                proptest::option::of(any::<u64>()),
            ),
            vec((level.clone(), any::<u64>()), 0..4),
            (
                vec((level.clone(), arb_meta()), 0..4),
                vec((level.clone(), arb_meta()), 0..2),
            ),
            vec((level.clone(), arb_bytes()), 0..3),
            vec((level, arb_bytes()), 0..3),
            vec(("[a-z.]{0,10}", any::<u64>()), 0..3),
            (
                proptest::option::of((0..LayoutKind::ALL.len()).prop_map(|i| LayoutKind::ALL[i])),
                proptest::option::of(any::<u64>()),
                proptest::option::of(any::<u64>()),
            ),
        )
            .prop_map(
                |(
                    (c, log, prev, next, last),
                    del,
                    (new, grown),
                    add,
                    rem,
                    stats,
                    (layout, seed, log_start),
                )| {
                    VersionEdit {
                        comparator: c,
                        layout,
                        hash_seed: seed,
                        log_number: log,
                        prev_log_number: prev,
                        log_start,
                        next_file_number: next,
                        last_sequence: last,
                        deleted_files: del,
                        new_files: new,
                        // A grown table's field (tag 13) carries no sketch.
                        grown_files: grown
                            .into_iter()
                            .map(|(level, meta)| {
                                let distinct_sketch = None;
                                (
                                    level,
                                    FileMeta {
                                        distinct_sketch,
                                        ..meta
                                    },
                                )
                            })
                            .collect(),
                        added_guards: add,
                        removed_guards: rem,
                        stats,
                    }
                },
            )
    }

    /// Number of fields `encode` writes for `e`.
    fn field_count(e: &VersionEdit) -> usize {
        [
            e.comparator.is_some(),
            e.layout.is_some(),
            e.hash_seed.is_some(),
            e.log_number.is_some(),
            e.prev_log_number.is_some(),
            e.log_start.is_some(),
            e.next_file_number.is_some(),
            e.last_sequence.is_some(),
        ]
        .iter()
        .filter(|&&b| b)
        .count()
            + e.deleted_files.len()
            + e.new_files.len()
            + e.new_files
                .iter()
                .filter(|(_, m)| m.distinct_sketch.is_some())
                .count()
            + e.grown_files.len()
            + e.added_guards.len()
            + e.removed_guards.len()
            + e.stats.len()
    }

    proptest! {
        #[test]
        fn edits_round_trip(edit in arb_edit()) {
            let mut buf = Vec::new();
            edit.encode(&mut buf);
            prop_assert_eq!(buf.is_empty(), edit.is_empty());
            let back = VersionEdit::decode(&buf, &path(), 0).unwrap();
            prop_assert_eq!(back, edit);
        }

        /// Every cut either fails with a corruption naming a truncated field, or falls exactly on
        /// a field boundary and decodes to the edit made of the fields before the cut.
        #[test]
        fn every_truncation_fails_cleanly(edit in arb_edit()) {
            let mut buf = Vec::new();
            edit.encode(&mut buf);
            let mut boundaries = 0;
            for cut in 0..=buf.len() {
                match VersionEdit::decode(&buf[..cut], &path(), 100) {
                    Ok(shorter) => {
                        boundaries += 1;
                        let mut again = Vec::new();
                        shorter.encode(&mut again);
                        prop_assert_eq!(&again[..], &buf[..cut]);
                    }
                    Err(e) => {
                        prop_assert!(e.is_corruption());
                        prop_assert!(e.to_string().contains("truncated"), "{}", e);
                    }
                }
            }
            // One success per field boundary, counting the empty prefix: a cut inside a field
            // never decodes.
            prop_assert_eq!(boundaries, field_count(&edit) + 1);
        }

        #[test]
        fn decoding_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = VersionEdit::decode(&bytes, &path(), 0);
        }
    }

    #[test]
    fn unknown_tag_is_named() {
        let mut buf = Vec::new();
        VersionEdit {
            log_number: Some(3),
            ..VersionEdit::default()
        }
        .encode(&mut buf);
        buf.push(42);
        let err = VersionEdit::decode(&buf, &path(), 1000).unwrap_err();
        assert!(err.is_corruption());
        let msg = err.to_string();
        assert!(msg.contains("unknown version edit tag 42"), "{msg}");
        assert!(msg.contains("MANIFEST-000001"), "{msg}");
        assert!(msg.contains("offset 1009"), "{msg}");
        let err = VersionEdit::decode(&[0], &path(), 0).unwrap_err();
        assert!(err.to_string().contains("tag 0"), "{err}");
    }

    #[test]
    fn truncated_field_is_named() {
        let mut buf = Vec::new();
        VersionEdit {
            last_sequence: Some(77),
            ..VersionEdit::default()
        }
        .encode(&mut buf);
        let err = VersionEdit::decode(&buf[..5], &path(), 0).unwrap_err();
        assert!(err.to_string().contains("truncated last sequence"), "{err}");
        // A length prefix that claims more bytes than remain.
        let bad = [tag::COMPARATOR, 0xff, 0xff, 0xff, 0xff, b'x'];
        let err = VersionEdit::decode(&bad, &path(), 0).unwrap_err();
        assert!(
            err.to_string().contains("truncated comparator name"),
            "{err}"
        );
    }

    #[test]
    fn an_edit_of_only_a_log_start_is_not_empty() {
        // Found by `edits_round_trip`: `is_empty` left out the log start (tag 15).
        let edit = VersionEdit {
            log_start: Some(0),
            ..VersionEdit::default()
        };
        assert!(!edit.is_empty());
        let mut buf = Vec::new();
        edit.encode(&mut buf);
        assert_eq!(VersionEdit::decode(&buf, &path(), 0).unwrap(), edit);
    }

    #[test]
    fn a_sketch_must_be_well_formed_and_belong_to_a_table_of_its_edit() {
        let sketch = crate::sketch::DistinctSketch::new();
        let mut orphan = vec![tag::TABLE_SKETCH];
        put_u64(&mut orphan, 12);
        put_bytes(&mut orphan, sketch.as_bytes());
        let err = VersionEdit::decode(&orphan, &path(), 0).unwrap_err();
        assert!(err.is_corruption());
        assert!(
            err.to_string().contains("table 12, which this edit"),
            "{err}"
        );
        let mut short = vec![tag::TABLE_SKETCH];
        put_u64(&mut short, 12);
        put_bytes(&mut short, &[1, 2, 3]);
        let err = VersionEdit::decode(&short, &path(), 0).unwrap_err();
        assert!(err.to_string().contains("malformed (3 bytes)"), "{err}");
    }

    #[test]
    fn level_above_maximum_is_corruption() {
        let mut buf = vec![tag::DELETED_FILE];
        put_u32(&mut buf, MAX_LEVEL + 1);
        put_u64(&mut buf, 9);
        let err = VersionEdit::decode(&buf, &path(), 0).unwrap_err();
        assert!(err.is_corruption());
        assert!(err.to_string().contains("level 65"), "{err}");
        buf[1] = MAX_LEVEL as u8;
        let ok = VersionEdit::decode(&buf, &path(), 0).unwrap();
        assert_eq!(ok.deleted_files, vec![(MAX_LEVEL, 9)]);
    }

    #[test]
    fn layout_is_frozen_and_unknown_codes_are_named() {
        let mut buf = Vec::new();
        VersionEdit {
            layout: Some(LayoutKind::Flsm),
            ..VersionEdit::default()
        }
        .encode(&mut buf);
        assert_eq!(buf, [11, 1]);
        let err = VersionEdit::decode(&[11, 7], &path(), 0).unwrap_err();
        assert!(err.is_corruption());
        assert!(err.to_string().contains("unknown layout code 7"), "{err}");
    }

    #[test]
    fn non_utf8_names_are_corruption() {
        let buf = [tag::STAT, 1, 0, 0, 0, 0xff, 0, 0, 0, 0, 0, 0, 0, 0];
        let err = VersionEdit::decode(&buf, &path(), 0).unwrap_err();
        assert!(err.to_string().contains("stat name is not UTF-8"), "{err}");
    }

    #[test]
    fn empty_edit_is_empty() {
        let mut buf = Vec::new();
        VersionEdit::default().encode(&mut buf);
        assert!(buf.is_empty());
        assert!(VersionEdit::default().is_empty());
        assert!(
            !VersionEdit {
                stats: vec![("x".into(), 0)],
                ..VersionEdit::default()
            }
            .is_empty()
        );
    }

    /// Freezes the on-disk encoding: if this test fails, the format changed by accident.
    #[test]
    fn golden_bytes() {
        let edit = VersionEdit {
            comparator: Some("cmp".into()),
            layout: Some(LayoutKind::Flsm),
            hash_seed: None,
            log_number: Some(2),
            prev_log_number: Some(1),
            log_start: None,
            next_file_number: Some(9),
            last_sequence: Some(0x0102),
            deleted_files: vec![(1, 5)],
            new_files: vec![(
                0,
                FileMeta {
                    number: 6,
                    file_size: 0x10,
                    smallest: b"ab".to_vec(),
                    largest: b"yz".to_vec(),
                    smallest_seq: 1,
                    largest_seq: 2,
                    num_entries: 3,
                    num_deletions: 4,
                    ..FileMeta::default()
                },
            )],
            grown_files: vec![],
            added_guards: vec![(2, b"g".to_vec())],
            removed_guards: vec![(3, b"h".to_vec())],
            stats: vec![("w".into(), 5)],
        };
        #[rustfmt::skip]
        let golden: Vec<u8> = vec![
            1, 3, 0, 0, 0, b'c', b'm', b'p',            // comparator "cmp"
            11, 1,                                      // layout FLSM
            2, 2, 0, 0, 0, 0, 0, 0, 0,                  // log number 2
            7, 1, 0, 0, 0, 0, 0, 0, 0,                  // prev log number 1
            3, 9, 0, 0, 0, 0, 0, 0, 0,                  // next file number 9
            4, 0x02, 0x01, 0, 0, 0, 0, 0, 0,            // last sequence 0x0102
            5, 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0,      // deleted file: level 1, number 5
            6, 0, 0, 0, 0,                              // new file: level 0
            6, 0, 0, 0, 0, 0, 0, 0,                     //   number 6
            0x10, 0, 0, 0, 0, 0, 0, 0,                  //   file size 16
            2, 0, 0, 0, b'a', b'b',                     //   smallest "ab"
            2, 0, 0, 0, b'y', b'z',                     //   largest "yz"
            1, 0, 0, 0, 0, 0, 0, 0,                     //   smallest seq 1
            2, 0, 0, 0, 0, 0, 0, 0,                     //   largest seq 2
            3, 0, 0, 0, 0, 0, 0, 0,                     //   entries 3
            4, 0, 0, 0, 0, 0, 0, 0,                     //   deletions 4
            8, 2, 0, 0, 0, 1, 0, 0, 0, b'g',            // added guard: level 2, "g"
            9, 3, 0, 0, 0, 1, 0, 0, 0, b'h',            // removed guard: level 3, "h"
            10, 1, 0, 0, 0, b'w', 5, 0, 0, 0, 0, 0, 0, 0, // stat "w" = 5
        ];
        let mut buf = Vec::new();
        edit.encode(&mut buf);
        assert_eq!(buf, golden);
        assert_eq!(VersionEdit::decode(&golden, &path(), 0).unwrap(), edit);
    }

    /// Freezes tags 12 and 13: a table with an end checksum is framed with its format.
    #[test]
    fn golden_bytes_of_framed_tables() {
        let meta = FileMeta {
            number: 6,
            file_size: 0x10,
            end_checksum: Some(0x0403_0201),
            route: 7,
            ..FileMeta::default()
        };
        let edit = VersionEdit {
            new_files: vec![(1, meta.clone())],
            grown_files: vec![(2, meta)],
            ..VersionEdit::default()
        };
        #[rustfmt::skip]
        let fields: Vec<u8> = vec![
            0,                                          //   format 0 (sorted)
            6, 0, 0, 0, 0, 0, 0, 0,                     //   number 6
            0x10, 0, 0, 0, 0, 0, 0, 0,                  //   extent 16
            0, 0, 0, 0,                                 //   smallest ""
            0, 0, 0, 0,                                 //   largest ""
            0, 0, 0, 0, 0, 0, 0, 0,                     //   smallest seq
            0, 0, 0, 0, 0, 0, 0, 0,                     //   largest seq
            0, 0, 0, 0, 0, 0, 0, 0,                     //   entries
            0, 0, 0, 0, 0, 0, 0, 0,                     //   deletions
            1, 1, 2, 3, 4,                              //   end checksum 0x04030201
            7, 0, 0, 0, 0, 0, 0, 0,                     //   route 7
        ];
        let mut golden = vec![12, 1, 0, 0, 0];
        golden.extend_from_slice(&fields);
        golden.extend_from_slice(&[13, 2, 0, 0, 0]);
        golden.extend_from_slice(&fields);
        let mut buf = Vec::new();
        edit.encode(&mut buf);
        assert_eq!(buf, golden);
        assert_eq!(VersionEdit::decode(&golden, &path(), 0).unwrap(), edit);
        // An unknown format code is corruption naming the code.
        golden[5] = 9;
        let err = VersionEdit::decode(&golden, &path(), 0).unwrap_err();
        assert!(
            err.to_string().contains("unknown table format code 9"),
            "{err}"
        );
    }
}
