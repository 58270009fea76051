//! Reports are data first (DESIGN "Reports are data first"): each is a plain serde value with
//! a `Display` in the source document's exact layout.
//!
//! - [`StateTable`]: the circuit breaker state table with the budget line (R2.3).
//! - [`Budget`]: the budget block with its ledger and status line (R7.1, R7.2).
//! - [`PauseReport`]: `FAILURE BUDGET EXHAUSTED — PAUSING` with completed and incomplete
//!   work, tool health, failures and recommendations (R7.3).
//! - [`ModelNote`]: the short text for a language model (B7).

pub use crate::engine::MistakeCount;
#[doc(no_inline)]
pub use crate::fleet::StoreStatus;
pub use crate::model::breaker::{BreakerRecord, FailureMark, SuccessMark};
pub use crate::model::budget::{
    Budget, BudgetStatus, Dropped, LEDGER_HEAD, LEDGER_LINES, LedgerEntry,
};
pub use crate::model::cascade::SystemicEvent;
pub use crate::model::group::{ServerLine, ServerOutage};

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use serde::{Deserialize, Serialize};

use crate::engine::{PauseReason, SkipReason};
use crate::mirror::View;
use crate::model::breaker::CircuitState;
use crate::model::clock::Timestamp;
use crate::model::failure::FailureCategory;
use crate::model::id::ToolId;
use crate::model::route::Route;
use crate::model::scope::{Task, WorkStatus};

/// One row of the state table (R2.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateRow {
    /// The tool.
    pub tool: String,
    /// Its circuit's state.
    pub state: CircuitState,
    /// Consecutive failures.
    pub consecutive_failures: u32,
    /// The last failure: when and what.
    pub last_failure: Option<FailureMark>,
    /// The last success.
    pub last_success: Option<SuccessMark>,
    /// Calls dropped by their caller before they answered (B13): counted, not charged. Left
    /// out of the serde form while 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cancelled: u64,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The circuit breaker state table followed by `Failure budget: X / Y consumed` (R2.3), and,
/// only when some call was dropped by its caller, `Cancelled by caller (not charged): grep 4,
/// bash 1` (B13).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateTable {
    /// One row per tool, in registration order.
    pub rows: Vec<StateRow>,
    /// The budget of the current cycle.
    pub budget: BudgetStatus,
    /// The model's own mistakes this cycle, on a line of their own when there are any (B8).
    #[serde(default, skip_serializing_if = "MistakeCount::is_none")]
    pub mistakes: MistakeCount,
    /// The servers the tools live on, a line each, when any tool is on one (B10).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<ServerLine>,
    /// The fleet's store, when one is attached (B11): reachable or not, and which circuits
    /// another worker opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<StoreStatus>,
}

const NONE: &str = "—";

impl fmt::Display for StateTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const HEADERS: [&str; 5] = [
            "Tool",
            "State",
            "Consecutive Fails",
            "Last Failure",
            "Last Success",
        ];
        // The source document's column widths; a column grows to fit its longest cell.
        let mut widths = [10, 6, 17, 16, 15];
        let cells: Vec<[String; 5]> = self
            .rows
            .iter()
            .map(|row| {
                [
                    row.tool.clone(),
                    row.state.as_str().to_owned(),
                    row.consecutive_failures.to_string(),
                    row.last_failure.as_ref().map_or_else(
                        || NONE.to_owned(),
                        |m| format!("{} {}", m.at, m.failure.summary()),
                    ),
                    row.last_success
                        .as_ref()
                        .map_or_else(|| NONE.to_owned(), |m| m.at.to_string()),
                ]
            })
            .collect();
        for row in cells
            .iter()
            .map(|r| r.each_ref().map(String::as_str))
            .chain([HEADERS])
        {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let rule = |f: &mut fmt::Formatter<'_>| {
            f.write_char('+')?;
            for width in widths {
                write!(f, "{}+", "-".repeat(width + 2))?;
            }
            f.write_char('\n')
        };
        let line = |f: &mut fmt::Formatter<'_>, row: [&str; 5]| {
            f.write_char('|')?;
            for (width, cell) in widths.iter().zip(row) {
                let pad = width - cell.chars().count();
                write!(f, " {cell}{} |", " ".repeat(pad))?;
            }
            f.write_char('\n')
        };
        writeln!(f, "Circuit Breaker State Table:")?;
        rule(f)?;
        line(f, HEADERS)?;
        rule(f)?;
        for row in &cells {
            line(f, row.each_ref().map(String::as_str))?;
        }
        rule(f)?;
        write!(
            f,
            "\nFailure budget: {} / {} consumed",
            self.budget.consumed, self.budget.limit
        )?;
        if !self.mistakes.is_none() {
            write!(f, "\n{}", self.mistakes)?;
        }
        // B13: only when some call was dropped by its caller, so the source document's layout stays.
        let mut cancelled = self.rows.iter().filter(|row| row.cancelled > 0);
        if let Some(first) = cancelled.next() {
            write!(
                f,
                "\nCancelled by caller (not charged): {} {}",
                first.tool, first.cancelled
            )?;
            for row in cancelled {
                write!(f, ", {} {}", row.tool, row.cancelled)?;
            }
        }
        for server in &self.servers {
            write!(f, "\n{server}")?;
        }
        if let Some(fleet) = &self.fleet {
            write!(f, "\n{fleet}")?;
        }
        Ok(())
    }
}

/// One line of completed or incomplete work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkLine {
    /// The sub-task's number, from 1.
    pub number: usize,
    /// Its title.
    pub title: String,
    /// Its progress.
    pub status: WorkStatus,
}

/// One tool's health in a pause report: state, failures, a summary of its errors.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolHealth {
    /// The tool.
    pub tool: String,
    /// Its circuit's state.
    pub state: CircuitState,
    /// Consecutive failures.
    pub consecutive_failures: u32,
    /// The errors of the current run, summarised (`permission/command/timeout`); `None` when
    /// healthy.
    pub errors: Option<String>,
    /// The category all those errors share, if they share one.
    pub category: Option<FailureCategory>,
}

impl ToolHealth {
    /// CLOSED with no consecutive failure.
    pub fn is_healthy(&self) -> bool {
        self.state == CircuitState::Closed && self.consecutive_failures == 0
    }

    fn from_record(tool: &str, record: &BreakerRecord) -> Self {
        let mut messages: Vec<Cow<'_, str>> = Vec::new();
        for failure in record.recent_failures() {
            let summary = failure.summary();
            if !messages.contains(&summary) {
                messages.push(summary);
            }
        }
        if messages.is_empty()
            && record.consecutive_failures() > 0
            && let Some(mark) = record.last_failure()
        {
            messages.push(mark.failure.summary());
        }
        let errors = match messages.as_slice() {
            [] => None,
            [one] => Some(one.to_string()),
            many => {
                let mut words: Vec<&str> = Vec::new();
                for word in many.iter().filter_map(|m| m.split_whitespace().next()) {
                    if !words.contains(&word) {
                        words.push(word);
                    }
                }
                Some(words.join("/"))
            }
        };
        ToolHealth {
            tool: tool.to_owned(),
            state: record.state(),
            consecutive_failures: record.consecutive_failures(),
            errors,
            category: record.common_category(),
        }
    }
}

impl fmt::Display for ToolHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} (", self.tool, self.state)?;
        match self.consecutive_failures {
            0 => f.write_str("healthy")?,
            1 => f.write_str("1 failure")?,
            n => write!(f, "{n} consecutive failures")?,
        }
        if let Some(errors) = &self.errors {
            write!(f, " — {errors}")?;
        }
        f.write_char(')')
    }
}

/// The report produced when the agent pauses (R7.3), or on demand as a status report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PauseReport {
    /// Why the agent paused; `None` for a status report while running.
    pub paused: Option<PauseReason>,
    /// The systemic failure behind the pause, with its suspected cause (R9.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub systemic: Option<SystemicEvent>,
    /// Sub-tasks done.
    pub completed: Vec<WorkLine>,
    /// Sub-tasks failed or not attempted.
    pub incomplete: Vec<WorkLine>,
    /// The tools involved: healthy ones first, then the rest, each in map order.
    pub tool_health: Vec<ToolHealth>,
    /// The budget.
    pub budget: BudgetStatus,
    /// What to do next, drawn from what failed.
    pub recommendations: Vec<String>,
    /// The model's own mistakes this cycle, on a line of their own when there are any (B8).
    #[serde(default, skip_serializing_if = "MistakeCount::is_none")]
    pub mistakes: MistakeCount,
    /// The servers the tools live on, a line each, when any tool is on one (B10).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub servers: Vec<ServerLine>,
    /// The fleet's store, when one is attached (B11): reachable or not, and which circuits
    /// another worker opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<StoreStatus>,
}

impl PauseReport {
    /// Builds the report from one view of the state and the task's progress.
    pub(crate) fn build(view: View<'_>, task: &Task) -> Self {
        let engine = view.engine;
        let paused = engine.halt();
        // Sub-tasks not attempted because a tool they need is down are shown deferred
        // (R5.1). Under a budget or systemic pause, every call is held back: the source document's
        // "NOT ATTEMPTED — paused" says it all.
        let held = matches!(
            paused,
            Some(
                PauseReason::BudgetExhausted { .. }
                    | PauseReason::Systemic { .. }
                    | PauseReason::MistakeLimit { .. }
            )
        );
        let deferred: Vec<crate::model::scope::Deferral> = if held {
            Vec::new()
        } else {
            engine.scope_report(task).deferred
        };
        let budget = engine.budget();
        let event = engine.systemic_event().cloned();
        let systemic = event.filter(|_| matches!(paused, Some(PauseReason::Systemic { .. })));
        let named: Vec<&str> = task
            .subtasks()
            .iter()
            .flat_map(|s| s.needs.iter().map(String::as_str))
            .collect();
        let failed_this_cycle: Vec<&str> =
            budget.ledger().iter().map(|e| e.tool.as_str()).collect();
        let mut health: Vec<ToolHealth> = view
            .records()
            .filter_map(|(_, name, record)| {
                let h = ToolHealth::from_record(name, &record);
                let involved = named.is_empty()
                    || named.contains(&name)
                    || failed_this_cycle.contains(&name)
                    || !h.is_healthy();
                involved.then_some(h)
            })
            .collect();
        // Stable: healthy tools first, then the others, each group in map order.
        health.sort_by_key(|h| !h.is_healthy());

        let (completed, incomplete) = work_lines(task, &deferred);

        let mut recommendations: Vec<String> = Vec::new();
        if let Some(event) = &systemic {
            recommendations.push(recovery_recommendation(engine.policy(), event));
        }
        if let Some(PauseReason::MistakeLimit { count, limit }) = paused {
            recommendations.push(format!(
                "Check what the model is asking for: {count} of its calls this cycle were its own \
                 mistakes (limit {limit}), not the tools' failures; calls resume in a new cycle"
            ));
        }
        recommendations.extend(
            health
                .iter()
                .filter(|h| !h.is_healthy())
                .map(|h| recommendation(&h.tool, h.category)),
        );
        // After a systemic failure, work failed because of the event: resume from the first
        // incomplete sub-task. Otherwise from the first not attempted (the source document's rule).
        let resume = if systemic.is_some() {
            incomplete.first()
        } else {
            incomplete
                .iter()
                .find(|l| {
                    matches!(
                        l.status,
                        WorkStatus::NotAttempted | WorkStatus::Deferred { .. }
                    )
                })
                .or_else(|| incomplete.first())
        };
        if let Some(line) = resume {
            recommendations.push(format!(
                "Resume from sub-task {} after resolution",
                line.number
            ));
        }
        PauseReport {
            paused,
            systemic,
            completed,
            incomplete,
            tool_health: health,
            budget: budget.status(),
            recommendations,
            mistakes: engine.mistakes(),
            servers: engine.servers(),
            fleet: engine.fleet_status(),
        }
    }
}

/// The task's sub-tasks split into completed and incomplete work; a sub-task not attempted
/// because it is deferred says so.
fn work_lines(
    task: &Task,
    deferred: &[crate::model::scope::Deferral],
) -> (Vec<WorkLine>, Vec<WorkLine>) {
    let mut completed = Vec::new();
    let mut incomplete = Vec::new();
    for (i, sub) in task.subtasks().iter().enumerate() {
        let number = i + 1;
        let status = match (&sub.status, deferred.iter().find(|d| d.number == number)) {
            (WorkStatus::NotAttempted, Some(d)) => WorkStatus::Deferred {
                reason: format!("requires {} ({})", d.blocked_by, d.reason),
            },
            (status, _) => status.clone(),
        };
        let line = WorkLine {
            number,
            title: sub.title.clone(),
            status,
        };
        match line.status {
            WorkStatus::Done => completed.push(line),
            WorkStatus::Failed { .. } | WorkStatus::NotAttempted | WorkStatus::Deferred { .. } => {
                incomplete.push(line);
            }
        }
    }

    (completed, incomplete)
}

/// After a systemic failure: fix the cause, confirm recovery, and how probes back off (R9.5).
fn recovery_recommendation(policy: crate::model::policy::Policy, event: &SystemicEvent) -> String {
    let (base, cap) = (policy.probe_every(), policy.backoff_cap());
    let mut schedule: Vec<String> = Vec::new();
    for level in 1..=8 {
        let interval = crate::model::cascade::backoff_interval(base, level, cap);
        if schedule.last() != Some(&interval.to_string()) {
            schedule.push(interval.to_string());
        }
        if interval >= cap {
            break;
        }
    }
    let unit = match policy.probe_unit() {
        crate::model::policy::ProbeUnit::Attempts => "attempts",
        crate::model::policy::ProbeUnit::Steps => "steps",
    };
    let last = schedule.pop().unwrap_or_default();
    let intervals = if schedule.is_empty() {
        format!("every {last}")
    } else {
        format!("{}, then every {last}", schedule.join(", "))
    };
    format!(
        "Fix the {} issue, then confirm recovery: probes resume after {intervals} {unit}",
        event.cause()
    )
}

/// A next step for an unhealthy tool, from the category its failures share.
fn recommendation(tool: &str, category: Option<FailureCategory>) -> String {
    match category {
        Some(FailureCategory::Network) => format!("Check network connectivity for {tool}"),
        Some(FailureCategory::Permission) => {
            format!("Check permissions for {tool} — likely permissions issue")
        }
        Some(FailureCategory::Filesystem) => {
            format!("Check the filesystem {tool} uses — likely filesystem issue")
        }
        Some(FailureCategory::Timeout) => {
            format!("Check why {tool} times out — likely an overloaded or hanging dependency")
        }
        Some(FailureCategory::NotFound) => {
            format!("Check that what {tool} needs exists — likely a missing command or resource")
        }
        Some(FailureCategory::InvalidInput) => {
            format!("Check the input {tool} is given — it rejects what it is called with")
        }
        Some(FailureCategory::Other) | None => {
            format!("Investigate {tool} failures — likely environment issue")
        }
    }
}

impl fmt::Display for PauseReport {
    /// The source document's layout (R7.3).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.paused {
            Some(PauseReason::BudgetExhausted { .. }) => {
                writeln!(f, "FAILURE BUDGET EXHAUSTED — PAUSING")?;
            }
            Some(PauseReason::Systemic { .. }) => {
                writeln!(f, "SYSTEMIC FAILURE — PAUSING")?;
                if let Some(event) = &self.systemic {
                    writeln!(f, "{event}")?;
                }
            }
            Some(PauseReason::NothingAchievable) => {
                writeln!(f, "NO ACHIEVABLE WORK — PAUSING")?;
            }
            Some(PauseReason::MistakeLimit { count, limit }) => {
                writeln!(f, "MISTAKE LIMIT REACHED — PAUSING")?;
                writeln!(
                    f,
                    "The model made {count} mistakes this cycle (limit {limit}): calls the tools \
                     could not act on, not failures of the tools."
                )?;
            }
            None => writeln!(f, "STATUS REPORT — {}", self.budget)?,
        }
        let work = |f: &mut fmt::Formatter<'_>, lines: &[WorkLine]| -> fmt::Result {
            if lines.is_empty() {
                return writeln!(f, "  (none)");
            }
            for line in lines {
                write!(f, "  - Sub-task {}: {} (", line.number, line.title)?;
                match &line.status {
                    WorkStatus::Done => f.write_str("SUCCESS")?,
                    WorkStatus::Failed { reason } => write!(f, "FAILED — {reason}")?,
                    WorkStatus::Deferred { reason } => write!(f, "DEFERRED — {reason}")?,
                    WorkStatus::NotAttempted if self.paused.is_some() => {
                        f.write_str("NOT ATTEMPTED — paused")?;
                    }
                    WorkStatus::NotAttempted => f.write_str("NOT ATTEMPTED")?,
                }
                writeln!(f, ")")?;
            }
            Ok(())
        };
        writeln!(f, "\nCompleted work:")?;
        work(f, &self.completed)?;
        writeln!(f, "\nIncomplete work:")?;
        work(f, &self.incomplete)?;
        writeln!(f, "\nTool health:")?;
        for health in &self.tool_health {
            writeln!(f, "  {health}")?;
        }
        write!(
            f,
            "\nFailures: {} / {} budget consumed\n",
            self.budget.consumed, self.budget.limit
        )?;
        if !self.mistakes.is_none() {
            writeln!(f, "{}", self.mistakes)?;
        }
        for server in &self.servers {
            writeln!(f, "{server}")?;
        }
        if let Some(fleet) = &self.fleet {
            writeln!(f, "{fleet}")?;
        }
        if !self.recommendations.is_empty() {
            write!(f, "\nRecommendation:")?;
            for (i, r) in self.recommendations.iter().enumerate() {
                write!(f, "\n  {}. {r}", i + 1)?;
            }
        }
        Ok(())
    }
}

/// The short text for a language model (B7): the tool that is unavailable, why, and what to
/// do instead. It never invites the model to call the broken tool again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelNote {
    /// The tool not to call; `None` when every tool is paused.
    pub tool: Option<String>,
    /// When every tool is paused: the tool the model asked for, if it asked for one (B7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_for: Option<String>,
    /// Why it must not be called.
    pub why: String,
    /// What to do instead.
    pub instead: String,
}

impl ModelNote {
    /// The note for a tool not called (`reason`), with the route to take instead.
    pub(crate) fn for_route(
        view: View<'_>,
        tool: ToolId,
        reason: SkipReason,
        route: &Route<'_>,
    ) -> Self {
        Self::for_route_from(&view, tool, reason, route)
    }

    /// [`for_route`](Self::for_route), reading the tool's state from `facts`: the engine
    /// under its lock, or the expeditor when a refusal is rendered after the call.
    pub(crate) fn for_route_from(
        facts: &(impl NoteFacts + ?Sized),
        tool: ToolId,
        reason: SkipReason,
        route: &Route<'_>,
    ) -> Self {
        let name = match (reason, facts.name(tool)) {
            (SkipReason::UnknownTool, _) | (_, None) => format!("Tool #{}", tool.index()),
            (_, Some(name)) => name.to_owned(),
        };
        let why = match reason {
            SkipReason::UnknownTool => "it is not a tool of this agent".to_owned(),
            SkipReason::Unavailable => {
                let availability = facts.availability(tool).unwrap_or(
                    crate::model::precheck::Availability::Unavailable(String::new()),
                );
                format!("the pre-call check says {availability}")
            }
            SkipReason::Deferred => match facts.deferred_subtask() {
                Some(n) => format!("sub-task {n} is deferred, so its tools are not called"),
                None => "its sub-task is deferred".to_owned(),
            },
            SkipReason::Paused { pause } => {
                return Self::for_pause(
                    pause,
                    facts.pausing_event().as_ref(),
                    Some(&name),
                    facts.pause_lifts_at(),
                );
            }
            reason => {
                let record = facts.record(tool).unwrap_or_default();
                let mut why = String::new();
                if reason == SkipReason::ProbeInFlight {
                    why.push_str("circuit HALF-OPEN, a recovery check is already running");
                } else {
                    let n = record.consecutive_failures();
                    let _ = write!(
                        why,
                        "circuit OPEN after {n} consecutive failure{}",
                        if n == 1 { "" } else { "s" }
                    );
                }
                if let Some(mark) = record.last_failure() {
                    let _ = write!(why, " (last error: {})", quoted_for_model(&mark.failure));
                }
                why
            }
        };
        let instead = match route {
            Route::Alternative(alt) => format!(
                "use {} — {} (degradation: {}).",
                alt.name(),
                alt.method(),
                alt.degradation()
            ),
            Route::Fallback(text) => format!("no other tool can do this — {text}."),
            Route::ScopeReduction => {
                "no tool or manual fallback can do this — leave this work out and report it as skipped."
                    .to_owned()
            }
        };
        ModelNote {
            tool: Some(name),
            asked_for: None,
            why,
            instead,
        }
    }

    /// The note for a pause; `asked_for` names the tool the model asked for, if it asked.
    /// `lifts_at` is when the pause lifts by itself, if it does (B15): then the note says
    /// when, and never promises an action nobody can take; otherwise it names the person
    /// who can lift it.
    pub(crate) fn for_pause(
        reason: PauseReason,
        systemic: Option<&SystemicEvent>,
        asked_for: Option<&str>,
        lifts_at: Option<Timestamp>,
    ) -> Self {
        let report = "stop and report the completed and incomplete work to the user.";
        let (why, instead) = match reason {
            PauseReason::BudgetExhausted { consumed, limit } => match lifts_at {
                Some(at) => (
                    format!(
                        "failure budget exhausted ({consumed} / {limit} failures in its window)"
                    ),
                    format!(
                        "do not call tools until {at}, when the oldest failure leaves the budget's window and calls resume; meanwhile report what is done and what is waiting."
                    ),
                ),
                None => (
                    format!("failure budget exhausted ({consumed} / {limit} failures this cycle)"),
                    report.to_owned(),
                ),
            },
            PauseReason::Systemic { .. } => {
                let (why, cause) = systemic.map_or_else(
                    || ("a systemic failure".to_owned(), "infrastructure"),
                    |e| (lowercase_first(&e.to_string()), e.cause()),
                );
                let instead = match lifts_at {
                    Some(at) => format!(
                        "do not call tools until {at}; calls resume then at the latest, sooner if a health check finds the {cause} issue resolved. Meanwhile report what is done and what is waiting."
                    ),
                    None => format!(
                        "stop and report the completed and incomplete work to the user; calls resume once the user confirms the {cause} issue is resolved."
                    ),
                };
                (why, instead)
            }
            PauseReason::NothingAchievable => (
                "every remaining sub-task is deferred: the tools it needs are not working"
                    .to_owned(),
                "stop and report the completed and deferred work to the user.".to_owned(),
            ),
            PauseReason::MistakeLimit { count, limit } => (
                format!(
                    "too many calls were mistakes ({count} / {limit} this cycle: unknown tools, \
                     bad arguments, or inputs the tools rejected)"
                ),
                match lifts_at {
                    Some(at) => format!(
                        "do not call tools until {at}; calls resume then. Meanwhile report what is \
                         done and the calls that were rejected."
                    ),
                    None => "stop and report the completed and incomplete work to the user, with \
                             the calls that were rejected; calls resume in a new cycle."
                        .to_owned(),
                },
            ),
        };
        ModelNote {
            tool: None,
            asked_for: asked_for.map(str::to_owned),
            why,
            instead,
        }
    }
}

/// Where a [`ModelNote`] reads a tool's state: the engine under its lock ([`View`]), or the
/// expeditor itself when a refusal is rendered after the call.
pub(crate) trait NoteFacts {
    /// The tool's name.
    fn name(&self, tool: ToolId) -> Option<&str>;
    /// What the tool's pre-call check last said.
    fn availability(&self, tool: ToolId) -> Option<crate::model::precheck::Availability>;
    /// The deferred sub-task being worked on.
    fn deferred_subtask(&self) -> Option<usize>;
    /// The systemic event behind the pause, when that is why every call is paused.
    fn pausing_event(&self) -> Option<SystemicEvent>;
    /// When the pause in force lifts by itself, if it does (B15).
    fn pause_lifts_at(&self) -> Option<Timestamp>;
    /// The tool's breaker.
    fn record(&self, tool: ToolId) -> Option<BreakerRecord>;
}

impl NoteFacts for View<'_> {
    fn name(&self, tool: ToolId) -> Option<&str> {
        self.engine.name(tool)
    }

    fn availability(&self, tool: ToolId) -> Option<crate::model::precheck::Availability> {
        self.engine.availability(tool)
    }

    fn deferred_subtask(&self) -> Option<usize> {
        self.engine.deferred_subtask()
    }

    fn pausing_event(&self) -> Option<SystemicEvent> {
        self.engine.pausing_event().cloned()
    }

    fn pause_lifts_at(&self) -> Option<Timestamp> {
        self.engine.pause_lifts_at()
    }

    fn record(&self, tool: ToolId) -> Option<BreakerRecord> {
        View::record(self, tool)
    }
}

fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_lowercase().chain(chars).collect())
        .unwrap_or_default()
}

/// The last error as the model may read it: quoted on one line, unless it would invite a
/// retry ("try again later"), in which case only its category is given (B7).
fn quoted_for_model(failure: &crate::model::failure::Failure) -> String {
    const INVITATIONS: [&str; 5] = ["retry", "try again", "again later", "try later", "re-try"];
    let summary = failure.summary();
    let lower = summary.to_lowercase();
    if INVITATIONS.iter().any(|p| lower.contains(p)) {
        format!("a {} failure", failure.category())
    } else {
        format!("\"{summary}\"")
    }
}

impl fmt::Display for ModelNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tool {
            Some(tool) => write!(
                f,
                "{tool} is unavailable: {}. Do not call {tool}. Instead: {}",
                self.why, self.instead
            ),
            None => match &self.asked_for {
                Some(asked) => write!(
                    f,
                    "{asked} was not called: all tools are paused: {}. Do not call {asked} or any other tool. Instead: {}",
                    self.why, self.instead
                ),
                None => write!(
                    f,
                    "All tools are paused: {}. Do not call any tool. Instead: {}",
                    self.why, self.instead
                ),
            },
        }
    }
}

impl StateTable {
    /// The table of every tool, in registration order.
    pub(crate) fn build(view: View<'_>) -> Self {
        let rows = view
            .records()
            .map(|(_, name, record)| StateRow {
                tool: name.to_owned(),
                state: record.state(),
                consecutive_failures: record.consecutive_failures(),
                last_failure: record.last_failure().cloned(),
                last_success: record.last_success().copied(),
                cancelled: record.cancelled(),
            })
            .collect();
        StateTable {
            rows,
            budget: view.engine.budget().status(),
            mistakes: view.engine.mistakes(),
            servers: view.engine.servers(),
            fleet: view.engine.fleet_status(),
        }
    }
}

/// The tools to offer a language model now (R10): those it may call, and for each one held
/// back (OPEN or UNAVAILABLE) the short text saying why and what to do instead, so the model
/// is not invited to call a broken tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOffer {
    /// The tools the model may call, in map order.
    pub offered: Vec<String>,
    /// Why the others are held back.
    pub withheld: Vec<ModelNote>,
}

impl fmt::Display for ToolOffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.offered.is_empty() {
            f.write_str("Tools you may call: none")?;
        } else {
            write!(f, "Tools you may call: {}", self.offered.join(", "))?;
        }
        if !self.withheld.is_empty() {
            f.write_str("\nDo not call:")?;
            for note in &self.withheld {
                write!(f, "\n  - {note}")?;
            }
        }
        Ok(())
    }
}

impl ToolOffer {
    /// The tools to offer a language model now (R10): every tool but those OPEN or
    /// UNAVAILABLE, which are listed with the reason; while paused, none. One view: the
    /// answer is consistent.
    pub(crate) fn build(view: View<'_>) -> Self {
        let engine = view.engine;
        if let Some(reason) = engine.halt() {
            return ToolOffer {
                offered: Vec::new(),
                withheld: vec![ModelNote::for_pause(
                    reason,
                    engine.pausing_event(),
                    None,
                    engine.pause_lifts_at(),
                )],
            };
        }
        let mut offer = ToolOffer {
            offered: Vec::new(),
            withheld: Vec::new(),
        };
        for (id, name, record) in view.records() {
            let reason = match record.state() {
                CircuitState::Open => Some(SkipReason::Open),
                CircuitState::Closed if engine.gated(id) => Some(SkipReason::Unavailable),
                _ => None,
            };
            match reason {
                Some(reason) => {
                    let route = engine.routes(id).next().unwrap_or(Route::ScopeReduction);
                    offer
                        .withheld
                        .push(ModelNote::for_route(view, id, reason, &route));
                }
                None => offer.offered.push(name.to_owned()),
            }
        }
        offer
    }
}

/// A mistake of the model's own: never charged to a tool or the budget (B8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mistake", rename_all = "snake_case")]
pub enum ModelMistake {
    /// The name is no tool of this agent.
    UnknownTool {
        /// The name the model sent.
        name: String,
        /// The closest offered name, if one is near.
        suggestion: Option<String>,
        /// The tools the model may call now.
        offered: Vec<String>,
    },
    /// The arguments do not fit the tool's schema.
    BadArguments {
        /// The tool.
        tool: String,
        /// What the decoder said.
        message: String,
    },
    /// The tool ran and answered that the call was the caller's mistake (B14): a resource
    /// the call named does not exist, or the input is one the tool does not accept.
    Rejected {
        /// The tool.
        tool: String,
        /// The tool's own message.
        message: String,
        /// Its category: [`NotFound`](FailureCategory::NotFound) for a missing resource,
        /// usually [`InvalidInput`](FailureCategory::InvalidInput) otherwise.
        category: FailureCategory,
    },
}

impl ModelMistake {
    /// What is wrong, without what to do next: the text once every call is paused, when the
    /// advice to call again would be an action nobody can take (B15).
    #[cfg(feature = "json")]
    pub(crate) fn fact(&self) -> String {
        match self {
            ModelMistake::UnknownTool { name, .. } => {
                format!("There is no tool named \"{}\".", clip(name))
            }
            ModelMistake::BadArguments { tool, message } => format!(
                "The arguments for {tool} do not fit its schema: {}. Nothing was called.",
                clip(message)
            ),
            ModelMistake::Rejected { tool, message, .. } => format!(
                "{tool} rejected the call: {}. This is a problem with the call, not the tool.",
                clip(message).trim_end_matches(['.', ' '])
            ),
        }
    }
}

impl fmt::Display for ModelMistake {
    /// The text for the model: what is wrong, and what to do.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelMistake::UnknownTool {
                name,
                suggestion,
                offered,
            } => {
                write!(f, "There is no tool named \"{}\".", clip(name))?;
                if let Some(s) = suggestion {
                    write!(f, " Did you mean \"{s}\"?")?;
                }
                if offered.is_empty() {
                    f.write_str(" No tool may be called now.")
                } else {
                    write!(f, " Tools you may call: {}.", offered.join(", "))
                }
            }
            ModelMistake::BadArguments { tool, message } => write!(
                f,
                "The arguments for {tool} do not fit its schema: {}. Nothing was called; fix the \
                 arguments to match the tool's input schema.",
                clip(message)
            ),
            ModelMistake::Rejected {
                tool,
                message,
                category,
            } => {
                let message = clip(message);
                write!(
                    f,
                    "{tool} rejected the call: {}. This is a problem with the call, not the tool: ",
                    message.trim_end_matches(['.', ' '])
                )?;
                if *category == FailureCategory::NotFound {
                    f.write_str("check that what the call names exists (list or search first)")?;
                } else {
                    write!(f, "check the arguments against what {tool} accepts")?;
                }
                f.write_str(" and call again with corrected arguments.")
            }
        }
    }
}

/// At most 200 characters of text a model sent, on one line.
pub(crate) fn clip(text: &str) -> String {
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    if text.chars().count() > 200 {
        format!("{line}…")
    } else {
        line
    }
}
