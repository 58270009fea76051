//! Systemic failures (R9): the event that pauses every call and charges its failures once,
//! and the recovery that lifts it, confirmed by the user or, in a service, by a health check
//! of its cause.

use super::{Changes, Engine, PauseReason};
use crate::clock::Timestamp;
use crate::event::Event;
use crate::failure::{Failure, FailureCategory};
use crate::fleet::SharedTransition;
use crate::model::breaker::CircuitState;
use crate::model::budget::LedgerEntry;
use crate::model::cascade::SystemicEvent;
use crate::model::id::ToolId;

impl Engine {
    /// A systemic failure (R9.2): every call pauses, the involved failures are charged once
    /// (R9.4), and every pre-call check is due again (R10.3).
    pub(super) fn start_systemic(
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
            // One line for many calls: no one call's id.
            call_id: None,
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
            changes.rare().shared.push(SharedTransition::Systemic {
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
        if self.fleet.is_some() {
            changes.rare().shared.push(SharedTransition::Recovered);
        }
        event
    }

    /// A health check of tools involved in the systemic event in force succeeded: that is
    /// the recovery of its cause (B15). `false` when none of `tools` is involved.
    pub(super) fn health_confirmed(
        &mut self,
        tools: &[ToolId],
        step: u64,
        changes: &mut Changes,
    ) -> bool {
        // Only in a service: a typed agent's user confirms recovery (R9.3).
        let involved = self.policy.is_timed()
            && matches!(self.halt, Some(PauseReason::Systemic { .. }))
            && self.cascade.active()
            && tools.iter().any(|t| self.cascade.involved.contains(t));
        involved && self.confirm_recovery(step, changes).is_some()
    }

    /// Calls resume after a systemic event: its tools probe with backoff (R9.5), checks are
    /// due again (R10.3), a budget pause the event held back takes over.
    pub(super) fn recover(&mut self, step: u64, changes: &mut Changes) -> Option<SystemicEvent> {
        for id in self.cascade.involved.clone() {
            if let Some(record) = self.records.get_mut(id.index() as usize)
                && record.state != CircuitState::Closed
            {
                record.backoff = 1;
                record.set_opened_at_step(Some(step));
                record.attempts_since_open = 0;
                // Its cool-down starts again now (armed after the command).
                record.set_due(None);
                changes.rare().attempts.push((id, 0));
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
}
