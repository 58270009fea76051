//! Deciding before a call (R3.1, R4): the [`Decision`], and what a SKIP or a PAUSE carries —
//! why, the routes to take instead, the note for a model. The healthy path reads the mirror
//! alone; everything else takes the engine's lock.

use std::fmt;

use super::mirror::{Slot, UntimedCheck};
use super::{Expeditor, Ticket};
use crate::engine::{PauseReason, SkipReason, Verdict};
use crate::model::breaker::Via;
use crate::model::capability::{MapErrors, ToolSpec};
use crate::model::cascade::SystemicEvent;
use crate::model::id::ToolId;
use crate::model::route::{Route, Routes};
use crate::report::ModelNote;

/// What the expeditor says before a call (R3.1): exactly one of CALL, PROBE, SKIP or PAUSE.
#[derive(Debug)]
#[must_use = "a decision must be acted on: call the tool through its ticket, take the route, or pause"]
pub enum Decision<'a> {
    /// The tool is CLOSED: call it and record the outcome through the ticket.
    Call(Ticket<'a>),
    /// The tool is HALF-OPEN and this caller holds its one probe (R3.6): call it once and
    /// record the outcome; success closes the circuit, failure re-opens it.
    Probe(Ticket<'a>),
    /// The tool is OPEN (or being probed by another caller): do not call it; take the route.
    Skip(Skip<'a>),
    /// Every call is paused (budget exhausted): stop and report.
    Pause(Pause<'a>),
}

impl Decision<'_> {
    /// The source document's name of the decision: `CALL`, `PROBE`, `SKIP` or `PAUSE`.
    pub fn kind(&self) -> &'static str {
        match self {
            Decision::Call(_) => "CALL",
            Decision::Probe(_) => "PROBE",
            Decision::Skip(_) => "SKIP",
            Decision::Pause(_) => "PAUSE",
        }
    }
}

/// Do not call the tool: here is why, and the routes to take instead (R4).
#[derive(Debug, Clone)]
pub struct Skip<'a> {
    expeditor: &'a Expeditor,
    tool: ToolId,
    slot: Option<&'a Slot>,
    reason: SkipReason,
}

impl<'a> Skip<'a> {
    /// The skipped tool.
    pub fn tool(&self) -> ToolId {
        self.tool
    }

    /// The skipped tool's name (`"?"` for an unknown id).
    pub fn tool_name(&self) -> &'a str {
        self.slot.map_or("?", |s| s.def.spec.name())
    }

    /// Why it is skipped.
    pub fn reason(&self) -> SkipReason {
        self.reason
    }

    /// The best route (R4.1): never `None`, scope reduction at worst.
    // Inlined: every generated method's refusal asks for it, and the tool-without-
    // alternatives answer below is a few loads.
    #[inline]
    pub fn route(&self) -> Route<'a> {
        // A tool without alternatives has one route whatever the state: said at once, without
        // the iterator (the refusal path of every generated method asks for it).
        if let Some(def) = self.slot.map(|s| &*s.def)
            && !def.has_alternatives()
        {
            return if def.fallback_given {
                Route::Fallback(def.spec.fallback())
            } else {
                Route::ScopeReduction
            };
        }
        self.routes().next().unwrap_or(Route::ScopeReduction)
    }

    /// Every route, best first: usable alternatives by severity, then the fallback, then
    /// scope reduction (R4.1, R4.3). Read from the lock-free mirror: no lock, no allocation.
    pub fn routes(&self) -> Routes<'a> {
        Routes::new(&self.expeditor.inner.mirror, self.slot.map(|s| &*s.def))
    }

    /// The short text for a language model (B7): which tool is broken, why, and what to do
    /// instead. It never invites a retry of the broken tool.
    pub fn for_model(&self) -> ModelNote {
        self.note_for(&self.route())
    }

    /// The note for a language model when `route` is the one taken; it names the call, when
    /// its caller gave the model's id for it (B18).
    pub fn note_for(&self, route: &Route<'_>) -> ModelNote {
        let engine = self.expeditor.lock();
        let mut note =
            ModelNote::for_route(self.expeditor.view(&engine), self.tool, self.reason, route);
        note.call_id = crate::telemetry::current_call_id_string();
        note
    }
}

/// Every call is paused; stop and report (R3.4, R9.2, R5.4).
#[derive(Clone, Copy)]
pub struct Pause<'a> {
    expeditor: &'a Expeditor,
    tool: ToolId,
    reason: PauseReason,
}

impl fmt::Debug for Pause<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pause")
            .field("tool", &self.tool)
            .field("reason", &self.reason)
            .finish()
    }
}

impl Pause<'_> {
    /// Why.
    pub fn reason(&self) -> PauseReason {
        self.reason
    }

    /// The tool that was asked for.
    pub fn tool(&self) -> ToolId {
        self.tool
    }

    /// The systemic failure behind the pause, if that is why (R9.2).
    pub fn systemic(&self) -> Option<SystemicEvent> {
        match self.reason {
            PauseReason::Systemic { .. } => self.expeditor.systemic_event(),
            _ => None,
        }
    }

    /// The short text for a language model (B7); it names the tool asked for, and the call,
    /// when its caller gave the model's id for it (B18).
    pub fn for_model(&self) -> ModelNote {
        let name = self.expeditor.tool_name(self.tool);
        let mut note = ModelNote::for_pause(
            self.reason,
            self.systemic().as_ref(),
            name,
            self.expeditor.pause_lifts_at(),
        );
        note.call_id = crate::telemetry::current_call_id_string();
        note
    }
}

impl Expeditor {
    /// Before a call (R3.1): CALL, PROBE, SKIP with its route, or PAUSE.
    ///
    /// The healthy path (a CLOSED tool, no pause) is small enough to inline into the caller;
    /// everything else goes through a separate, non-inlined function.
    #[inline]
    pub fn decide(&self, tool: impl Into<ToolId>) -> Decision<'_> {
        let tool = tool.into();
        match self.decide_healthy(tool) {
            Some(ticket) => Decision::Call(ticket),
            None => self.decide_rest(tool),
        }
    }

    /// [`decide`](Self::decide)'s healthy path alone: the ticket of a CLOSED tool when nothing
    /// pauses, else `None` and [`decide_rest`](Self::decide_rest) says the rest. A caller that
    /// matches the two apart keeps the ticket in registers: merged into one `Decision`, it is
    /// stored in pieces and read back whole on every healthy call, a stalled load (perf).
    #[inline]
    pub(crate) fn decide_healthy(&self, tool: ToolId) -> Option<Ticket<'_>> {
        let slot = self.inner.mirror.get(tool)?;
        if !slot.hot.is_callable() || self.inner.mirror.halted() {
            return None;
        }
        Some(Ticket {
            expeditor: self,
            slot,
            tool,
            via: Via::Call,
            done: false,
        })
    }

    /// Everything but the healthy path: the lock-free rejection of an OPEN tool whose probe is
    /// not due, then the engine under the lock. The rejection is a leaf: the clock, when only
    /// it can tell, and the engine are tail calls, so a refusal saves no registers (perf).
    #[inline(never)]
    pub(crate) fn decide_rest(&self, tool: ToolId) -> Decision<'_> {
        let Some(slot) = self.inner.mirror.get(tool) else {
            return self.skip(tool, None, SkipReason::UnknownTool);
        };
        if self.inner.mirror.halted() {
            return self.decide_slow(tool, slot, None);
        }
        match slot.hot.check_open_untimed(slot.def.settings, self.step()) {
            UntimedCheck::Skip => self.skip(tool, Some(slot), SkipReason::Open),
            UntimedCheck::Slow(counted) => self.decide_slow(tool, slot, counted),
            UntimedCheck::Timed { counted, due_at } => {
                self.decide_timed(tool, slot, counted, due_at)
            }
        }
    }

    /// [`decide_rest`](Self::decide_rest) when only the clock can say whether the probe is due.
    #[cold]
    #[inline(never)]
    fn decide_timed<'a>(
        &'a self,
        tool: ToolId,
        slot: &'a Slot,
        counted: Option<u32>,
        due_at: u64,
    ) -> Decision<'a> {
        if self.now().as_millis() < due_at {
            self.skip(tool, Some(slot), SkipReason::Open)
        } else {
            self.decide_slow(tool, slot, counted)
        }
    }

    #[cold]
    #[inline(never)]
    fn decide_slow<'a>(
        &'a self,
        tool: ToolId,
        slot: &'a Slot,
        counted: Option<u32>,
    ) -> Decision<'a> {
        let attempt = || counted.unwrap_or_else(|| slot.hot.count_attempt());
        let verdict = self.command(|engine, changes, step| {
            let now = self.now_if_timed(engine);
            engine.decide(tool, step, now, attempt, changes)
        });
        let ticket = |via| Ticket {
            expeditor: self,
            slot,
            tool,
            via,
            done: false,
        };
        match verdict {
            Verdict::Call => Decision::Call(ticket(Via::Call)),
            Verdict::Probe(epoch) => Decision::Probe(ticket(Via::Probe(epoch))),
            Verdict::Skip(reason) => self.skip(tool, Some(slot), reason),
            Verdict::Pause(reason) => Decision::Pause(Pause {
                expeditor: self,
                tool,
                reason,
            }),
        }
    }

    fn skip<'a>(
        &'a self,
        tool: ToolId,
        slot: Option<&'a Slot>,
        reason: SkipReason,
    ) -> Decision<'a> {
        Decision::Skip(Skip {
            expeditor: self,
            tool,
            slot,
            reason,
        })
    }

    /// [`decide`](Self::decide) by name; a tool not seen before gets its state now, CLOSED,
    /// with [`ToolSpec::discovered`] as its spec (R2.4).
    ///
    /// # Errors
    /// A [`MapErrors`] when `name` is empty.
    pub fn decide_named(&self, name: &str) -> Result<Decision<'_>, MapErrors> {
        let id = match self.tool(name) {
            Some(id) => id,
            None => self.discover(ToolSpec::discovered(name.to_owned()))?,
        };
        Ok(self.decide(id))
    }

    /// What to do instead of calling `tool`, as a refusal's note says it: its first usable
    /// route (an alternative, the fallback, or leaving the work out).
    #[cfg(feature = "json")]
    pub(crate) fn instead_of(&self, tool: ToolId) -> Option<String> {
        let engine = self.lock();
        engine.name(tool)?;
        let route = engine.routes(tool).next().unwrap_or(Route::ScopeReduction);
        Some(ModelNote::for_route(self.view(&engine), tool, SkipReason::Open, &route).instead)
    }
}
