//! The one error type of the engine.
//!
//! Every variant's `Display` is a sentence a person can act on, and names the file (and the byte
//! offset) where that is known. `Error` is `Clone` so that a background failure can be stored once
//! and returned to every later caller (sticky errors).

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

/// A `Result` whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in ScreeDB.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The operating system reported an I/O failure.
    #[error("I/O error while trying to {op} {}: {source}", path.display())]
    Io {
        /// What the engine was doing ("open", "write", "sync", ...).
        op: &'static str,
        /// The file or directory involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: Arc<io::Error>,
    },

    /// Bytes on disk are not what the engine wrote: a checksum mismatch, a truncated structure or
    /// an impossible value.
    #[error("corruption in {} at offset {offset}: {reason}", file.display())]
    Corruption {
        /// The damaged file.
        file: PathBuf,
        /// Byte offset of the damaged structure inside the file.
        offset: u64,
        /// What was wrong.
        reason: String,
    },

    /// A caller passed something the engine cannot accept (an option out of range, a key over the
    /// size limit, ...).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// Another process (or another `Db` in this process) holds the database's LOCK file.
    #[error("database is locked by another process: {}", .0.display())]
    Locked(PathBuf),

    /// The database directory does not exist and `create_if_missing` is false.
    #[error("database {} does not exist (create_if_missing is false)", .0.display())]
    NotFound(PathBuf),

    /// The database exists and `error_if_exists` is true.
    #[error("database {} already exists (error_if_exists is true)", .0.display())]
    AlreadyExists(PathBuf),

    /// The database was created with another comparator than the one it is opened with.
    #[error("comparator mismatch: database was created with {stored:?}, opened with {given:?}")]
    ComparatorMismatch {
        /// Name persisted in the manifest.
        stored: String,
        /// Name of the comparator given in the options.
        given: String,
    },

    /// The database was created with another layout than the one it is opened with.
    #[error(
        "layout mismatch: database was created with the {stored} layout, opened with {given} \
         (set Options::layout to {stored})"
    )]
    LayoutMismatch {
        /// Layout persisted in the manifest.
        stored: crate::layout::LayoutKind,
        /// Layout given in the options.
        given: crate::layout::LayoutKind,
    },

    /// The directory holds another engine's database, which ScreeDB neither opens nor repairs
    /// (`foreign::detect`).
    #[error("{dir} holds a {format} database ({evidence}), not a ScreeDB one: {}", format.advice())]
    ForeignFormat {
        /// The database directory.
        dir: PathBuf,
        /// Whose format it is.
        format: crate::foreign::ForeignFormat,
        /// What gave it away (a file name, a magic number).
        evidence: String,
    },

    /// The database's layout cannot serve this call (the trie layout keeps no key order, so it
    /// has no iterators).
    #[error("the {layout} layout does not support {op}")]
    NotSupported {
        /// The layout's name.
        layout: &'static str,
        /// The call, as a person would name it ("iterators", "approximate sizes", ...).
        op: &'static str,
    },

    /// A write or sync failed earlier; the database refuses all further writes until reopened.
    #[error("a previous write failed, so the database is read-only until it is reopened: {0}")]
    ReadOnly(Arc<Error>),

    /// The database has been closed.
    #[error("the database is closed")]
    Closed,
}

impl Error {
    /// Builds an [`Error::Io`].
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Io {
            op,
            path: path.into(),
            source: Arc::new(source),
        }
    }

    /// Builds an [`Error::Corruption`].
    pub fn corruption(file: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Self {
        Error::Corruption {
            file: file.into(),
            offset,
            reason: reason.into(),
        }
    }

    /// Builds an [`Error::InvalidArgument`].
    pub fn invalid(reason: impl Into<String>) -> Self {
        Error::InvalidArgument(reason.into())
    }

    /// True for [`Error::Corruption`].
    pub fn is_corruption(&self) -> bool {
        matches!(self, Error::Corruption { .. })
    }

    /// True for an I/O error saying the process (EMFILE) or the system (ENFILE) has no file
    /// descriptor left.
    pub fn is_out_of_file_descriptors(&self) -> bool {
        const ENFILE: i32 = 23;
        const EMFILE: i32 = 24;
        matches!(self, Error::Io { source, .. }
            if matches!(source.raw_os_error(), Some(ENFILE | EMFILE)))
    }

    /// The kind of the underlying I/O error, if this is an I/O error.
    pub fn io_kind(&self) -> Option<io::ErrorKind> {
        match self {
            Error::Io { source, .. } => Some(source.kind()),
            _ => None,
        }
    }
}
