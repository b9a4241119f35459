//! Puts in ascending key order skip the membuffer (`docs/memory.md`, "Ascending keys").
//!
//! A key above every key put into the memtable so far cannot be in the membuffer, so it may go
//! straight to the skiplist without being looked up there: nothing buffered can hide it from a
//! read, and no buffered version of it needs displacing. For keys written in order (a load in
//! key order, time-ordered keys) the skiplist's own insert is the cheaper path: every insert
//! lands next to the previous one, in cache, where the membuffer would copy the entry once more
//! and a drain would sort and insert it later. Random keys rarely beat the running maximum, and
//! almost never several times in a row, so the bypass waits for a streak of [`STREAK`] such
//! puts; the first key at or below the maximum ends it.

use std::cmp::Ordering;
use std::sync::Mutex;

use crate::comparator::Comparator;
use crate::sync::lock;

/// Puts above the running maximum in a row before the next such put skips the membuffer.
pub(super) const STREAK: u32 = 16;

/// The largest user key put so far and the current streak of puts above the one before.
#[derive(Debug, Default)]
pub(super) struct Ascending {
    /// Only the (serialized) writer takes it: an uncontended lock per put.
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The largest key noted; `None` before the first.
    max: Option<Vec<u8>>,
    /// Notes in a row that raised `max`.
    streak: u32,
}

impl Ascending {
    /// Notes a put of `key`; true if it may skip the membuffer: `key` is above every key noted
    /// before, and so were the [`STREAK`] puts before it.
    pub(super) fn note(&self, key: &[u8], cmp: &dyn Comparator) -> bool {
        let mut state = lock(&self.state);
        let above = state
            .max
            .as_deref()
            .is_none_or(|max| cmp.compare(key, max) == Ordering::Greater);
        if !above {
            state.streak = 0;
            return false;
        }
        let max = state.max.get_or_insert_with(Vec::new);
        max.clear();
        max.extend_from_slice(key);
        state.streak = state.streak.saturating_add(1);
        state.streak > STREAK
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::comparator::default_comparator;

    #[test]
    fn only_a_streak_above_the_maximum_skips() {
        let (a, cmp) = (Ascending::default(), default_comparator());
        let key = |i: u32| format!("k{i:06}").into_bytes();
        let skipped: Vec<bool> = (0..40).map(|i| a.note(&key(i), cmp.as_ref())).collect();
        let streak = STREAK as usize;
        assert!(skipped[..streak].iter().all(|s| !s), "{skipped:?}");
        assert!(skipped[streak..].iter().all(|&s| s), "{skipped:?}");
        // A key at or below the maximum ends the streak; a new one must build up again.
        assert!(!a.note(&key(39), cmp.as_ref()));
        assert!(!a.note(&key(5), cmp.as_ref()));
        assert!(!a.note(&key(40), cmp.as_ref()));
        let again: Vec<bool> = (41..41 + STREAK)
            .map(|i| a.note(&key(i), cmp.as_ref()))
            .collect();
        assert_eq!(again.iter().filter(|&&s| s).count(), 1, "{again:?}");
    }

    #[test]
    fn the_empty_key_is_a_key() {
        // Once noted, the empty key is the maximum: noting it again never raises it (were an
        // empty maximum taken for "no key yet", every note would, and the streak would pass).
        let (a, cmp) = (Ascending::default(), default_comparator());
        for _ in 0..STREAK + 2 {
            assert!(!a.note(b"", cmp.as_ref()));
        }
    }
}
