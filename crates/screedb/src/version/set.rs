//! The version set: the current version, the file-number counter, and the MANIFEST.
//!
//! The MANIFEST is a log (see [`crate::wal`]) of [`VersionEdit`] records. The first record of a
//! manifest is a snapshot of the whole state; every later record is a delta. `CURRENT` names the
//! live manifest and is replaced atomically (write a temp file, sync it, rename it over CURRENT,
//! sync the directory). A new manifest is started at every open and whenever the current one grows
//! past `max_manifest_file_size`.
//!
//! REQUIRES: every method is called under the database mutex.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Version, VersionBuilder};
use crate::comparator::InternalKeyComparator;
use crate::error::{Error, Result};
use crate::filename;
use crate::fs::{self, Fs};
use crate::key::SequenceNumber;
use crate::layout::LayoutKind;
use crate::manifest::VersionEdit;
use crate::options::Options;
use crate::table::TableCache;
use crate::version::obsolete::ObsoleteFiles;
use crate::wal::{LogReader, LogWriter, RecoveryMode};

/// The state recovered from a manifest that the database needs besides the version.
#[derive(Debug, Clone, Default)]
pub struct RecoveredState {
    /// Oldest WAL that may hold writes not yet in a table.
    pub log_number: u64,
    /// An older WAL still needed (compatibility with LevelDB's prev_log_number; 0 = none).
    pub prev_log_number: u64,
    /// Sequence number of the first write in WAL `log_number` (unknown in MANIFESTs from
    /// before it was recorded).
    pub log_start: Option<u64>,
}

/// An edit ready to be written to the MANIFEST ([`VersionSet::prepare`]): its version, its
/// encoded record, and the manifest writer, held until [`VersionSet::install`].
#[derive(Debug)]
pub struct PreparedEdit {
    edit: VersionEdit,
    version: Version,
    record: Vec<u8>,
    writer: LogWriter,
}

impl PreparedEdit {
    /// Appends the record to the MANIFEST and syncs it: the I/O of an edit, which needs no lock.
    pub fn write(&mut self) -> Result<()> {
        self.writer.add_record(&self.record)?;
        self.writer.sync()
    }
}

/// The current version, counters and the manifest writer.
pub struct VersionSet {
    fs: Arc<dyn Fs>,
    dir: PathBuf,
    icmp: InternalKeyComparator,
    max_manifest_size: u64,
    current: Arc<Version>,
    next_file_number: u64,
    last_sequence: SequenceNumber,
    log_number: u64,
    prev_log_number: u64,
    log_start: Option<SequenceNumber>,
    manifest: Option<LogWriter>,
    manifest_number: u64,
    stats: BTreeMap<String, u64>,
    /// The layout the database must have (`None`: whatever is stored).
    expected_layout: Option<LayoutKind>,
    obsolete: Arc<ObsoleteFiles>,
}

impl std::fmt::Debug for VersionSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VersionSet")
            .field("dir", &self.dir)
            .field("next_file_number", &self.next_file_number)
            .field("last_sequence", &self.last_sequence)
            .field("log_number", &self.log_number)
            .field("manifest_number", &self.manifest_number)
            .finish_non_exhaustive()
    }
}

impl VersionSet {
    /// An empty version set for the database in `dir`, whose tables are opened through `tables`.
    /// `layout` is the layout a new database gets and an existing one must have; `None` (for
    /// read-only tools) takes the stored one.
    pub fn new(
        fs: Arc<dyn Fs>,
        dir: PathBuf,
        icmp: InternalKeyComparator,
        tables: Arc<TableCache>,
        options: &Options,
        layout: Option<LayoutKind>,
    ) -> Self {
        let obsolete = Arc::new(ObsoleteFiles::new(Arc::clone(&fs), dir.clone(), tables));
        let (num_levels, max_manifest_size) = (options.num_levels, options.max_manifest_file_size);
        let kind = layout.unwrap_or(LayoutKind::Flsm);
        let mut empty = Version::empty(icmp.clone(), kind, num_levels, Arc::clone(&obsolete));
        if kind.is_hashed() {
            // A new database's seed; recovering an existing one replaces it with the stored.
            empty.hash_seed = crate::layout::trie::new_hash_seed();
        }
        let current = Arc::new(empty);
        VersionSet {
            fs,
            dir,
            icmp,
            max_manifest_size,
            current,
            next_file_number: 2,
            last_sequence: 0,
            log_number: 0,
            prev_log_number: 0,
            log_start: None,
            manifest: None,
            manifest_number: 0,
            stats: BTreeMap::new(),
            expected_layout: layout,
            obsolete,
        }
    }

    /// Reads CURRENT and the manifest it names, rebuilding the current version.
    pub fn recover(&mut self) -> Result<RecoveredState> {
        let current_path = filename::current_file(&self.dir);
        let current = fs::read_all(self.fs.as_ref(), &current_path)?;
        let name = std::str::from_utf8(&current)
            .ok()
            .and_then(|s| s.strip_suffix('\n'))
            .filter(|s| matches!(filename::parse(s), Some(filename::FileKind::Manifest(_))))
            .ok_or_else(|| {
                Error::corruption(&current_path, 0, "CURRENT does not name a manifest")
            })?;
        let Some(filename::FileKind::Manifest(manifest_number)) = filename::parse(name) else {
            return Err(Error::corruption(
                &current_path,
                0,
                "CURRENT does not name a manifest",
            ));
        };
        let path = self.dir.join(name);
        let file = self.fs.open(&path)?;
        // A torn last edit was never acknowledged (edits are synced before they take effect).
        let mut reader = LogReader::new(file, path.clone(), RecoveryMode::TolerateTornTail);
        let mut edits = Vec::new();
        while let Some(record) = reader.read_record()? {
            let offset = reader.last_record_offset();
            edits.push((VersionEdit::decode(&record, &path, offset)?, offset));
        }
        let missing =
            |what: &str| Error::corruption(&path, 0, format!("manifest records no {what}"));
        // The first record names the comparator and the layout: without it, the stored layout
        // is unknown (a damaged first record is corruption, never a layout mismatch).
        if !edits.iter().any(|(e, _)| e.comparator.is_some()) {
            return Err(missing(
                "comparator (its first record, which names the comparator and the layout, is \
                 missing or damaged)",
            ));
        }
        // Manifests written before the layout tag existed are leveled.
        let stored = edits
            .iter()
            .find_map(|(e, _)| e.layout)
            .unwrap_or(LayoutKind::Leveled);
        if let Some(given) = self.expected_layout
            && given != stored
        {
            return Err(Error::LayoutMismatch { stored, given });
        }
        let base = Version::empty(
            self.icmp.clone(),
            stored,
            self.current.num_levels(),
            Arc::clone(&self.obsolete),
        );
        let mut builder = VersionBuilder::new(&base);
        let (mut next_file, mut last_seq, mut log_number, mut prev_log) = (None, None, None, None);
        let mut log_start = None;
        for (edit, offset) in edits {
            if let Some(name) = &edit.comparator
                && name != self.icmp.user().name()
            {
                return Err(Error::ComparatorMismatch {
                    stored: name.clone(),
                    given: self.icmp.user().name().to_owned(),
                });
            }
            builder
                .apply(&edit)
                .map_err(|reason| Error::corruption(&path, offset, reason))?;
            next_file = edit.next_file_number.or(next_file);
            last_seq = edit.last_sequence.or(last_seq);
            log_number = edit.log_number.or(log_number);
            prev_log = edit.prev_log_number.or(prev_log);
            // A log number without a start (an edit from an older build) voids an older start.
            if edit.log_number.is_some() {
                log_start = edit.log_start;
            }
            for (name, value) in edit.stats {
                self.stats.insert(name, value);
            }
        }
        let version = builder.build();
        version
            .check_invariants()
            .map_err(|reason| Error::corruption(&path, 0, reason))?;
        self.current = Arc::new(version);
        self.next_file_number = next_file
            .ok_or_else(|| missing("next file number"))?
            .max(manifest_number + 1);
        self.last_sequence = last_seq.ok_or_else(|| missing("last sequence"))?;
        self.log_number = log_number.ok_or_else(|| missing("log number"))?;
        self.prev_log_number = prev_log.unwrap_or(0);
        self.log_start = log_start;
        self.manifest_number = manifest_number;
        Ok(RecoveredState {
            log_number: self.log_number,
            prev_log_number: self.prev_log_number,
            log_start: self.log_start,
        })
    }

    /// Starts a new manifest holding a snapshot of the current state and points CURRENT at it.
    /// The previous manifest is removed.
    pub fn write_new_manifest(&mut self) -> Result<()> {
        let number = self.new_file_number();
        let path = filename::manifest_file(&self.dir, number);
        let mut writer = LogWriter::new(self.fs.create(&path)?);
        let mut snapshot = self.snapshot_edit();
        snapshot.next_file_number = Some(self.next_file_number);
        let mut record = Vec::new();
        snapshot.encode(&mut record);
        writer.add_record(&record)?;
        writer.sync()?;
        self.set_current(number)?;
        let old = std::mem::replace(&mut self.manifest_number, number);
        self.manifest = Some(writer);
        if old != 0 {
            // Best effort: a leftover manifest is removed by the sweep at the next open.
            let _ = self.fs.remove(&filename::manifest_file(&self.dir, old));
        }
        Ok(())
    }

    fn set_current(&self, manifest_number: u64) -> Result<()> {
        let tmp = filename::temp_file(&self.dir, manifest_number);
        let contents = format!("{}\n", filename::manifest_name(manifest_number));
        fs::write_all_synced(self.fs.as_ref(), &tmp, contents.as_bytes())?;
        self.fs.rename(&tmp, &filename::current_file(&self.dir))?;
        self.fs.sync_dir(&self.dir)
    }

    fn snapshot_edit(&self) -> VersionEdit {
        let mut edit = VersionEdit {
            comparator: Some(self.icmp.user().name().to_owned()),
            layout: Some(self.current.layout()),
            hash_seed: self
                .current
                .layout()
                .is_hashed()
                .then(|| self.current.hash_seed()),
            log_number: Some(self.log_number),
            prev_log_number: Some(self.prev_log_number),
            log_start: self.log_start,
            next_file_number: Some(self.next_file_number),
            last_sequence: Some(self.last_sequence),
            stats: self.stats.iter().map(|(k, v)| (k.clone(), *v)).collect(),
            ..VersionEdit::default()
        };
        for level in 0..self.current.num_levels() {
            for f in self.current.files(level) {
                edit.new_files.push((level as u32, FileMeta::clone(f)));
            }
            for g in self.current.guards(level) {
                edit.added_guards.push((level as u32, g.clone()));
            }
        }
        edit
    }

    /// Writes `edit` to the manifest (synced) and installs the resulting version.
    /// Tables the edit removes are marked for deletion once unreferenced.
    pub fn log_and_apply(&mut self, edit: VersionEdit) -> Result<()> {
        let mut prepared = self.prepare(edit)?;
        let written = prepared.write();
        self.install(prepared, written)
    }

    /// The first step of [`VersionSet::log_and_apply`], for a caller that writes the record
    /// without holding its lock (`db::manifest_write`): builds and checks the version `edit`
    /// makes, encodes the record and takes the manifest writer, which
    /// [`VersionSet::install`] gives back. Until then no other edit can be prepared (it fails
    /// with [`Error::Closed`]): the caller lets one edit be in flight at a time, so the version
    /// the edit was built on is still the current one at install.
    pub fn prepare(&mut self, mut edit: VersionEdit) -> Result<PreparedEdit> {
        if let Some(n) = edit.log_number {
            debug_assert!(n >= self.log_number);
        }
        edit.next_file_number = Some(self.next_file_number);
        edit.last_sequence = Some(self.last_sequence);
        let mut builder = VersionBuilder::new(&self.current);
        builder.apply(&edit).map_err(Error::invalid)?;
        // A job removes only tables the current version holds where it says: anything else is
        // two jobs racing for one table, which must stop the database, not lose a table.
        if let Some((level, number)) = edit.deleted_files.iter().find(|&&(level, number)| {
            !self
                .current
                .files(level as usize)
                .iter()
                .any(|f| f.number == number)
        }) {
            return Err(Error::invalid(format!(
                "edit removes table {number} from level {level}, which does not hold it"
            )));
        }
        let version = builder.build();
        if let Err(reason) = version.check_invariants() {
            return Err(Error::invalid(format!(
                "edit would break the version invariants: {reason}"
            )));
        }
        let mut record = Vec::new();
        edit.encode(&mut record);
        let writer = self.manifest.take().ok_or(Error::Closed)?;
        Ok(PreparedEdit {
            edit,
            version,
            record,
            writer,
        })
    }

    /// The last step of [`VersionSet::log_and_apply`]: takes the manifest writer back and, if
    /// `written` (the result of `PreparedEdit::write`) is Ok, makes the edit's version current.
    pub fn install(&mut self, prepared: PreparedEdit, written: Result<()>) -> Result<()> {
        let PreparedEdit {
            edit,
            version,
            writer,
            ..
        } = prepared;
        self.manifest = Some(writer);
        written?;
        let added: HashSet<u64> = edit.new_files.iter().map(|(_, f)| f.number).collect();
        for &(_, number) in &edit.deleted_files {
            if !added.contains(&number) {
                self.obsolete.mark(number);
            }
        }
        if let Some(n) = edit.log_number {
            self.log_number = n;
            self.log_start = edit.log_start;
        }
        if let Some(n) = edit.prev_log_number {
            self.prev_log_number = n;
        }
        for (name, value) in edit.stats {
            self.stats.insert(name, value);
        }
        self.current = Arc::new(version);
        if writer_size(&self.manifest) > self.max_manifest_size {
            self.write_new_manifest()?;
        }
        Ok(())
    }

    /// Allocates a file number.
    pub fn new_file_number(&mut self) -> u64 {
        let n = self.next_file_number;
        self.next_file_number += 1;
        n
    }

    /// Makes `number` (seen on disk) never be reused.
    pub fn mark_file_number_used(&mut self, number: u64) {
        self.next_file_number = self.next_file_number.max(number + 1);
    }

    /// The tables waiting for deletion (see [`ObsoleteFiles::purge`]).
    pub fn obsolete_files(&self) -> &Arc<ObsoleteFiles> {
        &self.obsolete
    }

    /// The current version.
    pub fn current(&self) -> Arc<Version> {
        Arc::clone(&self.current)
    }

    /// Last sequence number recorded.
    pub fn last_sequence(&self) -> SequenceNumber {
        self.last_sequence
    }

    /// Sets the last sequence number (recorded with the next edit).
    pub fn set_last_sequence(&mut self, seq: SequenceNumber) {
        debug_assert!(seq >= self.last_sequence);
        self.last_sequence = seq;
    }

    /// Oldest WAL still needed.
    pub fn log_number(&self) -> u64 {
        self.log_number
    }

    /// Number of the live manifest.
    pub fn manifest_number(&self) -> u64 {
        self.manifest_number
    }

    /// Persisted counters as last recorded.
    pub fn persisted_stats(&self) -> &BTreeMap<String, u64> {
        &self.stats
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

fn writer_size(w: &Option<LogWriter>) -> u64 {
    w.as_ref().map_or(0, LogWriter::size)
}

use crate::manifest::FileMeta;
