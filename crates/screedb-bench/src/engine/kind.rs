//! Which engine to run: the names `--engine` and `--engines` take, ScreeDB's variants
//! (`screedb:layout=leveled:memory=flodb`), and engines added by a crate that links
//! screedb-bench ([`ExternalEngine`], registered by [`crate::cli::main_with_engines`]).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ::screedb::{Db, Error, LayoutKind, Memory, Options, Result};

use super::{Engine, EngineConfig, ScreeDbEngine, leveldb, leveldb_api};

/// An engine that a crate linking screedb-bench adds at run time, e.g. the bundled RocksDB of
/// screedb-bench-rocksdb, which cannot share screedb-bench's dependency graph.
#[derive(Debug, Clone, Copy)]
pub struct ExternalEngine {
    /// The name `--engine` takes (no `:` or `,`).
    pub name: &'static str,
    /// A file every database of this engine has, so that `destroy` deletes only its own
    /// directories (RocksDB: `CURRENT`).
    pub marker: &'static str,
    /// Opens (creating if missing) the database in a directory.
    pub open: fn(&Path, &EngineConfig) -> Result<Box<dyn Engine>>,
}

impl PartialEq for ExternalEngine {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for ExternalEngine {}

static EXTERNAL: OnceLock<Vec<ExternalEngine>> = OnceLock::new();

/// Adds `engines` to the names [`EngineKind::parse`] knows; they take precedence over the
/// built-in peers of the same name. Once per process.
pub fn register(engines: Vec<ExternalEngine>) -> Result<()> {
    for e in &engines {
        if e.name.is_empty() || e.name.contains([':', ',']) || e.name == "screedb" {
            return Err(Error::invalid(format!(
                "cannot register an engine named {:?}: names are non-empty, without ':' or ',', \
                 and not screedb",
                e.name
            )));
        }
    }
    EXTERNAL
        .set(engines)
        .map_err(|_| Error::invalid("the extra engines are registered once per process"))
}

fn external(name: &str) -> Option<ExternalEngine> {
    EXTERNAL.get()?.iter().find(|e| e.name == name).copied()
}

/// ScreeDB's options that an engine spec sets, over the run's flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ScreeDbSpec {
    /// `layout=flsm|leveled|trie|jungle`.
    pub layout: Option<LayoutKind>,
    /// `memory=skiplist|flodb`.
    pub memory: Option<Memory>,
    /// `c=FACTOR`: Jungle's compaction factor, in percent (`c=3` is 300).
    pub compaction_factor_percent: Option<u32>,
    /// `prefix_bloom=N`: `Options::prefix_bloom_len`.
    pub prefix_bloom_len: Option<usize>,
    /// `gc=PERCENT`: the trie's `gc_garbage_percent`.
    pub gc_garbage_percent: Option<u32>,
    /// `level_scale=N`: FLSM's `level_target_scale`.
    pub level_target_scale: Option<u64>,
    /// `nice=N`: `Options::background_nice`.
    pub background_nice: Option<i32>,
    /// `run_mib=N`: `Options::memtable_run_size` in MiB (0: one skiplist per memtable).
    pub memtable_run_mib: Option<usize>,
    /// `wal=lz4|none`: `Options::wal_compression`.
    pub wal_compression: Option<bool>,
}

/// `value` parsed as an integer within `range`; otherwise why not, naming `key=value`.
fn in_range<T>(
    key: &str,
    value: &str,
    range: std::ops::RangeInclusive<T>,
) -> std::result::Result<T, String>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display,
{
    value
        .parse()
        .ok()
        .filter(|n| range.contains(n))
        .ok_or_else(|| format!("{key}={value:?} is not {}..={}", range.start(), range.end()))
}

impl ScreeDbSpec {
    /// Parses `key=value` options separated by `:` (the text after `screedb:`).
    fn parse(spec: &str, whole: &str) -> Result<ScreeDbSpec> {
        let mut out = ScreeDbSpec::default();
        let reason = |e: Error| match e {
            Error::InvalidArgument(why) => why,
            other => other.to_string(),
        };
        let bad = |why: String| {
            Error::invalid(format!(
                "engine spec {whole:?}: {why}; expected screedb:OPTION=VALUE[:OPTION=VALUE], with \
                 layout=flsm|leveled|trie|jungle, memory=skiplist|flodb, c=FACTOR (Jungle), \
                 gc=PERCENT (trie), level_scale=N (FLSM), prefix_bloom=N, nice=0..19, \
                 run_mib=N and wal=lz4|none"
            ))
        };
        for option in spec.split(':') {
            let Some((key, value)) = option.split_once('=') else {
                return Err(bad(format!("{option:?} is not OPTION=VALUE")));
            };
            match key {
                "layout" if out.layout.is_none() => {
                    out.layout = Some(value.parse::<LayoutKind>().map_err(|e| bad(reason(e)))?);
                }
                "memory" if out.memory.is_none() => {
                    out.memory = Some(value.parse().map_err(|e: Error| bad(reason(e)))?);
                }
                "c" if out.compaction_factor_percent.is_none() => {
                    let c: f64 = value
                        .parse()
                        .map_err(|_| bad(format!("c={value:?} is not a number")))?;
                    if !(1.1..=1000.0).contains(&c) {
                        return Err(bad(format!("c={value} is outside 1.1..=1000")));
                    }
                    out.compaction_factor_percent = Some((c * 100.0).round() as u32);
                }
                "prefix_bloom" if out.prefix_bloom_len.is_none() => {
                    out.prefix_bloom_len = Some(in_range(key, value, 0..=4096).map_err(bad)?);
                }
                "gc" if out.gc_garbage_percent.is_none() => {
                    out.gc_garbage_percent = Some(in_range(key, value, 1..=100).map_err(bad)?);
                }
                "level_scale" if out.level_target_scale.is_none() => {
                    out.level_target_scale = Some(in_range(key, value, 1..=1024).map_err(bad)?);
                }
                "nice" if out.background_nice.is_none() => {
                    out.background_nice = Some(in_range(key, value, 0..=19).map_err(bad)?);
                }
                "run_mib" if out.memtable_run_mib.is_none() => {
                    out.memtable_run_mib = Some(in_range(key, value, 0..=1 << 20).map_err(bad)?);
                }
                "wal" if out.wal_compression.is_none() => {
                    out.wal_compression = Some(match value {
                        "lz4" => true,
                        "none" => false,
                        _ => return Err(bad(format!("wal={value:?} is not lz4 or none"))),
                    });
                }
                "layout" | "memory" | "c" | "prefix_bloom" | "gc" | "level_scale" | "nice"
                | "run_mib" | "wal" => {
                    return Err(bad(format!("{key} is given twice")));
                }
                _ => return Err(bad(format!("unknown option {key:?}"))),
            }
        }
        Ok(out)
    }

    fn label(&self) -> String {
        let mut out = String::from("screedb");
        if let Some(layout) = self.layout {
            out.push_str(":layout=");
            out.push_str(layout.name());
        }
        if let Some(memory) = self.memory {
            out.push_str(match memory {
                Memory::Skiplist => ":memory=skiplist",
                Memory::Flodb => ":memory=flodb",
            });
        }
        if let Some(percent) = self.compaction_factor_percent {
            out.push_str(&format!(":c={}", f64::from(percent) / 100.0));
        }
        if let Some(n) = self.prefix_bloom_len {
            out.push_str(&format!(":prefix_bloom={n}"));
        }
        if let Some(percent) = self.gc_garbage_percent {
            out.push_str(&format!(":gc={percent}"));
        }
        if let Some(n) = self.level_target_scale {
            out.push_str(&format!(":level_scale={n}"));
        }
        if let Some(n) = self.background_nice {
            out.push_str(&format!(":nice={n}"));
        }
        if let Some(n) = self.memtable_run_mib {
            out.push_str(&format!(":run_mib={n}"));
        }
        if let Some(lz4) = self.wal_compression {
            out.push_str(if lz4 { ":wal=lz4" } else { ":wal=none" });
        }
        out
    }
}

/// Which engine to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineKind {
    /// ScreeDB, with the options its spec sets.
    ScreeDb(ScreeDbSpec),
    /// fjall (feature `fjall`).
    Fjall,
    /// LevelDB linked at build time (feature `leveldb`).
    LevelDb,
    /// A library exporting LevelDB's C API, loaded from this path at run time.
    LevelDbC(PathBuf),
    /// Debian's RocksDB (feature `rocksdb-system`).
    RocksDb,
    /// An engine registered by the binary ([`register`]).
    External(ExternalEngine),
}

impl Default for EngineKind {
    fn default() -> Self {
        EngineKind::ScreeDb(ScreeDbSpec::default())
    }
}

/// The built-in engine names `--engine` accepts (besides `screedb:OPTIONS`, `leveldb-c:PATH`
/// and the engines a binary registers).
pub const ENGINE_NAMES: [&str; 4] = ["screedb", "fjall", "leveldb", "rocksdb"];

#[cfg(not(all(feature = "fjall", feature = "leveldb", feature = "rocksdb-system")))]
fn not_built(name: &str, how: &str) -> Error {
    Error::invalid(format!(
        "engine {name} is not built in: {how} (see docs/benchmarks.md)"
    ))
}

impl EngineKind {
    /// The engine called `name`: one of [`ENGINE_NAMES`], a registered engine,
    /// `screedb:OPTION=VALUE[:...]` or `leveldb-c:PATH`.
    pub fn parse(name: &str) -> Result<EngineKind> {
        if let Some(e) = external(name) {
            return Ok(EngineKind::External(e));
        }
        Ok(match name {
            "screedb" => EngineKind::default(),
            "fjall" => EngineKind::Fjall,
            "leveldb" => EngineKind::LevelDb,
            "rocksdb" => EngineKind::RocksDb,
            _ => {
                if let Some(spec) = name.strip_prefix("screedb:") {
                    return Ok(EngineKind::ScreeDb(ScreeDbSpec::parse(spec, name)?));
                }
                match name.strip_prefix("leveldb-c:") {
                    Some(path) if !path.is_empty() => EngineKind::LevelDbC(PathBuf::from(path)),
                    _ => {
                        let mut known = ENGINE_NAMES.to_vec();
                        known.extend(EXTERNAL.get().into_iter().flatten().map(|e| e.name));
                        return Err(Error::invalid(format!(
                            "unknown engine {name:?}; known ones are {}, screedb:OPTIONS and \
                             leveldb-c:PATH",
                            known.join(", ")
                        )));
                    }
                }
            }
        })
    }

    /// The name as `--engine` takes it (a ScreeDB spec in a canonical order).
    pub fn label(&self) -> String {
        match self {
            EngineKind::ScreeDb(spec) => spec.label(),
            EngineKind::Fjall => "fjall".into(),
            EngineKind::LevelDb => "leveldb".into(),
            EngineKind::LevelDbC(p) => format!("leveldb-c:{}", p.display()),
            EngineKind::RocksDb => "rocksdb".into(),
            EngineKind::External(e) => e.name.into(),
        }
    }

    /// Opens (creating if missing) the database in `dir`.
    pub fn open(&self, dir: &Path, config: &EngineConfig) -> Result<Box<dyn Engine>> {
        match self {
            EngineKind::ScreeDb(spec) => {
                let mut config = config.clone();
                config.layout = spec.layout.or(config.layout);
                config.memory = spec.memory.or(config.memory);
                if let Some(percent) = spec.compaction_factor_percent {
                    config.compaction_factor = Some(f64::from(percent) / 100.0);
                }
                if let Some(n) = spec.prefix_bloom_len {
                    config.prefix_bloom_len = n;
                }
                if let Some(percent) = spec.gc_garbage_percent {
                    config.gc_garbage_percent = Some(percent);
                }
                if let Some(n) = spec.level_target_scale {
                    config.flsm_level_target_scale = Some(n);
                }
                if let Some(n) = spec.background_nice {
                    config.background_nice = n;
                }
                if let Some(n) = spec.memtable_run_mib {
                    config.memtable_run_size = Some(n << 20);
                }
                if let Some(lz4) = spec.wal_compression {
                    config.wal_compression = Some(lz4);
                }
                Ok(Box::new(ScreeDbEngine::open(dir, &config)?))
            }
            #[cfg(feature = "fjall")]
            EngineKind::Fjall => Ok(Box::new(super::fjall::FjallEngine::open(dir, config)?)),
            #[cfg(not(feature = "fjall"))]
            EngineKind::Fjall => Err(not_built("fjall", "build with --features fjall")),
            #[cfg(feature = "leveldb")]
            EngineKind::LevelDb => Ok(Box::new(leveldb::LevelDbEngine::open(
                leveldb_api::Api::linked(),
                "leveldb",
                dir,
                config,
            )?)),
            #[cfg(not(feature = "leveldb"))]
            EngineKind::LevelDb => Err(not_built("leveldb", "build with --features leveldb")),
            EngineKind::LevelDbC(lib) => Ok(Box::new(leveldb::LevelDbEngine::open(
                leveldb_api::Api::load(lib)?,
                "leveldb-c",
                dir,
                config,
            )?)),
            #[cfg(feature = "rocksdb-system")]
            EngineKind::RocksDb => Ok(Box::new(super::rocksdb::RocksDbEngine::open(dir, config)?)),
            #[cfg(not(feature = "rocksdb-system"))]
            EngineKind::RocksDb => Err(not_built(
                "rocksdb",
                "build screedb-bench with --features rocksdb-system for Debian's RocksDB, or \
                 run the screedb-bench-rocksdb binary for the bundled one",
            )),
            EngineKind::External(e) => (e.open)(dir, config),
        }
    }

    /// Deletes the database in `dir`. ScreeDB removes its own files only; the peers' whole
    /// directory is removed, and only if it is empty or holds that engine's files (LevelDB and
    /// RocksDB: a `CURRENT` file; fjall: its `version` marker).
    pub fn destroy(&self, dir: &Path) -> Result<()> {
        if let EngineKind::ScreeDb(_) = self {
            return Db::destroy(dir, &Options::default());
        }
        let Ok(mut entries) = std::fs::read_dir(dir) else {
            return Ok(());
        };
        let empty = entries.next().is_none();
        let marker = match self {
            EngineKind::Fjall => "version",
            EngineKind::External(e) => e.marker,
            _ => "CURRENT",
        };
        if !empty && !dir.join(marker).exists() {
            return Err(Error::invalid(format!(
                "refusing to delete {}: it is not empty and does not look like a {} database \
                 (no {marker} file)",
                dir.display(),
                self.label()
            )));
        }
        std::fs::remove_dir_all(dir).map_err(|e| Error::io("remove", dir, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn screedb_specs_set_layout_and_memory() {
        let k = EngineKind::parse("screedb:memory=flodb:layout=leveled").unwrap();
        assert_eq!(
            k,
            EngineKind::ScreeDb(ScreeDbSpec {
                layout: Some(LayoutKind::Leveled),
                memory: Some(Memory::Flodb),
                compaction_factor_percent: None,
                prefix_bloom_len: None,
                gc_garbage_percent: None,
                level_target_scale: None,
                background_nice: None,
                memtable_run_mib: None,
                wal_compression: None,
            })
        );
        assert_eq!(k.label(), "screedb:layout=leveled:memory=flodb");
        let r = EngineKind::parse("screedb:memory=flodb:run_mib=0").unwrap();
        assert_eq!(r.label(), "screedb:memory=flodb:run_mib=0");
        assert!(EngineKind::parse("screedb:run_mib=x").is_err());
        let j = EngineKind::parse("screedb:layout=jungle:c=2.5").unwrap();
        assert_eq!(j.label(), "screedb:layout=jungle:c=2.5");
        assert!(EngineKind::parse("screedb:layout=jungle:c=0.5").is_err());
        let t = EngineKind::parse("screedb:layout=trie:gc=35").unwrap();
        assert_eq!(t.label(), "screedb:layout=trie:gc=35");
        assert!(EngineKind::parse("screedb:layout=trie:gc=0").is_err());
        assert!(EngineKind::parse("screedb:layout=trie:gc=101").is_err());
        let f = EngineKind::parse("screedb:level_scale=1").unwrap();
        assert_eq!(f.label(), "screedb:level_scale=1");
        assert!(EngineKind::parse("screedb:level_scale=0").is_err());
        let n = EngineKind::parse("screedb:layout=trie:nice=19").unwrap();
        assert_eq!(n.label(), "screedb:layout=trie:nice=19");
        assert!(EngineKind::parse("screedb:nice=20").is_err());
        assert!(EngineKind::parse("screedb:nice=-1").is_err());
        assert_eq!(EngineKind::parse("screedb").unwrap().label(), "screedb");
        assert_eq!(
            EngineKind::parse("screedb:layout=flsm").unwrap().label(),
            "screedb:layout=flsm"
        );
        for (bad, says) in [
            ("screedb:layout=tiered", "unknown layout"),
            ("screedb:memory=hash", "memory component"),
            ("screedb:layout", "is not OPTION=VALUE"),
            ("screedb:", "is not OPTION=VALUE"),
            ("screedb:cache=1", "unknown option \"cache\""),
            ("screedb:layout=flsm:layout=leveled", "given twice"),
        ] {
            let err = EngineKind::parse(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
            assert!(err.contains(bad), "the error names the spec: {err}");
            assert_eq!(err.matches("invalid argument").count(), 1, "{err}");
        }
    }

    #[test]
    fn a_spec_overrides_the_run_flags_for_its_engine() {
        let dir = tempfile::tempdir().unwrap();
        let config = EngineConfig {
            layout: Some(LayoutKind::Flsm),
            ..EngineConfig::with_buffers(1 << 20, 1 << 20)
        };
        let kind = EngineKind::parse("screedb:layout=leveled").unwrap();
        kind.open(dir.path(), &config).unwrap().close().unwrap();
        // The layout is persisted; reopening with the run's flsm is refused.
        let err = Db::open(dir.path(), Options::default()).unwrap_err();
        assert!(err.to_string().contains("leveled"), "{err}");
    }

    #[test]
    fn registered_names_are_checked() {
        fn open(_: &Path, _: &EngineConfig) -> Result<Box<dyn Engine>> {
            Err(Error::invalid("test engine"))
        }
        let named = |name| ExternalEngine {
            name,
            marker: "CURRENT",
            open,
        };
        for bad in ["", "a:b", "a,b", "screedb"] {
            assert!(register(vec![named(bad)]).is_err(), "{bad:?}");
        }
    }
}
