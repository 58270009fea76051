//! The engine behind a plain driver, so that the model-based test (`tests/model_proptest.rs`)
//! drives the state machine directly as well as through the expeditor. Not a public API: it
//! may change in any release.
//!
//! [`EngineDriver`] owns one engine (`engine/`) and the two cells per tool that the
//! expeditor keeps outside it, in its lock-free mirror (`mirror.rs`): the attempts counted on
//! an OPEN tool and the last success. Each method makes the decisions the expeditor makes,
//! one to one, with the engine's state read directly where the expeditor reads the mirror's
//! state word (the mirror is a copy of that state, published after every command):
//!
//! - [`decide`](EngineDriver::decide): the healthy path (CLOSED, not held back by a pre-call
//!   check, no pause and no deferred sub-task) answers CALL without the engine; the rejection
//!   path (OPEN, not held back, not backing off after a cascade, nothing pausing) counts the
//!   attempt and skips without the engine while no probe is due (`Hot::check_open`);
//!   everything else goes to the engine, with the attempt already counted or counted when
//!   the engine asks (`Expeditor::decide_rest`, `decide_slow`).
//! - [`succeed`](EngineDriver::succeed): the last success is stamped once per step; a
//!   success through a CALL on a CLOSED tool with no failure, not held back and not backing
//!   off changes nothing else (`Hot::absorb_success`); any other goes to the engine.
//! - [`cancel`](EngineDriver::cancel): only a probe goes to the engine.
//! - the attempt counters and last successes are set from `Changes` as `Mirror::publish`
//!   sets them; [`breaker`](EngineDriver::breaker) fills both in as `mirror::View::record`.
//!
//! Time comes in as arguments, as it does to the engine: the agent's `step`, the wall
//! clock's `now`.

use crate::breaker::{SuccessMark, Via};
use crate::capability::{CapabilityMap, MapError, MapErrors};
use crate::clock::Timestamp;
use crate::engine::{self, Changes, Engine, MAX_TOOLS};
use crate::failure::Failure;
use crate::policy::{Policy, ProbeUnit};
use crate::snapshot::Snapshot;

// Every type the driver's API names, so that the test can name them from here however the
// crate root re-exports them.
pub use crate::breaker::{BreakerRecord, CircuitState};
pub use crate::budget::Budget;
pub use crate::cascade::SystemicEvent;
pub use crate::engine::{PauseReason, Recorded, SkipReason};
pub use crate::event::Event;
pub use crate::id::ToolId;
pub use crate::route::{Route, Routes};

/// What the driver says before a call: the expeditor's `Decision`, without a ticket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// CALL: the tool is CLOSED. Record the outcome with `probe: None`.
    Call,
    /// PROBE: the one probe of a HALF-OPEN tool. Record the outcome with `probe: Some(epoch)`.
    Probe(u64),
    /// SKIP, and why; [`EngineDriver::routes`] gives the routes.
    Skip(SkipReason),
    /// PAUSE, and why.
    Pause(PauseReason),
}

/// Which of the expeditor's paths a decision took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// The healthy path: CALL without the engine.
    Healthy,
    /// The lock-free rejection path: SKIP without the engine (an OPEN tool whose probe is not
    /// due, or an id that names no tool).
    Rejected,
    /// The engine decided (under the expeditor's lock).
    Engine,
}

/// One engine and the mirror-owned cells of its tools. See the module documentation.
#[derive(Debug)]
pub struct EngineDriver {
    engine: Engine,
    /// Per tool, the attempts counted since its circuit opened (the mirror's counter).
    attempts: Vec<u32>,
    /// Per tool, the last success (the mirror's cell).
    successes: Vec<Option<SuccessMark>>,
    /// The events of the commands run since the last [`take_events`](Self::take_events).
    events: Vec<Event>,
    /// The path of the last decision.
    path: Path,
}

impl EngineDriver {
    /// Validates `map` (R1.4) as `ExpeditorBuilder::build` does and registers its tools in an
    /// engine under `policy`, the first cycle starting at `now`.
    ///
    /// # Errors
    /// [`MapErrors`] with every problem of the map.
    pub fn new(map: &CapabilityMap, policy: Policy, now: Timestamp) -> Result<Self, MapErrors> {
        map.validate()?;
        if map.tools().len() >= MAX_TOOLS {
            return Err(MapErrors(vec![MapError::TooManyTools { limit: MAX_TOOLS }]));
        }
        let mut driver = EngineDriver {
            engine: Engine::new(policy, now),
            attempts: Vec::new(),
            successes: Vec::new(),
            events: Vec::new(),
            path: Path::Engine,
        };
        let specs = map.tools().to_vec();
        let mut changes = Changes::default();
        driver.engine.register(specs, &mut changes);
        driver.publish(changes);
        Ok(driver)
    }

    /// What `Mirror::publish` does with a command's changes, for the cells the driver keeps;
    /// the events are kept for [`take_events`](Self::take_events).
    fn publish(&mut self, changes: Changes) {
        for (id, _) in &changes.registered {
            let i = id.index() as usize;
            if self.attempts.len() <= i {
                self.attempts.resize(i + 1, 0);
                self.successes.resize(i + 1, None);
            }
        }
        for &(id, n) in &changes.attempts {
            if let Some(cell) = self.attempts.get_mut(id.index() as usize) {
                *cell = n;
            }
        }
        for &(id, success) in &changes.successes {
            if let Some(cell) = self.successes.get_mut(id.index() as usize) {
                *cell = success;
            }
        }
        self.events.extend(changes.events);
    }

    /// Stamps the last success of `tool`, the first time it succeeds in `step`
    /// (`Hot::stamp_success`).
    fn stamp_success(&mut self, tool: ToolId, step: u64, now: Timestamp) {
        if let Some(cell) = self.successes.get_mut(tool.index() as usize)
            && cell.is_none_or(|s| s.step != step)
        {
            *cell = Some(SuccessMark { at: now, step });
        }
    }

    /// Counts one more attempt on an OPEN tool in the mirror's counter (`Hot::count_attempt`).
    fn count_attempt(cell: &mut u32) -> u32 {
        let previous = *cell;
        *cell = previous.wrapping_add(1);
        previous.saturating_add(1)
    }

    // ----- commands ------------------------------------------------------------------------

    /// Before a call (R3.1) at `step`, as `Expeditor::decide`. See the module documentation.
    pub fn decide(&mut self, tool: ToolId, step: u64) -> Verdict {
        let i = tool.index() as usize;
        let (Some(record), Some(def)) = (self.engine.record(tool), self.engine.def(tool)) else {
            self.path = Path::Rejected;
            return Verdict::Skip(SkipReason::UnknownTool);
        };
        let halted = self.engine.needs_slow_path();
        let gated = self.engine.gated(tool);
        if record.state == CircuitState::Closed && !gated && !halted {
            self.path = Path::Healthy;
            return Verdict::Call;
        }
        let mut counted = None;
        if !halted && record.state == CircuitState::Open && !gated && record.backoff == 0 {
            let settings = def.settings;
            match settings.probe_unit {
                ProbeUnit::Attempts => {
                    let n = Self::count_attempt(&mut self.attempts[i]);
                    if n < settings.probe_every {
                        self.path = Path::Rejected;
                        return Verdict::Skip(SkipReason::Open);
                    }
                    counted = Some(n);
                }
                ProbeUnit::Steps => {
                    let due = record
                        .opened_at_step
                        .unwrap_or(0)
                        .saturating_add(u64::from(settings.probe_every));
                    if step < due {
                        self.path = Path::Rejected;
                        return Verdict::Skip(SkipReason::Open);
                    }
                }
            }
        }
        self.path = Path::Engine;
        let mut changes = Changes::default();
        let cell = &mut self.attempts[i];
        let attempt = || counted.unwrap_or_else(|| Self::count_attempt(cell));
        let verdict = self
            .engine
            .decide(tool, step, Timestamp::EPOCH, attempt, &mut changes);
        self.publish(changes);
        match verdict {
            engine::Verdict::Call => Verdict::Call,
            engine::Verdict::Probe(epoch) => Verdict::Probe(epoch),
            engine::Verdict::Skip(reason) => Verdict::Skip(reason),
            engine::Verdict::Pause(reason) => Verdict::Pause(reason),
        }
    }

    /// Records a success (R3.3) of the call `decide` allowed (`probe`: the epoch of a PROBE,
    /// `None` for a CALL) at `step`, as `Ticket::success`.
    pub fn succeed(&mut self, tool: ToolId, probe: Option<u64>, step: u64, now: Timestamp) {
        let via = via(probe);
        let Some(record) = self.engine.record(tool) else {
            return;
        };
        let absorbed = via == Via::Call
            && record.state == CircuitState::Closed
            && record.consecutive_failures == 0
            && record.backoff == 0
            && !self.engine.gated(tool);
        self.stamp_success(tool, step, now);
        if absorbed {
            return;
        }
        let mut changes = Changes::default();
        self.engine.succeed(tool, via, &mut changes);
        self.publish(changes);
    }

    /// Records a failure (R3.3) of the call `decide` allowed, as `Ticket::failure`.
    pub fn fail(
        &mut self,
        tool: ToolId,
        probe: Option<u64>,
        failure: Failure,
        step: u64,
        now: Timestamp,
    ) -> Recorded {
        let mut changes = Changes::default();
        let recorded = self
            .engine
            .fail(tool, via(probe), failure, step, now, &mut changes);
        self.publish(changes);
        recorded
    }

    /// Gives the call back unused, as a ticket dropped unrecorded: a probe frees the
    /// half-open slot; a CALL changes nothing.
    pub fn cancel(&mut self, tool: ToolId, probe: Option<u64>) {
        if probe.is_some() {
            let mut changes = Changes::default();
            self.engine.cancel(tool, via(probe), &mut changes);
            self.publish(changes);
        }
    }

    /// Starts a new cycle (R7.4) at `now`, as `Expeditor::new_cycle`; returns its number.
    pub fn new_cycle(&mut self, now: Timestamp) -> u64 {
        let mut changes = Changes::default();
        let cycle = self.engine.new_cycle(now, &mut changes);
        self.publish(changes);
        cycle
    }

    /// The user confirms recovery (R9.3) at `step`, as `Expeditor::confirm_recovery`.
    pub fn confirm_recovery(&mut self, step: u64) -> Option<SystemicEvent> {
        let mut changes = Changes::default();
        let event = self.engine.confirm_recovery(step, &mut changes);
        self.publish(changes);
        event
    }

    /// The events of the commands run since the last call, in order: what the expeditor's
    /// observers would have seen.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    // ----- queries -------------------------------------------------------------------------

    /// Which path the last [`decide`](Self::decide) took.
    pub fn last_path(&self) -> Path {
        self.path
    }

    /// The number of tools.
    pub fn len(&self) -> usize {
        self.engine.len()
    }

    /// Whether there is no tool.
    pub fn is_empty(&self) -> bool {
        self.engine.len() == 0
    }

    /// The id of the tool named `name`.
    pub fn tool(&self, name: &str) -> Option<ToolId> {
        self.engine.id(name)
    }

    /// The state of a tool.
    pub fn state(&self, tool: ToolId) -> Option<CircuitState> {
        self.engine.record(tool).map(|r| r.state)
    }

    /// A tool's whole record (R2.1), with the attempts of an OPEN tool and the last success
    /// filled in from the driver's cells, as `mirror::View::record`.
    pub fn breaker(&self, tool: ToolId) -> Option<BreakerRecord> {
        let i = tool.index() as usize;
        let mut record = self.engine.record(tool)?.clone();
        if record.state == CircuitState::Open {
            record.attempts_since_open = self.attempts.get(i).copied().unwrap_or(0);
        }
        record.set_last_success(self.successes.get(i).copied().flatten());
        Some(record)
    }

    /// The attempts counted since a tool's circuit opened, as its record shows them (the
    /// driver's counter while it is OPEN).
    pub fn attempts(&self, tool: ToolId) -> Option<u32> {
        let record = self.engine.record(tool)?;
        Some(if record.state == CircuitState::Open {
            self.attempts
                .get(tool.index() as usize)
                .copied()
                .unwrap_or(0)
        } else {
            record.attempts_since_open
        })
    }

    /// The routes of a skipped tool (R4.1), as the engine sees them.
    pub fn routes(&self, tool: ToolId) -> Routes<'_> {
        self.engine.routes(tool)
    }

    /// The failure budget of this cycle, with its ledger (R7).
    pub fn budget(&self) -> &Budget {
        self.engine.budget()
    }

    /// Whether every call is paused, and why.
    pub fn paused(&self) -> Option<PauseReason> {
        self.engine.halt()
    }

    /// The systemic failure in force, or the last one.
    pub fn systemic_event(&self) -> Option<&SystemicEvent> {
        self.engine.systemic_event()
    }

    /// The whole state at `step`, as `Expeditor::snapshot`.
    pub fn snapshot(&self, step: u64) -> Snapshot {
        self.engine.snapshot(step, |id| self.breaker(id))
    }
}

fn via(probe: Option<u64>) -> Via {
    probe.map_or(Via::Call, Via::Probe)
}
