//! The short text for a language model (B7): which tool not to call, why, and what to do
//! instead, worded so that it never invites a retry of the broken tool.

use std::fmt::{self, Write as _};

use serde::{Deserialize, Serialize};

use super::View;
use super::{BreakerRecord, SystemicEvent};
use crate::engine::{PauseReason, SkipReason};
use crate::model::clock::Timestamp;
use crate::model::id::ToolId;
use crate::model::route::Route;

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
    /// The model's id for the call this note answers, when its caller gave one (B18): a
    /// refusal made inside `telemetry::with_call_id` or `ToolDispatch::dispatch_call`. Not in
    /// the text: the model's API matches the answer to its call by this id already.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
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
            call_id: None,
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
            call_id: None,
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
