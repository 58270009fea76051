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
//! | `gen_ai.tool.call.id` | recorded by whoever knows it (an outer span, below) |
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
//! An outer layer that knows more about the call — an MCP server, your own model loop with a
//! tool-call id — opens the span first with [`execute_tool`] and runs the guarded call inside
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

use std::cell::Cell;
use std::fmt;

use tracing::Span;

use crate::engine::{PauseReason, SkipReason};
use crate::model::breaker::CircuitState;
use crate::model::failure::{Failure, FailureCategory};
use crate::model::freshness::Freshness;
use crate::model::route::{RouteKind, RouteTaken};

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

/// Opens the `execute_tool` span for one call of `tool` (declares every field of the table
/// above; the GenAI ones are set). `tool_type` is `function` or `extension`.
macro_rules! execute_tool_span {
    ($tool:expr, $tool_type:expr) => {
        tracing::info_span!(
            target: "circuit_breaker",
            "execute_tool",
            otel.name = %format_args!("execute_tool {}", $tool),
            otel.kind = "internal",
            otel.status_code = tracing::field::Empty,
            otel.status_description = tracing::field::Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = $tool,
            gen_ai.tool.type = $tool_type,
            gen_ai.tool.call.id = tracing::field::Empty,
            error.type = tracing::field::Empty,
            circuit_breaker.state = tracing::field::Empty,
            circuit_breaker.route = tracing::field::Empty,
            circuit_breaker.route.tool = tracing::field::Empty,
            circuit_breaker.degradation = tracing::field::Empty,
            circuit_breaker.freshness = tracing::field::Empty,
            circuit_breaker.budget.remaining = tracing::field::Empty,
            circuit_breaker.server = tracing::field::Empty,
            circuit_breaker.cancelled = tracing::field::Empty,
            mcp.method.name = tracing::field::Empty,
            mcp.session.id = tracing::field::Empty,
            mcp.protocol.version = tracing::field::Empty,
            jsonrpc.request.id = tracing::field::Empty,
            network.transport = tracing::field::Empty,
        )
    };
}

thread_local! {
    /// The id of the span an outer layer opened with [`execute_tool`] for the call about to
    /// be made on this thread, until that call takes it (0: none).
    static OFFERED: Cell<u64> = const { Cell::new(0) };
}

/// Opens the `execute_tool` span for a call of `tool` that an outer layer makes: run the
/// guarded call inside it (`span.in_scope(..)`, `.instrument(span)`), and the call records
/// into it instead of opening its own. Record what you know on it first:
/// `gen_ai.tool.call.id`, `mcp.*`, `gen_ai.tool.type` is `function` unless you record it.
///
/// A span that is not entered before the next guarded call on this thread is not used by
/// it; nothing breaks, the call opens its own.
pub fn execute_tool(tool: &str) -> Span {
    let span = execute_tool_span!(tool, "function");
    offer(&span);
    span
}

/// Offers `span` to the next guarded call on this thread that runs inside it.
fn offer(span: &Span) {
    if let Some(id) = span.id() {
        OFFERED.with(|offered| offered.set(id.into_u64()));
    }
}

/// The span a guarded call of `tool` runs in: the one an outer layer opened for it and
/// entered ([`execute_tool`]), else a new one. Disabled (and nearly free) when no subscriber
/// wants it.
#[inline]
pub(crate) fn call_span(tool: &str, tool_type: &'static str) -> Span {
    if !wanted() {
        return Span::none();
    }
    open(tool, tool_type).0
}

/// [`call_span`], and whether the span is an outer layer's.
#[inline(never)]
fn open(tool: &str, tool_type: &'static str) -> (Span, bool) {
    let offered = OFFERED.with(|offered| offered.replace(0));
    if offered != 0 {
        let current = Span::current();
        if current.id().is_some_and(|id| id.into_u64() == offered) {
            return (current, true);
        }
    }
    (execute_tool_span!(tool, tool_type), false)
}

/// Whether a subscriber may want our spans or events: the level filter, then the cached
/// interest of one call site of our target at INFO. Not the level filter alone: a subscriber
/// that wants INFO of other targets only passes it, and would cost every refusal and failure
/// a current-span lookup.
///
/// Only the level filter's load is inlined: the interest check, with its dispatcher lookup
/// for a subscriber that may want the call, is out of line, so that a guarded method that
/// inlines this stays small (its registers and frame are the healthy path's).
#[inline]
pub(crate) fn wanted() -> bool {
    tracing::level_enabled!(tracing::Level::INFO) && interested()
}

/// The interest of our call site at INFO (see [`wanted`]).
#[inline(never)]
fn interested() -> bool {
    tracing::enabled!(target: "circuit_breaker", tracing::Level::INFO)
}

/// The current span, if it is a call's `execute_tool` span.
fn current_call() -> Option<Span> {
    let span = Span::current();
    let ours = span
        .metadata()
        .is_some_and(|m| m.name() == SPAN_NAME && m.target() == TARGET);
    ours.then_some(span)
}

/// Records a failure through `record` (the ticket's), and on the current call's span what it
/// was and did: `error.type`, the status, the state and the budget after it. When no
/// subscriber wants the span, this is `record(failure)` and nothing else.
pub(crate) fn traced_failure(
    failure: Failure,
    record: impl FnOnce(Failure) -> crate::engine::Recorded,
) -> crate::engine::Recorded {
    if !wanted() {
        return record(failure);
    }
    let kept = failure.clone();
    let recorded = record(failure);
    failed(&kept, &recorded);
    recorded
}

#[cold]
fn failed(failure: &Failure, recorded: &crate::engine::Recorded) {
    let Some(span) = current_call() else { return };
    // The caller's mistake is not the tool's failure (B14).
    let error = match failure.blame() {
        crate::model::failure::Blame::Caller => ErrorType::Rejected,
        _ => ErrorType::Failed(failure.category()),
    };
    span.record("error.type", error.as_str());
    span.record("otel.status_code", "error");
    span.record("otel.status_description", failure.message());
    span.record("circuit_breaker.state", state_name(recorded.state));
    span.record(
        "circuit_breaker.budget.remaining",
        u64::from(recorded.budget.remaining()),
    );
}

/// Records on the current call's span that its caller dropped it before it answered (B13):
/// `circuit_breaker.cancelled = true` and the span event `cancelled`. No `error.type`: a
/// cancellation is no error of the tool's, and nothing is charged.
#[cold]
pub(crate) fn cancelled() {
    if !wanted() {
        return;
    }
    // Said on a call's span only: a ticket held by hand and dropped outside one has no call
    // to describe (the count on its breaker is kept all the same).
    let Some(span) = current_call() else { return };
    span.record("circuit_breaker.cancelled", true);
    tracing::event!(
        target: "circuit_breaker",
        tracing::Level::INFO,
        circuit_breaker.event = "cancelled",
        "cancelled"
    );
}

/// Records a refusal on the current call's span, and its span event: `refused`, or
/// `budget_pause` / `systemic_pause` for a pause. `route` renders the route advised (only
/// when a subscriber wants the event).
#[cold]
pub(crate) fn refused(
    reason: SkipReason,
    state: Option<CircuitState>,
    route: impl FnOnce() -> Option<RouteTaken>,
) {
    if !wanted() {
        return;
    }
    let error = ErrorType::of_refusal(reason);
    let state = state.map(state_name);
    if let Some(span) = current_call() {
        span.record("error.type", error.as_str());
        span.record("otel.status_code", "error");
        span.record("otel.status_description", reason_text(reason));
        if let Some(state) = state {
            span.record("circuit_breaker.state", state);
        }
    }
    match reason {
        SkipReason::Paused {
            pause: PauseReason::BudgetExhausted { consumed, limit },
        } => tracing::event!(
            target: "circuit_breaker",
            tracing::Level::INFO,
            circuit_breaker.event = "budget_pause",
            error.type = error.as_str(),
            circuit_breaker.budget.consumed = consumed,
            circuit_breaker.budget.limit = limit,
            circuit_breaker.budget.remaining = limit.saturating_sub(consumed),
            "budget_pause"
        ),
        SkipReason::Paused {
            pause: PauseReason::Systemic { category },
        } => tracing::event!(
            target: "circuit_breaker",
            tracing::Level::INFO,
            circuit_breaker.event = "systemic_pause",
            error.type = error.as_str(),
            circuit_breaker.systemic.cause = crate::model::cascade::cause_of(category),
            "systemic_pause"
        ),
        _ => {
            let route = route();
            let route = route.as_ref();
            tracing::event!(
                target: "circuit_breaker",
                tracing::Level::INFO,
                circuit_breaker.event = "refused",
                error.type = error.as_str(),
                circuit_breaker.state = state,
                circuit_breaker.route = route.map(|r| route_name(r.kind)),
                circuit_breaker.route.tool = route.and_then(|r| r.to.as_deref()),
                circuit_breaker.degradation = route.and_then(|r| r.degradation.as_deref()),
                circuit_breaker.fallback = route.and_then(|r| r.fallback.as_deref()),
                "refused"
            );
        }
    }
}

/// The short why of a refusal, for the span's status.
const fn reason_text(reason: SkipReason) -> &'static str {
    match reason {
        SkipReason::Open => "circuit OPEN: not called",
        SkipReason::ProbeInFlight => "circuit HALF-OPEN, its probe is in flight: not called",
        SkipReason::UnknownTool => "no such tool",
        SkipReason::Unavailable => "unavailable by its pre-call check: not called",
        SkipReason::Deferred => "its sub-task is deferred: not called",
        SkipReason::Paused { pause } => match pause {
            PauseReason::BudgetExhausted { .. } => "failure budget exhausted: every call paused",
            PauseReason::Systemic { .. } => "systemic failure: every call paused",
            PauseReason::NothingAchievable => "nothing achievable: every call paused",
            PauseReason::MistakeLimit { .. } => "mistake limit reached: every call paused",
        },
    }
}

/// Records that a route answered instead of the tool: span fields and the `routed` event.
#[cold]
pub(crate) fn routed(route: &RouteTaken, freshness: &Freshness) {
    if !wanted() {
        return;
    }
    let label = match freshness {
        Freshness::Fresh => None,
        other => Some(other.to_string()),
    };
    if let Some(span) = current_call() {
        span.record("circuit_breaker.route", route_name(route.kind));
        if let Some(to) = &route.to {
            span.record("circuit_breaker.route.tool", to.as_str());
        }
        if let Some(degradation) = &route.degradation {
            span.record("circuit_breaker.degradation", degradation.as_str());
        }
        if let Some(label) = &label {
            span.record("circuit_breaker.freshness", label.as_str());
        }
    }
    tracing::event!(
        target: "circuit_breaker",
        tracing::Level::INFO,
        circuit_breaker.event = "routed",
        circuit_breaker.route = route_name(route.kind),
        circuit_breaker.route.tool = route.to.as_deref(),
        circuit_breaker.degradation = route.degradation.as_deref(),
        circuit_breaker.severity = %route.severity,
        circuit_breaker.freshness = label.as_deref(),
        "routed"
    );
}

/// Records that the tool's own value carries a freshness label (R6): the span field and the
/// `labelled` event.
#[cold]
pub(crate) fn labelled(freshness: &Freshness) {
    if !wanted() || matches!(freshness, Freshness::Fresh) {
        return;
    }
    let label = freshness.to_string();
    if let Some(span) = current_call() {
        span.record("circuit_breaker.freshness", label.as_str());
    }
    tracing::event!(
        target: "circuit_breaker",
        tracing::Level::INFO,
        circuit_breaker.event = "labelled",
        circuit_breaker.freshness = label.as_str(),
        "labelled"
    );
}

/// Records a model's mistake (B8) on the current call's span, or on one of its own.
#[cfg(feature = "json")]
pub(crate) fn mistake(tool: &str, error: ErrorType, why: &str) {
    if !wanted() {
        return;
    }
    let span = call_span(tool, "function");
    span.record("error.type", error.as_str());
    span.record("otel.status_code", "error");
    span.record("otel.status_description", why);
}

/// Records what an MCP server knows of a `tools/call` on its span.
#[cfg(feature = "mcp")]
pub(crate) fn record_mcp(span: &Span, protocol: Option<&str>, request: &str) {
    span.record("mcp.method.name", "tools/call");
    if let Some(protocol) = protocol {
        span.record("mcp.protocol.version", protocol);
    }
    span.record("jsonrpc.request.id", request);
}

/// The MCP client's span for a call of `tool` on `server` (reached over `transport`, when
/// known): `gen_ai.tool.type = extension`, `mcp.method.name = tools/call`.
#[cfg(feature = "mcp")]
pub(crate) fn mcp_client_span(tool: &str, server: &str, transport: Option<&str>) -> Span {
    if !wanted() {
        return Span::none();
    }
    let (span, outer) = open(tool, "extension");
    if outer {
        span.record("gen_ai.tool.type", "extension");
    }
    span.record("circuit_breaker.server", server);
    span.record("mcp.method.name", "tools/call");
    if let Some(transport) = transport {
        span.record("network.transport", transport);
    }
    // What the call itself finds (a model's mistake) records into this span.
    offer(&span);
    span
}
