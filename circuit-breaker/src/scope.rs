//! The task and its sub-tasks (seed step 5): each sub-task names the tools it needs and
//! carries its progress, which feeds the pause report's completed and incomplete work (R7.3).

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a sub-task stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum WorkStatus {
    /// Not started.
    NotAttempted,
    /// Finished successfully.
    Done,
    /// Attempted and failed, with the reason (e.g. `Bash circuit OPEN`).
    Failed {
        /// Why it failed.
        reason: String,
    },
}

/// One sub-task: a title, the tools it needs, its progress.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubTask {
    /// What the sub-task does.
    pub title: String,
    /// The tools it needs, by name.
    pub needs: Vec<String>,
    /// Its progress.
    pub status: WorkStatus,
}

/// A task split into numbered sub-tasks (numbered from 1, in the order added).
///
/// ```
/// use circuit_breaker::Task;
/// let mut task = Task::new()
///     .subtask("Read configuration files", ["Read"])
///     .subtask("Run test suite", ["Bash"]);
/// task.done(1)?;
/// task.failed(2, "Bash circuit OPEN")?;
/// # Ok::<(), circuit_breaker::ScopeError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    subtasks: Vec<SubTask>,
}

impl Task {
    /// An empty task.
    pub fn new() -> Self {
        Task::default()
    }

    /// Adds a sub-task needing `needs`.
    #[must_use]
    pub fn subtask<I, S>(mut self, title: impl Into<String>, needs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.subtasks.push(SubTask {
            title: title.into(),
            needs: needs.into_iter().map(Into::into).collect(),
            status: WorkStatus::NotAttempted,
        });
        self
    }

    /// The sub-tasks, in order.
    pub fn subtasks(&self) -> &[SubTask] {
        &self.subtasks
    }

    /// Marks sub-task `number` (from 1) done.
    ///
    /// # Errors
    /// [`ScopeError`] when no sub-task has that number.
    pub fn done(&mut self, number: usize) -> Result<(), ScopeError> {
        self.set(number, WorkStatus::Done)
    }

    /// Marks sub-task `number` (from 1) failed, with the reason.
    ///
    /// # Errors
    /// [`ScopeError`] when no sub-task has that number.
    pub fn failed(&mut self, number: usize, reason: impl Into<String>) -> Result<(), ScopeError> {
        self.set(
            number,
            WorkStatus::Failed {
                reason: reason.into(),
            },
        )
    }

    fn set(&mut self, number: usize, status: WorkStatus) -> Result<(), ScopeError> {
        let count = self.subtasks.len();
        let subtask = number
            .checked_sub(1)
            .and_then(|i| self.subtasks.get_mut(i))
            .ok_or(ScopeError::NoSuchSubTask { number, count })?;
        subtask.status = status;
        Ok(())
    }
}

/// A sub-task number that does not exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScopeError {
    /// Sub-tasks are numbered 1 to `count`.
    NoSuchSubTask {
        /// The number asked for.
        number: usize,
        /// How many sub-tasks the task has.
        count: usize,
    },
}

impl fmt::Display for ScopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScopeError::NoSuchSubTask { number, count } => write!(
                f,
                "no sub-task {number}: the task has sub-tasks 1 to {count}"
            ),
        }
    }
}

impl std::error::Error for ScopeError {}
