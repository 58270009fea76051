//! The pause report (R7.3): completed and incomplete work, the health of the tools involved,
//! the budget and its ledger, and what to do next.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use serde::{Deserialize, Serialize};

use super::View;
use super::{BreakerRecord, BudgetStatus, MistakeCount, ServerLine, StoreStatus, SystemicEvent};
use crate::engine::PauseReason;
use crate::model::breaker::CircuitState;
use crate::model::failure::FailureCategory;
use crate::model::scope::{Task, WorkStatus};

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
            recommendations.push(resume_recommendation(task, &incomplete, line.number));
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

/// Where to resume (the source document's "Resume from sub-task N after resolution"), never
/// past a failed prerequisite: when a sub-task before `from` failed on a tool that `from`
/// needs too, its failure blocks `from` as well, and it comes first: resume from it. Sharing a
/// tool is the dependency a task declares. (In the source document's own report, sub-task 4
/// shares no tool with the failed sub-task 3, and the line stays as it has it.)
fn resume_recommendation(task: &Task, incomplete: &[WorkLine], from: usize) -> String {
    let needs = |n: usize| -> &[String] {
        task.subtasks()
            .get(n.wrapping_sub(1))
            .map_or(&[], |s| s.needs.as_slice())
    };
    let blocking = incomplete
        .iter()
        .filter(|l| l.number < from && matches!(l.status, WorkStatus::Failed { .. }))
        .find_map(|l| {
            let tool = needs(l.number).iter().find(|t| needs(from).contains(t))?;
            Some((l.number, tool))
        });
    match blocking {
        Some((failed, tool)) => format!(
            "Resume from sub-task {failed} after resolution: it failed, and sub-task {from} \
             needs {tool} too"
        ),
        None => format!("Resume from sub-task {from} after resolution"),
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
