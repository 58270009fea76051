//! The engine driven directly: one [`Engine`] and a lock-free mirror of its own, commanded
//! as the expeditor commands them, with the step and the time given as arguments.
//!
//! The driver reuses the mirror's own lock-free paths rather than restating them: a decision
//! asks [`Hot::is_callable`](crate::expeditor::mirror::Hot::is_callable) (the healthy path) and
//! [`Hot::check_open`](crate::expeditor::mirror::Hot::check_open) (the rejection path) first and goes
//! to [`Engine::decide`] only when they leave the decision to it; a success goes through
//! [`Hot::absorb_success`](crate::expeditor::mirror::Hot::absorb_success) first; every command is
//! followed by [`Mirror::publish`]. Records are read through [`View`], with the mirror's
//! cells filled in, as the expeditor reads them.

use crate::capability::{CapabilityMap, MapErrors};
use crate::clock::Timestamp;
use crate::engine::{Changes, Engine, PauseReason, Recorded, SkipReason, Verdict};
use crate::event::Event;
use crate::expeditor::mirror::{Mirror, OpenCheck};
use crate::failure::Failure;
use crate::model::breaker::{BreakerRecord, Via};
use crate::model::budget::Budget;
use crate::model::cascade::SystemicEvent;
use crate::model::id::ToolId;
use crate::policy::Policy;
use crate::report::View;
use crate::route::Routes;
use crate::snapshot::Snapshot;

/// Which of the expeditor's paths a decision took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Path {
    /// The healthy path: CALL without the engine.
    Healthy,
    /// The lock-free rejection path: SKIP without the engine (an OPEN tool whose probe is not
    /// due, or an id that names no tool).
    Rejected,
    /// The engine decided.
    Engine,
}

/// One engine and its mirror. See the module documentation.
#[derive(Debug)]
pub(super) struct EngineDriver {
    engine: Engine,
    mirror: Mirror,
    /// The events of the commands run since the last [`take_events`](Self::take_events).
    events: Vec<Event>,
    /// The path of the last decision.
    path: Path,
}

/// Runs one engine command and publishes what it changed, as the expeditor's `command` does
/// (the policies of these tests have no cool-down, so no timer is armed); keeps the events.
fn command<T>(
    engine: &mut Engine,
    mirror: &Mirror,
    events: &mut Vec<Event>,
    command: impl FnOnce(&mut Engine, &mut Changes) -> T,
) -> T {
    let mut changes = Changes::default();
    let out = command(engine, &mut changes);
    mirror.publish(engine, &changes);
    events.append(&mut changes.events);
    out
}

/// A ticket's `via`: the epoch of a PROBE, or a CALL.
fn via(probe: Option<u64>) -> Via {
    probe.map_or(Via::Call, Via::Probe)
}

impl EngineDriver {
    /// Validates `map` as the expeditor's builder does and registers its tools in an engine
    /// under `policy`, the first cycle starting at `now`.
    pub(super) fn new(
        map: &CapabilityMap,
        policy: Policy,
        now: Timestamp,
    ) -> Result<Self, MapErrors> {
        map.validate()?;
        let mut driver = EngineDriver {
            engine: Engine::new(policy, now),
            mirror: Mirror::new(),
            events: Vec::new(),
            path: Path::Engine,
        };
        let specs = map.tools().to_vec();
        driver.command(|engine, changes| engine.register(specs, changes));
        Ok(driver)
    }

    fn command<T>(&mut self, run: impl FnOnce(&mut Engine, &mut Changes) -> T) -> T {
        command(&mut self.engine, &self.mirror, &mut self.events, run)
    }

    fn view(&self) -> View<'_> {
        View {
            engine: &self.engine,
            mirror: &self.mirror,
        }
    }

    // ----- commands ------------------------------------------------------------------------

    /// Before a call (R3.1) at `step`, as `Expeditor::decide`: the healthy path, then the
    /// rejection path, then the engine.
    pub(super) fn decide(&mut self, tool: ToolId, step: u64) -> Verdict {
        let Some(slot) = self.mirror.get(tool) else {
            self.path = Path::Rejected;
            return Verdict::Skip(SkipReason::UnknownTool);
        };
        let halted = self.mirror.halted();
        if slot.hot.is_callable() && !halted {
            self.path = Path::Healthy;
            return Verdict::Call;
        }
        let counted = if halted {
            None
        } else {
            match slot
                .hot
                .check_open(slot.def.settings, step, || Timestamp::EPOCH)
            {
                OpenCheck::Skip => {
                    self.path = Path::Rejected;
                    return Verdict::Skip(SkipReason::Open);
                }
                OpenCheck::Slow(counted) => counted,
            }
        };
        self.path = Path::Engine;
        let attempt = || counted.unwrap_or_else(|| slot.hot.count_attempt());
        command(
            &mut self.engine,
            &self.mirror,
            &mut self.events,
            |engine, changes| engine.decide(tool, step, Timestamp::EPOCH, attempt, changes),
        )
    }

    /// Records a success (R3.3) of the call `decide` allowed (`probe`: the epoch of a PROBE,
    /// `None` for a CALL) at `step`, as `Ticket::success`.
    pub(super) fn succeed(&mut self, tool: ToolId, probe: Option<u64>, step: u64, now: Timestamp) {
        let via = via(probe);
        let Some(slot) = self.mirror.get(tool) else {
            return;
        };
        if via == Via::Call && slot.hot.absorb_success(step, || now) {
            return;
        }
        slot.hot.stamp_success(step, || now);
        self.command(|engine, changes| engine.succeed(tool, via, changes));
    }

    /// Records a failure (R3.3) of the call `decide` allowed, as `Ticket::failure`.
    pub(super) fn fail(
        &mut self,
        tool: ToolId,
        probe: Option<u64>,
        failure: Failure,
        step: u64,
        now: Timestamp,
    ) -> Recorded {
        self.command(|engine, changes| {
            engine.fail(tool, via(probe), failure, None, step, now, changes)
        })
    }

    /// Gives the call back unused, as `Ticket::cancel`: a probe frees the half-open slot; a
    /// CALL changes nothing.
    pub(super) fn cancel(&mut self, tool: ToolId, probe: Option<u64>) {
        if probe.is_some() {
            self.command(|engine, changes| engine.cancel(tool, via(probe), changes));
        }
    }

    /// Starts a new cycle (R7.4) at `now`, as `Expeditor::new_cycle`; returns its number.
    pub(super) fn new_cycle(&mut self, now: Timestamp) -> u64 {
        self.command(|engine, changes| engine.new_cycle(now, changes))
    }

    /// The user confirms recovery (R9.3) at `step`, as `Expeditor::confirm_recovery`.
    pub(super) fn confirm_recovery(&mut self, step: u64) -> Option<SystemicEvent> {
        self.command(|engine, changes| engine.confirm_recovery(step, changes))
    }

    /// The events of the commands run since the last call, in order: what the expeditor's
    /// observers would have seen.
    pub(super) fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    // ----- queries -------------------------------------------------------------------------

    /// Which path the last [`decide`](Self::decide) took.
    pub(super) fn last_path(&self) -> Path {
        self.path
    }

    /// A tool's whole record (R2.1), with the mirror's cells filled in.
    pub(super) fn breaker(&self, tool: ToolId) -> Option<BreakerRecord> {
        self.view().record(tool)
    }

    /// The attempts counted since a tool's circuit opened, as its record shows them (the
    /// mirror's counter while it is OPEN).
    pub(super) fn attempts(&self, tool: ToolId) -> Option<u32> {
        self.breaker(tool).map(|record| record.attempts_since_open)
    }

    /// The routes of a skipped tool (R4.1), as the engine sees them.
    pub(super) fn routes(&self, tool: ToolId) -> Routes<'_> {
        self.engine.routes(tool)
    }

    /// The failure budget of this cycle, with its ledger (R7).
    pub(super) fn budget(&self) -> &Budget {
        self.engine.budget()
    }

    /// Whether every call is paused, and why.
    pub(super) fn paused(&self) -> Option<PauseReason> {
        self.engine.halt()
    }

    /// The systemic failure in force, or the last one.
    pub(super) fn systemic_event(&self) -> Option<&SystemicEvent> {
        self.engine.systemic_event()
    }

    /// The whole state at `step`, as `Expeditor::snapshot`.
    pub(super) fn snapshot(&self, step: u64) -> Snapshot {
        let view = self.view();
        self.engine.snapshot(step, |id| view.record(id))
    }
}
