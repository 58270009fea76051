//! The failure budget's hold on every call: the pause when it is spent (R3.4), and the new
//! cycle that gives a fresh budget and ledger (R7.4).

use super::{Changes, Engine, MistakeCount, PauseReason};
use crate::clock::Timestamp;
use crate::event::Event;

impl Engine {
    /// The budget is spent: pause every call (R3.4), unless a pause is already in force.
    pub(super) fn exhaust(&mut self, changes: &mut Changes) {
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
}
