//! Recording outcomes (R3.3, B14): what a ticket records through — a success that the mirror
//! could not absorb, a failure, the caller's mistake — and a model's mistake made before any
//! tool was decided.

use super::Expeditor;
use super::mirror::Slot;
use crate::engine::Recorded;
use crate::model::breaker::{CircuitState, Via};
use crate::model::failure::Failure;
use crate::model::id::ToolId;

impl Expeditor {
    #[cold]
    pub(super) fn record_success(&self, tool: ToolId, slot: &Slot, via: Via) {
        slot.hot.stamp_success(self.step(), || self.now());
        self.command(|engine, changes, _| engine.succeed(tool, via, changes));
    }

    #[cold]
    pub(super) fn record_failure(
        &self,
        tool: ToolId,
        slot: Option<&Slot>,
        via: Via,
        failure: Failure,
    ) -> Recorded {
        if failure.blame() == crate::model::failure::Blame::Caller {
            return self.record_caller_mistake(tool, via, crate::engine::MistakeKind::Rejected);
        }
        let now = self.now();
        // The model's id for the call, when its caller gave one (B18), for the ledger line.
        let call_id = crate::telemetry::current_call_id_string();
        let mut engine = self.lock();
        let (failure, call_id) = if via == Via::Call {
            match engine.fail_quietly(tool, failure, call_id, self.step(), now) {
                Ok(recorded) => {
                    // Only the tool's word moved: the command's `Changes`, timers (a CLOSED
                    // tool has none to arm), fleet and observers (no event) have nothing to do.
                    match slot {
                        Some(slot) => slot.publish(&engine, tool),
                        None => self.inner.mirror.publish_tool(&engine, tool),
                    }
                    drop(engine);
                    self.inner.changed.bump();
                    return recorded;
                }
                Err(given_back) => given_back,
            }
        } else {
            (failure, call_id)
        };
        self.command_in(engine, |engine, changes, step| {
            engine.fail(tool, via, failure, call_id, step, now, changes)
        })
    }

    #[cold]
    pub(super) fn record_caller_mistake(
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

    /// Counts a model's own mistake (B8, B14): a name that is no tool, arguments that do not
    /// parse, a call a tool rejected as the caller's. It is not charged to any tool's breaker
    /// or to the budget; the state table and the pause report show the count on a line of
    /// their own, and the mistake that reaches the policy's
    /// [`mistake_limit`](crate::Policy::mistake_limit) pauses every call until a new cycle.
    /// The JSON dispatcher calls this; call it from your own loop when the model errs before
    /// any tool is decided (a mistake a tool reported through its ticket —
    /// [`Ticket::mistake`] — is counted already).
    ///
    /// [`Ticket::mistake`]: super::Ticket::mistake
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
}
