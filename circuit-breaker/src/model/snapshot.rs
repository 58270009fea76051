//! Save and restore the whole state (R3.7, B3): breakers, budget, ledger, step. An agent
//! that runs as separate processes keeps its breakers by saving a [`Snapshot`] with any serde
//! format and restoring it in the next process.
//!
//! Restoring checks the whole snapshot first and changes nothing unless all of it is valid:
//! never a half-restored state.

use std::collections::HashSet;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::model::breaker::BreakerRecord;
use crate::model::budget::Budget;
use crate::model::capability::{MapErrors, ToolSpec};
use crate::model::cascade::SystemicEvent;

/// The format tag every snapshot carries.
pub const SNAPSHOT_FORMAT: &str = "agent-circuit-breaker/snapshot";
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
    /// A step beyond [`MAX_STEP`]: an agent never gets there, so the file is corrupt or
    /// forged (and a step counter near the end of `u64` could wrap).
    Step {
        /// The step found.
        found: u64,
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
            RestoreError::Step { found } => {
                write!(f, "step {found} is beyond the last step ({MAX_STEP})")
            }
            RestoreError::Map(errors) => fmt::Display::fmt(errors, f),
        }
    }
}

impl std::error::Error for RestoreError {}

impl Snapshot {
    /// Checks everything a snapshot can be checked for on its own: the format and version,
    /// the budget's invariants, each breaker's, and that no tool appears twice. The specs of
    /// tools the expeditor does not know are checked when it is restored.
    ///
    /// # Errors
    /// The first problem found, as a [`RestoreError`].
    pub fn check(&self) -> Result<(), RestoreError> {
        if self.format != SNAPSHOT_FORMAT {
            return Err(RestoreError::Format {
                found: self.format.clone(),
            });
        }
        if self.version != SNAPSHOT_VERSION {
            return Err(RestoreError::Version {
                found: self.version,
                supported: SNAPSHOT_VERSION,
            });
        }
        if self.step > MAX_STEP {
            return Err(RestoreError::Step { found: self.step });
        }
        self.budget
            .check()
            .map_err(|problem| RestoreError::Budget { problem })?;
        let mut seen = HashSet::new();
        for tool in &self.tools {
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
        Ok(())
    }
}

/// The last step a snapshot may carry, 2^62: an agent stepping once a nanosecond would need
/// 146 years to reach it, and from it the step counter has as far again to go before it could
/// wrap, so [`Expeditor::advance_step`](crate::Expeditor::advance_step) is one plain atomic
/// increment.
pub const MAX_STEP: u64 = 1 << 62;

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
