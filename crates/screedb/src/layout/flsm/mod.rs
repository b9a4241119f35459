//! The FLSM layout (PebblesDB's fragmented LSM; docs/flsm.md): levels >= 1 cut by guard keys,
//! each guard holding possibly overlapping fragments.
//!
//! - `options.rs`: [`FlsmOptions`] and [`GuardBits`];
//! - [`guards`]: which keys are guards, and where a key falls among them;
//! - `strategy.rs`: the compaction strategy ([`Flsm`]);
//! - [`upkeep`]: guard upkeep applied to each merge's edit (unsafe and small guards dropped);
//! - [`seeks`]: per-guard seek counters behind seek-based compaction.

pub mod guards;
mod options;
pub mod seeks;
mod strategy;
pub mod upkeep;

pub use options::{FlsmOptions, GuardBits, L0_COMPACTION_TRIGGER, L0_SEEK_TRIGGER};
pub use strategy::{Flsm, aggressive_levels, guard_bits, seek_compaction, whole_guards};

use crate::options::{Layout, Options};

/// The FLSM options in force (the defaults when the database is not FLSM, where callers of
/// this module's functions never reach).
pub(crate) fn options_of(options: &Options) -> &FlsmOptions {
    match &options.layout {
        Layout::Flsm(flsm) => flsm,
        Layout::Leveled | Layout::Trie(_) | Layout::Jungle(_) => &FlsmOptions::DEFAULT,
    }
}
