//! What a guarded call records on its span: a failure and what it did to the breaker, a
//! cancellation, a refusal and the route advised, a route taken, a freshness label, a model's
//! mistake.

#[cfg(feature = "json")]
use super::span::call_span;
use super::span::{current_call, wanted};
use super::{ErrorType, route_name, state_name};
use crate::engine::{PauseReason, SkipReason};
use crate::model::breaker::CircuitState;
use crate::model::failure::Failure;
use crate::model::freshness::Freshness;
use crate::model::route::RouteTaken;

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
