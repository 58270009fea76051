//! The executor's side of the line (R8): what a caller gets back when a tool is called
//! through the expeditor — the value with the route taken (R4.2), the tool's own error
//! untouched (R3.5), or a refusal that says why (B7).
//!
//! [`plan`] turns the expeditor's decisions into the one call to make — the tool, or an
//! adapter through an alternative — without calling anything: the dispatcher `#[toolbox]`
//! generates makes that call.

use std::fmt;
use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::model::clock::Timestamp;

use crate::expeditor::{Decision, Expeditor, Pause, Recorded, Skip, SkipReason, Ticket, ToolId};
use crate::model::failure::Failure;
use crate::model::freshness::Freshness;
use crate::model::route::{AlternativeRoute, Route, RouteTaken};
use crate::report::ModelNote;

/// A tool's value with the route that produced it (R4.2): `None` when the tool itself
/// answered, the alternative and its degradation otherwise.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Routed<T> {
    /// The value.
    pub value: T,
    /// The route taken instead of the tool, if one was (boxed: the healthy path carries only
    /// a null pointer).
    pub route: Option<Box<RouteTaken>>,
    /// How fresh the value is (R6): no label for a live result.
    pub freshness: Freshness,
}

impl<T> Routed<T> {
    /// Whether the value came through an alternative, with some capability lost.
    pub fn is_degraded(&self) -> bool {
        self.route.is_some()
    }

    /// The value, dropping the route.
    pub fn into_value(self) -> T {
        self.value
    }
}

/// A call not made: which tool, why, the route to take instead (advice: an alternative
/// without an adapter, the manual fallback, or scope reduction), and the text for a model.
///
/// Made on the rejection path, it copies only ids and a handle on the expeditor: nothing is
/// allocated and no lock is taken until it is read. The [`route`](Self::route), the
/// [`note`](Self::note), its `Display` and its serde form are rendered on demand from the
/// expeditor, so they describe the tool's breaker as it is when they are rendered (render it
/// before the next call for the state that refused this one).
#[derive(Clone)]
pub struct Refusal(Said);

#[derive(Clone)]
enum Said {
    /// Decided by the expeditor: rendered from it.
    Decided {
        expeditor: Expeditor,
        tool: ToolId,
        reason: SkipReason,
        advice: Advice,
    },
    /// Given whole ([`Refusal::new`]).
    Given(Box<Given>),
}

/// A refusal given whole.
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename = "Refusal")]
struct Given {
    tool: String,
    reason: SkipReason,
    route: Option<RouteTaken>,
    note: ModelNote,
}

/// The route a decided refusal advises, by position: rendered from the map when read.
#[derive(Debug, Clone, Copy)]
enum Advice {
    /// None (a pause).
    Nothing,
    /// Alternative `index` of the tool's spec, which names `tool`.
    Alternative { tool: ToolId, index: u32 },
    /// The manual fallback.
    Fallback,
    /// Scope reduction.
    ScopeReduction,
}

impl Advice {
    fn of(route: &Route<'_>) -> Self {
        match route {
            Route::Alternative(alt) => Advice::Alternative {
                tool: alt.tool(),
                index: alt.index(),
            },
            Route::Fallback(_) => Advice::Fallback,
            Route::ScopeReduction => Advice::ScopeReduction,
        }
    }
}

/// The expeditor as a [`ModelNote`] reads a tool's state after the call.
impl crate::report::NoteFacts for Expeditor {
    fn name(&self, tool: ToolId) -> Option<&str> {
        self.tool_name(tool)
    }

    fn availability(&self, tool: ToolId) -> Option<crate::model::precheck::Availability> {
        Expeditor::availability(self, tool)
    }

    fn deferred_subtask(&self) -> Option<usize> {
        Expeditor::deferred_subtask(self)
    }

    fn pause_lifts_at(&self) -> Option<crate::model::clock::Timestamp> {
        Expeditor::pause_lifts_at(self)
    }

    fn pausing_event(&self) -> Option<crate::report::SystemicEvent> {
        match self.paused() {
            Some(crate::engine::PauseReason::Systemic { .. }) => self.systemic_event(),
            _ => None,
        }
    }

    fn record(&self, tool: ToolId) -> Option<crate::report::BreakerRecord> {
        self.breaker(tool)
    }
}

impl Refusal {
    /// A refusal given whole: which tool, why, the route advised, the note for the model.
    pub fn new(
        tool: impl Into<String>,
        reason: SkipReason,
        route: Option<RouteTaken>,
        note: ModelNote,
    ) -> Self {
        Refusal(Said::Given(Box::new(Given {
            tool: tool.into(),
            reason,
            route,
            note,
        })))
    }

    #[inline]
    fn decided(expeditor: &Expeditor, tool: ToolId, reason: SkipReason, advice: Advice) -> Self {
        Refusal(Said::Decided {
            expeditor: expeditor.clone(),
            tool,
            reason,
            advice,
        })
    }

    fn from_skip(expeditor: &Expeditor, skip: &Skip<'_>, route: &Route<'_>) -> Self {
        Refusal::decided(expeditor, skip.tool(), skip.reason(), Advice::of(route))
    }

    fn paused(expeditor: &Expeditor, tool: ToolId, pause: &Pause<'_>) -> Self {
        let reason = SkipReason::Paused {
            pause: pause.reason(),
        };
        Refusal::decided(expeditor, tool, reason, Advice::Nothing)
    }

    /// The tool asked for (`"?"` for an id that is no tool).
    pub fn tool(&self) -> &str {
        match &self.0 {
            Said::Decided {
                expeditor, tool, ..
            } => expeditor.tool_name(*tool).unwrap_or("?"),
            Said::Given(given) => &given.tool,
        }
    }

    /// The tool's breaker state as it is now (`None` for a refusal given whole, or an id
    /// that is no tool).
    pub fn state(&self) -> Option<crate::model::breaker::CircuitState> {
        match &self.0 {
            Said::Decided {
                expeditor, tool, ..
            } => expeditor.state(*tool),
            Said::Given(_) => None,
        }
    }

    /// Why it was not called.
    pub fn reason(&self) -> SkipReason {
        match &self.0 {
            Said::Decided { reason, .. } => *reason,
            Said::Given(given) => given.reason,
        }
    }

    /// What to do instead; `None` when paused.
    pub fn route(&self) -> Option<RouteTaken> {
        match &self.0 {
            Said::Decided {
                expeditor,
                tool,
                advice,
                ..
            } => {
                let from = expeditor.tool_name(*tool).unwrap_or("?");
                with_route(expeditor, *tool, *advice, |route| route.taken(from))
            }
            Said::Given(given) => given.route.clone(),
        }
    }

    /// The short text for a language model (B7), which the refusal's `Display` prints.
    pub fn note(&self) -> ModelNote {
        match &self.0 {
            Said::Decided {
                expeditor,
                tool,
                reason,
                advice,
            } => match reason {
                SkipReason::Paused { pause } => {
                    let systemic = match pause {
                        crate::engine::PauseReason::Systemic { .. } => expeditor.systemic_event(),
                        _ => None,
                    };
                    ModelNote::for_pause(
                        *pause,
                        systemic.as_ref(),
                        expeditor.tool_name(*tool),
                        expeditor.pause_lifts_at(),
                    )
                }
                reason => with_route(expeditor, *tool, *advice, |route| {
                    ModelNote::for_route_from(expeditor, *tool, *reason, route)
                })
                .unwrap_or_else(|| {
                    ModelNote::for_route_from(expeditor, *tool, *reason, &Route::ScopeReduction)
                }),
            },
            Said::Given(given) => given.note.clone(),
        }
    }

    /// The refusal's parts, rendered.
    fn given(&self) -> Given {
        Given {
            tool: self.tool().to_owned(),
            reason: self.reason(),
            route: self.route(),
            note: self.note(),
        }
    }
}

/// Calls `f` with the route `advice` names, read from the tool's spec (O(1), no lock);
/// `None` for no route (a pause).
fn with_route<R>(
    expeditor: &Expeditor,
    tool: ToolId,
    advice: Advice,
    f: impl FnOnce(&Route<'_>) -> R,
) -> Option<R> {
    match advice {
        Advice::Nothing => None,
        Advice::ScopeReduction => Some(f(&Route::ScopeReduction)),
        Advice::Fallback | Advice::Alternative { .. } => {
            let spec = expeditor.spec(tool);
            let route = match (advice, spec) {
                (Advice::Alternative { tool, index }, Some(spec)) => spec
                    .alternatives()
                    .get(index as usize)
                    .map(|alt| Route::Alternative(AlternativeRoute::new(tool, alt, index))),
                (_, Some(spec)) => Some(Route::Fallback(spec.fallback())),
                (_, None) => None,
            };
            Some(f(&route.unwrap_or(Route::ScopeReduction)))
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Said::Given(given) => fmt::Display::fmt(&given.note, f),
            Said::Decided { .. } => fmt::Display::fmt(&self.note(), f),
        }
    }
}

impl fmt::Debug for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Refusal")
            .field("tool", &self.tool())
            .field("reason", &self.reason())
            .field("route", &self.route())
            .field("note", &self.note())
            .finish()
    }
}

impl PartialEq for Refusal {
    fn eq(&self, other: &Self) -> bool {
        self.tool() == other.tool()
            && self.reason() == other.reason()
            && self.route() == other.route()
            && self.note() == other.note()
    }
}

impl Eq for Refusal {}

impl Serialize for Refusal {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Said::Given(given) => given.serialize(serializer),
            Said::Decided { .. } => self.given().serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Refusal {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Given::deserialize(deserializer).map(|given| Refusal(Said::Given(Box::new(given))))
    }
}

impl std::error::Error for Refusal {}

/// What a guarded call returns on the error side: the tool ran and failed (its error is
/// untouched, R3.5), the tool ran and said the call was the caller's mistake (B14), or it was
/// not called.
#[derive(Debug)]
pub enum CallError<E> {
    /// The tool — or the adapter through an alternative — ran and failed.
    Failed {
        /// The tool the failure was recorded against.
        tool: String,
        /// The tool's error, as it returned it.
        error: E,
        /// What recording the failure did (circuit opened? budget left?).
        recorded: Recorded,
        /// The route taken, when the failure came through an alternative.
        route: Option<Box<RouteTaken>>,
    },
    /// The tool — or the adapter through an alternative — ran and answered that the call was
    /// the caller's mistake: its error's [`Classify::blame`](crate::Classify::blame) says so
    /// (B14). Counted as the model's mistake, never charged; no circuit opened.
    Rejected {
        /// The tool that rejected the call.
        tool: String,
        /// The tool's error, as it returned it.
        error: E,
        /// The tool's state after it, and whether every call now pauses (the model's
        /// [`mistake_limit`](crate::Policy::mistake_limit)).
        recorded: Recorded,
        /// The route taken, when the call went through an alternative.
        route: Option<Box<RouteTaken>>,
        /// The failure's category: [`NotFound`](crate::FailureCategory::NotFound) for a
        /// resource the call named that does not exist, usually
        /// [`InvalidInput`](crate::FailureCategory::InvalidInput) otherwise.
        category: crate::FailureCategory,
    },
    /// The tool — or the adapter through an alternative — did not answer within its deadline
    /// (`#[tool(timeout = "..")]`, [`ToolSpec::timeout`](crate::ToolSpec::timeout), B13): the
    /// call was recorded as a failure of category timeout, and its future dropped (a sync
    /// tool that answered late: its value dropped).
    TimedOut {
        /// The tool the timeout was recorded against.
        tool: String,
        /// The deadline it missed.
        after: std::time::Duration,
        /// What recording the failure did (circuit opened? budget left?).
        recorded: Recorded,
        /// The route taken, when the call went through an alternative.
        route: Option<Box<RouteTaken>>,
    },
    /// The call was not made.
    Refused(Refusal),
}

impl<E> CallError<E> {
    /// The refusal, if the call was not made.
    pub fn refusal(&self) -> Option<&Refusal> {
        match self {
            CallError::Refused(r) => Some(r),
            CallError::Failed { .. } | CallError::Rejected { .. } | CallError::TimedOut { .. } => {
                None
            }
        }
    }

    /// The tool's error, if it ran and failed or rejected the call.
    pub fn tool_error(&self) -> Option<&E> {
        match self {
            CallError::Failed { error, .. } | CallError::Rejected { error, .. } => Some(error),
            CallError::TimedOut { .. } | CallError::Refused(_) => None,
        }
    }

    /// The deadline the call missed, if it timed out.
    pub fn timed_out(&self) -> Option<std::time::Duration> {
        match self {
            CallError::TimedOut { after, .. } => Some(*after),
            CallError::Failed { .. } | CallError::Rejected { .. } | CallError::Refused(_) => None,
        }
    }

    /// Whether the tool said the call was the caller's mistake (B14).
    pub fn is_callers_mistake(&self) -> bool {
        matches!(self, CallError::Rejected { .. })
    }
}

impl<E: fmt::Display> fmt::Display for CallError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Failed { tool, error, .. } => write!(f, "{tool} failed: {error}"),
            CallError::Rejected { tool, error, .. } => {
                write!(f, "{tool} rejected the call: {error}")
            }
            CallError::TimedOut { tool, after, .. } => {
                write!(f, "{tool} failed: {}", timed_out_message(*after))
            }
            CallError::Refused(refusal) => fmt::Display::fmt(refusal, f),
        }
    }
}

/// The failure message of a call past its deadline: `timed out after 30s`.
pub(crate) fn timed_out_message(after: std::time::Duration) -> String {
    format!("timed out after {}", humantime::format_duration(after))
}

impl<E: std::error::Error + 'static> std::error::Error for CallError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CallError::Failed { error, .. } | CallError::Rejected { error, .. } => Some(error),
            CallError::TimedOut { .. } => None,
            CallError::Refused(refusal) => Some(refusal),
        }
    }
}

/// The one call to make.
#[derive(Debug)]
pub enum Plan<'a> {
    /// Call the tool itself (a CALL or a PROBE).
    Primary(Ticket<'a>),
    /// Call adapter number `index` (in the order given to [`plan`]): it reaches the goal
    /// through an alternative tool whose breaker let it through.
    Adapter {
        /// Which adapter.
        index: usize,
        /// The alternative tool's ticket: the adapter's outcome is recorded against it.
        ticket: Ticket<'a>,
        /// The route taken.
        route: Box<RouteTaken>,
    },
    /// Call nothing.
    Refuse(Refusal),
}

/// Decides the one call to make for `tool` (R3.1, R4.1): the tool if its breaker allows;
/// otherwise the routes in order — an alternative that has an adapter (`adapters[i]` is the
/// alternative tool adapter `i` goes through) and whose own breaker allows is taken; one whose
/// breaker says SKIP is passed over; an alternative without an adapter, the fallback or scope
/// reduction ends the search as a refusal carrying that route as advice.
pub fn plan<'a>(
    expeditor: &'a Expeditor,
    tool: impl Into<ToolId>,
    adapters: &[ToolId],
) -> Plan<'a> {
    let tool = tool.into();
    match expeditor.decide(tool) {
        Decision::Call(ticket) | Decision::Probe(ticket) => Plan::Primary(ticket),
        Decision::Pause(pause) => Plan::Refuse(Refusal::paused(expeditor, tool, &pause)),
        Decision::Skip(skip) => {
            for route in skip.routes() {
                let Route::Alternative(alt) = route else {
                    return Plan::Refuse(Refusal::from_skip(expeditor, &skip, &route));
                };
                let Some(index) = adapters.iter().position(|&a| a == alt.tool()) else {
                    return Plan::Refuse(Refusal::from_skip(expeditor, &skip, &route));
                };
                match expeditor.decide(alt.tool()) {
                    Decision::Call(ticket) | Decision::Probe(ticket) => {
                        return Plan::Adapter {
                            index,
                            ticket,
                            route: Box::new(route.taken(skip.tool_name())),
                        };
                    }
                    Decision::Skip(_) => {}
                    Decision::Pause(pause) => {
                        return Plan::Refuse(Refusal::paused(expeditor, tool, &pause));
                    }
                }
            }
            Plan::Refuse(Refusal::from_skip(expeditor, &skip, &Route::ScopeReduction))
        }
    }
}

/// [`plan`] for a tool with no adapter: its ticket, or the refusal with the route to advise.
///
/// # Errors
/// The [`Refusal`] when the tool must not be called.
// Always inlined: returned through memory, the ticket is written in pieces and read back
// whole, and those stalled loads cost the generated method 2-3x the runtime API (perf).
#[inline(always)]
#[allow(clippy::inline_always)]
pub fn plan_direct(expeditor: &Expeditor, tool: impl Into<ToolId>) -> Result<Ticket<'_>, Refusal> {
    let tool = tool.into();
    match expeditor.decide(tool) {
        Decision::Call(ticket) | Decision::Probe(ticket) => Ok(ticket),
        other => Err(refuse(expeditor, tool, &other)),
    }
}

/// The refusal for a SKIP or PAUSE when no adapter can take the call: the best route as
/// advice.
#[cold]
pub fn refuse(expeditor: &Expeditor, tool: ToolId, decision: &Decision<'_>) -> Refusal {
    match decision {
        Decision::Pause(pause) => Refusal::paused(expeditor, tool, pause),
        Decision::Skip(skip) => Refusal::from_skip(expeditor, skip, &skip.route()),
        // Only SKIP and PAUSE are refused; a ticket is never turned down here.
        Decision::Call(_) | Decision::Probe(_) => Refusal::new(
            expeditor.tool_name(tool).unwrap_or("?"),
            SkipReason::Open,
            Some(Route::ScopeReduction.taken(expeditor.tool_name(tool).unwrap_or("?"))),
            ModelNote {
                tool: expeditor.tool_name(tool).map(str::to_owned),
                asked_for: None,
                why: "no decision to refuse".to_owned(),
                instead: "call it through its ticket.".to_owned(),
            },
        ),
    }
}

/// Records a call's outcome through its ticket and shapes the answer: the value with its
/// route, or the tool's error untouched with what recording it did. The route's telemetry is
/// the caller's ([`finish_dated`], [`finish_fresh`]: they know the value's label).
///
/// # Errors
/// [`CallError::Failed`] when `result` is an error; `failure` describes it for the breaker
/// ([`CallError::Rejected`] when it blames the caller).
#[inline]
fn finish<T, E>(
    ticket: Ticket<'_>,
    route: Option<Box<RouteTaken>>,
    result: Result<T, E>,
    failure: fn(&E) -> Failure,
) -> Result<Routed<T>, CallError<E>> {
    match result {
        Ok(value) => {
            ticket.success();
            Ok(Routed {
                value,
                route,
                freshness: Freshness::Fresh,
            })
        }
        Err(error) => Err(failed(ticket, route, error, failure)),
    }
}

/// [`finish`]'s failure, out of line: the healthy path stays small enough to inline whole
/// into the generated method (and it into its caller), and the failure code is one
/// instantiation per error type, not one per tool.
#[cold]
#[inline(never)]
pub(crate) fn failed<E>(
    ticket: Ticket<'_>,
    route: Option<Box<RouteTaken>>,
    error: E,
    failure: impl FnOnce(&E) -> Failure,
) -> CallError<E> {
    let tool = ticket.tool_name().to_owned();
    let failure = failure(&error);
    // The caller's mistake goes to the mistake path: `Ticket::failure` sends it there (B14).
    let rejected = failure.blame() == crate::model::failure::Blame::Caller;
    let category = failure.category();
    let recorded = crate::telemetry::traced_failure(failure, |f| ticket.failure(f));
    if rejected {
        CallError::Rejected {
            tool,
            error,
            recorded,
            route,
            category,
        }
    } else {
        CallError::Failed {
            tool,
            error,
            recorded,
            route,
        }
    }
}

/// A call's deadline (B13), from when the call starts (after the decision): the one clock
/// read a tool with a timeout costs before it is called. Tools without a timeout never make
/// one.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    at: Timestamp,
    after: Duration,
}

impl Deadline {
    /// A deadline `millis` from now, by the expeditor's clock.
    #[inline]
    pub fn start(expeditor: &Expeditor, millis: u64) -> Self {
        let after = Duration::from_millis(millis);
        Deadline {
            at: expeditor.now().plus(after),
            after,
        }
    }

    /// The time the call must answer by.
    pub fn at(&self) -> Timestamp {
        self.at
    }

    /// The timeout the deadline was set with.
    pub fn after(&self) -> Duration {
        self.after
    }

    /// Whether the expeditor's clock has reached the deadline: a sync tool's answer read
    /// after it returns. An answer at or past its deadline is late, as if none had come.
    #[inline]
    pub fn passed(&self, expeditor: &Expeditor) -> bool {
        expeditor.now() >= self.at
    }

    /// Runs `future` against the deadline: its output when it answered in time, `None` when
    /// the deadline came first (or it answered, but late) — the future is then dropped, which
    /// is how an async call is cancelled. The timer ([`WallClock::sleep_until`] of the
    /// expeditor's clock) is set only if the future does not answer on its first poll.
    ///
    /// [`WallClock::sleep_until`]: crate::clock::WallClock::sleep_until
    pub async fn within<F: Future>(self, expeditor: &Expeditor, future: F) -> Option<F::Output> {
        let mut future = std::pin::pin!(future);
        let mut sleep: Option<crate::model::clock::Sleep> = None;
        std::future::poll_fn(|cx| {
            if let Poll::Ready(output) = future.as_mut().poll(cx) {
                return Poll::Ready((!self.passed(expeditor)).then_some(output));
            }
            let sleep = sleep.get_or_insert_with(|| expeditor.sleep_until(self.at));
            match std::pin::Pin::new(sleep).poll(cx) {
                Poll::Ready(()) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            }
        })
        .await
    }
}

/// A call past its deadline: recorded through its ticket as a failure of category timeout,
/// `timed out after ..` (B13), and answered as [`CallError::TimedOut`]. Out of line, like
/// `failed`: cold, and one instantiation for every tool.
///
/// # Errors
/// Always: the timeout.
#[cold]
#[inline(never)]
pub fn timed_out<T, E>(
    ticket: Ticket<'_>,
    route: Option<Box<RouteTaken>>,
    deadline: Deadline,
) -> Result<Routed<T>, CallError<E>> {
    let tool = ticket.tool_name().to_owned();
    let failure = Failure::with_category(
        timed_out_message(deadline.after),
        crate::model::failure::FailureCategory::Timeout,
    );
    let recorded = crate::telemetry::traced_failure(failure, |f| ticket.failure(f));
    Err(CallError::TimedOut {
        tool,
        after: deadline.after,
        recorded,
        route,
    })
}

/// `finish` for a tool with no freshness keys, dating its value (R6.3): a value that says it
/// is from before the current cycle ([`Dated`](crate::freshness::Dated)) is labelled STALE
/// DATA, also when it came through an alternative; any other value is fresh.
///
/// `dated` is the generated autoref probe: for an output that is not `Dated` it returns a
/// constant `None`, so once inlined the check (and the read of the cycle's start) compiles
/// away and the healthy path is `finish`'s. It is a function pointer, not a closure type,
/// so that every tool with the same output and error types shares one instantiation (compile
/// time).
///
/// # Errors
/// [`CallError::Failed`] (or [`CallError::Rejected`]) when `result` is an error; `failure`
/// describes it for the breaker.
#[inline]
pub fn finish_dated<T, E>(
    expeditor: &Expeditor,
    ticket: Ticket<'_>,
    route: Option<Box<RouteTaken>>,
    result: Result<T, E>,
    failure: fn(&E) -> Failure,
    dated: fn(&T) -> Option<crate::model::clock::Timestamp>,
) -> Result<Routed<T>, CallError<E>> {
    // Built once, in place: not finished, then taken apart and rebuilt (each move of the
    // `Result` through memory costs the healthy path).
    match result {
        Ok(value) => {
            ticket.success();
            let freshness = match dated(&value) {
                Some(at) => stale_before_cycle(expeditor, at),
                None => Freshness::Fresh,
            };
            match &route {
                Some(route) => crate::telemetry::routed(route, &freshness),
                None if !matches!(freshness, Freshness::Fresh) => {
                    crate::telemetry::labelled(&freshness);
                }
                None => {}
            }
            Ok(Routed {
                value,
                route,
                freshness,
            })
        }
        Err(error) => Err(failed(ticket, route, error, failure)),
    }
}

/// STALE DATA when `at` is before the current cycle began (R6.2), no label otherwise.
fn stale_before_cycle(expeditor: &Expeditor, at: crate::model::clock::Timestamp) -> Freshness {
    if at < expeditor.cycle_started_at() {
        Freshness::Stale { retrieved_at: at }
    } else {
        Freshness::Fresh
    }
}

/// Where a guarded call's freshness is judged (R6): which tool, the digest of its arguments,
/// how to digest its value, and the time the value says it is from.
pub struct Freshen<T> {
    /// The tool.
    pub tool: ToolId,
    /// Digest of the call's arguments, when they are hashed (`#[tool(freshness)]`).
    pub args: Option<u64>,
    /// Digest of a value, when values are hashed.
    pub digest: fn(&T) -> Option<u64>,
    /// The time a value says it is from, if it says ([`Dated`](crate::freshness::Dated)).
    pub dated: fn(&T) -> Option<crate::model::clock::Timestamp>,
}

impl<T> fmt::Debug for Freshen<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Freshen")
            .field("tool", &self.tool)
            .field("args", &self.args)
            .finish_non_exhaustive()
    }
}

/// `finish`, then labels the value (R6.2): compared with the tool's last output for the
/// same arguments, UNVERIFIED for a caching tool, STALE DATA when it says it is older than
/// the cycle. Fresh values carry no label (R6.3).
///
/// # Errors
/// [`CallError::Failed`] when `result` is an error.
pub fn finish_fresh<T, E>(
    expeditor: &Expeditor,
    ticket: Ticket<'_>,
    route: Option<Box<RouteTaken>>,
    result: Result<T, E>,
    failure: fn(&E) -> Failure,
    freshen: &Freshen<T>,
) -> Result<Routed<T>, CallError<E>> {
    let mut routed = finish(ticket, route, result, failure)?;
    let output = (freshen.digest)(&routed.value);
    let data_time = (freshen.dated)(&routed.value);
    let compared = freshen.args.is_some() && output.is_some();
    // A value that came through an alternative is that tool's: it is not compared with this
    // tool's baseline, only dated.
    if routed.route.is_none() && (compared || expeditor.is_caching(freshen.tool)) {
        routed.freshness = expeditor.observe(
            freshen.tool,
            crate::model::freshness::Observation {
                args: freshen.args.unwrap_or(0),
                output: output.unwrap_or(0),
                data_time,
                live: true,
            },
        );
    } else if let Some(at) = data_time.filter(|t| *t < expeditor.cycle_started_at()) {
        routed.freshness = Freshness::Stale { retrieved_at: at };
    }
    match &routed.route {
        Some(route) => crate::telemetry::routed(route, &routed.freshness),
        None => crate::telemetry::labelled(&routed.freshness),
    }
    Ok(routed)
}

/// Records a refusal a guarded call is about to return on the call's span (B12):
/// `error.type` and the `refused` (or `budget_pause`, `systemic_pause`) event. A side call,
/// out of line: the caller builds its `Err` in place, so the healthy path's `Result` never
/// has its address taken (an out-of-line function writing the return value would keep it in
/// memory on every path).
#[cold]
#[inline(never)]
pub fn trace_refusal(refusal: &Refusal) {
    crate::telemetry::refused(refusal.reason(), refusal.state(), || refusal.route());
}

/// Keeps a good result of the tool itself as the last good result for its arguments, for
/// [`serve_stale`].
pub fn keep_last_good<T: Clone, E>(
    cache: &crate::model::freshness::StaleCache<T>,
    args: u64,
    expeditor: &Expeditor,
    result: &Result<Routed<T>, CallError<E>>,
) {
    if let Ok(routed) = result
        && routed.route.is_none()
    {
        cache.remember(args, routed.value.clone(), expeditor.now());
    }
}

/// A refused call answered from the last good result for the same arguments, labelled
/// STALE DATA with the time it was retrieved — never silently (R6). Refusals for a pause or
/// a deferred sub-task are not answered this way.
///
/// # Errors
/// The refusal, when nothing was kept or the refusal is not about this tool's state.
pub fn serve_stale<T: Clone, E>(
    refusal: Refusal,
    cache: &crate::model::freshness::StaleCache<T>,
    args: u64,
) -> Result<Routed<T>, CallError<E>> {
    let eligible = matches!(
        refusal.reason(),
        SkipReason::Open | SkipReason::ProbeInFlight | SkipReason::Unavailable
    );
    let Some((value, at)) = cache.recall(args).filter(|_| eligible) else {
        trace_refusal(&refusal);
        return Err(CallError::Refused(refusal));
    };
    Ok(stale_answer(Routed {
        value,
        route: Some(Box::new(RouteTaken {
            from: refusal.tool().to_owned(),
            kind: crate::model::route::RouteKind::Stale,
            to: None,
            method: None,
            degradation: Some(format!(
                "last good result, retrieved at {at}; may not reflect current state"
            )),
            severity: crate::model::capability::Severity::High,
            fallback: None,
        })),
        freshness: Freshness::Stale { retrieved_at: at },
    }))
}

/// A last good result served for a refused call, recorded as its route (B12).
fn stale_answer<T>(routed: Routed<T>) -> Routed<T> {
    if let Some(route) = &routed.route {
        crate::telemetry::routed(route, &routed.freshness);
    }
    routed
}
