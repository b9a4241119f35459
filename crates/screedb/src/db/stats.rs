//! Counters of the database, and their persistence in manifest edits.
//!
//! Byte counters are cumulative since the database was created: every flush and compaction edit
//! records their current values (as `stat` fields of the edit), and open restores the last
//! recorded values, so write amplification can be read after a reopen.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! counters {
    ($( $(#[$doc:meta])* $name:ident ),* $(,)?) => {
        /// Live counters (atomics, updated without the database mutex).
        #[derive(Debug, Default)]
        pub struct Counters {
            $( $(#[$doc])* pub $name: AtomicU64, )*
            /// Bytes of tables written by compactions, per output level.
            pub written_to_level: PerLevel,
        }

        /// A copy of the counters at one moment.
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub struct Stats {
            $( $(#[$doc])* pub $name: u64, )*
            /// Tables per level.
            pub files_per_level: Vec<usize>,
            /// Bytes per level.
            pub bytes_per_level: Vec<u64>,
            /// Block cache hits.
            pub block_cache_hits: u64,
            /// Block cache misses.
            pub block_cache_misses: u64,
            /// Bytes of tables written by compactions per output level (trailing zeros trimmed).
            pub compaction_bytes_written_per_level: Vec<u64>,
            /// HTable reads since open (the trie layout): probes, filter rejections, bucket,
            /// overflow and BloomCluster reads.
            pub hashed_reads: crate::table::htable::HTableStats,
        }

        impl Counters {
            /// Copies the counters (level and cache fields are left empty).
            pub fn snapshot(&self) -> Stats {
                Stats {
                    $( $name: self.$name.load(Ordering::Relaxed), )*
                    compaction_bytes_written_per_level: self.written_to_level.values(),
                    ..Stats::default()
                }
            }

            /// The persisted counters as `(name, value)` pairs.
            pub fn persisted(&self) -> Vec<(String, u64)> {
                let mut out = vec![ $( (stringify!($name).to_string(), self.$name.load(Ordering::Relaxed)), )* ];
                for (level, bytes) in self.written_to_level.values().into_iter().enumerate() {
                    out.push((format!("{LEVEL_PREFIX}{level}"), bytes));
                }
                out
            }

            /// Restores counters recorded in the manifest (unknown names are ignored).
            pub fn restore(&self, saved: &BTreeMap<String, u64>) {
                $( if let Some(v) = saved.get(stringify!($name)) { self.$name.store(*v, Ordering::Relaxed); } )*
                for (name, v) in saved {
                    if let Some(level) = name.strip_prefix(LEVEL_PREFIX).and_then(|l| l.parse::<usize>().ok())
                        && let Some(c) = self.written_to_level.0.get(level)
                    {
                        c.store(*v, Ordering::Relaxed);
                    }
                }
            }
        }
    };
}

counters! {
    /// Bytes of keys and values given to put/delete/write by users.
    user_bytes_written,
    /// Bytes appended to write-ahead logs.
    wal_bytes_written,
    /// Bytes of level-0 tables written by flushes.
    flush_bytes_written,
    /// Bytes of tables written by compactions.
    compaction_bytes_written,
    /// Bytes of tables read by compactions.
    compaction_bytes_read,
    /// Flushes completed.
    flushes,
    /// Compactions (merges) completed.
    compactions,
    /// Merges stopped early because the database was closing (outputs discarded; not in
    /// `compactions`).
    compactions_stopped_by_close,
    /// Tables moved to another level without rewriting.
    trivial_moves,
    /// FLSM seek-based compactions completed (also counted in `compactions`).
    seek_compactions,
    /// Bytes of tables written by seek-based compactions (also in `compaction_bytes_written`).
    seek_compaction_bytes_written,
    /// Bytes of block reads that overlapping tables cost reads: one block (`block_size`) per
    /// table a seek positioned, or a get read in vain, beyond one per level (FLSM). A share of
    /// them is seek-based compaction's write budget.
    overlap_read_bytes,
    /// Writes delayed by the slowdown stage.
    stall_slowdowns,
    /// Times writers stopped until background work caught up.
    stall_stops,
    /// Microseconds writers spent delayed or stopped.
    stall_micros,
    /// WAL syncs.
    wal_syncs,
    /// Write groups committed (one WAL append each).
    write_groups,
    /// Jungle: bytes of value records appended to existing trees (in `compaction_bytes_written`).
    tree_appended_value_bytes,
    /// Jungle: bytes of nodes, filters and commits appended to existing trees (in
    /// `compaction_bytes_written`).
    tree_appended_node_bytes,
    /// Jungle: bytes of new tree files, from new guard ranges and rewrites (in
    /// `compaction_bytes_written`).
    tree_new_bytes,
    /// Jungle: trees a merge replaced by a new tree, merged with what it would have appended,
    /// because the append would have taken the tree past its compaction factor.
    tree_replacements,
    /// Tables in a prefix scan's key range that `Db::prefix` left unread because their prefix
    /// filter (`Options::prefix_bloom_len`) ruled the prefix out.
    prefix_filter_skips,
}

/// Name prefix of the persisted per-level compaction counters (`compaction_bytes_written_l<N>`).
const LEVEL_PREFIX: &str = "compaction_bytes_written_l";

/// One counter per possible level (`Options::num_levels` is at most 64).
#[derive(Debug)]
pub struct PerLevel([AtomicU64; 64]);

impl Default for PerLevel {
    fn default() -> Self {
        PerLevel(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl PerLevel {
    /// Adds `n` to level `level`'s counter (ignored past the last possible level).
    pub fn add(&self, level: usize, n: u64) {
        if let Some(c) = self.0.get(level) {
            c.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// The counters up to the last non-zero one.
    pub fn values(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.0.iter().map(|c| c.load(Ordering::Relaxed)).collect();
        while v.last() == Some(&0) {
            v.pop();
        }
        v
    }
}

impl Counters {
    /// Adds `n` to a counter.
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

impl Stats {
    /// Bytes written to disk (WAL + flush + compaction) per user byte written.
    pub fn write_amplification(&self) -> f64 {
        let disk =
            self.wal_bytes_written + self.flush_bytes_written + self.compaction_bytes_written;
        if self.user_bytes_written == 0 {
            0.0
        } else {
            disk as f64 / self.user_bytes_written as f64
        }
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const MIB: f64 = (1u64 << 20) as f64;
        let mib = |b: u64| b as f64 / MIB;
        writeln!(
            f,
            "user bytes written     {:>12.2} MiB",
            mib(self.user_bytes_written)
        )?;
        writeln!(
            f,
            "WAL bytes written      {:>12.2} MiB",
            mib(self.wal_bytes_written)
        )?;
        writeln!(
            f,
            "flush bytes written    {:>12.2} MiB ({} flushes)",
            mib(self.flush_bytes_written),
            self.flushes
        )?;
        writeln!(
            f,
            "compaction written     {:>12.2} MiB ({} compactions, {} trivial moves, {} stopped by close)",
            mib(self.compaction_bytes_written),
            self.compactions,
            self.trivial_moves,
            self.compactions_stopped_by_close
        )?;
        writeln!(
            f,
            "seek compactions       {:>12.2} MiB ({} compactions)",
            mib(self.seek_compaction_bytes_written),
            self.seek_compactions
        )?;
        if self.prefix_filter_skips > 0 {
            writeln!(
                f,
                "prefix filter skips    {:>12} tables",
                self.prefix_filter_skips
            )?;
        }
        if self.tree_appended_value_bytes + self.tree_appended_node_bytes + self.tree_new_bytes > 0
        {
            writeln!(
                f,
                "tree bytes             {:>12.2} MiB appended values, {:.2} MiB appended nodes, {:.2} MiB new trees ({} replacing an append)",
                mib(self.tree_appended_value_bytes),
                mib(self.tree_appended_node_bytes),
                mib(self.tree_new_bytes),
                self.tree_replacements
            )?;
        }
        writeln!(
            f,
            "compaction read        {:>12.2} MiB",
            mib(self.compaction_bytes_read)
        )?;
        writeln!(
            f,
            "write amplification    {:>12.3}",
            self.write_amplification()
        )?;
        writeln!(
            f,
            "write groups / syncs   {:>12} / {}",
            self.write_groups, self.wal_syncs
        )?;
        writeln!(
            f,
            "stalls                 {:>12} slowdowns, {} stops, {:.3} s",
            self.stall_slowdowns,
            self.stall_stops,
            self.stall_micros as f64 / 1e6
        )?;
        writeln!(
            f,
            "block cache            {:>12} hits, {} misses",
            self.block_cache_hits, self.block_cache_misses
        )?;
        let h = &self.hashed_reads;
        if h.probes > 0 || h.cluster_reads > 0 {
            writeln!(f, "htable reads           {h}")?;
        }
        writeln!(f, "level  files        MiB  compacted into (MiB)")?;
        for (level, (files, bytes)) in self
            .files_per_level
            .iter()
            .zip(&self.bytes_per_level)
            .enumerate()
        {
            let into = self
                .compaction_bytes_written_per_level
                .get(level)
                .copied()
                .unwrap_or(0);
            writeln!(
                f,
                "L{level:<5} {files:>5} {:>10.2} {:>20.2}",
                mib(*bytes),
                mib(into)
            )?;
        }
        Ok(())
    }
}
