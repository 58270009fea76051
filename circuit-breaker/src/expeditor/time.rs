//! The two clocks (B13, B15): the agent's steps and cycles, and wall time — cool-downs,
//! budget windows, pauses that lift by themselves, a long-running service's conversations.

use super::Expeditor;
use super::sync::Ordering;
use crate::engine::Engine;
use crate::model::cascade::SystemicEvent;
use crate::model::clock::Timestamp;

impl Expeditor {
    /// Runs this expeditor as a long-running service (B15): where its policy gives no
    /// cool-down or budget window, [`Policy::for_service`]'s apply from now on, so that no
    /// OPEN circuit and no pause outlives its cause by more than its cool-down. The MCP
    /// server, the MCP client and a fleet worker call it; call it yourself for a service of
    /// your own. Idempotent.
    ///
    /// [`Policy::for_service`]: crate::Policy::for_service
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

    /// The clock, read only when the policy runs on time (else a time nobody reads).
    pub(super) fn now_if_timed(&self, engine: &Engine) -> Timestamp {
        if engine.is_timed() {
            self.now()
        } else {
            Timestamp::EPOCH
        }
    }
}
