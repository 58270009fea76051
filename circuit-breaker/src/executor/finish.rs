//! Finishing a call: its outcome recorded through its ticket, the answer shaped (the value
//! with its route, or the tool's error with what recording it did), the value's freshness
//! labelled (R6) and the route said on the call's span (B12).

use std::fmt;

use super::{CallError, Refusal, Routed};
use crate::expeditor::{Expeditor, Ticket, ToolId};
use crate::model::failure::Failure;
use crate::model::freshness::Freshness;
use crate::model::route::RouteTaken;

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
            Ok(Routed::taken(value, route, Freshness::Fresh))
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
            Ok(Routed::taken(value, route, freshness))
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
    if routed.route().is_none() && (compared || expeditor.is_caching(freshen.tool)) {
        routed.set_freshness(expeditor.observe(
            freshen.tool,
            crate::model::freshness::Observation {
                args: freshen.args.unwrap_or(0),
                output: output.unwrap_or(0),
                data_time,
                live: true,
            },
        ));
    } else if let Some(at) = data_time.filter(|t| *t < expeditor.cycle_started_at()) {
        routed.set_freshness(Freshness::Stale { retrieved_at: at });
    }
    match routed.route() {
        Some(route) => crate::telemetry::routed(route, routed.freshness()),
        None => crate::telemetry::labelled(routed.freshness()),
    }
    Ok(routed)
}

/// Records a refusal a guarded call is about to return on the call's span (B12):
/// `error.type` and the `refused` (or `budget_pause`, `systemic_pause`) event. A side call,
/// out of line: the caller builds its `Err` in place, so the healthy path's `Result` never
/// has its address taken (an out-of-line function writing the return value would keep it in
/// memory on every path).
///
/// Inlined, the check whether anyone listens comes first: when nobody does, the refusal's
/// state (a lookup) is never read. Always inlined: out of line, the check alone is a call on
/// every refusal of a generated method.
#[inline(always)]
#[allow(clippy::inline_always)]
pub fn trace_refusal(refusal: &Refusal) {
    if crate::telemetry::wanted() {
        trace_refusal_now(refusal);
    }
}

#[cold]
#[inline(never)]
fn trace_refusal_now(refusal: &Refusal) {
    crate::telemetry::refused(refusal.reason(), refusal.state(), || refusal.route());
}
