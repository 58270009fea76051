//! Read-only queries on the engine: its tools and their records, the policy, the budget,
//! the pause and the systemic event, and the routes an OPEN tool offers.

use std::sync::Arc;

use super::{Engine, PauseReason};
use crate::clock::Timestamp;
use crate::model::breaker::{BreakerRecord, CircuitState};
use crate::model::budget::Budget;
use crate::model::cascade::SystemicEvent;
use crate::model::id::ToolId;
use crate::model::registry::ToolDef;
use crate::policy::Policy;
use crate::route::{Routes, ToolView};

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
    pub(crate) fn policy(&self) -> Policy {
        self.policy
    }

    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    pub(crate) fn id(&self, name: &str) -> Option<ToolId> {
        let at = self.name_slot(name).ok()?;
        self.names.get(at).copied()
    }

    /// Where `name` is in the name index: found, or where it would go.
    pub(super) fn name_slot(&self, name: &str) -> Result<usize, usize> {
        self.names.binary_search_by(|id| {
            self.defs
                .get(id.index() as usize)
                .map_or("", |d| d.spec.name())
                .cmp(name)
        })
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

    pub(crate) fn cycle_started_at(&self) -> Timestamp {
        self.cycle_started_at
    }

    /// Whether every decide must take the slow path: a pause or a deferred sub-task.
    pub(crate) fn needs_slow_path(&self) -> bool {
        self.halt.is_some() || self.deferred.is_some()
    }

    /// The routes of an OPEN tool as the engine sees it (R4.1).
    pub(crate) fn routes(&self, tool: ToolId) -> Routes<'_> {
        Routes::new(self, self.def(tool).map(|d| &**d))
    }

    /// The names of every tool, in registration order.
    pub(super) fn names_in_order(&self) -> Vec<&str> {
        self.defs.iter().map(|d| d.spec.name()).collect()
    }

    /// The names of every tool, in registration order (what the store reads for).
    pub(crate) fn tool_names(&self) -> Vec<String> {
        self.defs.iter().map(|d| d.spec.name().to_owned()).collect()
    }
}
