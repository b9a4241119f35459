//! The slowdown stage of write stalls: a delayed write rate, as RocksDB's `WriteController`.
//!
//! While compaction is behind (level 0 holds `l0_slowdown_trigger` tables or more, or the
//! pending compaction bytes reach `soft_pending_compaction_bytes`), writes are paced to a rate
//! in bytes per second instead of running free until the stop trigger halts them. The rate
//! starts at `Options::delayed_write_rate` and follows the debt: each time the leader sees it
//! grow (more level-0 tables or more pending bytes than last time) the rate drops to 0.8x, each
//! time it shrinks the rate rises by 1/0.8 up to the option; within two tables of the stop
//! trigger it drops to 0.6x. A write group of `b` bytes advances a virtual clock by `b / rate`;
//! the leader sleeps only once the clock is 1 ms or more ahead of real time, so small groups
//! pay in batches and the average rate is the set one.
//!
//! Pure: the caller passes the time and the debt, and does the sleeping (`write.rs`).

use std::time::Duration;

/// Lowest rate the debt can drive the pace to (RocksDB: 16 KiB/s).
const MIN_RATE: u64 = 16 << 10;
/// The rate's factor when the debt grew (RocksDB: `kDecSlowdownRatio`); it shrank: 1 / this.
const DEC_RATIO: f64 = 0.8;
/// The rate's factor within two level-0 tables of the stop trigger (RocksDB:
/// `kNearStopSlowdownRatio`).
const NEAR_STOP_RATIO: f64 = 0.6;
/// The clock may run this far ahead of real time before the leader sleeps.
const SLEEP_QUANTUM: Duration = Duration::from_millis(1);

/// How far behind compaction is, as the leader saw it for one write group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Debt {
    pub l0_tables: usize,
    pub pending_bytes: u64,
}

/// The thresholds of [`Debt`] that slow writes, from the options.
#[derive(Debug, Clone, Copy)]
pub(super) struct Triggers {
    pub l0_slowdown: usize,
    pub l0_stop: usize,
    pub soft_pending_bytes: u64,
    /// `Options::delayed_write_rate`, bytes per second.
    pub max_rate: u64,
}

/// The pacing state, kept under the database mutex.
#[derive(Debug, Default)]
pub(super) struct WriteRate {
    /// Current rate in bytes per second; 0 when writes are not slowed.
    rate: f64,
    /// The debt seen at the previous slowed group.
    last: Option<Debt>,
    /// Virtual time (since the caller's epoch) when the bytes paced so far are paid for.
    paid_until: Duration,
}

impl WriteRate {
    /// Accounts a group of `bytes` written at `now` with compaction `debt` behind, and returns
    /// how long the leader must sleep before writing it (zero when writes are not slowed or
    /// the clock is less than [`SLEEP_QUANTUM`] ahead).
    pub(super) fn delay(
        &mut self,
        now: Duration,
        bytes: u64,
        debt: Debt,
        triggers: &Triggers,
    ) -> Duration {
        let slow = debt.l0_tables >= triggers.l0_slowdown
            || debt.pending_bytes >= triggers.soft_pending_bytes;
        if !slow {
            *self = WriteRate::default();
            return Duration::ZERO;
        }
        let max = triggers.max_rate.max(MIN_RATE) as f64;
        self.rate = match self.last {
            None => max,
            Some(last) => {
                let now = (debt.l0_tables, debt.pending_bytes);
                let before = (last.l0_tables, last.pending_bytes);
                match now.cmp(&before) {
                    std::cmp::Ordering::Greater => self.rate * DEC_RATIO,
                    std::cmp::Ordering::Less => self.rate / DEC_RATIO,
                    std::cmp::Ordering::Equal => self.rate,
                }
            }
        };
        if debt.l0_tables + 2 >= triggers.l0_stop && self.last != Some(debt) {
            self.rate *= NEAR_STOP_RATIO;
        }
        self.rate = self.rate.clamp(MIN_RATE as f64, max);
        self.last = Some(debt);

        let cost = Duration::from_secs_f64(bytes as f64 / self.rate);
        self.paid_until = self.paid_until.max(now) + cost;
        let ahead = self.paid_until.saturating_sub(now);
        if ahead >= SLEEP_QUANTUM {
            ahead
        } else {
            Duration::ZERO
        }
    }

    /// The rate writes are paced to, in bytes per second (0 when they are not slowed).
    pub(super) fn rate(&self) -> u64 {
        self.rate.round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn triggers() -> Triggers {
        Triggers {
            l0_slowdown: 20,
            l0_stop: 36,
            soft_pending_bytes: 64 << 30,
            max_rate: 16 * MIB,
        }
    }

    /// The default rate times `f`, as `rate()` reports it.
    fn of_max(f: f64) -> u64 {
        ((16 * MIB) as f64 * f).round() as u64
    }

    fn debt(l0_tables: usize) -> Debt {
        Debt {
            l0_tables,
            pending_bytes: 0,
        }
    }

    #[test]
    fn writes_are_not_slowed_below_the_triggers() {
        let mut w = WriteRate::default();
        let d = w.delay(Duration::ZERO, 100 * MIB, debt(19), &triggers());
        assert_eq!(d, Duration::ZERO);
        assert_eq!(w.rate(), 0);
    }

    #[test]
    fn the_delay_is_proportional_to_the_bytes() {
        let t = triggers();
        let mut w = WriteRate::default();
        // 16 MiB at 16 MiB/s: one second.
        let d = w.delay(Duration::ZERO, 16 * MIB, debt(20), &t);
        assert_eq!(d, Duration::from_secs(1));
        let mut w = WriteRate::default();
        let d = w.delay(Duration::ZERO, 4 * MIB, debt(20), &t);
        assert_eq!(d, Duration::from_millis(250));
    }

    #[test]
    fn small_groups_accumulate_until_a_millisecond_is_owed() {
        let t = triggers();
        let mut w = WriteRate::default();
        let now = Duration::from_secs(10);
        // 16 KiB at 16 MiB/s is ~0.98 ms: 1 KiB groups pay nothing until the 17th.
        let mut slept = Vec::new();
        for _ in 0..17 {
            slept.push(w.delay(now, 1 << 10, debt(20), &t));
        }
        assert!(slept[..16].iter().all(|d| d.is_zero()), "{slept:?}");
        assert!(slept[16] >= SLEEP_QUANTUM, "{slept:?}");
        // Time passing pays the debt: a later group starts from a clean clock.
        let later = now + Duration::from_secs(1);
        assert_eq!(w.delay(later, 1 << 10, debt(20), &t), Duration::ZERO);
    }

    #[test]
    fn the_rate_follows_the_debt() {
        let t = triggers();
        let mut w = WriteRate::default();
        let now = Duration::ZERO;
        w.delay(now, 0, debt(20), &t);
        assert_eq!(w.rate(), 16 * MIB);
        w.delay(now, 0, debt(21), &t);
        assert_eq!(w.rate(), of_max(0.8), "more debt slows writes");
        w.delay(now, 0, debt(21), &t);
        assert_eq!(w.rate(), of_max(0.8), "the same debt keeps the rate");
        w.delay(now, 0, debt(20), &t);
        assert_eq!(
            w.rate(),
            16 * MIB,
            "less debt speeds them up, to the option at most"
        );
        w.delay(now, 0, debt(19), &t);
        assert_eq!(w.rate(), 0, "below the trigger writes are free again");
    }

    #[test]
    fn near_the_stop_trigger_the_rate_drops_further_and_never_below_the_floor() {
        let t = triggers();
        let mut w = WriteRate::default();
        w.delay(Duration::ZERO, 0, debt(34), &t);
        assert_eq!(w.rate(), of_max(0.6));
        for l0 in 35..200 {
            w.delay(Duration::ZERO, 0, debt(l0), &t);
        }
        assert_eq!(w.rate(), MIN_RATE);
    }

    #[test]
    fn pending_bytes_alone_slow_writes() {
        let t = triggers();
        let mut w = WriteRate::default();
        let d = Debt {
            l0_tables: 0,
            pending_bytes: 64 << 30,
        };
        assert_eq!(
            w.delay(Duration::ZERO, 16 * MIB, d, &t),
            Duration::from_secs(1)
        );
    }
}
