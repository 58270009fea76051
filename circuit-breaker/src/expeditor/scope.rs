//! Scope (R5): which sub-tasks can be done with the tools that work, and the sub-task being
//! worked on.

use super::Expeditor;
use crate::model::scope::{ScopeError, ScopeReport, Task};

impl Expeditor {
    /// The scope now (R5.1, R5.2): which sub-tasks can be done with the tools that work —
    /// every needed tool CLOSED or with a usable alternative — and which are deferred, why,
    /// and what would unblock them. A query: it changes nothing (see
    /// [`reduce_scope`](Self::reduce_scope)).
    pub fn scope(&self, task: &Task) -> ScopeReport {
        self.lock().scope_report(task)
    }

    /// Acts on the scope (R5.4): when every remaining sub-task is deferred, every call
    /// pauses (until a later reduction finds work, or a new cycle); when work is achievable
    /// again, that pause lifts. Returns the report it acted on, under the same lock.
    pub fn reduce_scope(&self, task: &Task) -> ScopeReport {
        self.command(|engine, changes, _| engine.reduce_scope(task, changes))
    }

    /// Starts work on sub-task `number`: the scope is reduced first (as
    /// [`reduce_scope`](Self::reduce_scope)); a deferred sub-task is refused, and then its
    /// tools are refused too (SKIP) until another sub-task begins or
    /// [`end_subtask`](Self::end_subtask) (R5.3). All under one lock.
    ///
    /// # Errors
    /// [`ScopeError::Deferred`] with why and what would unblock it, or
    /// [`ScopeError::NoSuchSubTask`].
    pub fn begin_subtask(&self, task: &Task, number: usize) -> Result<(), ScopeError> {
        self.command(|engine, changes, _| engine.begin_subtask(task, number, changes))
    }

    /// Ends work on the current sub-task: a deferred one no longer holds its tools back.
    pub fn end_subtask(&self) {
        self.command(|engine, changes, _| engine.end_subtask(changes));
    }

    /// The deferred sub-task being worked on, if any.
    pub fn deferred_subtask(&self) -> Option<usize> {
        self.lock().deferred_subtask()
    }
}
