//! LevelDB's property names mapped onto the engine's.
//!
//! | LevelDB name                        | answered with                          |
//! |-------------------------------------|----------------------------------------|
//! | `leveldb.num-files-at-level<N>`     | `screedb.num-files-at-level<N>`        |
//! | `leveldb.stats`                     | `screedb.stats` (ScreeDB's own table)  |
//! | `leveldb.sstables`                  | `screedb.levels` (files and bytes per level, not one line per table) |
//! | `leveldb.approximate-memory-usage`  | `screedb.approximate-memory-usage`     |
//!
//! Any `screedb.*` name is passed through; other names are unknown (NULL).

/// The engine property answering `name`, or `None` if the name is unknown.
pub(crate) fn engine_name(name: &str) -> Option<String> {
    if name.starts_with("screedb.") {
        return Some(name.to_owned());
    }
    let rest = name.strip_prefix("leveldb.")?;
    if let Some(level) = rest.strip_prefix("num-files-at-level") {
        return Some(format!("screedb.num-files-at-level{level}"));
    }
    match rest {
        "stats" => Some("screedb.stats".to_owned()),
        "sstables" => Some("screedb.levels".to_owned()),
        "approximate-memory-usage" => Some("screedb.approximate-memory-usage".to_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::engine_name;

    #[test]
    fn leveldb_names_map_and_screedb_names_pass_through() {
        assert_eq!(
            engine_name("leveldb.num-files-at-level3").as_deref(),
            Some("screedb.num-files-at-level3")
        );
        assert_eq!(
            engine_name("leveldb.stats").as_deref(),
            Some("screedb.stats")
        );
        assert_eq!(
            engine_name("leveldb.sstables").as_deref(),
            Some("screedb.levels")
        );
        assert_eq!(
            engine_name("leveldb.approximate-memory-usage").as_deref(),
            Some("screedb.approximate-memory-usage")
        );
        assert_eq!(
            engine_name("screedb.write-amplification").as_deref(),
            Some("screedb.write-amplification")
        );
        assert_eq!(engine_name("leveldb.nope"), None);
        assert_eq!(engine_name("rocksdb.stats"), None);
    }
}
