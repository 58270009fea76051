//! Events for every transition (B4): emitted as `tracing` events (target
//! `circuit_breaker`) and handed to [`Observer`]s, always after the expeditor's lock is
//! released, so an observer may call back into the expeditor.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The [`kind`](Event::kind)s of the events that change a circuit's state: those with a
/// [`state_after`](Event::state_after).
#[cfg(any(feature = "otel", test))]
pub(crate) const TRANSITION_KINDS: [&str; 8] = [
    "opened",
    "half_opened",
    "closed",
    "reopened",
    "shared_opened",
    "shared_closed",
    "server_down",
    "server_up",
];

/// Something the expeditor did that an operator may want to see or count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// CLOSED -> OPEN: the threshold was reached (R3.3).
    Opened {
        /// The tool.
        tool: String,
        /// Consecutive failures when it opened.
        consecutive_failures: u32,
        /// The last error message.
        message: String,
    },
    /// OPEN -> HALF-OPEN: a probe is due (R3.2); the next call is its one probe. In a service
    /// this happens when the cool-down ends, with no call: the tool is on probation (B15).
    HalfOpened {
        /// The tool.
        tool: String,
    },
    /// HALF-OPEN -> CLOSED: the probe succeeded (R3.2).
    Closed {
        /// The tool.
        tool: String,
    },
    /// HALF-OPEN -> OPEN: the probe failed (R3.2).
    Reopened {
        /// The tool.
        tool: String,
        /// Consecutive failures, the failed probe included.
        consecutive_failures: u32,
        /// The probe's error message.
        message: String,
    },
    /// A probe ticket was dropped unrecorded: the half-open slot is free again.
    ProbeReleased {
        /// The tool.
        tool: String,
    },
    /// The failure budget is spent: every call pauses until a new cycle (R3.4, R7.3).
    BudgetExhausted {
        /// Failures charged.
        consumed: u32,
        /// The budget.
        limit: u32,
    },
    /// The model made as many mistakes this cycle as the policy allows: every call pauses
    /// until a new cycle (B14).
    MistakeLimit {
        /// Mistakes made this cycle.
        count: u32,
        /// The limit.
        limit: u32,
    },
    /// A new cycle began: budget reset, breaker states kept (R7.4).
    CycleStarted {
        /// The new cycle's number.
        cycle: u64,
    },
    /// A tool not in the map got its state on first use (R2.4).
    ToolDiscovered {
        /// The tool.
        tool: String,
    },
    /// Correlated circuits opened: a systemic failure; every call pauses (R9.2).
    Systemic {
        /// The shared error.
        pattern: String,
        /// The suspected cause: `network`, `filesystem`, `permissions`, ...
        cause: String,
        /// The tools involved.
        tools: Vec<String>,
    },
    /// The user confirmed recovery from a systemic failure, or a health check of its cause
    /// succeeded: calls resume, probes back off.
    RecoveryConfirmed,
    /// A systemic pause outlived its cool-down with no health check to lift it (B15): calls
    /// resume on trial, and the tools it opened probe with backoff (R9.5).
    RecoveryOnTrial {
        /// The suspected cause.
        cause: String,
    },
    /// A pause for the model's mistakes lasted its budget window in a service (B15): calls
    /// resume, the mistakes count from zero again.
    MistakesForgiven {
        /// The limit.
        limit: u32,
    },
    /// The budget's rolling window freed room (B13): a budget pause lifted.
    BudgetRenewed {
        /// Failures still counted in the window.
        consumed: u32,
        /// The budget.
        limit: u32,
    },
    /// A pre-call check's result changed (R10).
    AvailabilityChanged {
        /// The tool.
        tool: String,
        /// `AVAILABLE`, `DEGRADED — ..` or `UNAVAILABLE — ..`.
        availability: String,
    },
    /// A sub-task was deferred: its tools are not called (R5.3).
    SubTaskDeferred {
        /// The sub-task's number.
        number: usize,
        /// Why.
        reason: String,
    },
    /// A call found a server unreachable (B10): every tool of it that was working is OPEN at
    /// once, one event charged once to the budget; tools on other servers go on.
    ServerDown {
        /// The server.
        server: String,
        /// Its tools taken down, in map order.
        tools: Vec<String>,
        /// The error that found it unreachable.
        message: String,
    },
    /// A probe reached the server again (B10): the tools its outage took down are CLOSED.
    ServerUp {
        /// The server.
        server: String,
        /// Its tools brought back, in map order.
        tools: Vec<String>,
    },
    /// Another worker of the fleet opened this tool's circuit (B11): OPEN here too, routed
    /// around, never charged to this worker's budget.
    SharedOpened {
        /// The tool.
        tool: String,
        /// The worker that opened it.
        worker: String,
        /// Its failure.
        message: String,
    },
    /// Another worker's probe closed a circuit this worker shared (B11).
    SharedClosed {
        /// The tool.
        tool: String,
    },
    /// Another worker confirmed the recovery from the systemic failure this worker paused for
    /// (B16): calls resume here too, as after a confirmation here.
    SharedRecovery {
        /// The worker that confirmed it.
        worker: String,
    },
    /// The fleet's store could not be reached (B11): this worker decides on its own state
    /// alone until it answers again; nothing recorded is lost.
    StoreUnavailable {
        /// The store.
        store: String,
        /// What was said.
        message: String,
    },
    /// The fleet's store answers again (B11): what this worker opened meanwhile is shared.
    StoreRestored {
        /// The store.
        store: String,
    },
    /// A saved state was restored (R3.7).
    Restored {
        /// Tools in the snapshot.
        tools: usize,
        /// The restored step.
        step: u64,
    },
}

impl Event {
    /// A short machine name: `opened`, `half_opened`, `closed`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Opened { .. } => "opened",
            Event::HalfOpened { .. } => "half_opened",
            Event::Closed { .. } => "closed",
            Event::Reopened { .. } => "reopened",
            Event::ProbeReleased { .. } => "probe_released",
            Event::BudgetExhausted { .. } => "budget_exhausted",
            Event::MistakeLimit { .. } => "mistake_limit",
            Event::CycleStarted { .. } => "cycle_started",
            Event::ToolDiscovered { .. } => "tool_discovered",
            Event::Restored { .. } => "restored",
            Event::Systemic { .. } => "systemic",
            Event::RecoveryConfirmed => "recovery_confirmed",
            Event::RecoveryOnTrial { .. } => "recovery_on_trial",
            Event::BudgetRenewed { .. } => "budget_renewed",
            Event::MistakesForgiven { .. } => "mistakes_forgiven",
            Event::AvailabilityChanged { .. } => "availability_changed",
            Event::SubTaskDeferred { .. } => "subtask_deferred",
            Event::ServerDown { .. } => "server_down",
            Event::ServerUp { .. } => "server_up",
            Event::SharedOpened { .. } => "shared_opened",
            Event::SharedClosed { .. } => "shared_closed",
            Event::SharedRecovery { .. } => "shared_recovery",
            Event::StoreUnavailable { .. } => "store_unavailable",
            Event::StoreRestored { .. } => "store_restored",
        }
    }

    /// The tool the event is about, if it is about one.
    pub fn tool(&self) -> Option<&str> {
        match self {
            Event::Opened { tool, .. }
            | Event::HalfOpened { tool }
            | Event::Closed { tool }
            | Event::Reopened { tool, .. }
            | Event::ProbeReleased { tool }
            | Event::ToolDiscovered { tool }
            | Event::AvailabilityChanged { tool, .. }
            | Event::SharedOpened { tool, .. }
            | Event::SharedClosed { tool } => Some(tool),
            Event::BudgetExhausted { .. }
            | Event::MistakeLimit { .. }
            | Event::CycleStarted { .. }
            | Event::Restored { .. }
            | Event::Systemic { .. }
            | Event::RecoveryConfirmed
            | Event::RecoveryOnTrial { .. }
            | Event::BudgetRenewed { .. }
            | Event::MistakesForgiven { .. }
            | Event::SubTaskDeferred { .. }
            | Event::ServerDown { .. }
            | Event::ServerUp { .. }
            | Event::SharedRecovery { .. }
            | Event::StoreUnavailable { .. }
            | Event::StoreRestored { .. } => None,
        }
    }

    /// The tool's state after the event, for a transition (`OPEN` after `opened`, ...): the
    /// events of the transition kinds the metrics count.
    pub fn state_after(&self) -> Option<crate::CircuitState> {
        use crate::CircuitState;
        match self {
            Event::Opened { .. }
            | Event::Reopened { .. }
            | Event::SharedOpened { .. }
            | Event::ServerDown { .. } => Some(CircuitState::Open),
            Event::HalfOpened { .. } => Some(CircuitState::HalfOpen),
            Event::Closed { .. } | Event::SharedClosed { .. } | Event::ServerUp { .. } => {
                Some(CircuitState::Closed)
            }
            _ => None,
        }
    }

    /// Emits the event through `tracing` (target `circuit_breaker`; inside a guarded call
    /// it is a span event of its `execute_tool` span, B12): warnings for openings and
    /// exhaustion, info for the rest. The message is the event's text; the fields are
    /// namespaced: `circuit_breaker.event` ([`kind`](Self::kind)), `circuit_breaker.tool`,
    /// `circuit_breaker.state` (after a transition: `closed`, `open`, `half_open`),
    /// `circuit_breaker.server`, `circuit_breaker.tools` (comma-separated),
    /// `circuit_breaker.budget.consumed`, `circuit_breaker.budget.limit`,
    /// `circuit_breaker.systemic.cause`.
    pub(crate) fn trace(&self) {
        macro_rules! emit {
            ($level:expr) => {
                tracing::event!(
                    target: "circuit_breaker",
                    $level,
                    circuit_breaker.event = self.kind(),
                    circuit_breaker.tool = self.tool(),
                    circuit_breaker.state = self.state_after().map(crate::CircuitState::snake_name),
                    circuit_breaker.server = self.server(),
                    circuit_breaker.tools = self.tools().map(|tools| tools.join(",")),
                    circuit_breaker.budget.consumed = self.budget().map(|(consumed, _)| consumed),
                    circuit_breaker.budget.limit = self.budget().map(|(_, limit)| limit),
                    circuit_breaker.systemic.cause = self.cause(),
                    "{self}"
                )
            };
        }
        match self {
            Event::Opened { .. }
            | Event::Reopened { .. }
            | Event::BudgetExhausted { .. }
            | Event::MistakeLimit { .. }
            | Event::Systemic { .. }
            | Event::ServerDown { .. }
            | Event::StoreUnavailable { .. } => emit!(tracing::Level::WARN),
            _ => emit!(tracing::Level::INFO),
        }
    }

    /// The server, for a server's events.
    fn server(&self) -> Option<&str> {
        match self {
            Event::ServerDown { server, .. } | Event::ServerUp { server, .. } => Some(server),
            _ => None,
        }
    }

    /// The tools, for events about several.
    fn tools(&self) -> Option<&[String]> {
        match self {
            Event::ServerDown { tools, .. }
            | Event::ServerUp { tools, .. }
            | Event::Systemic { tools, .. } => Some(tools),
            _ => None,
        }
    }

    /// Consumed and limit, for the budget's exhaustion.
    fn budget(&self) -> Option<(u32, u32)> {
        match self {
            Event::BudgetExhausted { consumed, limit }
            | Event::BudgetRenewed { consumed, limit } => Some((*consumed, *limit)),
            _ => None,
        }
    }

    /// The suspected cause, for a systemic event.
    fn cause(&self) -> Option<&str> {
        match self {
            Event::Systemic { cause, .. } | Event::RecoveryOnTrial { cause } => Some(cause),
            _ => None,
        }
    }
}

fn failures(n: u32) -> &'static str {
    if n == 1 { "failure" } else { "failures" }
}

impl fmt::Display for Event {
    #[allow(clippy::too_many_lines)] // one arm per event, each a line of text
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Opened {
                tool,
                consecutive_failures: n,
                ..
            } => write!(
                f,
                "Circuit OPENED for {tool}: {n} consecutive {}",
                failures(*n)
            ),
            Event::HalfOpened { tool } => {
                write!(f, "Circuit HALF-OPEN for {tool}: one probe call allowed")
            }
            Event::Closed { tool } => write!(f, "Circuit CLOSED for {tool}: probe succeeded"),
            Event::Reopened {
                tool,
                consecutive_failures: n,
                ..
            } => write!(
                f,
                "Circuit OPENED for {tool}: probe failed, {n} consecutive {}",
                failures(*n)
            ),
            Event::ProbeReleased { tool } => write!(
                f,
                "Probe of {tool} cancelled before it finished: half-open slot released"
            ),
            Event::BudgetExhausted { consumed, limit } => write!(
                f,
                "FAILURE BUDGET EXHAUSTED — PAUSING ({consumed} / {limit} consumed)"
            ),
            Event::RecoveryOnTrial { cause } => write!(
                f,
                "Systemic pause over its cool-down: calls resume on trial, probes back off (suspected {cause} issue)"
            ),
            Event::MistakesForgiven { limit } => write!(
                f,
                "Mistake pause over its window: calls resume, the model's mistakes count from 0 again (limit {limit})"
            ),
            Event::BudgetRenewed { consumed, limit } => write!(
                f,
                "Failure budget renewed by its window: calls resume ({consumed} / {limit} consumed)"
            ),
            Event::MistakeLimit { count, limit } => write!(
                f,
                "MISTAKE LIMIT REACHED — PAUSING ({count} / {limit} model mistakes this cycle)"
            ),
            Event::CycleStarted { cycle } => write!(
                f,
                "Cycle {cycle} started: failure budget reset, breaker states kept"
            ),
            Event::ToolDiscovered { tool } => {
                write!(
                    f,
                    "Tool {tool} discovered at run time: state initialized CLOSED"
                )
            }
            Event::Restored { tools, step } => {
                write!(f, "State restored: {tools} tools at step {step}")
            }
            Event::Systemic {
                pattern,
                cause,
                tools,
            } => write!(
                f,
                "Multiple tools failing with {pattern} — likely {cause} issue ({}): every call paused",
                tools.join(", ")
            ),
            Event::RecoveryConfirmed => f.write_str(
                "Recovery confirmed: calls resume; the tools that opened probe with backoff",
            ),
            Event::AvailabilityChanged { tool, availability } => {
                write!(f, "Pre-call check for {tool}: {availability}")
            }
            Event::SubTaskDeferred { number, reason } => {
                write!(f, "Sub-task {number} deferred: {reason}")
            }
            Event::ServerDown {
                server,
                tools,
                message,
            } => write!(
                f,
                "Server {server} unreachable ({message}): its tools OPEN at once ({}), one failure charged",
                tools.join(", ")
            ),
            Event::ServerUp { server, tools } => write!(
                f,
                "Server {server} reachable again: probe succeeded, its tools CLOSED ({})",
                tools.join(", ")
            ),
            Event::SharedOpened {
                tool,
                worker,
                message,
            } => write!(
                f,
                "Circuit OPENED for {tool} by {worker} ({message}): routed around here, not charged"
            ),
            Event::SharedClosed { tool } => {
                write!(
                    f,
                    "Circuit CLOSED for {tool}: another worker's probe succeeded"
                )
            }
            Event::SharedRecovery { worker } => {
                write!(f, "Recovery confirmed by {worker}: calls resume here too")
            }
            Event::StoreUnavailable { store, message } => write!(
                f,
                "Fleet store {store} unreachable ({message}): deciding on local state alone"
            ),
            Event::StoreRestored { store } => {
                write!(f, "Fleet store {store} reachable again: sharing resumed")
            }
        }
    }
}

/// Receives every [`Event`] (B4), for metrics or logs. Called outside the expeditor's lock,
/// on the thread that caused the event. Closures `Fn(&Event)` are observers.
pub trait Observer: Send + Sync + 'static {
    /// Called once per event, in the order the events happened on this thread.
    fn on_event(&self, event: &Event);
}

impl<F> Observer for F
where
    F: Fn(&Event) + Send + Sync + 'static,
{
    fn on_event(&self, event: &Event) {
        self(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The transition kinds are exactly the events with a state after them.
    #[test]
    fn transition_kinds_are_the_events_with_a_state_after() {
        let tool = || "grep".to_owned();
        let tools = || vec!["grep".to_owned()];
        let events = [
            Event::Opened {
                tool: tool(),
                consecutive_failures: 3,
                message: "x".into(),
            },
            Event::HalfOpened { tool: tool() },
            Event::Closed { tool: tool() },
            Event::Reopened {
                tool: tool(),
                consecutive_failures: 4,
                message: "x".into(),
            },
            Event::ProbeReleased { tool: tool() },
            Event::BudgetExhausted {
                consumed: 5,
                limit: 5,
            },
            Event::MistakeLimit {
                count: 20,
                limit: 20,
            },
            Event::CycleStarted { cycle: 2 },
            Event::ToolDiscovered { tool: tool() },
            Event::Systemic {
                pattern: "p".into(),
                cause: "network".into(),
                tools: tools(),
            },
            Event::RecoveryConfirmed,
            Event::RecoveryOnTrial {
                cause: "network".into(),
            },
            Event::BudgetRenewed {
                consumed: 4,
                limit: 5,
            },
            Event::MistakesForgiven { limit: 20 },
            Event::AvailabilityChanged {
                tool: tool(),
                availability: "AVAILABLE".into(),
            },
            Event::SubTaskDeferred {
                number: 1,
                reason: "r".into(),
            },
            Event::ServerDown {
                server: "s".into(),
                tools: tools(),
                message: "x".into(),
            },
            Event::ServerUp {
                server: "s".into(),
                tools: tools(),
            },
            Event::SharedOpened {
                tool: tool(),
                worker: "w".into(),
                message: "x".into(),
            },
            Event::SharedClosed { tool: tool() },
            Event::SharedRecovery { worker: "w".into() },
            Event::StoreUnavailable {
                store: "r".into(),
                message: "x".into(),
            },
            Event::StoreRestored { store: "r".into() },
            Event::Restored { tools: 1, step: 1 },
        ];
        for event in &events {
            assert_eq!(
                event.state_after().is_some(),
                TRANSITION_KINDS.contains(&event.kind()),
                "{}",
                event.kind()
            );
        }
        let listed = events.iter().filter(|e| e.state_after().is_some()).count();
        assert_eq!(
            listed,
            TRANSITION_KINDS.len(),
            "every kind listed has an event"
        );
    }
}
