//! Engine errors in LevelDB's wording (`Status::ToString`: "NotFound: ", "Corruption: ",
//! "Invalid argument: ", "IO error: " followed by the message), so callers that match on
//! LevelDB's messages keep working.

use engine::Error;

/// The message LevelDB would give for `err`. `name` is the database name as the caller gave it
/// (LevelDB's messages quote it verbatim).
pub(crate) fn message(err: &Error, name: Option<&str>) -> String {
    let named = |p: &std::path::Path| name.map_or_else(|| p.display().to_string(), str::to_owned);
    match err {
        Error::NotFound(p) => format!(
            "Invalid argument: {}: does not exist (create_if_missing is false)",
            named(p)
        ),
        Error::AlreadyExists(p) => {
            format!(
                "Invalid argument: {}: exists (error_if_exists is true)",
                named(p)
            )
        }
        Error::Locked(lock) => {
            format!("IO error: lock {}: already held by process", lock.display())
        }
        Error::Corruption {
            file,
            offset,
            reason,
        } => format!(
            "Corruption: {}: {reason} (at offset {offset})",
            file.display()
        ),
        Error::Io { op, path, source } => {
            format!(
                "IO error: {}: {source} (while trying to {op})",
                path.display()
            )
        }
        Error::InvalidArgument(reason) => format!("Invalid argument: {reason}"),
        Error::ForeignFormat { .. } => format!("Invalid argument: {err}"),
        Error::ComparatorMismatch { stored, given } => {
            format!("Invalid argument: {stored} does not match existing comparator : {given}")
        }
        Error::ReadOnly(first) => message(first, name),
        Error::Closed => "IO error: the database is closed".to_owned(),
        other => format!("IO error: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn open_errors_use_leveldb_wording_with_the_name_given() {
        let p = PathBuf::from("/abs/db");
        assert_eq!(
            message(&Error::NotFound(p.clone()), Some("db")),
            "Invalid argument: db: does not exist (create_if_missing is false)"
        );
        assert_eq!(
            message(&Error::AlreadyExists(p), Some("db")),
            "Invalid argument: db: exists (error_if_exists is true)"
        );
        assert_eq!(
            message(&Error::Locked(PathBuf::from("db/LOCK")), Some("db")),
            "IO error: lock db/LOCK: already held by process"
        );
    }

    #[test]
    fn other_errors_keep_leveldb_prefixes() {
        let c = Error::corruption("db/000005.sst", 12, "bad block checksum");
        assert_eq!(
            message(&c, None),
            "Corruption: db/000005.sst: bad block checksum (at offset 12)"
        );
        let io = Error::io("open", "db/x", std::io::ErrorKind::PermissionDenied.into());
        assert!(message(&io, None).starts_with("IO error: db/x: "));
        assert_eq!(
            message(&Error::invalid("key too large"), None),
            "Invalid argument: key too large"
        );
        let ro = Error::ReadOnly(std::sync::Arc::new(c));
        assert!(message(&ro, None).starts_with("Corruption: "));
        let cmp = Error::ComparatorMismatch {
            stored: "leveldb.BytewiseComparator".into(),
            given: "foo".into(),
        };
        assert_eq!(
            message(&cmp, None),
            "Invalid argument: leveldb.BytewiseComparator does not match existing comparator : foo"
        );
    }
}
