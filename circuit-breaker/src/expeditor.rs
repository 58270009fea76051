//! The expeditor (SPEC R3, R8): before every call it decides — CALL, PROBE, SKIP with a
//! route, or PAUSE — and after it remembers. It never calls a tool, never retries, never
//! changes a call's arguments and never hides an error: the executor (your agent loop, or the
//! dispatcher `#[toolbox]` generates) does the calling and reports back through the
//! [`Ticket`] it was given.
//!
//! Nothing in this module knows a tool's API or error type (R8.1).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use serde::{Deserialize, Serialize};

use crate::breaker::{BreakerRecord, CircuitState, Hot, Settings, Transition, Verdict, Via};
use crate::budget::{Budget, BudgetStatus};
use crate::capability::{CapabilityMap, MapError, MapErrors, ToolSpec, check_tool};
use crate::clock::{SystemClock, WallClock};
use crate::event::{Event, Observer};
use crate::failure::Failure;
use crate::policy::Policy;
use crate::route::{Route, Routes};

/// A tool known to an [`Expeditor`]: its position in registration order (the capability
/// map's order, then tools discovered at run time).
///
/// Get one from [`Expeditor::tool`] or [`Expeditor::discover`]; a `#[toolbox]` enum converts
/// to it directly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ToolId(u32);

impl ToolId {
    /// The id of the tool at `index` in registration order. An id that names no tool of an
    /// expeditor is not an error: deciding on it gives a SKIP to scope reduction.
    pub const fn from_index(index: u32) -> Self {
        ToolId(index)
    }

    /// The position in registration order.
    pub const fn index(self) -> u32 {
        self.0
    }
}

/// A registered tool: its spec, its resolved alternatives and settings, and the hot mirror.
#[derive(Debug)]
pub(crate) struct ToolSlot {
    pub(crate) spec: ToolSpec,
    pub(crate) alternatives: Box<[ToolId]>,
    pub(crate) settings: Settings,
    pub(crate) hot: Hot,
}

/// The most tools one expeditor holds.
pub(crate) const MAX_TOOLS: usize = (u32::MAX - 1) as usize;

/// First chunk holds 16 tools, each next chunk twice as many: indices up to `u32::MAX` fit.
const FIRST_CHUNK_BITS: u32 = 4;
const CHUNKS: usize = 29;

/// An append-only table of tool slots readable without a lock: a slot never moves once
/// written, so the healthy path reaches it with two atomic loads.
struct Slots {
    chunks: [OnceLock<Box<[OnceLock<ToolSlot>]>>; CHUNKS],
}

impl Slots {
    fn new() -> Self {
        Slots {
            chunks: [const { OnceLock::new() }; CHUNKS],
        }
    }

    #[inline]
    fn locate(index: u32) -> (usize, usize) {
        let i = u64::from(index) + (1 << FIRST_CHUNK_BITS);
        let bit = i.ilog2();
        let chunk = (bit - FIRST_CHUNK_BITS) as usize;
        #[allow(clippy::cast_possible_truncation)] // offset < 2^32 by construction
        let offset = (i - (1 << bit)) as usize;
        (chunk, offset)
    }

    #[inline]
    fn get(&self, index: u32) -> Option<&ToolSlot> {
        let (chunk, offset) = Self::locate(index);
        self.chunks[chunk].get()?.get(offset)?.get()
    }

    /// Writes slot `index`; called under the core lock, in index order.
    fn insert(&self, index: u32, slot: ToolSlot) {
        let (chunk, offset) = Self::locate(index);
        let cells = self.chunks[chunk].get_or_init(|| {
            (0..(1usize << (chunk + FIRST_CHUNK_BITS as usize)))
                .map(|_| OnceLock::new())
                .collect()
        });
        // The core lock serializes registration and `len` only grows, so the cell is empty.
        let _ = cells[offset].set(slot);
    }
}

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
}

/// State behind the lock: the records, the budget and ledger, the name index.
pub(crate) struct Core {
    pub(crate) names: HashMap<Box<str>, ToolId>,
    pub(crate) records: Vec<BreakerRecord>,
    pub(crate) budget: Budget,
    pub(crate) halt: Option<PauseReason>,
}

/// Keeps a value on its own cache line, so writes to it do not slow readers of its
/// neighbours.
#[repr(align(64))]
struct CachePadded<T>(T);

/// The decision layer (R3, R8): per-tool breakers, the failure budget, routing, reports.
///
/// `Expeditor` is `Send + Sync`; share it by reference or `Arc`. The healthy path —
/// [`decide`](Self::decide) on a CLOSED tool and [`Ticket::success`] — takes no lock,
/// allocates nothing and writes no shared memory (B5).
///
/// ```
/// use circuit_breaker::{CapabilityMap, Decision, Expeditor, ToolSpec};
///
/// let map = CapabilityMap::new().tool(
///     ToolSpec::new("Bash")
///         .provides("command execution")
///         .fallback("report commands that need to be run manually"),
/// );
/// let expeditor = Expeditor::new(map)?;
/// let bash = expeditor.tool("Bash").expect("declared above");
/// match expeditor.decide(bash) {
///     Decision::Call(ticket) | Decision::Probe(ticket) => ticket.success(),
///     Decision::Skip(skip) => println!("{}", skip.for_model()),
///     Decision::Pause(pause) => println!("{}", pause.for_model()),
/// }
/// # Ok::<(), circuit_breaker::MapErrors>(())
/// ```
pub struct Expeditor {
    slots: Slots,
    halted: AtomicBool,
    step: AtomicU64,
    policy: Policy,
    clock: Arc<dyn WallClock>,
    observers: Box<[Arc<dyn Observer>]>,
    core: CachePadded<Mutex<Core>>,
}

impl fmt::Debug for Expeditor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Expeditor")
            .field("policy", &self.policy)
            .field("step", &self.step())
            .field("tools", &self.lock().records.len())
            .finish_non_exhaustive()
    }
}

/// Builds an [`Expeditor`]: a map, a policy, a wall clock, observers.
pub struct ExpeditorBuilder {
    map: CapabilityMap,
    policy: Policy,
    clock: Arc<dyn WallClock>,
    observers: Vec<Arc<dyn Observer>>,
}

impl fmt::Debug for ExpeditorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExpeditorBuilder")
            .field("map", &self.map)
            .field("policy", &self.policy)
            .field("observers", &self.observers.len())
            .finish_non_exhaustive()
    }
}

impl ExpeditorBuilder {
    /// Sets the policy (default: [`Policy::default`], the seed's 3 / 5 / 3).
    #[must_use]
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets the wall clock (default: [`SystemClock`]).
    #[must_use]
    pub fn clock(mut self, clock: impl WallClock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Adds an observer of every [`Event`] (B4).
    #[must_use]
    pub fn observer(mut self, observer: impl Observer) -> Self {
        self.observers.push(Arc::new(observer));
        self
    }

    /// Validates the map (R1.4) and builds the expeditor; every tool starts CLOSED (R2).
    ///
    /// # Errors
    /// [`MapErrors`] with every problem of the map.
    pub fn build(self) -> Result<Expeditor, MapErrors> {
        self.map.validate()?;
        if self.map.tools().len() >= MAX_TOOLS {
            return Err(MapErrors(vec![MapError::TooManyTools { limit: MAX_TOOLS }]));
        }
        Ok(self.build_checked())
    }

    /// Builds from a map already checked (a `#[toolbox]` map is checked at compile time).
    /// Never panics: an alternative naming no tool is simply not routed to.
    pub(crate) fn build_checked(self) -> Expeditor {
        let expeditor = Expeditor {
            slots: Slots::new(),
            halted: AtomicBool::new(false),
            step: AtomicU64::new(0),
            policy: self.policy,
            clock: self.clock,
            observers: self.observers.into_boxed_slice(),
            core: CachePadded(Mutex::new(Core {
                names: HashMap::new(),
                records: Vec::new(),
                budget: Budget::new(self.policy.budget()),
                halt: None,
            })),
        };
        {
            let mut core = expeditor.lock();
            let names: HashMap<&str, ToolId> = self
                .map
                .tools()
                .iter()
                .enumerate()
                .map(|(i, t)| (t.name(), ToolId(u32::try_from(i).unwrap_or(u32::MAX))))
                .collect();
            for spec in self.map.tools() {
                let alternatives = spec
                    .alternatives()
                    .iter()
                    .filter_map(|a| names.get(a.tool()).copied())
                    .collect();
                if core.records.len() < MAX_TOOLS {
                    expeditor.push_tool(&mut core, spec.clone(), alternatives);
                }
            }
        }
        expeditor
    }
}

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
    Pause(Pause),
}

impl Decision<'_> {
    /// The seed's name of the decision: `CALL`, `PROBE`, `SKIP` or `PAUSE`.
    pub fn kind(&self) -> &'static str {
        match self {
            Decision::Call(_) => "CALL",
            Decision::Probe(_) => "PROBE",
            Decision::Skip(_) => "SKIP",
            Decision::Pause(_) => "PAUSE",
        }
    }
}

/// Permission to call a tool once. Record the outcome with [`success`](Self::success) or
/// [`failure`](Self::failure); a ticket dropped unrecorded is a cancellation, counted as
/// neither, and a dropped probe frees the half-open slot for the next caller.
#[must_use = "record the call's outcome through the ticket; dropping it counts as a cancellation"]
pub struct Ticket<'a> {
    expeditor: &'a Expeditor,
    slot: &'a ToolSlot,
    tool: ToolId,
    via: Via,
    done: bool,
}

impl fmt::Debug for Ticket<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticket")
            .field("tool", &self.slot.spec.name())
            .field("probe", &self.is_probe())
            .finish()
    }
}

impl<'a> Ticket<'a> {
    /// The tool this ticket is for.
    pub fn tool(&self) -> ToolId {
        self.tool
    }

    /// The tool's name.
    pub fn tool_name(&self) -> &'a str {
        self.slot.spec.name()
    }

    /// Whether this is the probe of a HALF-OPEN tool.
    pub fn is_probe(&self) -> bool {
        matches!(self.via, Via::Probe(_))
    }

    /// Records a success (R3.3). On a CLOSED tool with no failures this is a few atomic loads.
    #[inline]
    pub fn success(mut self) {
        self.done = true;
        if self.via == Via::Call && self.slot.hot.success_is_noop(self.expeditor.step()) {
            return;
        }
        self.expeditor
            .record_success(self.tool, self.slot, self.via);
    }

    /// Records a failure (R3.3): consecutive failures + 1, last failure kept, budget charged,
    /// threshold checked. The caller keeps its error: the expeditor only needs its message
    /// and category (R3.5: nothing is swallowed, nothing is retried).
    pub fn failure(mut self, failure: impl Into<Failure>) -> Recorded {
        self.done = true;
        self.expeditor
            .record_failure(self.tool, self.slot, self.via, failure.into())
    }

    /// Records a `Result`: `Ok` as a success, `Err` as a failure built by `to_failure`.
    ///
    /// # Errors
    /// Returns `result` untouched, so the tool's error reaches the caller (R3.5).
    pub fn record<T, E>(
        self,
        result: Result<T, E>,
        to_failure: impl FnOnce(&E) -> Failure,
    ) -> Result<T, E> {
        match &result {
            Ok(_) => self.success(),
            Err(e) => {
                let _ = self.failure(to_failure(e));
            }
        }
        result
    }

    /// Gives the ticket back unused: neither success nor failure.
    pub fn cancel(self) {
        drop(self);
    }
}

impl Drop for Ticket<'_> {
    #[inline]
    fn drop(&mut self) {
        if !self.done && self.is_probe() {
            self.expeditor.release_probe(self.tool, self.via);
        }
    }
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

/// Why a tool is skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// Its circuit is OPEN and no probe is due.
    Open,
    /// It is HALF-OPEN and another caller holds its one probe (R3.6).
    ProbeInFlight,
    /// The id names no tool of this expeditor.
    UnknownTool,
}

/// Do not call the tool: here is why, and the routes to take instead (R4).
#[derive(Debug, Clone)]
pub struct Skip<'a> {
    expeditor: &'a Expeditor,
    tool: ToolId,
    slot: Option<&'a ToolSlot>,
    reason: SkipReason,
}

impl<'a> Skip<'a> {
    /// The skipped tool.
    pub fn tool(&self) -> ToolId {
        self.tool
    }

    /// The skipped tool's name (`"?"` for an unknown id).
    pub fn tool_name(&self) -> &'a str {
        self.slot.map_or("?", |s| s.spec.name())
    }

    /// Why it is skipped.
    pub fn reason(&self) -> SkipReason {
        self.reason
    }

    /// The best route (R4.1): never `None`, scope reduction at worst.
    pub fn route(&self) -> Route<'a> {
        self.routes().next().unwrap_or(Route::ScopeReduction)
    }

    /// Every route, best first: usable alternatives by severity, then the fallback, then
    /// scope reduction (R4.1, R4.3).
    pub fn routes(&self) -> Routes<'a> {
        Routes::new(self.expeditor, self.slot)
    }

    /// The short text for a language model (B7): which tool is broken, why, and what to do
    /// instead. It never invites a retry of the broken tool.
    pub fn for_model(&self) -> crate::report::ModelNote {
        crate::report::ModelNote::for_skip(self)
    }

    pub(crate) fn expeditor(&self) -> &'a Expeditor {
        self.expeditor
    }
}

/// Every call is paused; stop and report (R3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pause {
    reason: PauseReason,
}

impl Pause {
    /// Why.
    pub fn reason(&self) -> PauseReason {
        self.reason
    }

    /// The short text for a language model (B7).
    pub fn for_model(&self) -> crate::report::ModelNote {
        crate::report::ModelNote::for_pause(self.reason)
    }
}

impl Expeditor {
    /// An expeditor over `map` with the default policy and the system clock.
    ///
    /// # Errors
    /// [`MapErrors`] with every problem of the map (R1.4).
    pub fn new(map: CapabilityMap) -> Result<Self, MapErrors> {
        Expeditor::builder(map).build()
    }

    /// A builder over `map`.
    pub fn builder(map: CapabilityMap) -> ExpeditorBuilder {
        ExpeditorBuilder {
            map,
            policy: Policy::default(),
            clock: Arc::new(SystemClock),
            observers: Vec::new(),
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Before a call (R3.1): CALL, PROBE, SKIP with its route, or PAUSE.
    #[inline]
    pub fn decide(&self, tool: impl Into<ToolId>) -> Decision<'_> {
        let tool = tool.into();
        if let Some(slot) = self.slots.get(tool.0)
            && slot.hot.is_closed()
            && !self.halted.load(Ordering::Acquire)
        {
            return Decision::Call(Ticket {
                expeditor: self,
                slot,
                tool,
                via: Via::Call,
                done: false,
            });
        }
        self.decide_slow(tool)
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

    #[cold]
    fn decide_slow(&self, tool: ToolId) -> Decision<'_> {
        let Some(slot) = self.slots.get(tool.0) else {
            return Decision::Skip(Skip {
                expeditor: self,
                tool,
                slot: None,
                reason: SkipReason::UnknownTool,
            });
        };
        let step = self.step();
        let mut events = Vec::new();
        let verdict = {
            let mut core = self.lock();
            if let Some(reason) = core.halt {
                return Decision::Pause(Pause { reason });
            }
            let record = &mut core.records[tool.0 as usize];
            let (verdict, transition) = record.decide(slot.settings, step);
            slot.hot.sync(record);
            if let Some(t) = transition {
                events.push(Self::transition_event(slot, record, t));
            }
            verdict
        };
        self.emit(&events);
        match verdict {
            Verdict::Call => Decision::Call(Ticket {
                expeditor: self,
                slot,
                tool,
                via: Via::Call,
                done: false,
            }),
            Verdict::Probe(epoch) => Decision::Probe(Ticket {
                expeditor: self,
                slot,
                tool,
                via: Via::Probe(epoch),
                done: false,
            }),
            Verdict::SkipOpen | Verdict::SkipProbeInFlight => Decision::Skip(Skip {
                expeditor: self,
                tool,
                slot: Some(slot),
                reason: if verdict == Verdict::SkipOpen {
                    SkipReason::Open
                } else {
                    SkipReason::ProbeInFlight
                },
            }),
        }
    }

    #[cold]
    fn record_success(&self, tool: ToolId, slot: &ToolSlot, via: Via) {
        let step = self.step();
        let mut events = Vec::new();
        {
            let mut core = self.lock();
            let Some(record) = core.records.get_mut(tool.0 as usize) else {
                return;
            };
            let same_step = record.last_success.is_some_and(|s| s.step == step);
            let now = if same_step {
                crate::clock::Timestamp::EPOCH
            } else {
                self.clock.now()
            };
            if let Some(t) = record.succeed(via, now, step) {
                events.push(Self::transition_event(slot, record, t));
            }
            slot.hot.sync(record);
        }
        self.emit(&events);
    }

    #[cold]
    fn record_failure(
        &self,
        tool: ToolId,
        slot: &ToolSlot,
        via: Via,
        failure: Failure,
    ) -> Recorded {
        let step = self.step();
        let now = self.clock.now();
        let mut events = Vec::new();
        let recorded = {
            let mut core = self.lock();
            let core = &mut *core;
            let exhausted_now = core
                .budget
                .charge(slot.spec.name(), failure.clone(), step, now);
            let record = &mut core.records[tool.0 as usize];
            let transition = record.fail(via, slot.settings, now, step, failure);
            slot.hot.sync(record);
            if let Some(t) = transition {
                events.push(Self::transition_event(slot, record, t));
            }
            if exhausted_now && core.halt.is_none() {
                let status = core.budget.status();
                core.halt = Some(PauseReason::BudgetExhausted {
                    consumed: status.consumed,
                    limit: status.limit,
                });
                self.halted.store(true, Ordering::Release);
                events.push(Event::BudgetExhausted {
                    consumed: status.consumed,
                    limit: status.limit,
                });
            }
            Recorded {
                state: record.state,
                consecutive_failures: record.consecutive_failures,
                opened: matches!(transition, Some(Transition::Opened | Transition::Reopened)),
                budget: core.budget.status(),
                paused: core.halt.is_some(),
            }
        };
        self.emit(&events);
        recorded
    }

    #[cold]
    fn release_probe(&self, tool: ToolId, via: Via) {
        let Some(slot) = self.slots.get(tool.0) else {
            return;
        };
        let event = {
            let mut core = self.lock();
            let record = &mut core.records[tool.0 as usize];
            let t = record.cancel(via);
            slot.hot.sync(record);
            t.map(|t| Self::transition_event(slot, record, t))
        };
        if let Some(event) = event {
            self.emit(&[event]);
        }
    }

    fn transition_event(slot: &ToolSlot, record: &BreakerRecord, t: Transition) -> Event {
        let tool = slot.spec.name().to_owned();
        let message = || {
            record
                .last_failure
                .as_ref()
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

    /// Emits events through `tracing` and the observers; never called with the lock held.
    pub(crate) fn emit(&self, events: &[Event]) {
        for event in events {
            event.trace();
            for observer in &self.observers {
                observer.on_event(event);
            }
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Core> {
        // Nothing panics while holding the lock (observers run after it is released), so a
        // poisoned lock still guards consistent state.
        self.core.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[inline]
    pub(crate) fn slot(&self, tool: ToolId) -> Option<&ToolSlot> {
        self.slots.get(tool.0)
    }

    /// Registers a tool under the lock: slot first, then its record, then its name.
    pub(crate) fn push_tool(
        &self,
        core: &mut Core,
        spec: ToolSpec,
        alternatives: Box<[ToolId]>,
    ) -> ToolId {
        let id = ToolId(u32::try_from(core.records.len()).unwrap_or(u32::MAX));
        let settings = Settings {
            threshold: spec.threshold_override().unwrap_or(self.policy.threshold()),
            probe_every: spec
                .probe_every_override()
                .unwrap_or(self.policy.probe_every()),
            probe_unit: self.policy.probe_unit(),
        };
        core.names.insert(spec.name().into(), id);
        core.records.push(BreakerRecord::default());
        self.slots.insert(
            id.0,
            ToolSlot {
                spec,
                alternatives,
                settings,
                hot: Hot::new(),
            },
        );
        id
    }

    /// The names of every registered tool, in registration order (so that suggestions are
    /// the same from run to run).
    pub(crate) fn names_in_order(&self, core: &Core) -> Vec<&str> {
        (0..core.records.len())
            .filter_map(|i| u32::try_from(i).ok())
            .filter_map(|i| self.slot(ToolId(i)).map(|s| s.spec.name()))
            .collect()
    }

    /// The id of the tool named `name`, if known.
    pub fn tool(&self, name: &str) -> Option<ToolId> {
        self.lock().names.get(name).copied()
    }

    /// The name of a tool.
    pub fn tool_name(&self, tool: impl Into<ToolId>) -> Option<&str> {
        self.slot(tool.into()).map(|s| s.spec.name())
    }

    /// Registers a tool found at run time (R2.4, B6), checked like a map entry (R1.4): its
    /// alternatives must name known tools. It starts CLOSED. Registering a name already known
    /// returns its id unchanged when the spec is the same.
    ///
    /// # Errors
    /// [`MapErrors`] with every problem of the spec, including a different spec under a
    /// known name.
    pub fn discover(&self, spec: ToolSpec) -> Result<ToolId, MapErrors> {
        let id = {
            let mut core = self.lock();
            if let Some(&id) = core.names.get(spec.name()) {
                let same = self.slot(id).is_some_and(|s| s.spec == spec);
                return if same {
                    Ok(id)
                } else {
                    Err(MapErrors(vec![MapError::DuplicateTool {
                        tool: spec.name().to_owned(),
                        first: id.0 as usize,
                        index: core.records.len(),
                    }]))
                };
            }
            let mut errors = Vec::new();
            let index = core.records.len();
            if spec.name().trim().is_empty() {
                errors.push(MapError::EmptyName { index });
            }
            if index >= MAX_TOOLS {
                errors.push(MapError::TooManyTools { limit: MAX_TOOLS });
            }
            let names = self.names_in_order(&core);
            check_tool(&spec, index, &names, &mut errors);
            if !errors.is_empty() {
                return Err(MapErrors(errors));
            }
            let alternatives = spec
                .alternatives()
                .iter()
                .filter_map(|a| core.names.get(a.tool()).copied())
                .collect();
            self.push_tool(&mut core, spec, alternatives)
        };
        let name = self.tool_name(id).unwrap_or_default().to_owned();
        self.emit(&[Event::ToolDiscovered { tool: name }]);
        Ok(id)
    }

    /// Every registered tool, in registration order.
    pub fn tools(&self) -> impl Iterator<Item = ToolId> + '_ {
        let n = u32::try_from(self.lock().records.len()).unwrap_or(u32::MAX);
        (0..n).map(ToolId)
    }

    /// The capability map as it stands: the declared tools and those discovered since.
    pub fn capability_map(&self) -> CapabilityMap {
        self.tools()
            .filter_map(|id| self.slot(id))
            .fold(CapabilityMap::new(), |map, slot| {
                map.tool(slot.spec.clone())
            })
    }

    /// A copy of one tool's breaker (R2.1).
    pub fn breaker(&self, tool: impl Into<ToolId>) -> Option<BreakerRecord> {
        let tool = tool.into();
        self.lock().records.get(tool.0 as usize).cloned()
    }

    /// The state of one tool, lock-free.
    pub fn state(&self, tool: impl Into<ToolId>) -> Option<CircuitState> {
        self.slot(tool.into()).map(|s| s.hot.state())
    }

    /// Tools with no alternative (R1.3).
    pub fn is_critical(&self, tool: impl Into<ToolId>) -> Option<bool> {
        self.slot(tool.into()).map(|s| s.spec.is_critical())
    }

    /// The failure budget of this cycle, with its ledger (R7).
    pub fn budget(&self) -> Budget {
        self.lock().budget.clone()
    }

    /// Whether every call is paused, and why.
    pub fn paused(&self) -> Option<PauseReason> {
        self.lock().halt
    }

    /// The agent's current step.
    #[inline]
    pub fn step(&self) -> u64 {
        self.step.load(Ordering::Acquire)
    }

    /// Moves to the next step and returns it. Steps count probe intervals in
    /// [`ProbeUnit::Steps`](crate::ProbeUnit::Steps) and date ledger entries.
    pub fn advance_step(&self) -> u64 {
        self.step.fetch_add(1, Ordering::AcqRel).saturating_add(1)
    }

    /// Starts a new cycle (R7.4): the budget and ledger reset and a budget pause lifts;
    /// breaker states are kept. Returns the new cycle's number.
    pub fn new_cycle(&self) -> u64 {
        let cycle = {
            let mut core = self.lock();
            core.budget.next_cycle();
            if matches!(core.halt, Some(PauseReason::BudgetExhausted { .. })) {
                core.halt = None;
                self.halted.store(false, Ordering::Release);
            }
            core.budget.cycle()
        };
        self.emit(&[Event::CycleStarted { cycle }]);
        cycle
    }

    pub(crate) fn set_halted(&self, halted: bool) {
        self.halted.store(halted, Ordering::Release);
    }

    pub(crate) fn set_step(&self, step: u64) {
        self.step.store(step, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_locate_every_index_once() {
        assert_eq!(Slots::locate(0), (0, 0));
        assert_eq!(Slots::locate(15), (0, 15));
        assert_eq!(Slots::locate(16), (1, 0));
        assert_eq!(Slots::locate(47), (1, 31));
        assert_eq!(Slots::locate(48), (2, 0));
        let (chunk, _) = Slots::locate(u32::MAX);
        assert!(chunk < CHUNKS);
    }

    #[test]
    fn expeditor_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Expeditor>();
        check::<Ticket<'static>>();
    }
}
