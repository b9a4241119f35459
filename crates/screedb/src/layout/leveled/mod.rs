//! The leveled layout (LevelDB, RocksDB): each level >= 1 is one sorted run of disjoint tables;
//! a compaction rewrites the overlapping tables of the level below.

mod strategy;

pub use strategy::Leveled;
