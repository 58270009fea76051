//! The engine: the whole state machine of the decision layer as one plain value (DESIGN "The
//! layers"). Breakers, the failure budget and its ledger, cascade detection, pre-call checks,
//! scope deferrals and freshness, with `&mut self` commands that return a verdict and write
//! down what changed ([`Changes`]): events for the hook, and which tools' lock-free mirror
//! must be published again.
//!
//! There is no lock and no atomic in here. The expeditor (`expeditor.rs`) owns the one
//! engine behind one mutex; its `publish` is the only writer of the mirror. Time comes in as
//! arguments (the agent's `step`, the wall clock's `now`), so every command is deterministic
//! and the model-based test drives the engine directly.
//!
//! Two cells of a tool's state are kept outside the engine, in the mirror, because the
//! lock-free paths write them: the attempts counted on an OPEN tool by the rejection path
//! (passed in to [`Engine::decide`], reset through [`Changes`]) and the tool's last success
//! (written by `Ticket::success`). Views of a record ([`crate::mirror::View`]) fill both in.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::breaker::{
    BreakerRecord, CircuitState, SuccessMark, Transition, Verdict as Breaker, Via,
};
use crate::budget::{Budget, BudgetStatus, LedgerEntry};
use crate::capability::{MapError, MapErrors, ToolSpec, check_tool};
use crate::cascade::{Cascade, SystemicEvent, backoff_interval, may_correlate};
use crate::clock::Timestamp;
use crate::event::Event;
use crate::failure::{Failure, FailureCategory};
use crate::fleet::{SharedOpen, SharedTransition, StoreStatus};
use crate::freshness::{Freshness, FreshnessProfile, FreshnessTracker, Observation};
use crate::group::{Groups, Outage, ServerLine, ServerOutage};
use crate::id::{ToolId, ToolName};
use crate::policy::Policy;
use crate::precheck::{Availability, Precheck};
use crate::registry::ToolDef;
use crate::route::{Route, Routes, ToolView};
use crate::scope::{Deferral, ScopeError, ScopeLine, ScopeReport, Task, ToolStanding, WorkStatus};
use crate::snapshot::{RestoreError, SNAPSHOT_FORMAT, SNAPSHOT_VERSION, Snapshot};

/// The most tools one expeditor holds.
pub(crate) const MAX_TOOLS: usize = (u32::MAX - 1) as usize;

/// Why every call is paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PauseReason {
    /// The failure budget of this cycle is spent (R3.4, R7.3).
    BudgetExhausted {
        /// Failures charged.
        consumed: u32,
        /// The budget.
        limit: u32,
    },
    /// Correlated circuits opened: a systemic failure (R9.2). Every call pauses until
    /// [`Expeditor::confirm_recovery`](crate::Expeditor::confirm_recovery).
    Systemic {
        /// The category the failures share, if they share one.
        category: Option<FailureCategory>,
    },
    /// Every remaining sub-task is deferred (R5.4).
    NothingAchievable,
    /// The model made as many mistakes this cycle as the policy allows (B14): it is stuck,
    /// so every call pauses until a new cycle.
    MistakeLimit {
        /// Mistakes made this cycle.
        count: u32,
        /// The policy's [`mistake_limit`](crate::Policy::mistake_limit).
        limit: u32,
    },
}

/// Why a tool is not called: the reason of a [`Skip`](crate::expeditor::Skip) and of a
/// [`Refusal`](crate::Refusal) (one enum for both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum SkipReason {
    /// Its circuit is OPEN and no probe is due.
    Open,
    /// It is HALF-OPEN and another caller holds its one probe (R3.6).
    ProbeInFlight,
    /// The id or name is not a tool of this expeditor.
    UnknownTool,
    /// A pre-call check found it UNAVAILABLE, or it is not in the allowed-tools list (R10.2).
    Unavailable,
    /// The sub-task being worked on is deferred (R5.3).
    Deferred,
    /// Every call is paused. Never the reason of a `Skip` (a pause is a
    /// [`Decision::Pause`](crate::Decision::Pause)); a refusal of a guarded call gives it.
    Paused {
        /// Why.
        pause: PauseReason,
    },
}

/// What the engine says before a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Call,
    Probe(u64),
    Skip(SkipReason),
    Pause(PauseReason),
}

/// What recording a failure did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recorded {
    /// The tool's state after the failure.
    pub state: CircuitState,
    /// Its consecutive failures after the failure.
    pub consecutive_failures: u32,
    /// Whether this failure opened (or re-opened) the circuit.
    pub opened: bool,
    /// The budget after the failure.
    pub budget: BudgetStatus,
    /// Whether every call now pauses.
    pub paused: bool,
}

/// The model's own mistakes in this cycle (B8, B14): a tool name that is no tool, arguments
/// that do not parse, a call the tool rejected as the caller's. Counted on a line of their
/// own in the reports, never charged to a tool's breaker or the failure budget; at the
/// policy's [`mistake_limit`](crate::Policy::mistake_limit) every call pauses. A new cycle
/// starts the count again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct MistakeCount {
    /// Calls of a name that is no tool.
    pub unknown_tool: u32,
    /// Calls whose arguments did not fit the tool's schema.
    pub bad_arguments: u32,
    /// Calls the tool answered as the caller's mistake (B14): a resource the call named that
    /// does not exist, an input it does not accept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rejected: u32,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Which of the model's mistakes (B8, B14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MistakeKind {
    UnknownTool,
    BadArguments,
    Rejected,
}

impl MistakeCount {
    /// Every mistake counted.
    pub fn total(&self) -> u32 {
        self.unknown_tool
            .saturating_add(self.bad_arguments)
            .saturating_add(self.rejected)
    }

    /// Whether none was made.
    #[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
    pub fn is_none(&self) -> bool {
        self.total() == 0
    }
}

impl std::fmt::Display for MistakeCount {
    /// `Model mistakes: 3 (2 unknown tools, 1 with bad arguments) — not charged`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        match self.unknown_tool {
            0 => {}
            1 => parts.push("1 unknown tool".to_owned()),
            n => parts.push(format!("{n} unknown tools")),
        }
        if self.bad_arguments > 0 {
            parts.push(format!("{} with bad arguments", self.bad_arguments));
        }
        if self.rejected > 0 {
            parts.push(format!("{} rejected by the tool", self.rejected));
        }
        write!(
            f,
            "Model mistakes: {} ({}) — not charged to any tool or the budget",
            self.total(),
            parts.join(", ")
        )
    }
}

/// Which tools' mirror a command changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Dirty {
    /// None (the pause flag is published anyway).
    #[default]
    None,
    /// One tool.
    One(ToolId),
    /// Every tool.
    All,
}

/// What one engine command changed: the events it gives the hook (after the lock is
/// released), the tools whose mirror is stale, and the mirror-owned cells it resets.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    pub(crate) events: Vec<Event>,
    pub(crate) dirty: Dirty,
    /// Tools registered by the command, in id order: the mirror gets a slot for each.
    pub(crate) registered: Vec<(ToolId, Arc<ToolDef>)>,
    /// Attempt counters to set (a circuit just opened, or a record was restored).
    pub(crate) attempts: Vec<(ToolId, u32)>,
    /// Last successes to set (a record was restored).
    pub(crate) successes: Vec<(ToolId, Option<SuccessMark>)>,
    /// Cancellation counts to set (a record was restored).
    pub(crate) cancellations: Vec<(ToolId, u64)>,
    /// The step to set (a snapshot was restored).
    pub(crate) step: Option<u64>,
    /// What to tell the fleet's store (B11).
    pub(crate) shared: Vec<SharedTransition>,
}

impl Changes {
    /// Whether the command changed anything a reader could see.
    pub(crate) fn changed_anything(&self) -> bool {
        !self.events.is_empty()
            || !matches!(self.dirty, Dirty::None)
            || !self.registered.is_empty()
            || !self.attempts.is_empty()
            || !self.successes.is_empty()
            || !self.cancellations.is_empty()
            || self.step.is_some()
    }

    pub(crate) fn touch(&mut self, tool: ToolId) {
        self.dirty = match self.dirty {
            Dirty::None => Dirty::One(tool),
            Dirty::One(t) if t == tool => Dirty::One(t),
            _ => Dirty::All,
        };
    }

    pub(crate) fn touch_all(&mut self) {
        self.dirty = Dirty::All;
    }
}

/// The sub-task being worked on, when it is deferred: its tools are refused (R5.3).
#[derive(Debug, Clone)]
struct DeferredWork {
    number: usize,
    tools: Vec<ToolId>,
}

/// One tool's standing with the fleet (B11).
#[derive(Debug, Clone, Default)]
struct FleetSlot {
    /// Its circuit is the fleet's: opened here by a shared category, or by another worker.
    shared: bool,
    /// Opened by another worker: who, and what it said.
    remote: Option<SharedOpen>,
    /// The store granted this worker its probe.
    granted: bool,
    /// Its probe is due and waits for the store's grant.
    wanted: bool,
}

/// The fleet this worker shares tool health with (B11).
#[derive(Debug)]
struct Fleet {
    store: String,
    slots: Vec<FleetSlot>,
    /// Since when, and why, the store is unreachable: decisions are local meanwhile.
    unreachable: Option<(Timestamp, String)>,
}

mod time;

use time::Timers;

/// The state machine. See the module documentation.
#[derive(Debug)]
pub(crate) struct Engine {
    policy: Policy,
    defs: Vec<Arc<ToolDef>>,
    /// By name: the key is the definition's own [`ToolName`], not a copy of the text.
    names: HashMap<ToolName, ToolId>,
    records: Vec<BreakerRecord>,
    prechecks: Vec<Precheck>,
    budget: Budget,
    halt: Option<PauseReason>,
    cascade: Cascade,
    freshness: FreshnessTracker,
    cycle_started_at: Timestamp,
    allowed: Option<Vec<String>>,
    deferred: Option<DeferredWork>,
    /// Each tool's share of the backoff cap along its chains of routes (R9.5); `None` when
    /// who is backing off has changed since it was computed.
    shares: Option<Vec<u32>>,
    /// The model's own mistakes this cycle (B8).
    mistakes: MistakeCount,
    /// Servers as groups of tools (B10).
    groups: Groups,
    /// The fleet, when a store is attached (B11).
    fleet: Option<Fleet>,
    /// What runs on wall time (B13).
    timers: Timers,
}

impl ToolView for Engine {
    fn usable(&self, tool: ToolId) -> bool {
        let i = tool.index() as usize;
        self.records
            .get(i)
            .is_some_and(|r| r.state != CircuitState::Open)
            && self.prechecks.get(i).is_some_and(|p| !p.gated())
    }
}

impl Engine {
    /// An engine with no tools, its first cycle starting at `now`.
    pub(crate) fn new(policy: Policy, now: Timestamp) -> Self {
        Engine {
            policy,
            defs: Vec::new(),
            names: HashMap::new(),
            records: Vec::new(),
            prechecks: Vec::new(),
            budget: Budget::new(policy.budget()),
            halt: None,
            cascade: Cascade::default(),
            freshness: FreshnessTracker::default(),
            cycle_started_at: now,
            allowed: None,
            deferred: None,
            shares: None,
            mistakes: MistakeCount::default(),
            groups: Groups::default(),
            fleet: None,
            timers: Timers::default(),
        }
    }

    /// Shares tool health with a fleet through `store` (B11); before any tool is registered.
    pub(crate) fn enable_fleet(&mut self, store: String) {
        self.fleet = Some(Fleet {
            store,
            slots: vec![FleetSlot::default(); self.records.len()],
            unreachable: None,
        });
    }

    // ----- queries ---------------------------------------------------------------------

    pub(crate) fn policy(&self) -> Policy {
        self.policy
    }

    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    pub(crate) fn id(&self, name: &str) -> Option<ToolId> {
        self.names.get(name).copied()
    }

    pub(crate) fn def(&self, tool: ToolId) -> Option<&Arc<ToolDef>> {
        self.defs.get(tool.index() as usize)
    }

    pub(crate) fn name(&self, tool: ToolId) -> Option<&str> {
        self.def(tool).map(|d| d.spec.name())
    }

    /// The engine's own record of a tool (the mirror-owned cells not filled in).
    pub(crate) fn record(&self, tool: ToolId) -> Option<&BreakerRecord> {
        self.records.get(tool.index() as usize)
    }

    pub(crate) fn budget(&self) -> &Budget {
        &self.budget
    }

    pub(crate) fn halt(&self) -> Option<PauseReason> {
        self.halt
    }

    pub(crate) fn systemic_event(&self) -> Option<&SystemicEvent> {
        self.cascade.event.as_ref()
    }

    /// The systemic event behind the pause, when that is why every call is paused.
    pub(crate) fn pausing_event(&self) -> Option<&SystemicEvent> {
        self.systemic_event()
            .filter(|_| matches!(self.halt, Some(PauseReason::Systemic { .. })))
    }

    pub(crate) fn mistakes(&self) -> MistakeCount {
        self.mistakes
    }

    /// Counts a model's mistake (B8): no breaker and no budget changes. The mistake that
    /// reaches the policy's limit pauses every call (B14), unless a pause is in force.
    pub(crate) fn record_mistake(
        &mut self,
        kind: MistakeKind,
        now: Timestamp,
        changes: &mut Changes,
    ) {
        let count = match kind {
            MistakeKind::UnknownTool => &mut self.mistakes.unknown_tool,
            MistakeKind::BadArguments => &mut self.mistakes.bad_arguments,
            MistakeKind::Rejected => &mut self.mistakes.rejected,
        };
        *count = count.saturating_add(1);
        let (count, limit) = (self.mistakes.total(), self.policy.mistake_limit());
        if self.halt.is_none() && count >= limit {
            self.halt = Some(PauseReason::MistakeLimit { count, limit });
            changes.touch_all();
            changes.events.push(Event::MistakeLimit { count, limit });
            // A service has no one to start a new cycle: the pause lasts one budget window
            // (B15), the count then starts again.
            if let Some(window) = self.policy.budget_window() {
                let lifts = now.plus(window);
                self.timers.mistakes_lift = Some(lifts);
                self.timers.next = Some(self.timers.next.map_or(lifts, |n| n.min(lifts)));
            }
        }
    }

    /// A call the tool answered as the caller's mistake (B14): counted with the model's
    /// mistakes, never charged, and the tool's run of failures is left as it was. A probe
    /// answered so is a successful probe: the tool was reached and answered coherently, which
    /// is all a probe asks (releasing it instead would keep a working tool HALF-OPEN for as
    /// long as the model errs).
    pub(crate) fn caller_mistake(
        &mut self,
        tool: ToolId,
        via: Via,
        kind: MistakeKind,
        now: Timestamp,
        changes: &mut Changes,
    ) -> Option<Recorded> {
        let i = tool.index() as usize;
        if i >= self.records.len() {
            return None;
        }
        if matches!(via, Via::Probe(_)) {
            self.succeed(tool, via, changes);
        }
        self.record_mistake(kind, now, changes);
        Some(self.recorded(i))
    }

    pub(crate) fn cycle_started_at(&self) -> Timestamp {
        self.cycle_started_at
    }

    pub(crate) fn deferred_subtask(&self) -> Option<usize> {
        self.deferred.as_ref().map(|d| d.number)
    }

    /// Whether every decide must take the slow path: a pause or a deferred sub-task.
    pub(crate) fn needs_slow_path(&self) -> bool {
        self.halt.is_some() || self.deferred.is_some()
    }

    /// Whether a tool is held back by a pre-call check or the allowed-tools list.
    pub(crate) fn gated(&self, tool: ToolId) -> bool {
        self.prechecks
            .get(tool.index() as usize)
            .is_some_and(Precheck::gated)
    }

    pub(crate) fn availability(&self, tool: ToolId) -> Option<Availability> {
        self.prechecks
            .get(tool.index() as usize)
            .map(Precheck::availability)
    }

    pub(crate) fn precheck_due(&self, tool: ToolId) -> bool {
        self.prechecks
            .get(tool.index() as usize)
            .is_some_and(|p| p.result.is_none() && !p.disallowed)
    }

    /// The routes of an OPEN tool as the engine sees it (R4.1).
    pub(crate) fn routes(&self, tool: ToolId) -> Routes<'_> {
        Routes::new(self, self.def(tool).map(|d| &**d))
    }

    /// The names of every tool, in registration order.
    fn names_in_order(&self) -> Vec<&str> {
        self.defs.iter().map(|d| d.spec.name()).collect()
    }

    // ----- registration ----------------------------------------------------------------

    /// Registers `specs` in order. Their alternatives may name tools already known or any
    /// tool of the batch (ids are planned ahead); an alternative naming no tool stays in
    /// place, unresolved, and is never routed to. Checking the specs is the caller's.
    pub(crate) fn register(&mut self, specs: Vec<ToolSpec>, changes: &mut Changes) -> Vec<ToolId> {
        let first = self.records.len();
        let room = MAX_TOOLS.saturating_sub(first);
        let specs: Vec<ToolSpec> = specs.into_iter().take(room).collect();
        let planned: HashMap<&str, ToolId> = specs
            .iter()
            .enumerate()
            .filter_map(|(k, s)| {
                let id = u32::try_from(first + k).ok()?;
                Some((s.name(), ToolId::from_index(id)))
            })
            .collect();
        let defs: Vec<ToolDef> = specs
            .iter()
            .map(|spec| {
                ToolDef::new(spec.clone(), &self.policy, |name| {
                    self.names.get(name).or_else(|| planned.get(name)).copied()
                })
            })
            .collect();
        drop(planned);
        let mut ids = Vec::with_capacity(defs.len());
        for def in defs {
            let Ok(index) = u32::try_from(self.records.len()) else {
                break;
            };
            let id = ToolId::from_index(index);
            let def = Arc::new(def);
            let name = def.spec.name();
            self.names.entry(def.name.clone()).or_insert(id);
            let disallowed = self
                .allowed
                .as_ref()
                .is_some_and(|allowed| !allowed.iter().any(|a| a == name));
            self.prechecks.push(Precheck {
                result: None,
                disallowed,
            });
            if def.spec.is_caching() {
                self.freshness.set_profile(
                    name,
                    FreshnessProfile {
                        caches: true,
                        source: None,
                    },
                );
            }
            self.records.push(BreakerRecord::default());
            if let Some(fleet) = &mut self.fleet {
                fleet.slots.push(FleetSlot::default());
            }
            self.groups.register(id, def.spec.server());
            self.defs.push(Arc::clone(&def));
            changes.registered.push((id, def));
            changes.touch(id);
            ids.push(id);
        }
        self.shares = None;
        ids
    }

    /// Registers a tool found at run time (R2.4, B6), checked like a map entry (R1.4).
    pub(crate) fn discover(
        &mut self,
        spec: ToolSpec,
        changes: &mut Changes,
    ) -> Result<ToolId, MapErrors> {
        if let Some(id) = self.id(spec.name()) {
            let same = self.def(id).is_some_and(|d| d.spec == spec);
            return if same {
                Ok(id)
            } else {
                Err(MapErrors(vec![MapError::DuplicateTool {
                    tool: spec.name().to_owned(),
                    first: id.index() as usize,
                    index: self.records.len(),
                }]))
            };
        }
        let mut errors = Vec::new();
        let index = self.records.len();
        if spec.name().trim().is_empty() {
            errors.push(MapError::EmptyName { index });
        }
        if index >= MAX_TOOLS {
            errors.push(MapError::TooManyTools { limit: MAX_TOOLS });
        }
        check_tool(&spec, index, &self.names_in_order(), &mut errors);
        if !errors.is_empty() {
            return Err(MapErrors(errors));
        }
        let name = spec.name().to_owned();
        let id = self.register(vec![spec], changes);
        changes.events.push(Event::ToolDiscovered { tool: name });
        id.first()
            .copied()
            .ok_or(MapErrors(vec![MapError::TooManyTools { limit: MAX_TOOLS }]))
    }

    // ----- decide and record -----------------------------------------------------------

    /// Before a call (R3.1). `attempt` counts this attempt on an OPEN tool in the mirror's
    /// counter and returns the count; it is asked only when the tool is OPEN and nothing
    /// pauses or defers it.
    pub(crate) fn decide(
        &mut self,
        tool: ToolId,
        step: u64,
        now: Timestamp,
        attempt: impl FnOnce() -> u32,
        changes: &mut Changes,
    ) -> Verdict {
        let i = tool.index() as usize;
        if i >= self.records.len() {
            return Verdict::Skip(SkipReason::UnknownTool);
        }
        self.tick(now, step, changes);
        if let Some(reason) = self.halt {
            return Verdict::Pause(reason);
        }
        if self
            .deferred
            .as_ref()
            .is_some_and(|d| d.tools.contains(&tool))
        {
            return Verdict::Skip(SkipReason::Deferred);
        }
        let gated = self.prechecks[i].gated();
        if gated && self.records[i].state == CircuitState::Closed {
            // UNAVAILABLE: routed without a call and without charging the budget; an OPEN
            // tool still reaches HALF-OPEN below when its probe is due.
            return Verdict::Skip(SkipReason::Unavailable);
        }
        // A server that is down is probed by one of its tools at a time (B10).
        if self
            .groups
            .outage_of(tool)
            .is_some_and(|o| o.probing.is_some_and(|p| p != tool))
        {
            return Verdict::Skip(SkipReason::ProbeInFlight);
        }
        let interval = self.probe_interval(tool);
        let settings = self.defs[i].settings;
        let record = &mut self.records[i];
        if record.state == CircuitState::Open {
            record.attempts_since_open = attempt().saturating_sub(1);
        }
        // A shared circuit is probed by one worker of the fleet: the one the store grants
        // it to (B11). While the store is unreachable, the probe is this worker's own.
        if let Some(fleet) = &mut self.fleet
            && fleet.unreachable.is_none()
            && let Some(slot) = fleet.slots.get_mut(i)
            && slot.shared
            && !slot.granted
            && record.probe_due(settings, interval, step, now)
        {
            slot.wanted = true;
            return Verdict::Skip(SkipReason::ProbeInFlight);
        }
        let (verdict, transition) = record.decide(settings, interval, step, now);
        if let Some(t) = transition {
            changes.touch(tool);
            changes
                .events
                .push(transition_event(&self.defs[i], record, t));
        }
        match verdict {
            Breaker::Call => Verdict::Call,
            Breaker::Probe(epoch) => {
                if let Some(outage) = self.outage_mut(tool) {
                    outage.probing = Some(tool);
                }
                Verdict::Probe(epoch)
            }
            Breaker::SkipOpen => Verdict::Skip(SkipReason::Open),
            Breaker::SkipProbeInFlight => Verdict::Skip(SkipReason::ProbeInFlight),
        }
    }

    /// Records a success (R3.3) that the mirror could not absorb: the tool had failures, or
    /// this is a probe, or the circuit is not CLOSED.
    pub(crate) fn succeed(&mut self, tool: ToolId, via: Via, changes: &mut Changes) {
        let i = tool.index() as usize;
        let Some(record) = self.records.get_mut(i) else {
            return;
        };
        // The last success is the mirror's cell (written by the ticket); only the transition
        // is the engine's.
        let transition = record.succeed(via);
        changes.touch(tool);
        if let Some(t) = transition {
            // A tool that recovers only shortens the chains it was in: the shares computed
            // before still keep every chain within the cap, so they are kept (R9.5).
            changes
                .events
                .push(transition_event(&self.defs[i], record, t));
            // Its probe reached its server: the tools the outage took down come back (B10).
            if t == Transition::Closed && self.groups.outage_of(tool).is_some() {
                self.server_up(tool, changes);
            }
            if t == Transition::Closed {
                self.fleet_closed_here(i, changes);
            }
            // A tool that recovered is checked again before it is held back (R10.3).
            if t == Transition::Closed && self.prechecks[i].gated() {
                self.prechecks[i].result = None;
            }
        }
        let record = &self.records[i];
        let recovered = record.state == CircuitState::Closed && record.consecutive_failures == 0;
        let name = self.defs[i].spec.name();
        // Failures held as possibly systemic were this tool's own after all (R9.4).
        if recovered && self.budget.has_pending(name) && self.budget.settle(name) {
            self.exhaust(changes);
        }
    }

    /// Records a failure (R3.3): consecutive failures + 1, last failure kept, budget charged,
    /// threshold checked, cascades detected (R9).
    pub(crate) fn fail(
        &mut self,
        tool: ToolId,
        via: Via,
        failure: Failure,
        step: u64,
        now: Timestamp,
        changes: &mut Changes,
    ) -> Recorded {
        let i = tool.index() as usize;
        if i >= self.records.len() {
            return Recorded {
                state: CircuitState::Closed,
                consecutive_failures: 0,
                opened: false,
                budget: self.budget.status(),
                paused: self.halt.is_some(),
            };
        }
        let def = Arc::clone(&self.defs[i]);
        let name = def.spec.name();
        let during_event = self.cascade.active();
        let category = failure.category();
        if self.groups.outage_of(tool).is_some() {
            let live_probe = matches!(via, Via::Probe(epoch)
                if self.records[i].state == CircuitState::HalfOpen
                    && self.records[i].probe == Some(epoch));
            if !live_probe && failure.is_server_unreachable() {
                // A call sent before the outage was known, failing with it: the outage's
                // failure, written down and charged once already (R9.4).
                return self.recorded(i);
            }
            if live_probe && !failure.is_server_unreachable() {
                // The probe's own failure: its server answered, so it is up again; the tool
                // itself re-opens below.
                self.server_up(tool, changes);
            }
        } else if failure.is_server_unreachable() && self.groups.of(tool).is_some() {
            return self.server_down(tool, &failure, step, now, changes);
        }
        // A failure matching an OPEN circuit's category may be part of a systemic event:
        // it is held uncharged until that is known (R9.4). Only a CLOSED tool's failure can
        // open a circuit that starts an event; a failed probe or a late call on an OPEN tool
        // is charged as usual (R3.2).
        let pending = during_event
            || (self.policy.cascade_detection()
                && self.records[i].state == CircuitState::Closed
                && may_correlate(
                    tool,
                    category,
                    &self.records,
                    &self.groups,
                    step,
                    self.policy.cascade_window(),
                ));
        if let Some(window) = self.policy.budget_window() {
            // Failures that left the window no longer count against this one (B13).
            self.budget.expire(now, window);
        }
        let exhausted_now = self
            .budget
            .charge(&def.name, failure.clone(), step, now, pending);
        if during_event {
            self.cascade.join(tool, name);
            self.budget.absorb_last();
        }
        let settings = crate::breaker::Settings {
            threshold: self.prechecks[i].threshold(def.settings.threshold),
            ..def.settings
        };
        let record = &mut self.records[i];
        let transition = record.fail(via, settings, now, step, failure);
        changes.touch(tool);
        let opened = matches!(transition, Some(Transition::Opened | Transition::Reopened));
        if opened {
            changes.attempts.push((tool, record.attempts_since_open));
        }
        if let Some(t) = transition {
            changes.events.push(transition_event(&def, record, t));
        }
        if transition == Some(Transition::Reopened) {
            self.rearm_outage(tool, Some(tool), step, now, changes);
        }
        if let Some(t) = transition {
            self.fleet_opened_here(i, t, changes);
        }
        // Only a circuit leaving CLOSED can start a cascade: a failed probe re-opens a tool
        // already counted (and, after a confirmed recovery, is the backoff at work).
        if transition == Some(Transition::Opened)
            && !during_event
            && self.policy.cascade_detection()
        {
            let window = self.policy.cascade_window();
            if let Some(involved) =
                self.cascade
                    .on_open(tool, &self.records, &self.groups, step, window)
            {
                self.start_systemic(involved, step, now, changes);
            }
        }
        if exhausted_now {
            self.exhaust(changes);
        }
        Recorded {
            opened,
            ..self.recorded(i)
        }
    }

    /// Whether `server` is down and due for its probe (B10): no probe of it in flight, no
    /// pause in force (R9.3), and one of the tools its outage took down due by the policy's
    /// interval — steps since it opened, or `attempts` refused since (the mirror counts
    /// those).
    pub(crate) fn server_probe_due(
        &mut self,
        server: &str,
        step: u64,
        attempts: impl Fn(ToolId) -> u32,
        now: Timestamp,
        every: Option<std::time::Duration>,
    ) -> bool {
        if !self.health_checks_wanted() {
            return false;
        }
        let Some(g) = self.groups.find(server) else {
            return false;
        };
        let Some(outage) = self.groups.groups[g].outage.clone() else {
            return false;
        };
        if outage.probing.is_some() {
            return false;
        }
        if let Some(every) = every
            && outage.since.plus(every) <= now
        {
            return true;
        }
        outage.tools.iter().any(|&tool| {
            let interval = self.probe_interval(tool);
            let i = tool.index() as usize;
            let record = &self.records[i];
            record.state == CircuitState::Open
                && (record.probe_due_at().is_some_and(|due| now >= due)
                    || match self.defs[i].settings.probe_unit {
                        crate::policy::ProbeUnit::Attempts => attempts(tool) >= interval,
                        crate::policy::ProbeUnit::Steps => {
                            step >= record
                                .opened_at_step
                                .unwrap_or(step)
                                .saturating_add(u64::from(interval))
                        }
                    })
        })
    }

    /// The result of probing a down `server` by its health check rather than a tool call
    /// (B10): reached, the tools its outage took down are CLOSED (one `ServerUp`); not
    /// reached, they wait another interval, uncharged — a health check is no tool call
    /// (R10.2). Returns `false` when `server` is not down.
    pub(crate) fn record_server_probe(
        &mut self,
        server: &str,
        reached: bool,
        step: u64,
        now: Timestamp,
        changes: &mut Changes,
    ) -> bool {
        let Some(g) = self.groups.find(server) else {
            return false;
        };
        let Some(first) = self.groups.groups[g]
            .outage
            .as_ref()
            .and_then(|o| o.tools.first().copied())
        else {
            return false;
        };
        if reached {
            let tools = self.groups.groups[g]
                .outage
                .as_ref()
                .map(|o| o.tools.clone())
                .unwrap_or_default();
            self.health_confirmed(&tools, step, changes);
            self.group_up(g, None, changes);
        } else {
            // Every tool of the outage waits again, none excepted (one HALF-OPEN when its
            // probe was just given up).
            self.rearm_outage(first, None, step, now, changes);
        }
        true
    }

    /// Whether `server` is down (B10).
    pub(crate) fn is_server_down(&self, server: &str) -> bool {
        self.groups
            .find(server)
            .is_some_and(|g| self.groups.groups[g].outage.is_some())
    }

    // ----- the fleet (B11) -------------------------------------------------------------

    /// A transition of tool `i` here: a circuit opened (or re-opened by its probe) by a
    /// shared category is told to the fleet; a granted probe that failed is ended.
    fn fleet_opened_here(&mut self, i: usize, t: Transition, changes: &mut Changes) {
        let Some(fleet) = &mut self.fleet else {
            return;
        };
        let Some(slot) = fleet.slots.get_mut(i) else {
            return;
        };
        let tool = self.defs[i].spec.name().to_owned();
        if t == Transition::Reopened && slot.granted {
            slot.granted = false;
            changes
                .shared
                .push(SharedTransition::ProbeEnded { tool: tool.clone() });
        }
        if !matches!(t, Transition::Opened | Transition::Reopened) {
            return;
        }
        let Some(mark) = self.records[i].last_failure() else {
            return;
        };
        let category = mark.failure.category();
        if category.is_shared() || slot.shared {
            slot.shared = true;
            changes.shared.push(SharedTransition::Opened {
                tool,
                message: mark.failure.summary().into_owned(),
                category,
            });
        }
    }

    /// Tool `i`'s probe closed it here: a shared circuit is closed for the fleet.
    fn fleet_closed_here(&mut self, i: usize, changes: &mut Changes) {
        if let Some(slot) = self.fleet.as_mut().and_then(|f| f.slots.get_mut(i)) {
            if slot.shared {
                changes.shared.push(SharedTransition::Closed {
                    tool: self.defs[i].spec.name().to_owned(),
                });
            }
            *slot = FleetSlot::default();
        }
    }

    /// Tool `i`'s granted probe was dropped: the store may grant it to another worker.
    fn fleet_probe_ended(&mut self, i: usize, changes: &mut Changes) {
        if let Some(slot) = self.fleet.as_mut().and_then(|f| f.slots.get_mut(i))
            && slot.granted
        {
            slot.granted = false;
            changes.shared.push(SharedTransition::ProbeEnded {
                tool: self.defs[i].spec.name().to_owned(),
            });
        }
    }

    /// Another worker opened `tool` (B11): OPEN here too, its failure written down (not
    /// charged to this worker's budget), its probe the fleet's. Returns `false` for a name
    /// that is no tool here, or when no fleet is attached.
    pub(crate) fn fleet_open(
        &mut self,
        tool: &str,
        open: SharedOpen,
        step: u64,
        now: Timestamp,
        changes: &mut Changes,
    ) -> bool {
        let Some(id) = self.id(tool) else {
            return false;
        };
        let i = id.index() as usize;
        let Some(slot) = self.fleet.as_mut().and_then(|f| f.slots.get_mut(i)) else {
            return false;
        };
        slot.shared = true;
        let record = &mut self.records[i];
        let known = slot
            .remote
            .as_ref()
            .is_some_and(|r| r.worker == open.worker);
        let takes_it_down = record.state == CircuitState::Closed
            || (record.state == CircuitState::HalfOpen && record.probe.is_none());
        if takes_it_down {
            let failure = Failure::with_category(
                format!("{} (opened by {})", open.message, open.worker),
                open.category,
            );
            record.go_down(now, step, failure);
            changes.attempts.push((id, 0));
            changes.touch(id);
            changes.events.push(Event::SharedOpened {
                tool: tool.to_owned(),
                worker: open.worker.clone(),
                message: open.message.clone(),
            });
            self.shares = None;
        } else if !known {
            changes.touch(id);
        }
        slot.remote = Some(open);
        true
    }

    /// `tool`'s shared OPEN state ended in the store (B11): `closed` by another worker's
    /// probe (CLOSED here too, unless a probe of its own is in flight), or expired (the
    /// circuit goes on by this worker's own breaker, its probe still the fleet's).
    pub(crate) fn fleet_cleared(
        &mut self,
        tool: &str,
        closed: bool,
        changes: &mut Changes,
    ) -> bool {
        let Some(id) = self.id(tool) else {
            return false;
        };
        let i = id.index() as usize;
        let Some(slot) = self.fleet.as_mut().and_then(|f| f.slots.get_mut(i)) else {
            return false;
        };
        if !slot.shared {
            return false;
        }
        let record = &self.records[i];
        if closed && record.state != CircuitState::Closed && record.probe.is_none() {
            *slot = FleetSlot::default();
            self.bring_back(id, changes);
            changes.events.push(Event::SharedClosed {
                tool: tool.to_owned(),
            });
            return true;
        }
        if slot.remote.take().is_some() {
            changes.touch(id);
        }
        true
    }

    /// The store granted this worker the probe of `tool` (B11). Returns `false` when its
    /// probe is not wanted here (the store gives the grant back).
    pub(crate) fn fleet_grant(&mut self, tool: &str) -> bool {
        let Some(id) = self.id(tool) else {
            return false;
        };
        let Some(slot) = self
            .fleet
            .as_mut()
            .and_then(|f| f.slots.get_mut(id.index() as usize))
        else {
            return false;
        };
        if slot.wanted && slot.shared {
            slot.wanted = false;
            slot.granted = true;
            true
        } else {
            false
        }
    }

    /// The shared circuits whose probe is due here and waits for the store's grant.
    pub(crate) fn fleet_wanted(&self) -> Vec<String> {
        let Some(fleet) = &self.fleet else {
            return Vec::new();
        };
        fleet
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.wanted && !s.granted)
            .filter_map(|(i, _)| self.defs.get(i).map(|d| d.spec.name().to_owned()))
            .collect()
    }

    /// The store cannot be reached (B11): local decisions alone until it answers.
    pub(crate) fn fleet_unreachable(&mut self, why: String, now: Timestamp, changes: &mut Changes) {
        let Some(fleet) = &mut self.fleet else {
            return;
        };
        if fleet.unreachable.is_some() {
            return;
        }
        for slot in &mut fleet.slots {
            slot.wanted = false;
        }
        changes.events.push(Event::StoreUnavailable {
            store: fleet.store.clone(),
            message: why.clone(),
        });
        fleet.unreachable = Some((now, why));
        changes.touch_all();
    }

    /// The store answers again (B11): what opened here meanwhile is told to the fleet.
    pub(crate) fn fleet_reachable(&mut self, changes: &mut Changes) {
        let Some(fleet) = &mut self.fleet else {
            return;
        };
        if fleet.unreachable.take().is_none() {
            return;
        }
        changes.events.push(Event::StoreRestored {
            store: fleet.store.clone(),
        });
        for (i, slot) in fleet.slots.iter_mut().enumerate() {
            slot.granted = false;
            let record = &self.records[i];
            let Some(mark) = record.last_failure() else {
                continue;
            };
            if record.state != CircuitState::Closed && slot.shared && slot.remote.is_none() {
                changes.shared.push(SharedTransition::Opened {
                    tool: self.defs[i].spec.name().to_owned(),
                    message: mark.failure.summary().into_owned(),
                    category: mark.failure.category(),
                });
            }
        }
        changes.touch_all();
    }

    /// Another worker detected a systemic failure (R9, B11): every call pauses here too, as
    /// the same one event (charged to that worker's budget, not this one's).
    pub(crate) fn fleet_systemic(
        &mut self,
        pattern: String,
        tools: Vec<String>,
        category: Option<FailureCategory>,
        step: u64,
        now: Timestamp,
        changes: &mut Changes,
    ) -> bool {
        if self.fleet.is_none() || self.cascade.active() {
            return false;
        }
        let event = SystemicEvent {
            category,
            pattern,
            tools,
            step,
            at: now,
            recovered: false,
        };
        self.cascade.involved = event.tools.iter().filter_map(|t| self.id(t)).collect();
        changes.events.push(Event::Systemic {
            pattern: event.pattern.clone(),
            cause: event.cause().to_owned(),
            tools: event.tools.clone(),
        });
        self.cascade.event = Some(event);
        self.halt = Some(PauseReason::Systemic { category });
        for precheck in &mut self.prechecks {
            precheck.result = None;
        }
        changes.touch_all();
        true
    }

    /// The fleet's store and what it says, for the reports (B11).
    pub(crate) fn fleet_status(&self) -> Option<StoreStatus> {
        let fleet = self.fleet.as_ref()?;
        Some(StoreStatus {
            store: fleet.store.clone(),
            unreachable: fleet.unreachable.clone(),
            opened_elsewhere: fleet
                .slots
                .iter()
                .enumerate()
                .filter(|(i, _)| {
                    self.records
                        .get(*i)
                        .is_some_and(|r| r.state != CircuitState::Closed)
                })
                .filter_map(|(i, s)| {
                    let remote = s.remote.as_ref()?;
                    Some((self.defs[i].spec.name().to_owned(), remote.worker.clone()))
                })
                .collect(),
        })
    }

    /// The names of every tool, in registration order (what the store reads for).
    pub(crate) fn tool_names(&self) -> Vec<String> {
        self.defs.iter().map(|d| d.spec.name().to_owned()).collect()
    }

    /// The servers, in the order their first tool was registered, for the reports (B10).
    pub(crate) fn servers(&self) -> Vec<ServerLine> {
        let names = |tools: &[ToolId]| -> Vec<String> {
            tools
                .iter()
                .filter_map(|&t| self.name(t).map(str::to_owned))
                .collect()
        };
        self.groups
            .groups
            .iter()
            .map(|g| ServerLine {
                server: g.name.to_string(),
                tools: names(&g.members),
                outage: g.outage.as_ref().map(|o| ServerOutage {
                    step: o.step,
                    message: o.message.clone(),
                    tools: names(&o.tools),
                }),
            })
            .collect()
    }

    /// The tools on `server`, in map order (empty when no tool is on it).
    pub(crate) fn server_tools(&self, server: &str) -> Vec<ToolId> {
        self.groups
            .find(server)
            .map(|g| self.groups.groups[g].members.clone())
            .unwrap_or_default()
    }

    /// A failed probe of a server still unreachable (B10): the tools its outage took down
    /// wait another interval with it, and the next probe may be any of them.
    fn rearm_outage(
        &mut self,
        tool: ToolId,
        except: Option<ToolId>,
        step: u64,
        now: Timestamp,
        changes: &mut Changes,
    ) {
        let Some(outage) = self.outage_mut(tool) else {
            return;
        };
        outage.probing = None;
        outage.since = now;
        let others: Vec<ToolId> = outage
            .tools
            .iter()
            .copied()
            .filter(|&t| Some(t) != except)
            .collect();
        for other in others {
            if let Some(record) = self.records.get_mut(other.index() as usize)
                && record.state != CircuitState::Closed
            {
                // A HALF-OPEN one (its probe dropped) waits with the rest.
                record.rearm(step);
                changes.attempts.push((other, 0));
                changes.touch(other);
            }
        }
    }

    /// `tool` is CLOSED again by something other than its own probe (its server reached,
    /// another worker's probe): its mirror cells reset, and a tool held back by a check is
    /// checked again (R10.3), as after a probe of its own.
    fn bring_back(&mut self, tool: ToolId, changes: &mut Changes) {
        let i = tool.index() as usize;
        if let Some(record) = self.records.get_mut(i) {
            record.come_up();
            changes.attempts.push((tool, 0));
            changes.touch(tool);
        }
        if let Some(precheck) = self.prechecks.get_mut(i)
            && precheck.gated()
        {
            precheck.result = None;
        }
    }

    /// What a tool's record and the budget say now, for [`Recorded`].
    fn recorded(&self, i: usize) -> Recorded {
        let record = &self.records[i];
        Recorded {
            state: record.state,
            consecutive_failures: record.consecutive_failures,
            opened: false,
            budget: self.budget.status(),
            paused: self.halt.is_some(),
        }
    }

    fn outage_mut(&mut self, tool: ToolId) -> Option<&mut Outage> {
        let g = self.groups.of(tool)?;
        self.groups.groups[g]
            .outage
            .as_mut()
            .filter(|o| o.tools.contains(&tool))
    }

    /// A call of `tool` found its server unreachable (B10): every tool of the server that
    /// was working opens at once — one outage, one event naming the server, the failure
    /// charged once. A tool already OPEN on its own keeps its own breaker. Other servers'
    /// tools go on; only when another server (or tool) fails the same way within the cascade
    /// window is it the systemic event of R9, with the server as one unit.
    fn server_down(
        &mut self,
        tool: ToolId,
        failure: &Failure,
        step: u64,
        now: Timestamp,
        changes: &mut Changes,
    ) -> Recorded {
        let i = tool.index() as usize;
        let Some(g) = self.groups.of(tool) else {
            return self.recorded(i);
        };
        let name = self.defs[i].name.clone();
        let during_event = self.cascade.active();
        let pending = during_event
            || (self.policy.cascade_detection()
                && may_correlate(
                    tool,
                    failure.category(),
                    &self.records,
                    &self.groups,
                    step,
                    self.policy.cascade_window(),
                ));
        let exhausted_now = self
            .budget
            .charge(&name, failure.clone(), step, now, pending);
        if during_event {
            self.cascade.join(tool, &name);
            self.budget.absorb_last();
        }
        let members = self.groups.groups[g].members.clone();
        let mut down = Vec::with_capacity(members.len());
        for member in members {
            let Some(record) = self.records.get_mut(member.index() as usize) else {
                continue;
            };
            if member == tool || record.state != CircuitState::Open {
                record.go_down(now, step, failure.clone());
                changes.attempts.push((member, 0));
                changes.touch(member);
                down.push(member);
            }
        }
        let tools = down
            .iter()
            .filter_map(|&t| self.name(t).map(str::to_owned))
            .collect();
        self.groups.groups[g].outage = Some(Outage {
            tools: down.clone(),
            found_by: tool,
            step,
            since: now,
            message: failure.summary().into_owned(),
            probing: None,
        });
        self.shares = None;
        for &member in &down {
            self.fleet_opened_here(member.index() as usize, Transition::Opened, changes);
        }
        changes.events.push(Event::ServerDown {
            server: self.groups.groups[g].name.to_string(),
            tools,
            message: failure.summary().into_owned(),
        });
        if !during_event && self.policy.cascade_detection() {
            let window = self.policy.cascade_window();
            if let Some(mut involved) =
                self.cascade
                    .on_open(tool, &self.records, &self.groups, step, window)
            {
                for member in down {
                    if !involved.contains(&member) {
                        involved.push(member);
                    }
                }
                self.start_systemic(involved, step, now, changes);
            }
        }
        if exhausted_now {
            self.exhaust(changes);
        }
        Recorded {
            opened: true,
            ..self.recorded(i)
        }
    }

    /// `tool`'s probe reached its server again (B10): the tools its outage took down are
    /// CLOSED, `tool` by its own transition, the others here; one event names the server.
    fn server_up(&mut self, tool: ToolId, changes: &mut Changes) {
        if let Some(g) = self.groups.of(tool) {
            self.group_up(g, Some(tool), changes);
        }
    }

    /// Server `g` was reached again: the tools its outage took down are CLOSED (`except`, the
    /// probe that reached it, by its own transition); one event names the server.
    fn group_up(&mut self, g: usize, except: Option<ToolId>, changes: &mut Changes) {
        let Some(outage) = self.groups.groups[g].outage.take() else {
            return;
        };
        for &member in &outage.tools {
            if Some(member) == except {
                continue;
            }
            self.bring_back(member, changes);
        }
        let tools = outage
            .tools
            .iter()
            .filter_map(|&t| self.name(t).map(str::to_owned))
            .collect();
        changes.events.push(Event::ServerUp {
            server: self.groups.groups[g].name.to_string(),
            tools,
        });
    }

    /// A probe ticket dropped unrecorded frees the half-open slot.
    pub(crate) fn cancel(&mut self, tool: ToolId, via: Via, changes: &mut Changes) {
        let i = tool.index() as usize;
        let Some(record) = self.records.get_mut(i) else {
            return;
        };
        if let Some(t) = record.cancel(via) {
            if let Some(outage) = self.outage_mut(tool)
                && outage.probing == Some(tool)
            {
                outage.probing = None;
            }
            self.fleet_probe_ended(i, changes);
            let record = &self.records[i];
            changes.touch(tool);
            changes
                .events
                .push(transition_event(&self.defs[i], record, t));
        }
    }

    /// The budget is spent: pause every call (R3.4), unless a pause is already in force.
    fn exhaust(&mut self, changes: &mut Changes) {
        let status = self.budget.status();
        if self.halt.is_none() && status.is_exhausted() {
            self.halt = Some(PauseReason::BudgetExhausted {
                consumed: status.consumed,
                limit: status.limit,
            });
            // In a rolling window the pause lifts by itself: tick then (B13).
            if let Some(lifts) = self
                .policy
                .budget_window()
                .and_then(|window| self.budget.next_expiry(window))
            {
                self.timers.next = Some(self.timers.next.map_or(lifts, |n| n.min(lifts)));
            }
            changes.events.push(Event::BudgetExhausted {
                consumed: status.consumed,
                limit: status.limit,
            });
        }
    }

    /// A systemic failure (R9.2): every call pauses, the involved failures are charged once
    /// (R9.4), and every pre-call check is due again (R10.3).
    fn start_systemic(
        &mut self,
        involved: Vec<ToolId>,
        step: u64,
        now: Timestamp,
        changes: &mut Changes,
    ) {
        let names: Vec<&str> = self.defs.iter().map(|d| d.spec.name()).collect();
        let event = self
            .cascade
            .start(involved, &self.records, &names, step, now)
            .clone();
        let runs: Vec<(&str, u32)> = self
            .cascade
            .involved
            .iter()
            .filter_map(|id| {
                let record = self.records.get(id.index() as usize)?;
                // A tool its server's outage took down without a call of its own has one
                // failure fewer on the ledger than in its run (B10).
                let forced = u32::from(self.groups.forced(*id));
                Some((
                    *names.get(id.index() as usize)?,
                    record.consecutive_failures.saturating_sub(forced),
                ))
            })
            .collect();
        let line = LedgerEntry {
            tool: event.tools.join(", ").into(),
            failure: Failure::with_category(
                event.to_string(),
                event.category.unwrap_or(FailureCategory::Other),
            ),
            step,
            at: now,
            charged: true,
            pending: false,
            systemic: false,
            event: true,
            expired: false,
        };
        self.budget.fold(&runs, line);
        // The systemic pause takes over from a budget pause: the fold may have refunded it.
        self.halt = Some(PauseReason::Systemic {
            category: event.category,
        });
        self.arm_systemic(now);
        for precheck in &mut self.prechecks {
            precheck.result = None;
        }
        changes.touch_all();
        if self.fleet.is_some() {
            changes.shared.push(SharedTransition::Systemic {
                pattern: event.pattern.clone(),
                cause: event.cause().to_owned(),
                tools: event.tools.clone(),
                category: event.category,
            });
        }
        changes.events.push(Event::Systemic {
            pattern: event.pattern.clone(),
            cause: event.cause().to_owned(),
            tools: event.tools.clone(),
        });
    }

    /// The user confirms that the infrastructure behind a systemic failure is fixed (R9.3).
    pub(crate) fn confirm_recovery(
        &mut self,
        step: u64,
        changes: &mut Changes,
    ) -> Option<SystemicEvent> {
        if !self.cascade.active() {
            return None;
        }
        self.timers.trials = 0;
        let event = self.recover(step, changes);
        changes.events.push(Event::RecoveryConfirmed);
        event
    }

    /// A health check of tools involved in the systemic event in force succeeded: that is
    /// the recovery of its cause (B15). `false` when none of `tools` is involved.
    fn health_confirmed(&mut self, tools: &[ToolId], step: u64, changes: &mut Changes) -> bool {
        // Only in a service: a typed agent's user confirms recovery (R9.3).
        let involved = self.policy.is_timed()
            && matches!(self.halt, Some(PauseReason::Systemic { .. }))
            && self.cascade.active()
            && tools.iter().any(|t| self.cascade.involved.contains(t));
        involved && self.confirm_recovery(step, changes).is_some()
    }

    /// Calls resume after a systemic event: its tools probe with backoff (R9.5), checks are
    /// due again (R10.3), a budget pause the event held back takes over.
    fn recover(&mut self, step: u64, changes: &mut Changes) -> Option<SystemicEvent> {
        for id in self.cascade.involved.clone() {
            if let Some(record) = self.records.get_mut(id.index() as usize)
                && record.state != CircuitState::Closed
            {
                record.backoff = 1;
                record.opened_at_step = Some(step);
                record.attempts_since_open = 0;
                // Its cool-down starts again now (armed after the command).
                record.set_due(None);
                changes.attempts.push((id, 0));
            }
        }
        for precheck in &mut self.prechecks {
            precheck.result = None;
        }
        // The backoff shares (R9.5) of who backs off now, kept until the next recovery.
        self.shares = Some(self.chain_shares());
        let event = self.cascade.event.as_mut().map(|e| {
            e.recovered = true;
            e.clone()
        });
        if matches!(self.halt, Some(PauseReason::Systemic { .. })) {
            self.halt = None;
        }
        self.timers.systemic_due = None;
        self.exhaust(changes);
        changes.touch_all();
        event
    }

    /// The probe interval in force for `tool`: the policy's, or after a cascade the
    /// backed-off one (R9.5). Along any chain of routes (a tool and the alternatives it
    /// routes to, each visited once) the intervals of the tools backing off add up to at
    /// most the cap: each such tool gets at most an equal share of the cap for the longest
    /// chain it is part of (never less than its base interval). The shares are computed once
    /// per change of who is backing off, not on every decide.
    fn probe_interval(&mut self, tool: ToolId) -> u32 {
        let cap = self.policy.backoff_cap();
        let i = tool.index() as usize;
        let Some(level) = self.records.get(i).map(|r| r.backoff) else {
            return Policy::DEFAULT_PROBE_EVERY;
        };
        let base = self.defs[i].settings.probe_every;
        if level == 0 {
            return base;
        }
        if self.shares.is_none() {
            self.shares = Some(self.chain_shares());
        }
        let share = self
            .shares
            .as_ref()
            .and_then(|s| s.get(i).copied())
            .unwrap_or(cap);
        backoff_interval(base, level, cap).min(share.max(base))
    }

    /// For every tool backing off after a cascade, the cap divided by the size of the longest
    /// chain of backing-off tools it belongs to. One walk per backing-off tool, each visiting
    /// every tool at most once.
    fn chain_shares(&self) -> Vec<u32> {
        let cap = self.policy.backoff_cap();
        let n = self.records.len();
        let backing: Vec<bool> = self
            .records
            .iter()
            .map(|r| r.backoff > 0 && r.state != CircuitState::Closed)
            .collect();
        let mut longest = vec![0usize; n];
        let mut seen = vec![usize::MAX; n];
        let mut stack = Vec::new();
        let mut members = Vec::new();
        for head in (0..n).filter(|&h| backing[h]) {
            members.clear();
            stack.push(head);
            seen[head] = head;
            while let Some(x) = stack.pop() {
                if backing[x] {
                    members.push(x);
                }
                for alt in self.defs[x].alternative_ids().map(|a| a.index() as usize) {
                    if alt < n && seen[alt] != head {
                        seen[alt] = head;
                        stack.push(alt);
                    }
                }
            }
            for &m in &members {
                longest[m] = longest[m].max(members.len());
            }
        }
        longest
            .into_iter()
            .map(|len| match u32::try_from(len) {
                Ok(0) => cap,
                Ok(len) => cap / len,
                Err(_) => 1,
            })
            .collect()
    }

    /// Starts a new cycle (R7.4).
    pub(crate) fn new_cycle(&mut self, now: Timestamp, changes: &mut Changes) -> u64 {
        self.budget.next_cycle();
        self.mistakes = MistakeCount::default();
        self.cycle_started_at = now;
        if matches!(
            self.halt,
            Some(
                PauseReason::BudgetExhausted { .. }
                    | PauseReason::NothingAchievable
                    | PauseReason::MistakeLimit { .. }
            )
        ) {
            self.halt = None;
        }
        self.deferred = None;
        self.timers.conversation = None;
        let cycle = self.budget.cycle();
        changes.events.push(Event::CycleStarted { cycle });
        cycle
    }

    // ----- pre-call checks (R10) -------------------------------------------------------

    /// Records a check's result; `false` for an unknown tool.
    pub(crate) fn record_precheck(
        &mut self,
        tool: ToolId,
        availability: Availability,
        step: u64,
        changes: &mut Changes,
    ) -> bool {
        let i = tool.index() as usize;
        if availability == Availability::Available {
            // A check of a tool the systemic event took down: its cause is over (B15).
            self.health_confirmed(&[tool], step, changes);
        }
        let Some(precheck) = self.prechecks.get_mut(i) else {
            return false;
        };
        let differs = precheck.availability() != availability;
        precheck.result = Some(Box::new(availability));
        changes.touch(tool);
        if differs {
            changes.events.push(Event::AvailabilityChanged {
                tool: self.defs[i].spec.name().to_owned(),
                availability: precheck.availability().to_string(),
            });
        }
        true
    }

    /// Only these tools may be called (R10.1).
    pub(crate) fn allow_only(&mut self, allowed: Vec<String>, changes: &mut Changes) {
        for (precheck, def) in self.prechecks.iter_mut().zip(&self.defs) {
            precheck.disallowed = !allowed.iter().any(|a| a == def.spec.name());
        }
        self.allowed = Some(allowed);
        changes.touch_all();
    }

    /// Forgets every cached check.
    pub(crate) fn invalidate_prechecks(&mut self, changes: &mut Changes) {
        for precheck in &mut self.prechecks {
            precheck.result = None;
        }
        changes.touch_all();
    }

    // ----- freshness (R6) --------------------------------------------------------------

    pub(crate) fn observe(
        &mut self,
        tool: ToolId,
        observation: Observation,
        now: Timestamp,
    ) -> Freshness {
        let Some(def) = self.defs.get(tool.index() as usize) else {
            return Freshness::Unknown;
        };
        self.freshness
            .observe(def.spec.name(), observation, now, self.cycle_started_at)
    }

    pub(crate) fn contradict(&mut self, tool: ToolId, args: u64) -> Option<Freshness> {
        let def = self.defs.get(tool.index() as usize)?;
        self.freshness.contradict(def.spec.name(), args)
    }

    pub(crate) fn set_freshness_profile(
        &mut self,
        tool: ToolId,
        profile: FreshnessProfile,
    ) -> bool {
        let Some(def) = self.defs.get(tool.index() as usize) else {
            return false;
        };
        self.freshness.set_profile(def.spec.name(), profile);
        true
    }

    // ----- scope (R5) ------------------------------------------------------------------

    /// The scope now (R5.1, R5.2), without acting on it.
    pub(crate) fn scope_report(&self, task: &Task) -> ScopeReport {
        let paused = match self.halt {
            Some(PauseReason::BudgetExhausted { .. }) => Some((
                "paused: failure budget exhausted".to_owned(),
                "resume in the next cycle, with a new budget.".to_owned(),
            )),
            Some(PauseReason::Systemic { .. }) => Some((
                "paused: systemic failure".to_owned(),
                format!(
                    "resume once recovery from the {} issue is confirmed.",
                    self.cascade
                        .event
                        .as_ref()
                        .map_or("infrastructure", |e| e.cause())
                ),
            )),
            Some(PauseReason::MistakeLimit { .. }) => Some((
                "paused: the model's mistake limit was reached".to_owned(),
                "resume in the next cycle.".to_owned(),
            )),
            Some(PauseReason::NothingAchievable) | None => None,
        };
        let mut lines = Vec::new();
        let mut deferred = Vec::new();
        for (i, sub) in task.subtasks().iter().enumerate() {
            let number = i + 1;
            let mut tools = Vec::new();
            let mut blocker: Option<(String, String, String)> = None;
            for name in &sub.needs {
                let (standing, why) = self.standing(name, paused.is_some());
                if let (None, Some((reason, unblock))) = (&blocker, why) {
                    blocker = Some((name.clone(), reason, unblock));
                }
                tools.push(standing);
            }
            let done = sub.status == WorkStatus::Done;
            if !done
                && blocker.is_none()
                && let Some((reason, unblock)) = &paused
            {
                blocker = Some((
                    sub.needs.first().cloned().unwrap_or_default(),
                    reason.clone(),
                    unblock.clone(),
                ));
            }
            let achievable = done || blocker.is_none();
            if let (false, Some((tool, reason, unblock))) = (achievable, blocker) {
                deferred.push(Deferral {
                    number,
                    blocked_by: tool,
                    reason,
                    unblock,
                });
            }
            lines.push(ScopeLine {
                number,
                title: sub.title.clone(),
                achievable,
                status: sub.status.clone(),
                tools,
            });
        }
        ScopeReport { lines, deferred }
    }

    /// Where one needed tool stands, and why it blocks when it does. `paused`: a budget or
    /// systemic pause is in force, so no route is taken either.
    fn standing(&self, name: &str, paused: bool) -> (ToolStanding, Option<(String, String)>) {
        let Some(id) = self.id(name) else {
            // Not known yet: it gets its state on first use, CLOSED (R2.4).
            let standing = ToolStanding {
                tool: name.to_owned(),
                state: CircuitState::Closed,
                blocks: false,
                note: None,
            };
            return (standing, None);
        };
        let i = id.index() as usize;
        let record = &self.records[i];
        let precheck = &self.prechecks[i];
        let def = &self.defs[i];
        let fallback = def.spec.fallback();
        let via = self.routes(id).find_map(|r| match r {
            Route::Alternative(alt) => Some(alt.name().to_owned()),
            _ => None,
        });
        let has_alternatives = !def.alternatives.is_empty();
        let mut standing = ToolStanding {
            tool: name.to_owned(),
            state: record.state(),
            blocks: false,
            note: None,
        };
        let blocked = |standing: &mut ToolStanding, note: String, reason: &str, unblock: String| {
            standing.blocks = true;
            standing.note = Some(note);
            Some((reason.to_owned(), unblock))
        };
        let or_fallback = |first: &str| format!("{first}\nor {fallback}.");
        let why = match record.state() {
            CircuitState::Closed if precheck.gated() => {
                if let Some(alt) = via {
                    standing.note = Some(if paused {
                        "paused".to_owned()
                    } else {
                        format!("UNAVAILABLE — via {alt}")
                    });
                    None
                } else {
                    let availability = precheck.availability();
                    let reason = availability.reason().unwrap_or("").to_owned();
                    blocked(
                        &mut standing,
                        format!("UNAVAILABLE — {reason}"),
                        "UNAVAILABLE",
                        or_fallback("will check it again before the next call"),
                    )
                }
            }
            CircuitState::Closed => None,
            CircuitState::HalfOpen => {
                standing.note = Some("probing".to_owned());
                None
            }
            CircuitState::Open => match via {
                Some(alt) => {
                    standing.note = Some(if paused {
                        "paused".to_owned()
                    } else {
                        format!("via {alt}")
                    });
                    None
                }
                None => blocked(
                    &mut standing,
                    if has_alternatives {
                        "alternatives unavailable".to_owned()
                    } else {
                        "no alternative".to_owned()
                    },
                    "circuit OPEN",
                    or_fallback("will probe on next cycle"),
                ),
            },
        };
        (standing, why)
    }

    /// Acts on the scope (R5.4): when every remaining sub-task is deferred, every call
    /// pauses; when work is achievable again, that pause lifts. Returns the report it acted
    /// on.
    pub(crate) fn reduce_scope(&mut self, task: &Task, changes: &mut Changes) -> ScopeReport {
        let report = self.scope_report(task);
        if report.nothing_achievable() {
            if self.halt.is_none() {
                self.halt = Some(PauseReason::NothingAchievable);
            }
        } else if self.halt == Some(PauseReason::NothingAchievable) {
            self.halt = None;
        }
        changes.touch_all();
        report
    }

    /// Starts work on sub-task `number` (R5.3): the scope is reduced first, then the
    /// sub-task is refused when it is deferred, and its tools are refused with it.
    pub(crate) fn begin_subtask(
        &mut self,
        task: &Task,
        number: usize,
        changes: &mut Changes,
    ) -> Result<(), ScopeError> {
        let count = task.subtasks().len();
        let Some(sub) = number.checked_sub(1).and_then(|i| task.subtasks().get(i)) else {
            return Err(ScopeError::NoSuchSubTask { number, count });
        };
        let report = self.reduce_scope(task, changes);
        match report.deferred.into_iter().find(|d| d.number == number) {
            None => {
                self.deferred = None;
                Ok(())
            }
            Some(deferral) => {
                let tools = sub.needs.iter().filter_map(|n| self.id(n)).collect();
                self.deferred = Some(DeferredWork { number, tools });
                changes.events.push(Event::SubTaskDeferred {
                    number,
                    reason: format!("requires {} ({})", deferral.blocked_by, deferral.reason),
                });
                Err(ScopeError::Deferred(deferral))
            }
        }
    }

    /// Ends work on the current sub-task.
    pub(crate) fn end_subtask(&mut self, changes: &mut Changes) {
        self.deferred = None;
        changes.touch_all();
    }

    // ----- snapshots (R3.7, B3) ----------------------------------------------------------

    /// The whole state; `record` gives each tool's record with the mirror's cells filled in.
    pub(crate) fn snapshot(
        &self,
        step: u64,
        record: impl Fn(ToolId) -> Option<BreakerRecord>,
    ) -> Snapshot {
        let tools = self
            .defs
            .iter()
            .enumerate()
            .filter_map(|(i, def)| {
                let id = ToolId::from_index(u32::try_from(i).ok()?);
                Some(crate::snapshot::ToolSnapshot {
                    spec: def.spec.clone(),
                    breaker: record(id)?,
                })
            })
            .collect();
        Snapshot {
            format: SNAPSHOT_FORMAT.to_owned(),
            version: SNAPSHOT_VERSION,
            step,
            budget: self.budget.clone(),
            systemic: self.cascade.event.clone(),
            tools,
        }
    }

    /// Restores a saved state (R3.7); on error nothing changes.
    pub(crate) fn restore(
        &mut self,
        snapshot: &Snapshot,
        changes: &mut Changes,
    ) -> Result<usize, RestoreError> {
        snapshot.check()?;
        let mut budget = snapshot.budget.clone();
        // A ledger written by another build may be longer than this one keeps.
        budget.compact();
        budget.rebase(self.policy.budget());
        let mut halt = budget
            .status()
            .is_exhausted()
            .then_some(PauseReason::BudgetExhausted {
                consumed: budget.consumed,
                limit: budget.limit,
            });
        // Check the unknown tools' specs against every name they may refer to.
        let mut names = self.names_in_order();
        names.extend(snapshot.tools.iter().map(|t| t.spec.name()));
        let mut errors = Vec::new();
        for (index, tool) in snapshot.tools.iter().enumerate() {
            if self.id(tool.spec.name()).is_none() {
                if tool.spec.name().trim().is_empty() {
                    errors.push(MapError::EmptyName { index });
                }
                check_tool(&tool.spec, index, &names, &mut errors);
            }
        }
        if !errors.is_empty() {
            return Err(RestoreError::Map(MapErrors(errors)));
        }
        drop(names);
        // All checked: apply. New tools first, with ids planned ahead so that they may name
        // each other as alternatives.
        let new: Vec<ToolSpec> = snapshot
            .tools
            .iter()
            .filter(|t| self.id(t.spec.name()).is_none())
            .map(|t| t.spec.clone())
            .collect();
        self.register(new, changes);
        // Every record replaced by the snapshot's (fresh CLOSED for tools it does not name);
        // epochs move on so that no ticket issued before the restore matches a record after.
        for record in &mut self.records {
            let epoch = record.epoch.wrapping_add(1);
            *record = BreakerRecord {
                epoch,
                ..BreakerRecord::default()
            };
        }
        let mut successes: Vec<Option<SuccessMark>> = vec![None; self.records.len()];
        let mut cancellations: Vec<u64> = vec![0; self.records.len()];
        for tool in &snapshot.tools {
            let Some(id) = self.id(tool.spec.name()) else {
                continue;
            };
            let i = id.index() as usize;
            let epoch = self.records[i].epoch;
            successes[i] = tool.breaker.last_success().copied();
            cancellations[i] = tool.breaker.cancelled();
            let mut record = BreakerRecord {
                probe: None,
                epoch,
                ..tool.breaker.clone()
            };
            // The mirror's cells keep the last success and the cancellations, not the engine.
            record.set_last_success(None);
            // A saved due time is not trusted (a snapshot may come from anywhere, or from
            // long ago): an OPEN circuit gets its cool-down afresh from the restore (B13).
            record.set_due(None);
            record.set_cancelled(0);
            self.records[i] = record;
        }
        for (i, ((record, success), cancelled)) in self
            .records
            .iter()
            .zip(successes)
            .zip(cancellations)
            .enumerate()
        {
            let Ok(index) = u32::try_from(i) else { break };
            let id = ToolId::from_index(index);
            changes.attempts.push((id, record.attempts_since_open));
            changes.successes.push((id, success));
            changes.cancellations.push((id, cancelled));
        }
        for precheck in &mut self.prechecks {
            precheck.result = None;
        }
        self.budget = budget;
        self.cascade = Cascade::default();
        // The records say what is OPEN; an outage in force is not in a snapshot, so the
        // restored tools of a server probe on their own.
        self.groups.clear_outages();
        self.shares = None;
        if let Some(event) = &snapshot.systemic {
            self.cascade.involved = event.tools.iter().filter_map(|t| self.id(t)).collect();
            if !event.recovered {
                halt = Some(PauseReason::Systemic {
                    category: event.category,
                });
            }
            self.cascade.event = Some(event.clone());
        }
        self.halt = halt;
        self.deferred = None;
        changes.step = Some(snapshot.step);
        changes.touch_all();
        changes.events.push(Event::Restored {
            tools: snapshot.tools.len(),
            step: snapshot.step,
        });
        Ok(snapshot.tools.len())
    }
}

/// The event of a transition.
fn transition_event(def: &ToolDef, record: &BreakerRecord, t: Transition) -> Event {
    let tool = def.spec.name().to_owned();
    let message = || {
        record
            .last_failure()
            .map(|m| m.failure.message().to_owned())
            .unwrap_or_default()
    };
    match t {
        Transition::Opened => Event::Opened {
            tool,
            consecutive_failures: record.consecutive_failures,
            message: message(),
        },
        Transition::Reopened => Event::Reopened {
            tool,
            consecutive_failures: record.consecutive_failures,
            message: message(),
        },
        Transition::HalfOpened => Event::HalfOpened { tool },
        Transition::Closed => Event::Closed { tool },
        Transition::ProbeReleased => Event::ProbeReleased { tool },
    }
}
