//! The last good result (R6): kept for each set of arguments, and served for a refused call
//! labelled STALE DATA with the time it was retrieved, never silently.

use super::finish::trace_refusal;
use super::{CallError, Refusal, Routed};
use crate::engine::SkipReason;
use crate::expeditor::Expeditor;
use crate::model::freshness::Freshness;
use crate::model::route::RouteTaken;

/// Keeps a good result of the tool itself as the last good result for its arguments, for
/// [`serve_stale`].
pub fn keep_last_good<T: Clone, E>(
    cache: &crate::model::freshness::StaleCache<T>,
    args: u64,
    expeditor: &Expeditor,
    result: &Result<Routed<T>, CallError<E>>,
) {
    if let Ok(routed) = result
        && routed.route().is_none()
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
    Ok(stale_answer(Routed::new(
        value,
        Some(RouteTaken {
            from: refusal.tool().to_owned(),
            kind: crate::model::route::RouteKind::Stale,
            to: None,
            method: None,
            degradation: Some(format!(
                "last good result, retrieved at {at}; may not reflect current state"
            )),
            severity: crate::model::capability::Severity::High,
            fallback: None,
        }),
        Freshness::Stale { retrieved_at: at },
    )))
}

/// A last good result served for a refused call, recorded as its route (B12).
fn stale_answer<T>(routed: Routed<T>) -> Routed<T> {
    if let Some(route) = routed.route() {
        crate::telemetry::routed(route, routed.freshness());
    }
    routed
}
