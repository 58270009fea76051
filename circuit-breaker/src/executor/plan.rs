//! The one call to make for a tool (R3.1, R4.1): the tool itself, an adapter through an
//! alternative whose breaker lets it through, or a refusal with the route to advise.

use super::Refusal;
use crate::engine::SkipReason;
use crate::expeditor::{Decision, Expeditor, Ticket, ToolId};
use crate::model::route::{Route, RouteTaken};
use crate::report::ModelNote;

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
    // Only SKIP and PAUSE are refused; a ticket is never turned down here.
    Refusal::of_decision(expeditor, decision).unwrap_or_else(|| {
        Refusal::new(
            expeditor.tool_name(tool).unwrap_or("?"),
            SkipReason::Open,
            Some(Route::ScopeReduction.taken(expeditor.tool_name(tool).unwrap_or("?"))),
            ModelNote {
                tool: expeditor.tool_name(tool).map(str::to_owned),
                asked_for: None,
                why: "no decision to refuse".to_owned(),
                instead: "call it through its ticket.".to_owned(),
                call_id: crate::telemetry::current_call_id_string(),
            },
        )
    })
}
