//! What the expeditor says of its state: a tool's state and breaker, the budget, the pause in
//! force, and the reports built from one view under one lock (R2.3, R7.3, R10).

use super::Expeditor;
use crate::engine::PauseReason;
use crate::model::breaker::{BreakerRecord, CircuitState};
use crate::model::budget::Budget;
use crate::model::cascade::SystemicEvent;
use crate::model::id::ToolId;
use crate::model::scope::Task;
use crate::report::{PauseReport, StateTable, ToolOffer};

impl Expeditor {
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
}
