//! The expeditor (R3, R8): before every call it decides — CALL, PROBE, SKIP with a
//! route, or PAUSE — and after it remembers. It never calls a tool, never retries, never
//! changes a call's arguments and never hides an error: the executor (your agent loop, or the
//! dispatcher `#[toolbox]` generates) does the calling and reports back through the
//! [`Ticket`] it was given.
//!
//! This file is the expeditor's whole public API. It is a thin shell around the engine
//! (`engine/`, the state machine as a plain value): one mutex around the one engine, one
//! `command` through which every change goes — the engine changes, the
//! mirror is published (its only writer), the lock is released, and then the hook sees every
//! event: `tracing` and each [`Observer`]. Queries read one consistent view under one lock.
//!
//! Nothing in this module knows a tool's API or error type (R8.1).

use std::fmt;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use crate::engine::{Changes, Dirty, Engine, MAX_TOOLS, Verdict};
use crate::mirror::{Mirror, OpenCheck, Slot};
use crate::model::breaker::{BreakerRecord, CircuitState, Via};
use crate::model::budget::Budget;
use crate::model::capability::{CapabilityMap, MapError, MapErrors, ToolSpec};
use crate::model::cascade::SystemicEvent;
use crate::model::clock::{SystemClock, Timestamp, WallClock};
use crate::model::event::Observer;
use crate::model::failure::{Failure, FailureCategory};
use crate::model::fleet::{SharedOpen, SharedTransition, StoreStatus};
use crate::model::freshness::{Freshness, FreshnessProfile, Observation};
use crate::model::policy::Policy;
use crate::model::precheck::Availability;
use crate::model::route::{Route, Routes};
use crate::model::scope::{ScopeError, ScopeReport, Task};
use crate::model::snapshot::{RestoreError, Snapshot};
use crate::report::{ModelNote, PauseReport, ServerLine, StateTable, ToolOffer, View};
use crate::signal::Signal;
use crate::sync::{AtomicU64, CachePadded, Mutex, MutexGuard, Ordering};

pub use crate::engine::{PauseReason, Recorded, SkipReason};
pub use crate::model::id::{ToolId, ToolName};

/// The decision layer (R3, R8): per-tool breakers, the failure budget, routing, reports.
///
/// `Expeditor` is `Send + Sync`; share it by reference or `Arc`.
///
/// **The healthy path** — [`decide`](Self::decide) on a CLOSED tool with no failure and
/// [`Ticket::success`] — takes no lock and allocates nothing, on every call, whether or not
/// the step advances between calls (B5). It reads the tool's state word and the pause flag.
/// It writes shared memory once per tool and step: the first success of a tool in a step
/// stores that step and the wall clock's time (the state table's "Last Success"); later
/// successes in the same step write nothing. A success after failures, a probe, a failure and
/// every transition take the lock.
///
/// ```
/// use agent_circuit_breaker::{CapabilityMap, Decision, Expeditor, ToolSpec};
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
/// # Ok::<(), agent_circuit_breaker::capability::MapErrors>(())
/// ```
///
/// A clone is the same expeditor (one state, shared): clone it to hand it to another task.
#[derive(Clone)]
pub struct Expeditor {
    inner: Arc<Inner>,
}

/// A handle on an [`Expeditor`] that does not keep it alive ([`Expeditor::downgrade`]): for
/// whoever only reads it while someone else uses it (the gauges of feature `otel`).
#[derive(Clone)]
pub struct WeakExpeditor {
    inner: std::sync::Weak<Inner>,
}

impl WeakExpeditor {
    /// The expeditor, while any [`Expeditor`] handle on it is alive.
    pub fn upgrade(&self) -> Option<Expeditor> {
        self.inner.upgrade().map(|inner| Expeditor { inner })
    }
}

impl fmt::Debug for WeakExpeditor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeakExpeditor")
            .field("alive", &(self.inner.strong_count() > 0))
            .finish()
    }
}

/// The expeditor's state: an [`Expeditor`] holds it, a [`FleetLink`] holds it weakly.
pub(crate) struct Inner {
    mirror: Mirror,
    /// The agent's step: written by every `advance_step`, so on a line of its own, apart from
    /// the pause flag and the tools' words that every `decide` reads.
    step: CachePadded<AtomicU64>,
    clock: Arc<dyn WallClock>,
    observers: Box<[Arc<dyn Observer>]>,
    /// Moved after every command that changed something, for [`Watch`]es.
    changed: Signal,
    /// The fleet's store, when one is attached (B11).
    fleet: Option<Arc<dyn FleetStore>>,
    engine: CachePadded<Mutex<Engine>>,
}

impl fmt::Debug for Expeditor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Expeditor")
            .field("policy", &self.policy())
            .field("step", &self.step())
            .field("tools", &self.lock().len())
            .finish_non_exhaustive()
    }
}

/// Builds an [`Expeditor`]: a map, a policy, a wall clock, observers.
pub struct ExpeditorBuilder {
    map: CapabilityMap,
    policy: Policy,
    clock: Arc<dyn WallClock>,
    observers: Vec<Arc<dyn Observer>>,
    fleet: Option<Arc<dyn FleetStore>>,
    jitter_seed: Option<u64>,
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
    /// Sets the policy (default: [`Policy::default`], the source document's 3 / 5 / 3).
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

    /// Shares tool health with a fleet of workers through `store` (B11): circuits opened
    /// here by infrastructure failures are told to the fleet, those the fleet opened are
    /// OPEN here, and a shared circuit's probe is made by one worker at a time. Decisions
    /// stay local: the healthy path never waits on the store.
    #[must_use]
    pub fn fleet(mut self, store: impl FleetStore) -> Self {
        self.fleet = Some(Arc::new(store));
        self
    }

    /// Seeds the jitter of cool-downs (B13), for runs that must repeat exactly. By default
    /// every expeditor draws its own seed, so that the workers of a fleet do not probe in step.
    #[must_use]
    pub fn jitter_seed(mut self, seed: u64) -> Self {
        self.jitter_seed = Some(seed);
        self
    }

    /// Adds an observer of every [`Event`](crate::event::Event) (B4).
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
    /// Never panics: an alternative naming no tool keeps its place and is never routed to.
    pub(crate) fn build_checked(self) -> Expeditor {
        let mut engine = Engine::new(self.policy, self.clock.now());
        if let Some(store) = &self.fleet {
            engine.enable_fleet(store.name());
            // A fleet worker is a long-running service (B15).
            let now = self.clock.now();
            engine.run_as_service(now, &mut Changes::default());
        }
        engine.seed_jitter(self.jitter_seed.unwrap_or_else(|| {
            use std::hash::{BuildHasher as _, Hasher as _};
            // std's hasher keys are random per process and per call: a seed of its own.
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_usize(std::ptr::from_ref(&engine) as usize);
            hasher.finish()
        }));
        let expeditor = Expeditor {
            inner: Arc::new(Inner {
                mirror: Mirror::new(),
                step: CachePadded(AtomicU64::new(0)),
                engine: CachePadded(Mutex::new(engine)),
                clock: self.clock,
                observers: self.observers.into_boxed_slice(),
                changed: Signal::default(),
                fleet: self.fleet,
            }),
        };
        let specs = self.map.tools().to_vec();
        expeditor.command(|engine, changes, _| engine.register(specs, changes));
        if let Some(store) = &expeditor.inner.fleet {
            store.attach(FleetLink {
                inner: Arc::downgrade(&expeditor.inner),
            });
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

/// Permission to call a tool once. Record the outcome with [`success`](Self::success) or
/// [`failure`](Self::failure); a ticket dropped unrecorded is a cancellation by the caller
/// (its future dropped by a timeout of its own, say): charged as neither, but counted
/// ([`BreakerRecord::cancelled`], the state table's `Cancelled by caller` line, B13), and a
/// dropped probe frees the half-open slot for the next caller. A call not made at all is
/// given back with [`cancel`](Self::cancel), which counts nothing. A ticket dropped
/// while its thread panics (the tool panicked) is recorded as a failure ([`PANICKED`]).
#[must_use = "record the call's outcome through the ticket; dropping it counts as a cancellation"]
pub struct Ticket<'a> {
    expeditor: &'a Expeditor,
    slot: &'a Slot,
    tool: ToolId,
    via: Via,
    done: bool,
}

impl fmt::Debug for Ticket<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticket")
            .field("tool", &self.slot.def.spec.name())
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
        self.slot.def.spec.name()
    }

    /// Whether this is the probe of a HALF-OPEN tool.
    pub fn is_probe(&self) -> bool {
        matches!(self.via, Via::Probe(_))
    }

    /// Records a success (R3.3). On a CLOSED tool with no failures this takes no lock (see
    /// [`Expeditor`] for exactly what it reads and writes).
    #[inline]
    pub fn success(mut self) {
        self.done = true;
        let expeditor = self.expeditor;
        let step = expeditor.step();
        if self.via == Via::Call && self.slot.hot.absorb_success(step, || expeditor.now()) {
            return;
        }
        expeditor.record_success(self.tool, self.slot, self.via);
    }

    /// Records a failure (R3.3): consecutive failures + 1, last failure kept, budget charged,
    /// threshold checked. The caller keeps its error: the expeditor only needs its message
    /// and category (R3.5: nothing is swallowed, nothing is retried).
    ///
    /// A failure whose [`blame`](Failure::blame) is the caller's is recorded as
    /// [`mistake`](Self::mistake) records it: never charged (B14).
    pub fn failure(mut self, failure: impl Into<Failure>) -> Recorded {
        self.done = true;
        self.expeditor
            .record_failure(self.tool, self.via, failure.into())
    }

    /// Records that the tool answered the call as the caller's mistake (B14): a resource the
    /// call named that does not exist, an input it does not accept. It is the model's
    /// mistake: counted with its other mistakes (the policy's
    /// [`mistake_limit`](crate::Policy::mistake_limit) pauses every call when reached), never
    /// charged to the tool's breaker or the budget, never seen by cascade detection. The
    /// tool's run of failures is left as it was; a probe answered so is a successful probe
    /// (the tool was reached and answered coherently). The tool's message is the caller's to
    /// show the model; the expeditor keeps only the count.
    pub fn mistake(self) -> Recorded {
        self.mistake_of(crate::engine::MistakeKind::Rejected)
    }

    /// [`mistake`](Self::mistake), counted as `kind`.
    pub(crate) fn mistake_of(mut self, kind: crate::engine::MistakeKind) -> Recorded {
        self.done = true;
        self.expeditor
            .record_caller_mistake(self.tool, self.via, kind)
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

    /// Gives the ticket back unused, the call not made (the arguments were wrong, the
    /// server could not be reached first): neither success nor failure, and not counted as
    /// a cancellation. A held probe slot is freed.
    pub fn cancel(mut self) {
        self.done = true;
        release(self.expeditor, self.tool, self.via);
    }
}

impl Drop for Ticket<'_> {
    #[inline]
    fn drop(&mut self) {
        // Kept tiny so that the healthy path (a recorded ticket) stays inlined and in registers.
        if !self.done {
            abandon(self.expeditor, self.tool, self.via);
        }
    }
}

/// A ticket dropped unrecorded: a cancellation by the caller, counted on the tool's own
/// cell without a lock (B13) and said on the call's span — or, while its thread panics, a
/// failure. Takes the ticket's parts by value, so that the ticket itself never needs an
/// address.
#[cold]
#[inline(never)]
fn abandon(expeditor: &Expeditor, tool: ToolId, via: Via) {
    if std::thread::panicking() {
        // The call panicked while holding its ticket: a failure, not a cancellation. The panic
        // goes on to the caller; the breaker has counted it.
        let _ = expeditor.record_failure(
            tool,
            via,
            Failure::with_category(PANICKED, FailureCategory::Other),
        );
        return;
    }
    if let Some(slot) = expeditor.inner.mirror.get(tool) {
        slot.hot.count_cancellation();
    }
    crate::telemetry::cancelled();
    release(expeditor, tool, via);
}

/// A ticket given back: a probe's slot is freed for the next caller; a call's holds nothing.
fn release(expeditor: &Expeditor, tool: ToolId, via: Via) {
    if matches!(via, Via::Probe(_)) {
        expeditor.command(|engine, changes, _| engine.cancel(tool, via, changes));
    }
}

/// The failure recorded for a call that panicked with its ticket in hand.
pub const PANICKED: &str = "the tool panicked";

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
    pub fn route(&self) -> Route<'a> {
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

    /// The note for a language model when `route` is the one taken.
    pub fn note_for(&self, route: &Route<'_>) -> ModelNote {
        let engine = self.expeditor.lock();
        ModelNote::for_route(self.expeditor.view(&engine), self.tool, self.reason, route)
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

    /// The short text for a language model (B7); it names the tool asked for.
    pub fn for_model(&self) -> ModelNote {
        let name = self.expeditor.tool_name(self.tool);
        ModelNote::for_pause(
            self.reason,
            self.systemic().as_ref(),
            name,
            self.expeditor.pause_lifts_at(),
        )
    }
}

/// A watch on an expeditor's state ([`Expeditor::watch`]).
#[derive(Debug, Clone)]
pub struct Watch<'a> {
    signal: &'a Signal,
    seen: u64,
}

impl Watch<'_> {
    /// Resolves once the state changed since this watch was made or last resolved; at once
    /// when it already has. Changes while no one waits are not lost: they are seen together.
    pub fn changed(&mut self) -> impl Future<Output = ()> + Send + '_ {
        std::future::poll_fn(move |cx| {
            self.signal.poll_changed(self.seen, cx).map(|now| {
                self.seen = now;
            })
        })
    }

    /// Whether the state changed since this watch was made or last resolved.
    pub fn has_changed(&self) -> bool {
        self.signal.version() != self.seen
    }
}

/// A store the fleet shares tool health through (B11). Implemented by the feature `redis`
/// store; implement it for another.
pub trait FleetStore: Send + Sync + 'static {
    /// The store's name, as the reports show it (`redis 127.0.0.1:6379/agents`).
    fn name(&self) -> String;

    /// Called once, when the expeditor is built: the link through which the store applies
    /// what it reads. The link does not keep the expeditor alive.
    fn attach(&self, link: FleetLink);

    /// Called after every command that has something to share, outside the expeditor's
    /// lock, on the thread that made the change. It must not block: queue and return.
    fn share(&self, transitions: &[SharedTransition]);
}

/// What a [`FleetStore`] applies to the expeditor it is attached to (B11). Weak: it does not
/// keep the expeditor alive; every method does nothing (and says so) once it is dropped.
#[derive(Clone)]
pub struct FleetLink {
    inner: std::sync::Weak<Inner>,
}

impl fmt::Debug for FleetLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetLink")
            .field("attached", &self.is_attached())
            .finish()
    }
}

impl FleetLink {
    fn expeditor(&self) -> Option<Expeditor> {
        self.inner.upgrade().map(|inner| Expeditor { inner })
    }

    /// Whether the expeditor still exists: a store's task ends when it is gone.
    pub fn is_attached(&self) -> bool {
        self.inner.strong_count() > 0
    }

    /// The names of every tool, in map order: what the store reads for.
    pub fn tools(&self) -> Vec<String> {
        self.expeditor()
            .map(|e| e.lock().tool_names())
            .unwrap_or_default()
    }

    /// Another worker opened `tool`: OPEN here too, routed around, never charged to this
    /// worker's budget. Returns `false` for a name that is no tool here.
    pub fn open(&self, tool: &str, open: SharedOpen) -> bool {
        self.expeditor().is_some_and(|e| {
            let now = e.now();
            e.command(|engine, changes, step| engine.fleet_open(tool, open, step, now, changes))
        })
    }

    /// `tool`'s shared OPEN state ended in the store: `closed` by another worker's probe
    /// (CLOSED here too), or expired (this worker's own breaker goes on; its probe is
    /// still one per fleet).
    pub fn cleared(&self, tool: &str, closed: bool) -> bool {
        self.expeditor().is_some_and(|e| {
            e.command(|engine, changes, _| engine.fleet_cleared(tool, closed, changes))
        })
    }

    /// The shared circuits whose probe is due here and waits for the store's grant.
    pub fn probes_wanted(&self) -> Vec<String> {
        self.expeditor()
            .map(|e| e.lock().fleet_wanted())
            .unwrap_or_default()
    }

    /// The store grants this worker the probe of `tool` (it holds the fleet's lease).
    /// Returns `false` when the probe is no longer wanted here: give the lease back.
    pub fn grant_probe(&self, tool: &str) -> bool {
        self.expeditor()
            .is_some_and(|e| e.command(|engine, _, _| engine.fleet_grant(tool)))
    }

    /// Another worker detected a systemic failure (R9): every call pauses here too, as the
    /// same event. Returns `false` when one is already in force here.
    pub fn systemic(
        &self,
        pattern: String,
        tools: Vec<String>,
        category: Option<FailureCategory>,
    ) -> bool {
        self.expeditor().is_some_and(|e| {
            let now = e.now();
            e.command(|engine, changes, step| {
                engine.fleet_systemic(pattern, tools, category, step, now, changes)
            })
        })
    }

    /// The store cannot be reached (`why`): this worker decides on its own state alone
    /// until [`reachable`](Self::reachable); an event and the reports say so.
    pub fn unreachable(&self, why: &str) {
        if let Some(e) = self.expeditor() {
            let now = e.now();
            e.command(|engine, changes, _| engine.fleet_unreachable(why.to_owned(), now, changes));
        }
    }

    /// The store answers again: what opened here meanwhile is published again.
    pub fn reachable(&self) {
        if let Some(e) = self.expeditor() {
            e.command(|engine, changes, _| engine.fleet_reachable(changes));
        }
    }
}

impl Expeditor {
    /// The fleet's store and what it says, when one is attached (B11): reachable or not,
    /// and the circuits OPEN here because another worker opened them.
    pub fn fleet_status(&self) -> Option<StoreStatus> {
        self.lock().fleet_status()
    }

    // ----- the one way state changes ----------------------------------------------------

    /// Runs one engine command: under the lock, the command, then [`Mirror::publish`] (the
    /// only writer of the mirror); after the lock is released, the hook: every event to
    /// `tracing` and to each observer, in order.
    fn command<T>(&self, command: impl FnOnce(&mut Engine, &mut Changes, u64) -> T) -> T {
        let mut changes = Changes::default();
        let out = {
            let mut engine = self.lock();
            let out = command(&mut engine, &mut changes, self.step());
            if engine.policy().cool_down().is_some() && changes.dirty != Dirty::None {
                engine.arm_timers(self.now(), &changes);
            }
            self.inner.mirror.publish(&engine, &changes);
            if let Some(step) = changes.step {
                self.inner.step.store(step, Ordering::Release);
            }
            out
        };
        self.notify(&changes);
        if let Some(store) = &self.inner.fleet
            && !changes.shared.is_empty()
        {
            store.share(&changes.shared);
        }
        out
    }

    /// The hook: sees every event after the lock is released, then wakes the watches when
    /// anything changed.
    fn notify(&self, changes: &Changes) {
        for event in &changes.events {
            event.trace();
            for observer in &self.inner.observers {
                observer.on_event(event);
            }
        }
        if changes.changed_anything() {
            self.inner.changed.bump();
        }
    }

    fn lock(&self) -> MutexGuard<'_, Engine> {
        // Nothing panics while holding the lock (observers run after it is released), so a
        // poisoned lock still guards consistent state.
        self.inner
            .engine
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn view<'a>(&'a self, engine: &'a Engine) -> View<'a> {
        View {
            engine,
            mirror: &self.inner.mirror,
        }
    }

    // ----- building -----------------------------------------------------------------------

    /// A handle that does not keep this expeditor alive: [`WeakExpeditor::upgrade`] gives it
    /// back while any `Expeditor` handle on it lives.
    pub fn downgrade(&self) -> WeakExpeditor {
        WeakExpeditor {
            inner: Arc::downgrade(&self.inner),
        }
    }

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
            fleet: None,
            jitter_seed: None,
        }
    }

    /// The policy in force.
    pub fn policy(&self) -> Policy {
        self.lock().policy()
    }

    // ----- time (B13, B15) ----------------------------------------------------------------

    /// Runs this expeditor as a long-running service (B15): where its policy gives no
    /// cool-down or budget window, [`Policy::for_service`]'s apply from now on, so that no
    /// OPEN circuit and no pause outlives its cause by more than its cool-down. The MCP
    /// server, the MCP client and a fleet worker call it; call it yourself for a service of
    /// your own. Idempotent.
    pub fn run_as_service(&self) {
        let now = self.now();
        self.command(|engine, changes, _| engine.run_as_service(now, changes));
    }

    /// Moves what runs on wall time forward to now (B13, B15), and returns when it next has
    /// something to do (`None`: nothing timed is pending). A circuit whose cool-down is over
    /// goes HALF-OPEN on probation (offered again; the next call is its one probe), failures
    /// leave the budget window, a budget pause lifts when the window has room, and a systemic
    /// pause lifts on trial at the end of its cool-down.
    ///
    /// Every slow decision and [`offer`](Self::offer) tick by themselves; a service that
    /// must tell its clients when the offer changes (the MCP server's `list_changed`) calls
    /// it at the instant it returned. Cheap when nothing is due; never reads the clock when
    /// the policy has nothing timed.
    pub fn tick(&self) -> Option<Timestamp> {
        self.command(|engine, changes, step| {
            let now = engine.is_timed().then(|| self.now())?;
            engine.tick(now, step, changes)
        })
    }

    /// Whether health checks of servers and pre-call checks should run now: when nothing
    /// pauses, and in a service during a systemic pause, which a successful check of its cause
    /// lifts (B15). The MCP client's `check` asks it.
    pub fn health_checks_wanted(&self) -> bool {
        self.lock().health_checks_wanted()
    }

    /// When the pause in force lifts by itself, if it does: a budget pause when its window
    /// frees room, a systemic pause at the end of its cool-down at the latest (sooner if a
    /// health check of its cause succeeds). `None` when nothing is paused or only a person
    /// can lift the pause ([`new_cycle`](Self::new_cycle),
    /// [`confirm_recovery`](Self::confirm_recovery)).
    pub fn pause_lifts_at(&self) -> Option<Timestamp> {
        self.lock().pause_lifts_at()
    }

    /// Starts a new cycle for `conversation` (an MCP session, a conversation id), unless the
    /// current cycle already is its own (B13): a service's natural cycles. Returns the cycle.
    pub fn begin_conversation(&self, conversation: &str) -> u64 {
        let now = self.now();
        self.command(|engine, changes, _| engine.begin_conversation(conversation, now, changes))
    }

    // ----- decide and record (R3) ---------------------------------------------------------

    /// Before a call (R3.1): CALL, PROBE, SKIP with its route, or PAUSE.
    ///
    /// The healthy path (a CLOSED tool, no pause) is small enough to inline into the caller;
    /// everything else goes through a separate, non-inlined function.
    #[inline]
    pub fn decide(&self, tool: impl Into<ToolId>) -> Decision<'_> {
        let tool = tool.into();
        if let Some(slot) = self.inner.mirror.get(tool)
            && slot.hot.is_callable()
            && !self.inner.mirror.halted()
        {
            return Decision::Call(Ticket {
                expeditor: self,
                slot,
                tool,
                via: Via::Call,
                done: false,
            });
        }
        self.decide_rest(tool)
    }

    /// Everything but the healthy path: the lock-free rejection of an OPEN tool whose probe is
    /// not due, then the engine under the lock.
    #[inline(never)]
    fn decide_rest(&self, tool: ToolId) -> Decision<'_> {
        let Some(slot) = self.inner.mirror.get(tool) else {
            return self.skip(tool, None, SkipReason::UnknownTool);
        };
        let counted = if self.inner.mirror.halted() {
            None
        } else {
            match slot
                .hot
                .check_open(slot.def.settings, self.step(), || self.now())
            {
                OpenCheck::Skip => return self.skip(tool, Some(slot), SkipReason::Open),
                OpenCheck::Slow(counted) => counted,
            }
        };
        self.decide_slow(tool, slot, counted)
    }

    #[cold]
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

    #[cold]
    fn record_success(&self, tool: ToolId, slot: &Slot, via: Via) {
        slot.hot.stamp_success(self.step(), || self.now());
        self.command(|engine, changes, _| engine.succeed(tool, via, changes));
    }

    #[cold]
    fn record_failure(&self, tool: ToolId, via: Via, failure: Failure) -> Recorded {
        if failure.blame() == crate::model::failure::Blame::Caller {
            return self.record_caller_mistake(tool, via, crate::engine::MistakeKind::Rejected);
        }
        let now = self.now();
        self.command(|engine, changes, step| engine.fail(tool, via, failure, step, now, changes))
    }

    #[cold]
    fn record_caller_mistake(
        &self,
        tool: ToolId,
        via: Via,
        kind: crate::engine::MistakeKind,
    ) -> Recorded {
        if matches!(via, Via::Probe(_))
            && let Some(slot) = self.inner.mirror.get(tool)
        {
            // A probe answered by the caller's mistake is a success: the mirror keeps the
            // last success (see `Engine::caller_mistake`).
            slot.hot.stamp_success(self.step(), || self.now());
        }
        self.command(|engine, changes, _| {
            let now = self.now_if_timed(engine);
            engine
                .caller_mistake(tool, via, kind, now, changes)
                .unwrap_or_else(|| Recorded {
                    state: CircuitState::Closed,
                    consecutive_failures: 0,
                    opened: false,
                    budget: engine.budget().status(),
                    paused: engine.halt().is_some(),
                })
        })
    }

    // ----- steps and cycles ---------------------------------------------------------------

    /// The agent's current step.
    #[inline]
    pub fn step(&self) -> u64 {
        self.inner.step.load(Ordering::Acquire)
    }

    /// Moves to the next step and returns it. Steps count probe intervals in
    /// [`ProbeUnit::Steps`](crate::policy::ProbeUnit::Steps) and date ledger entries. Lock-free.
    #[inline]
    pub fn advance_step(&self) -> u64 {
        // One increment, never a compare-and-swap loop (two threads stepping at once each
        // succeed at the first try). It cannot wrap: the counter starts at 0 or at a restored
        // step of at most `MAX_STEP` (2^62), and is 2^62 increments from the end of `u64`.
        self.inner
            .step
            .fetch_add(1, Ordering::AcqRel)
            .wrapping_add(1)
    }

    /// Starts a new cycle (R7.4): the budget and ledger reset, a budget pause (or a pause for
    /// lack of achievable work) lifts; breaker states are kept, and so is a systemic pause,
    /// which only [`confirm_recovery`](Self::confirm_recovery) lifts. Returns the new cycle's
    /// number.
    pub fn new_cycle(&self) -> u64 {
        let now = self.now();
        self.command(|engine, changes, _| engine.new_cycle(now, changes))
    }

    /// The user confirms that the infrastructure behind a systemic failure is fixed (R9.3):
    /// calls resume, the tools it opened probe again with exponential backoff (R9.5), and
    /// every pre-call check is due again (R10.3). Returns the event, or `None` when no
    /// systemic failure is in force.
    pub fn confirm_recovery(&self) -> Option<SystemicEvent> {
        self.command(|engine, changes, step| engine.confirm_recovery(step, changes))
    }

    /// The wall clock's time now.
    pub fn now(&self) -> Timestamp {
        self.inner.clock.now()
    }

    /// A future that completes when the expeditor's clock reaches `deadline`
    /// ([`WallClock::sleep_until`]): what a call's deadline waits on (B13), so that a test on a
    /// [`ManualClock`](crate::clock::ManualClock) times a call out by moving the clock.
    pub(crate) fn sleep_until(&self, deadline: Timestamp) -> crate::model::clock::Sleep {
        self.inner.clock.sleep_until(deadline)
    }

    // ----- tools ----------------------------------------------------------------------------

    /// The id of the tool named `name`, if known.
    pub fn tool(&self, name: &str) -> Option<ToolId> {
        self.lock().id(name)
    }

    /// The name of a tool.
    pub fn tool_name(&self, tool: impl Into<ToolId>) -> Option<&str> {
        self.spec(tool.into()).map(ToolSpec::name)
    }

    /// A tool's spec, read from the lock-free mirror: O(1), no lock, no clone (a refusal's
    /// text renders its route from it).
    pub(crate) fn spec(&self, tool: ToolId) -> Option<&ToolSpec> {
        self.inner.mirror.get(tool).map(|s| &s.def.spec)
    }

    /// Registers a tool found at run time (R2.4, B6), given as a [`ToolSpec`] or the builder
    /// that makes one, checked like a map entry (R1.4): its alternatives must name known
    /// tools. It starts CLOSED. Registering a name already known returns its id unchanged when
    /// the spec is the same.
    ///
    /// # Errors
    /// [`MapErrors`] with every problem of the spec, including a different spec under a
    /// known name.
    pub fn discover(&self, spec: impl Into<ToolSpec>) -> Result<ToolId, MapErrors> {
        let spec = spec.into();
        self.command(|engine, changes, _| engine.discover(spec, changes))
    }

    /// Every registered tool, in registration order.
    pub fn tools(&self) -> impl Iterator<Item = ToolId> + '_ {
        let n = u32::try_from(self.lock().len()).unwrap_or(u32::MAX);
        (0..n).map(ToolId::from_index)
    }

    /// The capability map as it stands: the declared tools and those discovered since.
    pub fn capability_map(&self) -> CapabilityMap {
        self.tools()
            .filter_map(|id| self.inner.mirror.get(id))
            .fold(CapabilityMap::new(), |map, slot| {
                map.tool(slot.def.spec.clone())
            })
    }

    /// Tools with no alternative (R1.3).
    pub fn is_critical(&self, tool: impl Into<ToolId>) -> Option<bool> {
        self.inner
            .mirror
            .get(tool.into())
            .map(|s| s.def.spec.is_critical())
    }

    /// Whether `tool` is declared as caching (R6.2).
    pub fn is_caching(&self, tool: impl Into<ToolId>) -> bool {
        self.inner
            .mirror
            .get(tool.into())
            .is_some_and(|s| s.def.spec.is_caching())
    }

    // ----- state and reports ----------------------------------------------------------------

    /// The state of one tool, lock-free.
    pub fn state(&self, tool: impl Into<ToolId>) -> Option<CircuitState> {
        self.inner.mirror.get(tool.into()).map(|s| s.hot.state())
    }

    /// A copy of one tool's breaker (R2.1).
    pub fn breaker(&self, tool: impl Into<ToolId>) -> Option<BreakerRecord> {
        let engine = self.lock();
        self.view(&engine).record(tool.into())
    }

    /// The failure budget of this cycle, with its ledger (R7).
    pub fn budget(&self) -> Budget {
        self.lock().budget().clone()
    }

    /// Whether every call is paused, and why.
    pub fn paused(&self) -> Option<PauseReason> {
        self.lock().halt()
    }

    /// The systemic failure in force, or the last one.
    pub fn systemic_event(&self) -> Option<SystemicEvent> {
        self.lock().systemic_event().cloned()
    }

    /// The state table (R2.3).
    pub fn state_table(&self) -> StateTable {
        let engine = self.lock();
        StateTable::build(self.view(&engine))
    }

    /// The pause report (R7.3) for `task`: completed and incomplete work from its progress,
    /// the health of the tools it involves, the budget, and recommendations.
    pub fn pause_report(&self, task: &Task) -> PauseReport {
        let engine = self.lock();
        PauseReport::build(self.view(&engine), task)
    }

    /// The tools to offer a language model now (R10): every tool but those OPEN or
    /// UNAVAILABLE, which are listed with the reason; while paused, none. One consistent
    /// view, read under one lock.
    pub fn offer(&self) -> ToolOffer {
        self.tick();
        let engine = self.lock();
        ToolOffer::build(self.view(&engine))
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

    /// A watch on this expeditor's state: [`Watch::changed`] resolves once a command has
    /// changed something — a transition, a failure recorded, a precheck, a pause, a cycle —
    /// since the watch was made or last resolved. For a view that follows the run (the tools
    /// offered to a model, a live state table) without polling: look again when it resolves.
    ///
    /// Needs no async runtime: the future is woken by the thread that made the change. The
    /// healthy path (a success on a CLOSED tool) and `advance_step` change nothing a watch
    /// sees; they never touch it.
    pub fn watch(&self) -> Watch<'_> {
        Watch {
            signal: &self.inner.changed,
            seen: self.inner.changed.version(),
        }
    }

    /// Counts a model's own mistake (B8, B14): a name that is no tool, arguments that do not
    /// parse, a call a tool rejected as the caller's. It is not charged to any tool's breaker
    /// or to the budget; the state table and the pause report show the count on a line of
    /// their own, and the mistake that reaches the policy's
    /// [`mistake_limit`](crate::Policy::mistake_limit) pauses every call until a new cycle.
    /// The JSON dispatcher calls this; call it from your own loop when the model errs before
    /// any tool is decided (a mistake a tool reported through its ticket —
    /// [`Ticket::mistake`] — is counted already).
    pub fn record_mistake(&self, mistake: &crate::report::ModelMistake) {
        use crate::engine::MistakeKind;
        use crate::report::ModelMistake;
        let kind = match mistake {
            ModelMistake::UnknownTool { .. } => MistakeKind::UnknownTool,
            ModelMistake::BadArguments { .. } => MistakeKind::BadArguments,
            ModelMistake::Rejected { .. } => MistakeKind::Rejected,
        };
        self.command(|engine, changes, _| {
            let now = self.now_if_timed(engine);
            engine.record_mistake(kind, now, changes);
        });
    }

    /// The clock, read only when the policy runs on time (else a time nobody reads).
    fn now_if_timed(&self, engine: &Engine) -> Timestamp {
        if engine.is_timed() {
            self.now()
        } else {
            Timestamp::EPOCH
        }
    }

    // ----- scope (R5) -----------------------------------------------------------------------

    /// The scope now (R5.1, R5.2): which sub-tasks can be done with the tools that work —
    /// every needed tool CLOSED or with a usable alternative — and which are deferred, why,
    /// and what would unblock them. A query: it changes nothing (see
    /// [`reduce_scope`](Self::reduce_scope)).
    pub fn scope(&self, task: &Task) -> ScopeReport {
        self.lock().scope_report(task)
    }

    /// Acts on the scope (R5.4): when every remaining sub-task is deferred, every call
    /// pauses (until a later reduction finds work, or a new cycle); when work is achievable
    /// again, that pause lifts. Returns the report it acted on, under the same lock.
    pub fn reduce_scope(&self, task: &Task) -> ScopeReport {
        self.command(|engine, changes, _| engine.reduce_scope(task, changes))
    }

    /// Starts work on sub-task `number`: the scope is reduced first (as
    /// [`reduce_scope`](Self::reduce_scope)); a deferred sub-task is refused, and then its
    /// tools are refused too (SKIP) until another sub-task begins or
    /// [`end_subtask`](Self::end_subtask) (R5.3). All under one lock.
    ///
    /// # Errors
    /// [`ScopeError::Deferred`] with why and what would unblock it, or
    /// [`ScopeError::NoSuchSubTask`].
    pub fn begin_subtask(&self, task: &Task, number: usize) -> Result<(), ScopeError> {
        self.command(|engine, changes, _| engine.begin_subtask(task, number, changes))
    }

    /// Ends work on the current sub-task: a deferred one no longer holds its tools back.
    pub fn end_subtask(&self) {
        self.command(|engine, changes, _| engine.end_subtask(changes));
    }

    /// The deferred sub-task being worked on, if any.
    pub fn deferred_subtask(&self) -> Option<usize> {
        self.lock().deferred_subtask()
    }

    // ----- pre-call checks (R10) --------------------------------------------------------------

    /// Whether `tool` should be checked before its next call: never checked yet, or checked
    /// before the last systemic event (R10.3). The executor runs the check and reports it
    /// with [`record_precheck`](Self::record_precheck); the expeditor calls nothing.
    pub fn precheck_due(&self, tool: impl Into<ToolId>) -> bool {
        self.lock().precheck_due(tool.into())
    }

    /// Whether the executor should run `tool`'s check now: it is due and no pause is in
    /// force (a check is an outside call too; while paused, nothing is called).
    pub fn should_precheck(&self, tool: impl Into<ToolId>) -> bool {
        let engine = self.lock();
        engine.halt().is_none() && engine.precheck_due(tool.into())
    }

    /// Records the result of a pre-call check of `tool` (R10.1), cached until the next
    /// systemic event. Returns `false` for an unknown tool.
    pub fn record_precheck(&self, tool: impl Into<ToolId>, availability: Availability) -> bool {
        let tool = tool.into();
        self.command(|engine, changes, step| {
            engine.record_precheck(tool, availability, step, changes)
        })
    }

    /// Records one health check of `server` (its MCP `ping`, say) for every tool on it
    /// (R10.1, B10): one check per server, not per tool. Returns `false` when no tool is on
    /// `server`.
    pub fn record_server_check(&self, server: &str, availability: Availability) -> bool {
        self.command(|engine, changes, step| {
            let tools = engine.server_tools(server);
            let Some((&last, rest)) = tools.split_last() else {
                return false;
            };
            for &tool in rest {
                engine.record_precheck(tool, availability.clone(), step, changes);
            }
            engine.record_precheck(last, availability, step, changes)
        })
    }

    /// Whether `server` is down and due for its probe (B10): the policy's interval has passed
    /// since its outage (in steps, or in attempts refused), no probe of it is in flight and no
    /// pause is in force. A model-driven agent never calls a tool it is not offered, so an
    /// MCP client probes a down server by its health check (reconnect, `ping`) when this
    /// says so, and records the result with [`record_server_probe`](Self::record_server_probe).
    pub fn server_probe_due(&self, server: &str) -> bool {
        self.server_probe_due_within(server, None)
    }

    /// As [`server_probe_due`](Self::server_probe_due), and also due once `every` of wall
    /// time has passed since the server went down or its last probe failed — for a client
    /// whose callers make no attempts and advance no steps (a proxy serving only the tools
    /// it offers): a down server is then looked at again at least that often. Never during
    /// a pause (R9.3).
    pub fn server_probe_due_within(
        &self,
        server: &str,
        every: impl Into<Option<Duration>>,
    ) -> bool {
        let step = self.step();
        let now = self.now();
        let mut engine = self.lock();
        engine.server_probe_due(
            server,
            step,
            |tool| {
                self.inner
                    .mirror
                    .get(tool)
                    .map_or(0, |slot| slot.hot.attempts())
            },
            now,
            every.into(),
        )
    }

    /// Whether `server` is down: a call found it unreachable and no probe has reached it
    /// since (B10).
    pub fn server_down(&self, server: &str) -> bool {
        self.lock().is_server_down(server)
    }

    /// Records a probe of a down `server` by its health check (B10): reached, every tool its
    /// outage took down is CLOSED at once (one `ServerUp` event); not reached, they wait
    /// another interval, and nothing is charged (a health check is no tool call). Returns
    /// `false` when `server` is not down.
    pub fn record_server_probe(&self, server: &str, reached: bool) -> bool {
        let now = self.now();
        self.command(|engine, changes, step| {
            engine.record_server_probe(server, reached, step, now, changes)
        })
    }

    /// The servers the tools live on, with the outage of each one down (B10), in the order
    /// their first tool was registered; empty when no tool is on a server.
    pub fn servers(&self) -> Vec<ServerLine> {
        self.lock().servers()
    }

    /// What `tool` counts as now: its last check, UNAVAILABLE when not allowed, AVAILABLE
    /// when never checked. `None` for an unknown tool.
    pub fn availability(&self, tool: impl Into<ToolId>) -> Option<Availability> {
        self.lock().availability(tool.into())
    }

    /// Only these tools may be called (the source document's `allowed-tools`): every other tool, and any
    /// discovered later, is UNAVAILABLE without being checked or called (R10.1).
    pub fn allow_only<I, S>(&self, tools: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let allowed: Vec<String> = tools.into_iter().map(|s| s.as_ref().to_owned()).collect();
        self.command(|engine, changes, _| engine.allow_only(allowed, changes));
    }

    /// Forgets every cached check: each tool is checked again before its next call.
    pub fn invalidate_prechecks(&self) {
        self.command(|engine, changes, _| engine.invalidate_prechecks(changes));
    }

    // ----- freshness (R6) -----------------------------------------------------------------------

    /// Labels one result of `tool` (R6.2) and remembers it as the baseline for the next:
    /// CACHED RESULT when the output equals the previous one for the same arguments, STALE
    /// DATA when the data is older than the current cycle or was contradicted, UNVERIFIED for
    /// a tool declared as caching, FRESHNESS UNKNOWN for data with no baseline at all, and no
    /// label for fresh data (R6.3).
    pub fn observe(&self, tool: impl Into<ToolId>, observation: Observation) -> Freshness {
        let tool = tool.into();
        let now = self.now();
        self.lock().observe(tool, observation, now)
    }

    /// The user reports that the last output of `tool` for these arguments (their digest)
    /// contradicts a more recent observation: that output is STALE DATA from the time it was
    /// retrieved, and so is the same output seen again. `None` when it was never seen.
    pub fn contradict(&self, tool: impl Into<ToolId>, args: u64) -> Option<Freshness> {
        self.lock().contradict(tool.into(), args)
    }

    /// Declares how `tool` behaves with respect to freshness (caching, what may change
    /// under it). Returns `false` for an unknown tool.
    pub fn set_freshness_profile(
        &self,
        tool: impl Into<ToolId>,
        profile: FreshnessProfile,
    ) -> bool {
        self.lock().set_freshness_profile(tool.into(), profile)
    }

    /// When the current cycle began: data older than this is STALE (R6.2).
    pub fn cycle_started_at(&self) -> Timestamp {
        self.lock().cycle_started_at()
    }

    // ----- snapshots (R3.7, B3) ---------------------------------------------------------------

    /// The whole state as a serializable value (R3.7). Probes in flight are not saved: a probe
    /// belongs to the process that issued it, so a restored HALF-OPEN tool has its slot free.
    pub fn snapshot(&self) -> Snapshot {
        let engine = self.lock();
        let view = self.view(&engine);
        engine.snapshot(self.step(), |id| view.record(id))
    }

    /// Restores a saved state (R3.7): every breaker, the budget and ledger, the step. Tools in
    /// the snapshot that this expeditor does not know are registered with their saved spec;
    /// known tools keep the spec they have now; known tools absent from the snapshot start
    /// fresh (CLOSED). If this expeditor's budget differs from the saved one, the ledger is
    /// charged again against the current budget.
    ///
    /// # Errors
    /// A [`RestoreError`] when any part of the snapshot is invalid; then nothing changes.
    pub fn restore(&self, snapshot: &Snapshot) -> Result<(), RestoreError> {
        self.command(|engine, changes, _| engine.restore(snapshot, changes))
            .map(|_| ())
    }

    /// Saves [`snapshot`](Self::snapshot) to `path` as JSON, durably: a new file is written and
    /// synced, then renamed over the old one, so a crash mid-save keeps the previous state.
    ///
    /// # Errors
    /// [`SnapshotFileError::Io`](crate::snapshot::SnapshotFileError::Io) when the file cannot be
    /// written.
    #[cfg(feature = "json")]
    pub fn save(
        &self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<(), crate::model::snapshot::SnapshotFileError> {
        self.snapshot().save(path)
    }

    /// Restores the snapshot saved at `path` (see [`restore`](Self::restore)); nothing changes
    /// unless the whole file is a valid snapshot.
    ///
    /// # Errors
    /// A [`SnapshotFileError`](crate::snapshot::SnapshotFileError): the file could not be read, is not
    /// a snapshot, or does not restore.
    #[cfg(feature = "json")]
    pub fn restore_from(
        &self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<(), crate::model::snapshot::SnapshotFileError> {
        let snapshot = Snapshot::load(path)?;
        self.restore(&snapshot)
            .map_err(crate::model::snapshot::SnapshotFileError::Restore)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_tool(policy: Policy) -> Expeditor {
        let map = CapabilityMap::new().tool(
            ToolSpec::new("Grep")
                .provides("content search")
                .fallback("ask the user"),
        );
        Expeditor::builder(map)
            .policy(policy)
            .build()
            .expect("a valid map")
    }

    /// Runs `work` on another thread while this one holds the engine's lock; returns what it
    /// returned, or `None` when it did not finish within 20 s (it waited for the lock).
    fn finishes_while_locked<T: Send + 'static>(
        expeditor: &Arc<Expeditor>,
        work: impl FnOnce(&Expeditor) -> T + Send + 'static,
    ) -> Option<T> {
        let held = expeditor.lock();
        let (done, finished) = std::sync::mpsc::channel();
        let worker = {
            let expeditor = Arc::clone(expeditor);
            std::thread::spawn(move || {
                let _ = done.send(work(&expeditor));
            })
        };
        let out = finished
            .recv_timeout(std::time::Duration::from_secs(20))
            .ok();
        drop(held);
        worker.join().expect("the worker ran");
        out
    }

    /// B5: the healthy path takes no lock, with a step before every call too. The
    /// engine's lock is held for the whole run; a healthy path that took it would not finish.
    #[cfg(not(shuttle))]
    #[test]
    fn b5_the_healthy_path_takes_no_lock_also_with_a_step_per_call() {
        let expeditor = Arc::new(one_tool(Policy::default()));
        let grep = expeditor.tool("Grep").expect("declared");
        let steps = finishes_while_locked(&expeditor, move |expeditor| {
            for _ in 0..10_000 {
                expeditor.advance_step();
                match expeditor.decide(grep) {
                    Decision::Call(ticket) => ticket.success(),
                    other => panic!("Grep is CLOSED, got {}", other.kind()),
                }
                let _ = expeditor.state(grep);
            }
            expeditor.step()
        });
        assert_eq!(
            steps,
            Some(10_000),
            "the healthy path waited for the engine's lock"
        );
        let mark = expeditor
            .breaker(grep)
            .and_then(|b| b.last_success().copied());
        assert_eq!(mark.map(|m| m.step), Some(10_000));
    }

    /// The lock-free rejection path, likewise: an OPEN tool whose probe is not due is skipped,
    /// with its route, while the engine's lock is held elsewhere.
    #[cfg(not(shuttle))]
    #[test]
    fn b5_the_rejection_path_takes_no_lock() {
        let policy = Policy::builder()
            .probe_unit(crate::model::policy::ProbeUnit::Steps)
            .build()
            .expect("a valid policy");
        let expeditor = Arc::new(one_tool(policy));
        let grep = expeditor.tool("Grep").expect("declared");
        for _ in 0..3 {
            if let Decision::Call(ticket) = expeditor.decide(grep) {
                let _ = ticket.failure("boom");
            }
        }
        assert_eq!(expeditor.state(grep), Some(CircuitState::Open));
        let skips = finishes_while_locked(&expeditor, move |expeditor| {
            (0..10_000)
                .filter(|_| match expeditor.decide(grep) {
                    Decision::Skip(skip) => matches!(skip.route(), Route::Fallback(_)),
                    _ => false,
                })
                .count()
        });
        assert_eq!(
            skips,
            Some(10_000),
            "the rejection path waited for the engine's lock"
        );
    }

    #[test]
    fn expeditor_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<Expeditor>();
        check::<Ticket<'static>>();
    }
}
