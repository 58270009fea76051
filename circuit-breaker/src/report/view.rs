//! One consistent view of the state, which every report (and a snapshot) is built from: the
//! engine under its lock, with the cells the lock-free paths keep outside the engine filled
//! in from the expeditor's mirror.

use crate::engine::Engine;
use crate::model::breaker::{BreakerRecord, CircuitState, SuccessMark};
use crate::model::id::ToolId;

/// The cells of one tool that the lock-free paths write without the engine's lock, so the
/// engine never holds them: the attempts counted on an OPEN tool by the rejection path, the
/// last success, and the calls dropped by their caller (B13).
pub(crate) struct Cells {
    pub(crate) attempts: u32,
    pub(crate) last_success: Option<SuccessMark>,
    pub(crate) cancelled: u64,
}

/// Where a [`View`] reads a tool's [`Cells`]: the expeditor's lock-free mirror.
pub(crate) trait Mirrored {
    /// The tool's cells, `None` for a tool the mirror has no slot for.
    fn cells(&self, tool: ToolId) -> Option<Cells>;
}

/// The engine with the mirror's cells filled in: what reports and snapshots read.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    pub(crate) engine: &'a Engine,
    pub(crate) mirror: &'a dyn Mirrored,
}

impl View<'_> {
    /// A tool's whole record (R2.1): the engine's, with the attempts counted on the lock-free
    /// path and the last success.
    pub(crate) fn record(&self, tool: ToolId) -> Option<BreakerRecord> {
        let mut record = self.engine.record(tool)?.clone();
        if let Some(cells) = self.mirror.cells(tool) {
            if record.state == CircuitState::Open {
                record.attempts_since_open = cells.attempts;
            }
            record.set_last_success(cells.last_success);
            record.set_cancelled(cells.cancelled);
        }
        Some(record)
    }

    /// Every tool's record, in registration order, with its name.
    pub(crate) fn records(&self) -> impl Iterator<Item = (ToolId, &str, BreakerRecord)> + '_ {
        (0..self.engine.len())
            .filter_map(|i| u32::try_from(i).ok().map(ToolId::from_index))
            .filter_map(|id| Some((id, self.engine.name(id)?, self.record(id)?)))
    }
}
