//! The engine: the whole state machine of the decision layer as one plain value. Breakers,
//! the failure budget and its ledger, cascade detection, pre-call checks, scope deferrals and
//! freshness, with `&mut self` commands that return a verdict and write down what changed
//! ([`Changes`]): events for the hook, and which tools' lock-free mirror must be published
//! again.
//!
//! There is no lock and no atomic in here. The expeditor owns the one engine behind one
//! mutex; its `publish` is the only writer of the mirror. Time comes in as arguments (the
//! agent's `step`, the wall clock's `now`), so every command is deterministic and the
//! model-based test drives the engine directly.
//!
//! Two cells of a tool's state are kept outside the engine, in the mirror, because the
//! lock-free paths write them: the attempts counted on an OPEN tool by the rejection path
//! (passed in to [`Engine::decide`], reset through [`Changes`]) and the tool's last success
//! (written by `Ticket::success`). Views of a record ([`crate::report::View`]) fill both in.
//!
//! This file holds the engine's state and its core commands, decide and record; each other
//! concern has a file of its own:
//!
//! | file | holds |
//! |---|---|
//! | `verdict` | pause and skip reasons, the verdict before a call, what a failure did |
//! | `changes` | what a command changed, for the mirror and the hook |
//! | `view` | read-only queries |
//! | `tools` | registration, at build time and at run time |
//! | `mistakes` | the model's own mistakes |
//! | `ledger` | the budget's pause and new cycles |
//! | `probes` | the probe interval, backed off after a systemic event |
//! | `systemic` | systemic events and their recovery |
//! | `servers` | servers as groups of tools: outages and their probes |
//! | `fleet` | tool health shared with a fleet of workers |
//! | `checks` | pre-call checks and the allowed-tools list |
//! | `freshness` | the freshness of results |
//! | `scope` | scope reports and deferred sub-tasks |
//! | `snapshot` | snapshots and restores |
//! | `time` | what runs on wall time |

mod changes;
mod checks;
mod fleet;
mod freshness;
mod ledger;
mod mistakes;
mod probes;
mod scope;
mod servers;
mod snapshot;
mod systemic;
mod time;
mod tools;
mod verdict;
mod view;

use std::sync::Arc;

use crate::clock::Timestamp;
use crate::event::Event;
use crate::failure::{Failure, FailureCategory};
use crate::freshness::FreshnessTracker;
use crate::model::breaker::{BreakerRecord, CircuitState, Transition, Verdict as Breaker, Via};
use crate::model::budget::Budget;
use crate::model::cascade::{Cascade, may_correlate};
use crate::model::group::Groups;
use crate::model::id::ToolId;
use crate::model::precheck::Precheck;
use crate::model::registry::ToolDef;
use crate::policy::Policy;

pub(crate) use changes::{Changes, Dirty};
pub use mistakes::MistakeCount;
pub(crate) use mistakes::MistakeKind;
pub(crate) use tools::MAX_TOOLS;
pub(crate) use verdict::Verdict;
pub use verdict::{PauseReason, Recorded, SkipReason};

use fleet::Fleet;
use scope::DeferredWork;
use time::Timers;

/// The state machine. See the module documentation.
#[derive(Debug)]
pub(crate) struct Engine {
    policy: Policy,
    defs: Vec<Arc<ToolDef>>,
    /// By name: every tool's id, ordered by its name (the first registered of a name
    /// only). Four bytes a tool, against some fifty for a hash map of names; a lookup by name
    /// is a binary search over the definitions' own names.
    names: Vec<ToolId>,
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

impl Engine {
    /// An engine with no tools, its first cycle starting at `now`.
    pub(crate) fn new(policy: Policy, now: Timestamp) -> Self {
        Engine {
            policy,
            defs: Vec::new(),
            names: Vec::new(),
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
        // it to (B11). While the store is unreachable, the probe is this worker's own. By
        // time, every worker waits for the due time the fleet shares (B16); a count is each
        // worker's own.
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

    /// Records a failure that changes nothing but its tool's record and the budget (R3.3): a
    /// CALL on a CLOSED tool that stays below its threshold, with no server outage, no
    /// systemic event in force and budget left after it. What it writes is what
    /// [`fail`](Self::fail) writes for such a failure (the run, the last failure, the ledger
    /// line, pending when it may correlate); it makes no event and touches only that tool's
    /// mirror, so the expeditor needs no [`Changes`] for it. Any other failure is given back
    /// for `fail`, the engine unchanged (but for charged failures that left a rolling budget
    /// window, which `fail` would expire first all the same).
    #[allow(clippy::result_large_err)] // the failure given back is the caller's own, moved
    #[inline]
    pub(crate) fn fail_quietly(
        &mut self,
        tool: ToolId,
        failure: Failure,
        call_id: Option<String>,
        step: u64,
        now: Timestamp,
    ) -> Result<Recorded, (Failure, Option<String>)> {
        let i = tool.index() as usize;
        let (Some(record), Some(def)) = (self.records.get(i), self.defs.get(i)) else {
            return Err((failure, call_id));
        };
        let threshold = self.prechecks[i].threshold(def.settings.threshold);
        if record.state != CircuitState::Closed
            || record.consecutive_failures.saturating_add(1) >= threshold
            || failure.is_server_unreachable()
            || self.cascade.active()
            || self.groups.outage_of(tool).is_some()
        {
            return Err((failure, call_id));
        }
        if let Some(window) = self.policy.budget_window() {
            self.budget.expire(now, window);
        }
        let pending = self.may_correlate(tool, failure.category(), step);
        // The charge that spends the budget's last failure pauses: an event, `fail`'s.
        let status = self.budget.status();
        if !pending && status.consumed.saturating_add(1) == status.limit {
            return Err((failure, call_id));
        }
        let settings = crate::model::breaker::Settings {
            threshold,
            ..def.settings
        };
        self.budget
            .charge(def.name(), failure.clone(), step, now, pending, call_id);
        let transition = self.records[i].fail(Via::Call, settings, now, step, failure);
        debug_assert_eq!(transition, None, "a quiet failure changed its circuit");
        Ok(self.recorded(i))
    }

    /// Whether a failure of `category` by `tool` at `step` may belong to a systemic event
    /// (R9.2), when the policy detects them: such a failure is held uncharged (R9.4).
    #[inline]
    fn may_correlate(&self, tool: ToolId, category: FailureCategory, step: u64) -> bool {
        self.policy.cascade_detection()
            && may_correlate(
                tool,
                category,
                &self.records,
                &self.groups,
                step,
                self.policy.cascade_window(),
            )
    }

    /// Records a failure (R3.3): consecutive failures + 1, last failure kept, budget charged,
    /// threshold checked, cascades detected (R9). The ledger line names the call `call_id`,
    /// when its caller gave the model's id for it (B18).
    #[allow(clippy::too_many_arguments)] // the command's facts, each its own, as for `succeed`
    pub(crate) fn fail(
        &mut self,
        tool: ToolId,
        via: Via,
        failure: Failure,
        call_id: Option<String>,
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
        // The definition is read in place (no `Arc` clone: two atomic operations a failure).
        let during_event = self.cascade.active();
        let category = failure.category();
        if self.groups.outage_of(tool).is_some() {
            let live_probe = matches!(via, Via::Probe(epoch)
                if self.records[i].state == CircuitState::HalfOpen
                    && self.records[i].probe
                    && self.records[i].epoch == epoch);
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
            return self.server_down(tool, &failure, call_id, step, now, changes);
        }
        // A failure matching an OPEN circuit's category may be part of a systemic event:
        // it is held uncharged until that is known (R9.4). Only a CLOSED tool's failure can
        // open a circuit that starts an event; a failed probe or a late call on an OPEN tool
        // is charged as usual (R3.2).
        let pending = during_event
            || (self.records[i].state == CircuitState::Closed
                && self.may_correlate(tool, category, step));
        if let Some(window) = self.policy.budget_window() {
            // Failures that left the window no longer count against this one (B13).
            self.budget.expire(now, window);
        }
        let def = &self.defs[i];
        let exhausted_now =
            self.budget
                .charge(def.name(), failure.clone(), step, now, pending, call_id);
        if during_event {
            self.cascade.join(tool, def.spec.name());
            self.budget.absorb_last();
        }
        let settings = crate::model::breaker::Settings {
            threshold: self.prechecks[i].threshold(def.settings.threshold),
            ..def.settings
        };
        let record = &mut self.records[i];
        let transition = record.fail(via, settings, now, step, failure);
        changes.touch(tool);
        let opened = matches!(transition, Some(Transition::Opened | Transition::Reopened));
        if opened {
            changes
                .rare()
                .attempts
                .push((tool, record.attempts_since_open));
        }
        if let Some(t) = transition {
            changes.events.push(transition_event(def, record, t));
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
