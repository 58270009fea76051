//! A call not made (B7): which tool, why, the route advised instead, and the note for a
//! model — rendered on demand from the expeditor, so that the rejection path copies only
//! ids and allocates nothing.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::engine::SkipReason;
use crate::expeditor::{Decision, Expeditor, Pause, Skip, ToolId};
use crate::model::route::{AlternativeRoute, Route, RouteTaken};
use crate::report::ModelNote;

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

    /// The refusal of a SKIP or PAUSE `decision` (a ticket is never refused: `None`), the
    /// route advised the skip's best. Always inlined, so a caller that returns the refusal
    /// builds it in its answer's place rather than copying it there (perf: each copy of a
    /// refusal just stored in pieces is a stalled load).
    #[inline(always)]
    #[allow(clippy::inline_always)]
    pub(crate) fn of_decision(expeditor: &Expeditor, decision: &Decision<'_>) -> Option<Self> {
        match decision {
            // An OPEN tool's skip, the common refusal, said with its reason as a constant: the
            // reason copied whole is a wide load over the one byte `decide` stored, which stalls.
            Decision::Skip(skip) if matches!(skip.reason(), SkipReason::Open) => {
                Some(Refusal::decided(
                    expeditor,
                    skip.tool(),
                    SkipReason::Open,
                    Advice::of(&skip.route()),
                ))
            }
            Decision::Skip(skip) => Some(Refusal::from_skip(expeditor, skip, &skip.route())),
            Decision::Pause(pause) => Some(Refusal::paused(expeditor, pause.tool(), pause)),
            Decision::Call(_) | Decision::Probe(_) => None,
        }
    }

    #[inline]
    pub(super) fn from_skip(expeditor: &Expeditor, skip: &Skip<'_>, route: &Route<'_>) -> Self {
        Refusal::decided(expeditor, skip.tool(), skip.reason(), Advice::of(route))
    }

    pub(super) fn paused(expeditor: &Expeditor, tool: ToolId, pause: &Pause<'_>) -> Self {
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

    /// The short text for a language model (B7), which the refusal's `Display` prints. A
    /// refusal read during its call names the call, when its caller gave the model's id for
    /// it (B18: the JSON dispatcher's reply is made so).
    pub fn note(&self) -> ModelNote {
        let mut note = self.rendered_note();
        if note.call_id.is_none() {
            note.call_id = crate::telemetry::current_call_id_string();
        }
        note
    }

    fn rendered_note(&self) -> ModelNote {
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
