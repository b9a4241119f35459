//! The info log: what the database did, for a person to read after the fact (LevelDB's and
//! RocksDB's `LOG`). One line per event, each starting with an RFC 3339 UTC timestamp:
//!
//! ```text
//! 2026-11-25T03:40:12.345678Z opening /data/db (flsm layout, skiplist memory)
//! 2026-11-25T03:40:12.345901Z options: Options { create_if_missing: true, ... }
//! 2026-11-25T03:40:12.351122Z recovered: 1 logs replayed (2 batches), 1 tables written to level 0, last sequence 1002
//! 2026-11-25T03:40:13.002310Z flush: 4194512 bytes of memtable -> level 0 [#12 (1804311 bytes)] in 41 ms
//! 2026-11-25T03:40:13.210554Z compaction: L0 [#9 #12] -> L1 [#14 #15]: read 3608622 bytes, wrote 3590114 in 187 ms
//! 2026-11-25T03:40:20.000012Z write stalls since the last report: 3 slowdowns, 1 stops, 112 ms
//! 2026-11-25T03:40:21.500000Z background error (the database is read-only): ...
//! ```
//!
//! Where the lines go is [`crate::Options::info_log`]: by default the file `LOG` in the database
//! directory, through the [`Fs`] like every other file. Each open renames the previous `LOG` to
//! `LOG.old` (as LevelDB does), and so does a `LOG` that grows past its size limit. Logging
//! never fails a database operation: a line that cannot be written (a full disk) is dropped.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crate::fs::{Fs, WritableFile};

/// Receives the info log's lines (without timestamp or newline) when
/// [`InfoLog::Custom`] is chosen. Called from any thread, sometimes with the database's mutex
/// held: keep it quick.
pub trait Logger: Send + Sync + fmt::Debug {
    /// One event.
    fn log(&self, line: &str);
}

/// Where the info log goes. RocksDB: `info_log`, `max_log_file_size`; LevelDB: `info_log`.
#[derive(Clone, Debug)]
pub enum InfoLog {
    /// The file `LOG` in the database directory, renamed to `LOG.old` at each open and once it
    /// holds `max_bytes`.
    File {
        /// Size at which `LOG` is rotated.
        max_bytes: u64,
    },
    /// Every line goes to this logger.
    Custom(Arc<dyn Logger>),
    /// Nothing is logged.
    Off,
}

impl Default for InfoLog {
    /// `File { max_bytes: 4 MiB }`.
    fn default() -> Self {
        InfoLog::File { max_bytes: 4 << 20 }
    }
}

/// The name of the info log file in a database directory.
pub fn log_file(dir: &Path) -> PathBuf {
    dir.join("LOG")
}

/// The name `LOG` is rotated to.
pub fn old_log_file(dir: &Path) -> PathBuf {
    dir.join("LOG.old")
}

/// How often at most write stalls are reported.
const STALL_REPORT_INTERVAL: Duration = Duration::from_secs(10);

/// The open info log of a database.
pub(crate) struct InfoLogger {
    sink: Sink,
    /// When stalls were last reported, and the stall counters then.
    stalls: Mutex<(Instant, [u64; 3])>,
}

enum Sink {
    File(Mutex<LogFile>),
    Custom(Arc<dyn Logger>),
    Off,
}

struct LogFile {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    file: Option<Box<dyn WritableFile>>,
    written: u64,
    max_bytes: u64,
}

impl fmt::Debug for InfoLogger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.sink {
            Sink::File(_) => "file",
            Sink::Custom(_) => "custom",
            Sink::Off => "off",
        };
        f.debug_struct("InfoLogger").field("sink", &kind).finish()
    }
}

impl InfoLogger {
    /// The info log `config` names for the database in `dir` (which exists). The previous `LOG`
    /// becomes `LOG.old`. Never fails: a `LOG` that cannot be created leaves logging off.
    pub(crate) fn open(config: &InfoLog, fs: &Arc<dyn Fs>, dir: &Path) -> InfoLogger {
        let sink = match config {
            InfoLog::Off => Sink::Off,
            InfoLog::Custom(logger) => Sink::Custom(Arc::clone(logger)),
            InfoLog::File { max_bytes } => {
                let mut file = LogFile {
                    fs: Arc::clone(fs),
                    dir: dir.to_path_buf(),
                    file: None,
                    written: 0,
                    max_bytes: *max_bytes,
                };
                file.rotate();
                Sink::File(Mutex::new(file))
            }
        };
        InfoLogger {
            sink,
            stalls: Mutex::new((Instant::now(), [0; 3])),
        }
    }

    /// Logs one event.
    pub(crate) fn log(&self, args: fmt::Arguments<'_>) {
        match &self.sink {
            Sink::Off => {}
            Sink::Custom(logger) => logger.log(&args.to_string()),
            Sink::File(file) => {
                let line = format!(
                    "{} {args}\n",
                    humantime::format_rfc3339_micros(SystemTime::now())
                );
                let mut file = file
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                file.append(line.as_bytes());
            }
        }
    }

    /// Reports write stalls (`counts`: slowdowns, stops, microseconds stalled, all since open
    /// or reopen) at most every ten seconds, as the increase since the last report.
    pub(crate) fn stalls(&self, counts: [u64; 3]) {
        let mut last = self
            .stalls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if last.0.elapsed() < STALL_REPORT_INTERVAL && last.1 != [0; 3] {
            return;
        }
        let [slow, stop, micros] = [0, 1, 2].map(|i| counts[i].saturating_sub(last.1[i]));
        *last = (Instant::now(), counts);
        drop(last);
        if slow + stop > 0 {
            self.log(format_args!(
                "write stalls since the last report: {slow} slowdowns, {stop} stops, {} ms",
                micros / 1000
            ));
        }
    }
}

impl LogFile {
    /// `LOG` -> `LOG.old`, and a new `LOG`.
    fn rotate(&mut self) {
        // Closed, not synced (as LevelDB's): a rotation may happen under the database mutex, and
        // the info log is a diagnostic, not data.
        drop(self.file.take());
        let (log, old) = (log_file(&self.dir), old_log_file(&self.dir));
        if self.fs.exists(&log) {
            let _ = self.fs.rename(&log, &old);
        }
        self.file = self.fs.create(&log).ok();
        self.written = 0;
    }

    fn append(&mut self, line: &[u8]) {
        if self.written >= self.max_bytes {
            self.rotate();
        }
        if let Some(f) = self.file.as_mut()
            && f.append(line).and_then(|()| f.flush()).is_ok()
        {
            self.written += line.len() as u64;
        }
    }
}

/// Logs a formatted line to an [`InfoLogger`]: `info!(logger, "flush: {n} bytes")`.
macro_rules! info {
    ($logger:expr, $($arg:tt)*) => {
        $logger.log(format_args!($($arg)*))
    };
}
pub(crate) use info;
