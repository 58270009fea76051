//! Snapshots (R3.7, B3): the whole state as a value, restored whole or not at all, and saved
//! to a file durably.

use super::Expeditor;
use crate::model::snapshot::{RestoreError, Snapshot};

impl Expeditor {
    /// The whole state as a serializable value (R3.7). Probes in flight are not saved: a probe
    /// belongs to the process that issued it, so a restored HALF-OPEN tool has its slot free.
    pub fn snapshot(&self) -> Snapshot {
        let engine = self.lock();
        let view = self.view(&engine);
        engine.snapshot(self.step(), |id| view.record(id))
    }

    /// Restores a saved state (R3.7): every breaker, the budget and ledger, the step. Tools in
    /// the snapshot that this expeditor does not know are registered with their saved spec;
    /// known tools keep the spec they have now; known tools absent from the snapshot start
    /// fresh (CLOSED). If this expeditor's budget differs from the saved one, the ledger is
    /// charged again against the current budget.
    ///
    /// # Errors
    /// A [`RestoreError`] when any part of the snapshot is invalid; then nothing changes.
    pub fn restore(&self, snapshot: &Snapshot) -> Result<(), RestoreError> {
        self.command(|engine, changes, _| engine.restore(snapshot, changes))
            .map(|_| ())
    }

    /// Saves [`snapshot`](Self::snapshot) to `path` as JSON, durably: a new file is written and
    /// synced, then renamed over the old one, so a crash mid-save keeps the previous state.
    ///
    /// # Errors
    /// [`SnapshotFileError::Io`](crate::snapshot::SnapshotFileError::Io) when the file cannot be
    /// written.
    #[cfg(feature = "json")]
    pub fn save(
        &self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<(), crate::model::snapshot::SnapshotFileError> {
        self.snapshot().save(path)
    }

    /// Restores the snapshot saved at `path` (see [`restore`](Self::restore)); nothing changes
    /// unless the whole file is a valid snapshot.
    ///
    /// # Errors
    /// A [`SnapshotFileError`](crate::snapshot::SnapshotFileError): the file could not be read, is not
    /// a snapshot, or does not restore.
    #[cfg(feature = "json")]
    pub fn restore_from(
        &self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<(), crate::model::snapshot::SnapshotFileError> {
        let snapshot = Snapshot::load(path)?;
        self.restore(&snapshot)
            .map_err(crate::model::snapshot::SnapshotFileError::Restore)
    }
}
