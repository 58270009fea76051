//! Save and restore the whole state (SPEC R3.7, B3): breakers, budget, ledger, step. An agent
//! that runs as separate processes keeps its breakers by saving a [`Snapshot`] with any serde
//! format and restoring it in the next process.
//!
//! Restoring checks the whole snapshot first and changes nothing unless all of it is valid:
//! never a half-restored state.

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::breaker::BreakerRecord;
use crate::budget::Budget;
use crate::capability::{MapErrors, ToolSpec, check_tool};
use crate::cascade::{Cascade, SystemicEvent};
use crate::event::Event;
use crate::expeditor::{Core, Expeditor, PauseReason, ToolId};

/// The format tag every snapshot carries.
pub const SNAPSHOT_FORMAT: &str = "circuit-breaker/snapshot";
/// The snapshot version this crate writes and reads.
pub const SNAPSHOT_VERSION: u32 = 1;

/// The saved state of an expeditor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// Always [`SNAPSHOT_FORMAT`].
    pub format: String,
    /// [`SNAPSHOT_VERSION`] when written by this crate.
    pub version: u32,
    /// The agent's step.
    pub step: u64,
    /// The budget of the current cycle, with its ledger.
    pub budget: Budget,
    /// Every tool, in registration order, with its spec and breaker.
    pub tools: Vec<ToolSnapshot>,
    /// The systemic failure in force or last seen (R9): a paused agent stays paused across
    /// processes until recovery is confirmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub systemic: Option<SystemicEvent>,
}

/// One tool in a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSnapshot {
    /// The tool's spec, so tools discovered at run time come back too.
    pub spec: ToolSpec,
    /// Its breaker.
    pub breaker: BreakerRecord,
}

/// Why a snapshot was not restored. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RestoreError {
    /// Not a circuit-breaker snapshot.
    Format {
        /// The format tag found.
        found: String,
    },
    /// A version this crate does not read.
    Version {
        /// The version found.
        found: u32,
        /// The version this crate reads.
        supported: u32,
    },
    /// The same tool twice.
    DuplicateTool {
        /// The tool.
        tool: String,
    },
    /// A breaker that breaks an invariant.
    Breaker {
        /// The tool.
        tool: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// A budget that breaks an invariant.
    Budget {
        /// What is wrong.
        problem: &'static str,
    },
    /// A tool unknown to this expeditor whose spec is invalid.
    Map(MapErrors),
}

impl fmt::Display for RestoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("snapshot not restored (state unchanged): ")?;
        match self {
            RestoreError::Format { found } => write!(
                f,
                "format `{}` is not `{SNAPSHOT_FORMAT}`",
                found.chars().take(64).collect::<String>()
            ),
            RestoreError::Version { found, supported } => {
                write!(
                    f,
                    "version {found} is not supported (this crate reads {supported})"
                )
            }
            RestoreError::DuplicateTool { tool } => write!(f, "tool `{tool}` appears twice"),
            RestoreError::Breaker { tool, problem } => write!(f, "breaker of `{tool}`: {problem}"),
            RestoreError::Budget { problem } => write!(f, "budget: {problem}"),
            RestoreError::Map(errors) => fmt::Display::fmt(errors, f),
        }
    }
}

impl std::error::Error for RestoreError {}

impl Expeditor {
    /// Replaces every record by the snapshot's (fresh CLOSED for tools it does not name);
    /// epochs move on so that no ticket issued before the restore matches a record after it.
    fn apply_records(&self, core: &mut Core, snapshot: &Snapshot) {
        for record in &mut core.records {
            let epoch = record.epoch.wrapping_add(1);
            *record = BreakerRecord {
                epoch,
                ..BreakerRecord::default()
            };
        }
        for tool in &snapshot.tools {
            let Some(&id) = core.names.get(tool.spec.name()) else {
                continue;
            };
            let record = &mut core.records[id.index() as usize];
            let epoch = record.epoch;
            *record = BreakerRecord {
                probe: None,
                epoch,
                ..tool.breaker.clone()
            };
        }
        for precheck in &mut core.prechecks {
            precheck.result = None;
        }
        for (i, record) in core.records.iter().enumerate() {
            if let Some(slot) = u32::try_from(i)
                .ok()
                .and_then(|i| self.slot(ToolId::from_index(i)))
            {
                slot.hot.reset_attempts(record.attempts_since_open);
            }
        }
        self.sync_all(core);
    }

    /// Registers the snapshot's tools this expeditor does not know, with ids planned ahead so
    /// that they may name each other as alternatives. Called after every check passed.
    fn register_new_tools(&self, core: &mut Core, snapshot: &Snapshot) {
        // All checked: apply. New tools first, with ids planned ahead so that they may
        // name each other as alternatives.
        let new: Vec<&ToolSnapshot> = snapshot
            .tools
            .iter()
            .filter(|t| !core.names.contains_key(t.spec.name()))
            .collect();
        let first_new = core.records.len();
        let planned: HashMap<&str, ToolId> = new
            .iter()
            .enumerate()
            .filter_map(|(k, t)| {
                let id = u32::try_from(first_new + k).ok()?;
                Some((t.spec.name(), ToolId::from_index(id)))
            })
            .collect();
        for tool in &new {
            let alternatives: Box<[ToolId]> = tool
                .spec
                .alternatives()
                .iter()
                .filter_map(|a| {
                    core.names
                        .get(a.tool())
                        .or_else(|| planned.get(a.tool()))
                        .copied()
                })
                .collect();
            self.push_tool(core, tool.spec.clone(), alternatives);
        }
    }

    /// The whole state as a serializable value (R3.7). Probes in flight are not saved: a probe
    /// belongs to the process that issued it, so a restored HALF-OPEN tool has its slot free.
    pub fn snapshot(&self) -> Snapshot {
        let core = self.lock();
        let tools = core
            .records
            .iter()
            .enumerate()
            .filter_map(|(i, record)| {
                let slot = self.slot(ToolId::from_index(u32::try_from(i).ok()?))?;
                Some(ToolSnapshot {
                    spec: slot.spec.clone(),
                    breaker: self.record_view(ToolId::from_index(u32::try_from(i).ok()?), record),
                })
            })
            .collect();
        Snapshot {
            format: SNAPSHOT_FORMAT.to_owned(),
            version: SNAPSHOT_VERSION,
            step: self.step(),
            budget: core.budget.clone(),
            systemic: core.cascade.event.clone(),
            tools,
        }
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
        if snapshot.format != SNAPSHOT_FORMAT {
            return Err(RestoreError::Format {
                found: snapshot.format.clone(),
            });
        }
        if snapshot.version != SNAPSHOT_VERSION {
            return Err(RestoreError::Version {
                found: snapshot.version,
                supported: SNAPSHOT_VERSION,
            });
        }
        snapshot
            .budget
            .check()
            .map_err(|problem| RestoreError::Budget { problem })?;
        let mut seen = HashSet::new();
        for tool in &snapshot.tools {
            if !seen.insert(tool.spec.name()) {
                return Err(RestoreError::DuplicateTool {
                    tool: tool.spec.name().to_owned(),
                });
            }
            tool.breaker
                .check()
                .map_err(|problem| RestoreError::Breaker {
                    tool: tool.spec.name().to_owned(),
                    problem,
                })?;
        }
        let mut budget = snapshot.budget.clone();
        budget.rebase(self.policy().budget());
        let halt = budget
            .status()
            .is_exhausted()
            .then_some(PauseReason::BudgetExhausted {
                consumed: budget.consumed,
                limit: budget.limit,
            });

        let count = {
            let mut core = self.lock();
            // Check the unknown tools' specs against every name they may refer to.
            let mut names = self.names_in_order(&core);
            names.extend(snapshot.tools.iter().map(|t| t.spec.name()));
            let mut errors = Vec::new();
            for (index, tool) in snapshot.tools.iter().enumerate() {
                if !core.names.contains_key(tool.spec.name()) {
                    if tool.spec.name().trim().is_empty() {
                        errors.push(crate::MapError::EmptyName { index });
                    }
                    check_tool(&tool.spec, index, &names, &mut errors);
                }
            }
            if !errors.is_empty() {
                return Err(RestoreError::Map(MapErrors(errors)));
            }
            self.register_new_tools(&mut core, snapshot);
            self.apply_records(&mut core, snapshot);
            core.budget = budget;
            core.cascade = Cascade::default();
            core.shares = None;
            let mut halt = halt;
            if let Some(event) = &snapshot.systemic {
                core.cascade.involved = event
                    .tools
                    .iter()
                    .filter_map(|t| core.names.get(t.as_str()).copied())
                    .collect();
                if !event.recovered {
                    halt = Some(PauseReason::Systemic {
                        category: event.category,
                    });
                }
                core.cascade.event = Some(event.clone());
            }
            core.halt = halt;
            core.deferred = None;
            self.set_step(snapshot.step);
            self.sync_all(&core);
            snapshot.tools.len()
        };
        self.emit(&[Event::Restored {
            tools: count,
            step: snapshot.step,
        }]);
        Ok(())
    }
}

/// Why a snapshot file was not saved or not restored. When restoring, nothing was changed.
#[cfg(feature = "json")]
#[derive(Debug)]
#[non_exhaustive]
pub enum SnapshotFileError {
    /// The file could not be read or written.
    Io {
        /// The file.
        path: std::path::PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file is not a snapshot: truncated, corrupted, or another format.
    Decode {
        /// The file.
        path: std::path::PathBuf,
        /// What the decoder said.
        message: String,
    },
    /// The file is a snapshot, but not one this expeditor can take.
    Restore(RestoreError),
}

#[cfg(feature = "json")]
impl fmt::Display for SnapshotFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotFileError::Io { path, source } => {
                write!(f, "snapshot file {}: {source}", path.display())
            }
            SnapshotFileError::Decode { path, message } => write!(
                f,
                "snapshot file {} is not a snapshot (state unchanged): {message}",
                path.display()
            ),
            SnapshotFileError::Restore(error) => fmt::Display::fmt(error, f),
        }
    }
}

#[cfg(feature = "json")]
impl std::error::Error for SnapshotFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SnapshotFileError::Io { source, .. } => Some(source),
            SnapshotFileError::Decode { .. } => None,
            SnapshotFileError::Restore(error) => Some(error),
        }
    }
}

#[cfg(feature = "json")]
impl Snapshot {
    /// Writes the snapshot to `path` durably (R3.7): into a new file beside it, synced, then
    /// renamed over the old one, and the directory synced. A process killed mid-save leaves
    /// the previous file whole.
    ///
    /// # Errors
    /// [`SnapshotFileError::Io`] when the file cannot be written; the previous file is kept.
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> Result<(), SnapshotFileError> {
        use std::io::Write as _;
        use std::sync::atomic::{AtomicU64, Ordering};
        static SAVES: AtomicU64 = AtomicU64::new(0);
        let path = path.as_ref();
        let io = |source| SnapshotFileError::Io {
            path: path.to_owned(),
            source,
        };
        let bytes = serde_json::to_vec(self).map_err(|e| io(std::io::Error::other(e)))?;
        let name = path.file_name().map_or_else(
            || std::ffi::OsString::from("snapshot"),
            std::ffi::OsStr::to_os_string,
        );
        let mut temp_name = name;
        temp_name.push(format!(
            ".tmp.{}.{}",
            std::process::id(),
            SAVES.fetch_add(1, Ordering::Relaxed)
        ));
        let temp = path.with_file_name(temp_name);
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::File::create(&temp)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            std::fs::rename(&temp, path)?;
            // The rename itself is durable once the directory is synced (where it can be).
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
                && let Ok(dir) = std::fs::File::open(dir)
            {
                let _ = dir.sync_all();
            }
            Ok(())
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&temp);
            io(e)
        })
    }

    /// Reads a snapshot written by [`save`](Self::save).
    ///
    /// # Errors
    /// [`SnapshotFileError::Io`] when the file cannot be read, [`SnapshotFileError::Decode`]
    /// when it is not a whole snapshot.
    pub fn load(path: impl AsRef<std::path::Path>) -> Result<Snapshot, SnapshotFileError> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|source| SnapshotFileError::Io {
            path: path.to_owned(),
            source,
        })?;
        serde_json::from_slice(&bytes).map_err(|e| SnapshotFileError::Decode {
            path: path.to_owned(),
            message: e.to_string(),
        })
    }
}

#[cfg(feature = "json")]
impl Expeditor {
    /// Saves the whole state to `path`, durably (see [`Snapshot::save`]).
    ///
    /// # Errors
    /// [`SnapshotFileError::Io`] when the file cannot be written.
    pub fn save(&self, path: impl AsRef<std::path::Path>) -> Result<(), SnapshotFileError> {
        self.snapshot().save(path)
    }

    /// Restores the whole state from a file written by [`save`](Self::save); nothing changes
    /// unless the whole file is a valid snapshot for this expeditor.
    ///
    /// # Errors
    /// A [`SnapshotFileError`] saying what is wrong with the file.
    pub fn restore_from(&self, path: impl AsRef<std::path::Path>) -> Result<(), SnapshotFileError> {
        let snapshot = Snapshot::load(path)?;
        self.restore(&snapshot).map_err(SnapshotFileError::Restore)
    }
}
