//! Scope (R5): which sub-tasks of a task can still be done with the tools as they stand, the
//! pause when none can, and the refusal of a deferred sub-task's tools.

use super::{Changes, Engine, PauseReason};
use crate::event::Event;
use crate::model::breaker::CircuitState;
use crate::model::id::ToolId;
use crate::route::Route;
use crate::scope::{Deferral, ScopeError, ScopeLine, ScopeReport, Task, ToolStanding, WorkStatus};

/// The sub-task being worked on, when it is deferred: its tools are refused (R5.3).
#[derive(Debug, Clone)]
pub(super) struct DeferredWork {
    number: usize,
    pub(super) tools: Vec<ToolId>,
}

impl Engine {
    pub(crate) fn deferred_subtask(&self) -> Option<usize> {
        self.deferred.as_ref().map(|d| d.number)
    }

    /// The scope now (R5.1, R5.2), without acting on it.
    pub(crate) fn scope_report(&self, task: &Task) -> ScopeReport {
        let paused = match self.halt {
            Some(PauseReason::BudgetExhausted { .. }) => Some((
                "paused: failure budget exhausted".to_owned(),
                "resume in the next cycle, with a new budget.".to_owned(),
            )),
            Some(PauseReason::Systemic { .. }) => Some((
                "paused: systemic failure".to_owned(),
                format!(
                    "resume once recovery from the {} issue is confirmed.",
                    self.cascade
                        .event
                        .as_ref()
                        .map_or("infrastructure", |e| e.cause())
                ),
            )),
            Some(PauseReason::MistakeLimit { .. }) => Some((
                "paused: the model's mistake limit was reached".to_owned(),
                "resume in the next cycle.".to_owned(),
            )),
            Some(PauseReason::NothingAchievable) | None => None,
        };
        let mut lines = Vec::new();
        let mut deferred = Vec::new();
        for (i, sub) in task.subtasks().iter().enumerate() {
            let number = i + 1;
            let mut tools = Vec::new();
            let mut blocker: Option<(String, String, String)> = None;
            for name in &sub.needs {
                let (standing, why) = self.standing(name, paused.is_some());
                if let (None, Some((reason, unblock))) = (&blocker, why) {
                    blocker = Some((name.clone(), reason, unblock));
                }
                tools.push(standing);
            }
            let done = sub.status == WorkStatus::Done;
            if !done
                && blocker.is_none()
                && let Some((reason, unblock)) = &paused
            {
                blocker = Some((
                    sub.needs.first().cloned().unwrap_or_default(),
                    reason.clone(),
                    unblock.clone(),
                ));
            }
            let achievable = done || blocker.is_none();
            if let (false, Some((tool, reason, unblock))) = (achievable, blocker) {
                deferred.push(Deferral {
                    number,
                    blocked_by: tool,
                    reason,
                    unblock,
                });
            }
            lines.push(ScopeLine {
                number,
                title: sub.title.clone(),
                achievable,
                status: sub.status.clone(),
                tools,
            });
        }
        ScopeReport { lines, deferred }
    }

    /// Where one needed tool stands, and why it blocks when it does. `paused`: a budget or
    /// systemic pause is in force, so no route is taken either.
    fn standing(&self, name: &str, paused: bool) -> (ToolStanding, Option<(String, String)>) {
        let Some(id) = self.id(name) else {
            // Not known yet: it gets its state on first use, CLOSED (R2.4).
            let standing = ToolStanding {
                tool: name.to_owned(),
                state: CircuitState::Closed,
                blocks: false,
                note: None,
            };
            return (standing, None);
        };
        let i = id.index() as usize;
        let record = &self.records[i];
        let precheck = &self.prechecks[i];
        let def = &self.defs[i];
        let fallback = def.spec.fallback();
        let via = self.routes(id).find_map(|r| match r {
            Route::Alternative(alt) => Some(alt.name().to_owned()),
            _ => None,
        });
        let has_alternatives = def.has_alternatives();
        let mut standing = ToolStanding {
            tool: name.to_owned(),
            state: record.state(),
            blocks: false,
            note: None,
        };
        let blocked = |standing: &mut ToolStanding, note: String, reason: &str, unblock: String| {
            standing.blocks = true;
            standing.note = Some(note);
            Some((reason.to_owned(), unblock))
        };
        let or_fallback = |first: &str| format!("{first}\nor {fallback}.");
        let why = match record.state() {
            CircuitState::Closed if precheck.gated() => {
                if let Some(alt) = via {
                    standing.note = Some(if paused {
                        "paused".to_owned()
                    } else {
                        format!("UNAVAILABLE — via {alt}")
                    });
                    None
                } else {
                    let availability = precheck.availability();
                    let reason = availability.reason().unwrap_or("").to_owned();
                    blocked(
                        &mut standing,
                        format!("UNAVAILABLE — {reason}"),
                        "UNAVAILABLE",
                        or_fallback("will check it again before the next call"),
                    )
                }
            }
            CircuitState::Closed => None,
            CircuitState::HalfOpen => {
                standing.note = Some("probing".to_owned());
                None
            }
            CircuitState::Open => match via {
                Some(alt) => {
                    standing.note = Some(if paused {
                        "paused".to_owned()
                    } else {
                        format!("via {alt}")
                    });
                    None
                }
                None => blocked(
                    &mut standing,
                    if has_alternatives {
                        "alternatives unavailable".to_owned()
                    } else {
                        "no alternative".to_owned()
                    },
                    "circuit OPEN",
                    or_fallback("will probe on next cycle"),
                ),
            },
        };
        (standing, why)
    }

    /// Acts on the scope (R5.4): when every remaining sub-task is deferred, every call
    /// pauses; when work is achievable again, that pause lifts. Returns the report it acted
    /// on.
    pub(crate) fn reduce_scope(&mut self, task: &Task, changes: &mut Changes) -> ScopeReport {
        let report = self.scope_report(task);
        if report.nothing_achievable() {
            if self.halt.is_none() {
                self.halt = Some(PauseReason::NothingAchievable);
            }
        } else if self.halt == Some(PauseReason::NothingAchievable) {
            self.halt = None;
        }
        changes.touch_all();
        report
    }

    /// Starts work on sub-task `number` (R5.3): the scope is reduced first, then the
    /// sub-task is refused when it is deferred, and its tools are refused with it.
    pub(crate) fn begin_subtask(
        &mut self,
        task: &Task,
        number: usize,
        changes: &mut Changes,
    ) -> Result<(), ScopeError> {
        let count = task.subtasks().len();
        let Some(sub) = number.checked_sub(1).and_then(|i| task.subtasks().get(i)) else {
            return Err(ScopeError::NoSuchSubTask { number, count });
        };
        let report = self.reduce_scope(task, changes);
        match report.deferred.into_iter().find(|d| d.number == number) {
            None => {
                self.deferred = None;
                Ok(())
            }
            Some(deferral) => {
                let tools = sub.needs.iter().filter_map(|n| self.id(n)).collect();
                self.deferred = Some(DeferredWork { number, tools });
                changes.events.push(Event::SubTaskDeferred {
                    number,
                    reason: format!("requires {} ({})", deferral.blocked_by, deferral.reason),
                });
                Err(ScopeError::Deferred(deferral))
            }
        }
    }

    /// Ends work on the current sub-task.
    pub(crate) fn end_subtask(&mut self, changes: &mut Changes) {
        self.deferred = None;
        changes.touch_all();
    }
}
