//! What the engine runs on wall time (B13, B15): cool-downs, backed off and jittered; the
//! budget's rolling window; a systemic pause lifted on trial; the model's mistakes forgiven
//! after a window; conversations as cycles. Time comes in as `now`; nothing here reads a
//! clock.

use super::{Changes, Dirty, Engine, MistakeCount, PauseReason, transition_event};
use crate::clock::Timestamp;
use crate::event::Event;
use crate::model::breaker::{BreakerRecord, CircuitState};
use crate::model::id::ToolId;

/// What runs on wall time (B13, B15): the jitter's draws, when anything timed is next due,
/// and a systemic pause's cool-down.
#[derive(Debug, Default)]
pub(super) struct Timers {
    /// Seeds the jitter: differs between workers, so that a fleet does not probe in step.
    pub(super) seed: u64,
    /// Draws taken so far: each cool-down gets its own.
    pub(super) draws: u64,
    /// The earliest instant at which [`Engine::tick`] has something to do; `None` when
    /// nothing timed is pending.
    pub(super) next: Option<Timestamp>,
    /// When a systemic pause lifts on trial if no health check lifted it before.
    pub(super) systemic_due: Option<Timestamp>,
    /// Systemic pauses lifted on trial since a recovery was last confirmed: each doubles the
    /// next one's cool-down.
    pub(super) trials: u32,
    /// The conversation (or session) the current cycle belongs to.
    pub(super) conversation: Option<String>,
    /// When a pause for the model's mistakes lifts, in a service.
    pub(super) mistakes_lift: Option<Timestamp>,
}

/// One draw of the jitter: splitmix64, enough to spread a fleet's probes.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

impl Engine {
    /// Seeds the jitter of cool-downs.
    pub(crate) fn seed_jitter(&mut self, seed: u64) {
        self.timers.seed = seed;
    }

    /// Whether anything in the policy runs on wall time: then commands read the clock.
    pub(crate) fn is_timed(&self) -> bool {
        self.policy.is_timed()
    }

    /// Runs as a long-running service from now on: the policy's missing cool-down and budget
    /// window are filled in ([`Policy::for_service`]). Circuits OPEN already get their
    /// cool-down from `now`.
    pub(crate) fn run_as_service(&mut self, now: Timestamp, changes: &mut Changes) {
        let policy = self.policy.for_service();
        if policy == self.policy {
            return;
        }
        self.policy = policy;
        if matches!(self.halt, Some(PauseReason::Systemic { .. })) && self.cascade.active() {
            self.arm_systemic(now);
        }
        changes.touch_all();
        self.arm_timers(now, changes);
    }

    /// Gives every OPEN circuit the command touched that has no due time yet its cool-down
    /// from `now` (after each failed probe, doubled; a retry-after hint instead, bounded),
    /// jittered. Run after every command that may have opened one.
    pub(crate) fn arm_timers(&mut self, now: Timestamp, changes: &Changes) {
        if self.policy.cool_down().is_none() {
            return;
        }
        match changes.dirty {
            Dirty::None => {}
            Dirty::One(tool) => self.arm(tool.index() as usize, now),
            Dirty::All => {
                for i in 0..self.records.len() {
                    self.arm(i, now);
                }
            }
        }
    }

    fn arm(&mut self, i: usize, now: Timestamp) {
        let Some(record) = self.records.get_mut(i) else {
            return;
        };
        if record.state != CircuitState::Open || record.probe_due_at().is_some() {
            return;
        }
        let hint = record
            .last_failure()
            .and_then(|mark| mark.failure.retry_after());
        let Some(delay) = self.policy.cool_down_after(record.failed_probes(), hint) else {
            return;
        };
        // A hint is the tool's own word: never probed before it. A cool-down of ours is
        // shortened at random, never lengthened, so that it keeps what it promises.
        let delay = if hint.is_some() {
            delay
        } else {
            self.timers.draws = self.timers.draws.wrapping_add(1);
            let draw = splitmix(self.timers.seed ^ self.timers.draws.rotate_left(17) ^ i as u64);
            crate::policy::jittered(delay, self.policy.jitter(), draw)
        };
        let due = now.plus(delay);
        record.set_due(Some(due));
        self.timers.next = Some(self.timers.next.map_or(due, |n| n.min(due)));
    }

    /// A systemic pause's cool-down: it lifts on trial then, unless a health check of its
    /// cause lifts it before (B15).
    pub(super) fn arm_systemic(&mut self, now: Timestamp) {
        let Some(delay) = self.policy.cool_down_after(self.timers.trials, None) else {
            return;
        };
        let due = now.plus(delay);
        self.timers.systemic_due = Some(due);
        self.timers.next = Some(self.timers.next.map_or(due, |n| n.min(due)));
    }

    /// Moves what runs on wall time forward to `now` (B13, B15), and returns when it next has
    /// something to do:
    /// - charged failures older than the budget window stop counting, and a budget pause
    ///   lifts once the window has room;
    /// - a systemic pause past its cool-down lifts on trial: its tools probe with backoff;
    /// - an OPEN circuit whose cool-down is over goes HALF-OPEN on probation, offered again,
    ///   its probe the next call (unless its probe is the fleet's to grant, or another tool
    ///   of its server's outage is on probation).
    ///
    /// Cheap when nothing is due: one comparison.
    pub(crate) fn tick(
        &mut self,
        now: Timestamp,
        step: u64,
        changes: &mut Changes,
    ) -> Option<Timestamp> {
        if !self.policy.is_timed() || self.timers.next.is_none_or(|next| now < next) {
            return self.timers.next;
        }
        if let Some(window) = self.policy.budget_window()
            && self.budget.expire(now, window)
        {
            changes.touch_all();
            let status = self.budget.status();
            if matches!(self.halt, Some(PauseReason::BudgetExhausted { .. }))
                && !status.is_exhausted()
            {
                self.halt = None;
                changes.events.push(Event::BudgetRenewed {
                    consumed: status.consumed,
                    limit: status.limit,
                });
            }
        }
        if matches!(self.halt, Some(PauseReason::Systemic { .. }))
            && self.timers.systemic_due.is_some_and(|due| now >= due)
        {
            self.timers.trials = self.timers.trials.saturating_add(1);
            let cause = self
                .cascade
                .event
                .as_ref()
                .map(|e| e.cause().to_owned())
                .unwrap_or_default();
            self.recover(step, changes);
            changes.events.push(Event::RecoveryOnTrial { cause });
        }
        if matches!(self.halt, Some(PauseReason::MistakeLimit { .. }))
            && self.timers.mistakes_lift.is_some_and(|at| now >= at)
        {
            self.timers.mistakes_lift = None;
            self.halt = None;
            self.mistakes = MistakeCount::default();
            changes.touch_all();
            changes.events.push(Event::MistakesForgiven {
                limit: self.policy.mistake_limit(),
            });
        }
        if self.halt.is_none() {
            for i in 0..self.records.len() {
                self.probation(i, now, changes);
            }
        }
        self.timers.next = self.next_due(now);
        self.timers.next
    }

    /// Tool `i` on probation if its cool-down is over (see [`tick`](Self::tick)).
    fn probation(&mut self, i: usize, now: Timestamp, changes: &mut Changes) {
        let record = &self.records[i];
        if record.state != CircuitState::Open || record.probe_due_at().is_none_or(|d| now < d) {
            return;
        }
        let tool = ToolId::from_index(u32::try_from(i).unwrap_or(u32::MAX));
        if let Some(fleet) = &mut self.fleet
            && fleet.unreachable.is_none()
            && let Some(slot) = fleet.slots.get_mut(i)
            && slot.shared
            && !slot.granted
        {
            // The fleet's probe: asked for, and offered again once the store grants it.
            slot.wanted = true;
            return;
        }
        if let Some(outage) = self.groups.outage_of(tool) {
            let others_on_probation = outage.tools.iter().any(|&t| {
                t != tool
                    && self
                        .records
                        .get(t.index() as usize)
                        .is_some_and(|r| r.state == CircuitState::HalfOpen)
            });
            if others_on_probation || outage.probing.is_some() {
                return;
            }
        }
        let record = &mut self.records[i];
        if let Some(t) = record.put_on_probation() {
            changes.touch(tool);
            changes
                .events
                .push(transition_event(&self.defs[i], record, t));
        }
    }

    /// The earliest instant anything timed is due after `now`. What is due already but must
    /// wait (a probe the fleet has not granted, a pause in force) is looked at again a second
    /// from now, not in a busy loop.
    fn next_due(&self, now: Timestamp) -> Option<Timestamp> {
        let probes = self
            .records
            .iter()
            .filter(|r| r.state == CircuitState::Open)
            .filter_map(BreakerRecord::probe_due_at)
            .min();
        let budget = match (self.halt, self.policy.budget_window()) {
            (Some(PauseReason::BudgetExhausted { .. }), Some(window)) => {
                self.budget.next_expiry(window)
            }
            _ => None,
        };
        let systemic = self
            .timers
            .systemic_due
            .filter(|_| matches!(self.halt, Some(PauseReason::Systemic { .. })));
        let mistakes = self
            .timers
            .mistakes_lift
            .filter(|_| matches!(self.halt, Some(PauseReason::MistakeLimit { .. })));
        let again = now.plus(std::time::Duration::from_secs(1));
        [probes, budget, systemic, mistakes]
            .into_iter()
            .flatten()
            .map(|at| if at <= now { again } else { at })
            .min()
    }

    /// Whether health checks should run: when nothing pauses, and in a service during a
    /// systemic pause, whose cause a successful check shows resolved (B15). A health check is
    /// no tool call: R9.3's ban on probes during the pause is kept.
    pub(crate) fn health_checks_wanted(&self) -> bool {
        match self.halt {
            None => true,
            Some(PauseReason::Systemic { .. }) => self.policy.is_timed(),
            Some(_) => false,
        }
    }

    /// When a pause in force lifts by itself, if it does (B15): a budget pause when its
    /// window frees room, a systemic pause at the end of its cool-down at the latest.
    pub(crate) fn pause_lifts_at(&self) -> Option<Timestamp> {
        match self.halt? {
            PauseReason::BudgetExhausted { .. } => {
                self.budget.next_expiry(self.policy.budget_window()?)
            }
            PauseReason::Systemic { .. } => self.timers.systemic_due,
            PauseReason::MistakeLimit { .. } => self.timers.mistakes_lift,
            PauseReason::NothingAchievable => None,
        }
    }

    /// Starts a new cycle for `conversation` unless the current cycle is already its own
    /// (B13): a service's natural cycles, an MCP session or a conversation id.
    pub(crate) fn begin_conversation(
        &mut self,
        conversation: &str,
        now: Timestamp,
        changes: &mut Changes,
    ) -> u64 {
        match self.timers.conversation.as_deref() {
            Some(current) if current == conversation => return self.budget.cycle(),
            // The first conversation takes the cycle in progress: it began with the engine.
            None => {
                self.timers.conversation = Some(conversation.to_owned());
                return self.budget.cycle();
            }
            Some(_) => {}
        }
        let cycle = self.new_cycle(now, changes);
        self.timers.conversation = Some(conversation.to_owned());
        cycle
    }
}
