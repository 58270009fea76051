//! Telemetry by the OpenTelemetry GenAI conventions (B12), through `tracing`: no
//! feature needed, no OpenTelemetry crate in the build.
//!
//! Every guarded call — a method of a `#[toolbox]`'s guarded handle (sync or async), the
//! JSON dispatcher's `call`, a tool of an `mcp::McpClient` (feature `mcp`) — runs in one
//! `execute_tool` span (target `circuit_breaker`, level INFO). With `tracing-opentelemetry`
//! it is exported as the conventions' span `execute_tool {gen_ai.tool.name}`, kind INTERNAL;
//! with feature `otel`, `otel::Telemetry` turns the spans and the breakers'
//! events into metrics.
//!
//! | span field | value |
//! |---|---|
//! | `gen_ai.operation.name` | `execute_tool` |
//! | `gen_ai.tool.name` | the tool asked for (also when an alternative answered) |
//! | `gen_ai.tool.type` | `function` (a toolbox's tool), `extension` (an MCP server's tool) |
//! | `gen_ai.tool.call.id` | the model's id for the call, when its caller gave one ([`with_call_id`], `ToolDispatch::dispatch_call`, an MCP request's id), or recorded on an outer span (below) |
//! | `error.type` | [`ErrorType`]: unset when the call answered |
//! | `otel.status_code`, `otel.status_description` | `error` and the message, when it did not |
//! | `circuit_breaker.state` | the breaker's state after a failed or refused call |
//! | `circuit_breaker.route`, `.route.tool`, `.degradation` | when an alternative (or the last good result) answered |
//! | `circuit_breaker.freshness` | the value's label, when it is not fresh (R6) |
//! | `circuit_breaker.budget.remaining` | failures left, after a failure |
//! | `circuit_breaker.server` | an MCP client's server |
//! | `circuit_breaker.cancelled` | `true` when the caller dropped the call before it answered (B13): no `error.type`, nothing charged |
//! | `mcp.method.name`, `mcp.session.id`, `mcp.protocol.version`, `jsonrpc.request.id`, `network.transport` | MCP, when known |
//!
//! What the breaker does during the call is a span event (a `tracing` event inside the
//! span), named by its message: `refused` (with the route advised), `budget_pause`,
//! `systemic_pause`, `routed`, `labelled`, `cancelled` (the caller dropped the call); and the
//! engine's own events
//! ([`Event`](crate::event::Event), e.g. `Circuit OPENED for grep: 3 consecutive failures`,
//! with `circuit_breaker.event = "opened"`; a probe is `half_opened`). Their fields are
//! namespaced `circuit_breaker.*`.
//!
//! The model's id for a call is given with [`with_call_id`] (B18): the call's span records it,
//! and so do the ledger line of its failure and the reply. An outer layer that knows more about
//! the call — an MCP server, your own model loop — opens the span first with [`execute_tool`] and runs the guarded call inside
//! it; the call then records into that span instead of opening a second one:
//!
//! ```
//! # use agent_circuit_breaker::toolbox;
//! # struct Tools;
//! # #[toolbox]
//! # impl Tools {
//! #     #[tool(provides = "greets", fallback = "say hello yourself")]
//! #     fn hello(&self) -> Result<String, std::io::Error> { Ok("hello".into()) }
//! # }
//! let guarded = GuardedTools::new(Tools);
//! let span = agent_circuit_breaker::telemetry::execute_tool("hello");
//! span.record("gen_ai.tool.call.id", "call_7");
//! let answer = span.in_scope(|| guarded.hello());
//! assert_eq!(answer.unwrap().value, "hello");
//! ```
//!
//! When no subscriber wants the span, a guarded call checks the level filter (one relaxed
//! load, inlined) and, if some subscriber wants INFO, one call site's cached interest (out of
//! line); nothing is allocated or recorded, and a generated method is as fast as before the
//! spans (BENCHMARKS.md).

use std::fmt;

use crate::engine::{PauseReason, SkipReason};
use crate::model::breaker::CircuitState;
use crate::model::failure::FailureCategory;
use crate::model::route::RouteKind;

mod call_id;
mod events;
mod span;

pub use call_id::{MAX_CALL_ID, with_call_id};
#[cfg(feature = "json")]
pub(crate) use call_id::{WithCallId, call_id, in_call};
pub(crate) use call_id::{current_call_id, current_call_id_string};

#[cfg(feature = "json")]
pub(crate) use events::mistake;
pub(crate) use events::{cancelled, labelled, refused, routed, traced_failure};
pub use span::execute_tool;
#[cfg(feature = "otel")]
pub(crate) use span::opening;
#[cfg(feature = "mcp")]
pub(crate) use span::{mcp_client_span, record_mcp};
pub(crate) use span::{named_call_span, wanted};

/// The target of every span and event of this crate.
pub const TARGET: &str = "circuit_breaker";

/// The name of the span every guarded call runs in (the conventions' `execute_tool`).
pub const SPAN_NAME: &str = "execute_tool";

/// What the conventions call `error.type`, for a call that did not answer: a small, fixed
/// vocabulary, so it can be a metric's attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorType {
    /// The tool ran and failed, for this [`FailureCategory`].
    Failed(FailureCategory),
    /// Refused: its circuit is OPEN (`circuit_open`).
    CircuitOpen,
    /// Refused: HALF-OPEN, another caller holds its one probe (`probe_in_flight`).
    ProbeInFlight,
    /// Refused: a pre-call check found it unavailable, or it is not allowed
    /// (`tool_unavailable`).
    ToolUnavailable,
    /// Refused: the sub-task being worked on is deferred (`subtask_deferred`).
    SubtaskDeferred,
    /// Refused: the failure budget is spent (`budget_exhausted`).
    BudgetExhausted,
    /// Refused: a systemic failure paused every call (`systemic_pause`).
    SystemicPause,
    /// Refused: every remaining sub-task is deferred (`nothing_achievable`).
    NothingAchievable,
    /// Refused: the model made too many mistakes this cycle (`mistake_limit`, B14).
    MistakeLimit,
    /// The model named no tool (`unknown_tool`); never charged.
    UnknownTool,
    /// The model's arguments do not fit the tool (`invalid_arguments`); never charged.
    InvalidArguments,
    /// The tool ran and said the call was the caller's mistake (`rejected`, B14): a resource
    /// the call named that does not exist, an input it does not accept; never charged.
    Rejected,
}

impl ErrorType {
    /// The value of `error.type`: `network`, `filesystem`, `permission`, `timeout`,
    /// `not_found`, `invalid_input`, `other` for a failure; `circuit_open`, `probe_in_flight`,
    /// `tool_unavailable`, `subtask_deferred`, `budget_exhausted`, `systemic_pause`,
    /// `nothing_achievable`, `mistake_limit` for a refusal; `unknown_tool`,
    /// `invalid_arguments`, `rejected` for the model's mistakes.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorType::Failed(category) => match category {
                FailureCategory::Network => "network",
                FailureCategory::Filesystem => "filesystem",
                FailureCategory::Permission => "permission",
                FailureCategory::Timeout => "timeout",
                FailureCategory::NotFound => "not_found",
                FailureCategory::InvalidInput => "invalid_input",
                FailureCategory::Other => "other",
            },
            ErrorType::CircuitOpen => "circuit_open",
            ErrorType::ProbeInFlight => "probe_in_flight",
            ErrorType::ToolUnavailable => "tool_unavailable",
            ErrorType::SubtaskDeferred => "subtask_deferred",
            ErrorType::BudgetExhausted => "budget_exhausted",
            ErrorType::SystemicPause => "systemic_pause",
            ErrorType::NothingAchievable => "nothing_achievable",
            ErrorType::MistakeLimit => "mistake_limit",
            ErrorType::UnknownTool => "unknown_tool",
            ErrorType::InvalidArguments => "invalid_arguments",
            ErrorType::Rejected => "rejected",
        }
    }

    /// The error type of a refusal for `reason`.
    pub const fn of_refusal(reason: SkipReason) -> Self {
        match reason {
            SkipReason::Open => ErrorType::CircuitOpen,
            SkipReason::ProbeInFlight => ErrorType::ProbeInFlight,
            SkipReason::UnknownTool => ErrorType::UnknownTool,
            SkipReason::Unavailable => ErrorType::ToolUnavailable,
            SkipReason::Deferred => ErrorType::SubtaskDeferred,
            SkipReason::Paused { pause } => match pause {
                PauseReason::BudgetExhausted { .. } => ErrorType::BudgetExhausted,
                PauseReason::Systemic { .. } => ErrorType::SystemicPause,
                PauseReason::NothingAchievable => ErrorType::NothingAchievable,
                PauseReason::MistakeLimit { .. } => ErrorType::MistakeLimit,
            },
        }
    }

    /// Whether the call was refused by the breaker (the tool was not called, and the model
    /// did not err).
    pub const fn is_refusal(self) -> bool {
        !matches!(
            self,
            ErrorType::Failed(_)
                | ErrorType::UnknownTool
                | ErrorType::InvalidArguments
                | ErrorType::Rejected
        )
    }

    /// Every error type, in the order of [`as_str`](Self::as_str)'s list.
    const VARIANTS: [ErrorType; 18] = [
        ErrorType::Failed(FailureCategory::Network),
        ErrorType::Failed(FailureCategory::Filesystem),
        ErrorType::Failed(FailureCategory::Permission),
        ErrorType::Failed(FailureCategory::Timeout),
        ErrorType::Failed(FailureCategory::NotFound),
        ErrorType::Failed(FailureCategory::InvalidInput),
        ErrorType::Failed(FailureCategory::Other),
        ErrorType::CircuitOpen,
        ErrorType::ProbeInFlight,
        ErrorType::ToolUnavailable,
        ErrorType::SubtaskDeferred,
        ErrorType::BudgetExhausted,
        ErrorType::SystemicPause,
        ErrorType::NothingAchievable,
        ErrorType::MistakeLimit,
        ErrorType::UnknownTool,
        ErrorType::InvalidArguments,
        ErrorType::Rejected,
    ];

    /// Every value, in the order above (for documentation and dashboards).
    pub const ALL: [&'static str; 18] = {
        let mut all = [""; 18];
        let mut i = 0;
        while i < all.len() {
            all[i] = ErrorType::VARIANTS[i].as_str();
            i += 1;
        }
        all
    };

    /// The error type spelled `value`, if it is one of [`ALL`](Self::ALL).
    #[cfg(feature = "otel")]
    pub(crate) fn parse(value: &str) -> Option<ErrorType> {
        ErrorType::VARIANTS
            .into_iter()
            .find(|known| known.as_str() == value)
    }
}

impl fmt::Display for ErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A breaker state as the spans and metrics spell it: `closed`, `open`, `half_open`.
pub const fn state_name(state: CircuitState) -> &'static str {
    state.snake_name()
}

/// A route kind as the spans spell it: `alternative`, `fallback`, `scope_reduction`, `stale`.
pub const fn route_name(kind: RouteKind) -> &'static str {
    match kind {
        RouteKind::Alternative => "alternative",
        RouteKind::Fallback => "fallback",
        RouteKind::ScopeReduction => "scope_reduction",
        RouteKind::Stale => "stale",
    }
}
