//! Pre-call checks and the allowed-tools list (R10): what holds a tool back without a call,
//! and the results that change it.

use super::{Changes, Engine};
use crate::event::Event;
use crate::model::id::ToolId;
use crate::model::precheck::{Availability, Precheck};

impl Engine {
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
}
