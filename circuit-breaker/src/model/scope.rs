//! The task and its sub-tasks (step 5 of the source document): each sub-task names the tools it needs and
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
    /// Not attempted because it is deferred (R5.1): a tool it needs is not working.
    Deferred {
        /// Why (e.g. `requires Bash (circuit OPEN)`).
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
/// use agent_circuit_breaker::Task;
/// let mut task = Task::new()
///     .subtask("Read configuration files", ["Read"])
///     .subtask("Run test suite", ["Bash"]);
/// task.done(1)?;
/// task.failed(2, "Bash circuit OPEN")?;
/// # Ok::<(), agent_circuit_breaker::scope::ScopeError>(())
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

    /// Marks sub-task `number` (from 1) deferred, with the reason.
    ///
    /// # Errors
    /// [`ScopeError`] when no sub-task has that number.
    pub fn defer(&mut self, number: usize, reason: impl Into<String>) -> Result<(), ScopeError> {
        self.set(
            number,
            WorkStatus::Deferred {
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

/// A sub-task that does not exist, or cannot be worked on now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScopeError {
    /// Sub-tasks are numbered 1 to `count`.
    NoSuchSubTask {
        /// The number asked for.
        number: usize,
        /// How many sub-tasks the task has.
        count: usize,
    },
    /// The sub-task is deferred: its tools will not be called (R5.3).
    Deferred(Deferral),
}

impl fmt::Display for ScopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScopeError::NoSuchSubTask { number, count } => write!(
                f,
                "no sub-task {number}: the task has sub-tasks 1 to {count}"
            ),
            ScopeError::Deferred(d) => write!(
                f,
                "sub-task {} is deferred: it requires {} ({}) — {}",
                d.number,
                d.blocked_by,
                d.reason,
                d.unblock.replace('\n', " ")
            ),
        }
    }
}

impl std::error::Error for ScopeError {}

/// Where one needed tool stands, for the scope report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolStanding {
    /// The tool.
    pub tool: String,
    /// Its circuit's state.
    pub state: crate::model::breaker::CircuitState,
    /// Whether it blocks the sub-task.
    pub blocks: bool,
    /// Why it blocks, or how it is reached instead: `no alternative`, `via Bash`,
    /// `UNAVAILABLE — server down`.
    pub note: Option<String>,
}

impl fmt::Display for ToolStanding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.tool, self.state)?;
        match &self.note {
            Some(note) => write!(f, " — {note}"),
            None => Ok(()),
        }
    }
}

/// One sub-task in the scope report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeLine {
    /// Its number, from 1.
    pub number: usize,
    /// Its title.
    pub title: String,
    /// Whether it can be done with the tools that work (or already was).
    pub achievable: bool,
    /// Its progress.
    pub status: WorkStatus,
    /// Where each needed tool stands.
    pub tools: Vec<ToolStanding>,
}

/// A deferred sub-task: why, and what would unblock it (R5.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deferral {
    /// The sub-task's number.
    pub number: usize,
    /// The tool that blocks it.
    pub blocked_by: String,
    /// Why: `circuit OPEN`, `UNAVAILABLE`, `paused`.
    pub reason: String,
    /// What would unblock it: the next cycle's probe, or the tool's manual fallback.
    pub unblock: String,
}

/// The source document's "Scope Reduction Report" (R5.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeReport {
    /// Every sub-task, in order.
    pub lines: Vec<ScopeLine>,
    /// The deferred ones, in order.
    pub deferred: Vec<Deferral>,
}

impl ScopeReport {
    /// The numbers of the sub-tasks that can be done now.
    pub fn achievable(&self) -> impl Iterator<Item = usize> + '_ {
        self.lines.iter().filter(|l| l.achievable).map(|l| l.number)
    }

    /// Whether sub-task `number` is deferred.
    pub fn is_deferred(&self, number: usize) -> bool {
        self.deferred.iter().any(|d| d.number == number)
    }

    /// Every remaining sub-task deferred (R5.4): nothing can be done; pause and report.
    pub fn nothing_achievable(&self) -> bool {
        let mut remaining = self
            .lines
            .iter()
            .filter(|l| l.status != WorkStatus::Done)
            .peekable();
        remaining.peek().is_some() && remaining.all(|l| !l.achievable)
    }
}

/// `1, 2, 4` / `3 and 5` / `3, 5 and 6`.
fn numbers(list: &[usize], and: bool) -> String {
    let text: Vec<String> = list.iter().map(ToString::to_string).collect();
    match text.as_slice() {
        [head @ .., tail] if and && !head.is_empty() => format!("{} and {tail}", head.join(", ")),
        _ => text.join(", "),
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

impl ScopeReport {
    /// Deferred sub-tasks grouped by the tool that blocks them, in order of appearance.
    fn groups(&self) -> Vec<(&Deferral, Vec<usize>)> {
        let mut groups: Vec<(&Deferral, Vec<usize>)> = Vec::new();
        for d in &self.deferred {
            match groups
                .iter_mut()
                .find(|(g, _)| g.blocked_by == d.blocked_by && g.reason == d.reason)
            {
                Some((_, list)) => list.push(d.number),
                None => groups.push((d, vec![d.number])),
            }
        }
        groups
    }

    fn write_lines(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self
            .lines
            .iter()
            .map(|l| format!("{}. {}", l.number, l.title).chars().count() + 2)
            .max()
            .unwrap_or(0)
            .max(37);
        for line in &self.lines {
            let head = format!("{}. {}", line.number, line.title);
            let pad = width - head.chars().count();
            let tools: Vec<String> = line.tools.iter().map(ToString::to_string).collect();
            let mark = if line.achievable { 'x' } else { ' ' };
            write!(f, "  [{mark}] {head}{}", " ".repeat(pad))?;
            if tools.is_empty() {
                writeln!(f, "(no tools)")?;
            } else {
                writeln!(f, "({})", tools.join(", "))?;
            }
        }
        Ok(())
    }

    fn write_recommendation(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let todo: Vec<usize> = self
            .lines
            .iter()
            .filter(|l| l.achievable && l.status != WorkStatus::Done)
            .map(|l| l.number)
            .collect();
        write!(f, "\nRecommendation: ")?;
        if self.nothing_achievable() {
            write!(
                f,
                "pause and report — no remaining sub-task can be done with the tools that work."
            )?;
        } else if todo.is_empty() {
            write!(f, "every achievable sub-task is done.")?;
        } else {
            write!(
                f,
                "Complete {} {} now.",
                if todo.len() == 1 {
                    "sub-task"
                } else {
                    "sub-tasks"
                },
                numbers(&todo, false)
            )?;
        }
        for (d, list) in &self.groups() {
            write!(
                f,
                "\n{} {} {} {} — {}",
                if list.len() == 1 {
                    "Sub-task"
                } else {
                    "Sub-tasks"
                },
                numbers(list, true),
                if list.len() == 1 {
                    "requires"
                } else {
                    "require"
                },
                d.blocked_by,
                d.unblock
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for ScopeReport {
    /// The source document's layout (R5.2).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Scope Reduction Report:\n")?;
        writeln!(
            f,
            "Original scope: {}",
            plural(self.lines.len(), "sub-task", "sub-tasks")
        )?;
        self.write_lines(f)?;
        let achievable = self.achievable().count();
        writeln!(
            f,
            "\nReduced scope: {} achievable",
            plural(achievable, "sub-task", "sub-tasks")
        )?;
        let groups = self.groups();
        if groups.is_empty() {
            writeln!(f, "Deferred: none")?;
        }
        for (d, list) in &groups {
            writeln!(
                f,
                "Deferred: {} {} {} ({})",
                plural(list.len(), "sub-task", "sub-tasks"),
                if list.len() == 1 {
                    "requires"
                } else {
                    "require"
                },
                d.blocked_by,
                d.reason
            )?;
        }
        self.write_recommendation(f)
    }
}
