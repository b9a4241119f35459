//! Leaf encodings: round trips, old encodings still read, malformed leaves refused.

use super::*;
use crate::coding::put_u32;
use crate::table::jungle::node::{COMPACT_LEAF_RECORD, Node, RECORD_TRAILER_LEN, decode_node};

/// Encodes a leaf payload with fixed-width fields ([`LEAF_RECORD`], the format before
/// 2026-11-27), so tests can check that such leaves still read.
fn encode_fixed_leaf(entries: &[LeafEntry]) -> Vec<u8> {
    let mut out = Vec::new();
    put_u32(&mut out, entries.len() as u32);
    for e in entries {
        put_u32(&mut out, e.ikey.len() as u32);
        out.extend_from_slice(&e.ikey);
        match &e.value {
            ValueRef::Inline(v) => {
                out.push(INLINE);
                put_u32(&mut out, v.len() as u32);
                out.extend_from_slice(v);
            }
            ValueRef::Stored(h, _) => {
                out.push(REFERENCE);
                put_u64(&mut out, h.offset);
                put_u32(&mut out, h.size);
            }
        }
    }
    out
}

/// Encodes a compact leaf payload with whole keys ([`COMPACT_LEAF_RECORD`], written on
/// 2026-11-27), so tests can check that such leaves still read.
fn encode_compact_leaf(entries: &[LeafEntry]) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint32(&mut out, entries.len() as u32);
    put_u64(&mut out, stored_end(entries));
    for e in entries {
        put_varint32(&mut out, e.ikey.len() as u32);
        out.extend_from_slice(&e.ikey);
        put_value(&mut out, &e.value);
    }
    out
}

fn entries() -> Vec<LeafEntry> {
    vec![
        LeafEntry {
            ikey: b"apple\x01\0\0\0\0\0\0\0".to_vec(),
            value: ValueRef::Inline(b"red".to_vec()),
        },
        LeafEntry {
            ikey: b"banana\x01\0\0\0\0\0\0\0".to_vec(),
            value: ValueRef::Stored(
                Handle {
                    offset: 300_000,
                    size: 1024,
                },
                CompressionType::None,
            ),
        },
        LeafEntry {
            ikey: b"cherry\x01\0\0\0\0\0\0\0".to_vec(),
            value: ValueRef::Stored(
                Handle {
                    offset: 1 << 40,
                    size: 5,
                },
                CompressionType::None,
            ),
        },
    ]
}

fn decoded(rtype: u8, payload: Vec<u8>) -> Vec<LeafEntry> {
    let leaf = leaf_of(rtype, payload);
    assert_eq!(
        leaf.index().stored_end,
        (1 << 40) + 5 + RECORD_TRAILER_LEN as u64
    );
    leaf.entries().collect()
}

/// `payload` decoded as a leaf of record type `rtype`, or a panic.
fn leaf_of(rtype: u8, payload: Vec<u8>) -> Leaf {
    match decode_node(rtype, Bytes::from(payload)) {
        Some(Node::Leaf(leaf)) => leaf,
        other => panic!("not a leaf of type {rtype}: {other:?}"),
    }
}

#[test]
fn compact_leaves_round_trip_and_fixed_width_leaves_still_read() {
    let compact = encode_compact_leaf(&entries());
    assert_eq!(
        compact.len(),
        1 + 8 + entries().iter().map(LeafEntry::encoded_len).sum::<usize>(),
    );
    let fixed = encode_fixed_leaf(&entries());
    assert!(
        compact.len() + 10 < fixed.len(),
        "{} vs {}",
        compact.len(),
        fixed.len()
    );
    assert_eq!(decoded(COMPACT_LEAF_RECORD, compact.clone()), entries());
    assert_eq!(decoded(LEAF_RECORD, fixed.clone()), entries());
    // Read as the other encoding, neither decodes.
    assert!(decode_node(LEAF_RECORD, Bytes::from(compact.clone())).is_none());
    assert!(decode_node(COMPACT_LEAF_RECORD, Bytes::from(fixed)).is_none());
    // A truncated compact leaf is refused, never read past its end.
    for cut in 0..compact.len() {
        let short = Bytes::from(compact[..cut].to_vec());
        assert!(
            decode_node(COMPACT_LEAF_RECORD, short).is_none(),
            "cut at {cut}"
        );
    }
}

/// Entries whose user keys share `shared` (plus one entry whose user key is `shared`
/// itself, so its key past the prefix is only its trailer).
fn prefixed(shared: &[u8]) -> Vec<LeafEntry> {
    let mut out = vec![LeafEntry {
        ikey: [shared, &[1, 0, 0, 0, 0, 0, 0, 0][..]].concat(),
        value: ValueRef::Inline(b"bare".to_vec()),
    }];
    out.extend(entries().into_iter().map(|e| LeafEntry {
        ikey: [shared, &e.ikey[..]].concat(),
        // Compressed records are referred to by prefix leaves only.
        value: match e.value {
            ValueRef::Stored(h, _) if h.size == 5 => ValueRef::Stored(h, CompressionType::Lz4),
            v => v,
        },
    }));
    out
}

/// The prefix leaf (type 6, written on 2026-11-27) of `es`: an indexed leaf without its
/// offsets and their width.
fn prefix_leaf(es: &[LeafEntry]) -> Vec<u8> {
    let mut out = encode_leaf(es);
    let width = usize::from(*out.last().unwrap());
    out.truncate(out.len() - 1 - width * es.len());
    out
}

#[test]
fn indexed_leaves_store_the_shared_prefix_once_and_read_back_whole_keys() {
    let es = prefixed(b"user:0000");
    assert_eq!(shared_prefix_len(&es), 9);
    let payload = encode_leaf(&es);
    let entry_bytes = es.iter().map(|e| e.encoded_len_past(9)).sum::<usize>();
    assert_eq!(
        payload.len(),
        1 + 8 + 1 + 9 + entry_bytes + 2 * es.len() + 1
    );
    assert!(
        payload.len() <= LEAF_HEADER_BYTES + 9 + entry_bytes + LEAF_OFFSET_BYTES * es.len(),
        "what the packer counts"
    );
    let whole = encode_compact_leaf(&es);
    assert_eq!(prefix_leaf(&es).len() + 9 * (es.len() - 1) - 1, whole.len());
    let leaf = leaf_of(INDEXED_LEAF_RECORD, payload.clone());
    assert!(leaf.is_indexed());
    assert_eq!(leaf.index.charge(), size_of::<LeafIndex>() as u64 + 16);
    assert_eq!(leaf.entries().collect::<Vec<_>>(), es);
    assert_eq!(
        leaf.logical_len(),
        es.iter().map(LeafEntry::logical_len).sum()
    );
    let mut buf = vec![7; 3];
    for (i, e) in es.iter().enumerate() {
        assert_eq!(leaf.with_ikey(i, <[u8]>::to_vec), e.ikey);
        leaf.ikey_into(i, &mut buf);
        assert_eq!(buf, e.ikey);
        let (p, rest) = leaf.ikey_parts(i);
        assert_eq!((p, rest), (&e.ikey[..9], &e.ikey[9..]));
        // The search sees whole keys: each key is found at its own index.
        assert_eq!(leaf.partition_point(|k| k < &e.ikey[..]), i);
    }
    assert_eq!(leaf.ikey_vec(es.len()), b"");
    assert_eq!(leaf.value(es.len()), ValueSlot::Inline(&[]));
    // Prefix leaves (type 6) still read; leaves of keys sharing nothing, or too long for the
    // stack buffer, read back in both.
    let long = prefixed(&[b'k'; 200]);
    for es in [es.clone(), entries(), long] {
        for (rtype, payload) in [
            (INDEXED_LEAF_RECORD, encode_leaf(&es)),
            (PREFIX_LEAF_RECORD, prefix_leaf(&es)),
        ] {
            let leaf = leaf_of(rtype, payload);
            assert_eq!(leaf.is_indexed(), rtype == INDEXED_LEAF_RECORD);
            assert_eq!(leaf.entries().collect::<Vec<_>>(), es);
            let last = es.len() - 1;
            assert_eq!(leaf.with_ikey(last, <[u8]>::to_vec), es[last].ikey);
        }
    }
    // Truncated, or with a key shorter than a trailer past the prefix: refused.
    for (rtype, payload) in [
        (INDEXED_LEAF_RECORD, payload.clone()),
        (PREFIX_LEAF_RECORD, prefix_leaf(&es)),
    ] {
        for cut in 0..payload.len() {
            let short = Bytes::from(payload[..cut].to_vec());
            assert!(
                decode_node(rtype, short).is_none(),
                "type {rtype} cut at {cut}"
            );
        }
        let mut bad = payload;
        let first_entry = 1 + 8 + 1 + 9;
        assert_eq!(bad[first_entry], 8);
        bad[first_entry] = 7;
        bad.remove(first_entry + 1);
        assert!(
            decode_node(rtype, Bytes::from(bad)).is_none(),
            "type {rtype}"
        );
    }
}

#[test]
fn an_indexed_leaf_whose_offsets_disagree_with_its_entries_is_refused() {
    let es = prefixed(b"user:0000");
    let payload = encode_leaf(&es);
    let n = es.len();
    let offsets = payload.len() - 1 - 2 * n;
    assert!(decode_node(INDEXED_LEAF_RECORD, Bytes::from(payload.clone())).is_some());
    // Each stored offset moved by one, in turn.
    for i in 0..n {
        let mut bad = payload.clone();
        bad[offsets + 2 * i] ^= 1;
        assert!(
            decode_node(INDEXED_LEAF_RECORD, Bytes::from(bad.clone())).is_none(),
            "offset {i}"
        );
        // Read in place unchecked (what only a checked leaf is), it stays within its bytes.
        let leaf = Leaf::in_place(Bytes::from(bad)).unwrap();
        let _ = (
            leaf.entries().count(),
            leaf.partition_point(|k| k < &b"user:1"[..]),
        );
    }
    // A width other than 2 or 4, or offsets that would overlap the header: refused.
    for width in [0, 1, 3, 8] {
        let mut bad = payload.clone();
        *bad.last_mut().unwrap() = width;
        assert!(decode_node(INDEXED_LEAF_RECORD, Bytes::from(bad.clone())).is_none());
        assert!(Leaf::in_place(Bytes::from(bad)).is_none());
    }
    let mut lying = payload;
    lying[0] = 120; // count: 120 offsets do not fit after the header
    assert!(Leaf::in_place(Bytes::from(lying)).is_none());
}

#[test]
fn leaves_past_64_kib_keep_wide_entry_offsets_and_read_back() {
    // Entries starting past 64 KiB need four-byte offsets; a leaf of small entries stores
    // (and an older leaf's cached index keeps) two bytes each.
    let big: Vec<LeafEntry> = (0..4u8)
        .map(|i| LeafEntry {
            ikey: [b"key", &[i][..], &[1, 0, 0, 0, 0, 0, 0, 0][..]].concat(),
            value: ValueRef::Inline(vec![i; 30_000]),
        })
        .collect();
    let payload = encode_leaf(&big);
    assert!(payload.len() > 1 << 16);
    assert_eq!(payload.last(), Some(&4));
    let wide = leaf_of(INDEXED_LEAF_RECORD, payload);
    assert!(matches!(
        wide.index.starts,
        EntryStarts::InPlace { wide: true, .. }
    ));
    assert_eq!(wide.entries().collect::<Vec<_>>(), big);
    let narrow = leaf_of(INDEXED_LEAF_RECORD, encode_leaf(&big[..1]));
    assert!(matches!(
        narrow.index.starts,
        EntryStarts::InPlace { wide: false, .. }
    ));
    assert_eq!(narrow.entries().collect::<Vec<_>>(), big[..1]);
    // Past the last entry: an empty key and value, never a panic.
    assert_eq!(wide.ikey_vec(4), b"");
    assert_eq!(wide.value(4), ValueSlot::Inline(&[]));
    // Prefix leaves (type 6) keep their offsets in memory, in the narrowest width.
    let wide = leaf_of(PREFIX_LEAF_RECORD, prefix_leaf(&big));
    let narrow = leaf_of(PREFIX_LEAF_RECORD, prefix_leaf(&big[..1]));
    assert!(matches!(wide.index.starts, EntryStarts::Wide(_)));
    assert!(matches!(narrow.index.starts, EntryStarts::Narrow(_)));
    assert_eq!(wide.entries().collect::<Vec<_>>(), big);
    let per_entry = |l: &Leaf| l.index.starts.bytes() / l.len();
    assert_eq!((per_entry(&narrow), per_entry(&wide)), (2, 4));
    assert!(narrow.index.charge() < wide.index.charge());
}

#[test]
fn reference_tags_state_the_widths_they_are_written_with() {
    for (offset, size) in [
        (0u64, 0u32),
        (255, 1),
        (256, 256),
        (1 << 40, u32::MAX),
        (u64::MAX, 7),
    ] {
        for compression in [CompressionType::None, CompressionType::Lz4] {
            let h = Handle { offset, size };
            let tag = reference_tag(h, compression);
            let (ow, sw, c) = reference_widths(tag).unwrap();
            assert_eq!(
                (ow, sw, c),
                (le_width(offset), le_width(u64::from(size)), compression)
            );
            let mut bytes = vec![];
            bytes.extend_from_slice(&offset.to_le_bytes()[..ow]);
            bytes.extend_from_slice(&size.to_le_bytes()[..sw]);
            assert_eq!(Cur(&bytes).value_handle(true, tag), Some((h, compression)));
            // A fixed-width leaf (type 2) has no compressed references.
            assert_eq!(Cur(&[0; 12]).value_handle(false, tag).is_some(), tag == 1);
        }
    }
    assert_eq!(reference_widths(INLINE), None);
    assert_eq!(
        reference_widths(REFERENCE | 0x80),
        None,
        "bit 7 is not a width"
    );
    assert_eq!(reference_widths(3), None, "kind 3 is not a reference");
}

/// `lower_bound` compares a target with the leaf's prefix once and the rest of each key in
/// place: for targets before, inside, equal to and past the prefix (and keys that are only
/// the prefix), it answers what comparing whole keys one by one answers.
#[test]
fn lower_bound_past_the_prefix_agrees_with_comparing_whole_keys() {
    use crate::comparator::{InternalKeyComparator, default_comparator};
    use crate::key::{ValueKind, make_internal_key};
    let icmp = InternalKeyComparator::new(default_comparator());
    let users: Vec<&[u8]> = vec![
        b"key:0", b"key:00", b"key:07", b"key:1", b"key:19", b"key:2",
    ];
    let mut es = Vec::new();
    for u in &users {
        for seq in [30, 20, 10] {
            es.push(LeafEntry {
                ikey: make_internal_key(u, seq, ValueKind::Value),
                value: ValueRef::Inline(u.to_vec()),
            });
        }
    }
    let leaf = leaf_of(INDEXED_LEAF_RECORD, encode_leaf(&es));
    assert_eq!(leaf.prefix(), b"key:");
    let probes: Vec<&[u8]> = vec![
        b"", b"a", b"k", b"key", b"key:", b"key:0", b"key:00", b"key:000", b"key:05", b"key:1",
        b"key:2", b"key:3", b"key;", b"kez", b"z",
    ];
    for u in probes {
        for seq in [40, 30, 25, 10, 5] {
            let target = make_internal_key(u, seq, ValueKind::Value);
            let whole = es
                .iter()
                .take_while(|e| icmp.compare(&e.ikey, &target) == Ordering::Less)
                .count();
            assert_eq!(
                leaf.lower_bound(&icmp, &target),
                whole,
                "{:?} at {seq}",
                String::from_utf8_lossy(u)
            );
        }
    }
}
