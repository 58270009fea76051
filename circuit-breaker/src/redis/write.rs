//! What this worker tells the fleet: transitions queued as they happen, each stamped and
//! placed in its tool's order then, and written when Redis answers; what is over before it
//! is written is dropped, never replayed.

use super::keys::{
    APPLY_SCRIPT, FORMAT, RECOVER_SCRIPT, SystemicValue, ToolState, ToolValue, json,
};
use super::store::random;
use super::task::{Fault, Task, millis, now_ms};
use crate::model::clock::Timestamp;
use crate::model::fleet::SharedTransition;

impl Task {
    /// Queues a transition that happened here at `at`. A tool's transition takes the next
    /// place in its order after the latest this worker knows, now: written after an outage,
    /// it is still ordered before what the other workers did meanwhile without seeing it.
    pub(super) fn queue(&mut self, at: Timestamp, t: SharedTransition) {
        let at_ms = at.as_millis();
        match t {
            SharedTransition::Opened {
                tool,
                message,
                category,
                due,
                failed_probes,
            } => {
                let value = self.next_value(&tool, ToolState::Open, at_ms, |v| {
                    v.message = message;
                    v.category = Some(category);
                    v.due_ms = due.map(Timestamp::as_millis);
                    v.probes = failed_probes;
                });
                self.pending.entry(tool).or_default().state = Some(value);
            }
            SharedTransition::Closed { tool } => {
                let value = self.next_value(&tool, ToolState::Closed, at_ms, |_| {});
                let p = self.pending.entry(tool).or_default();
                p.state = Some(value);
                p.release = true;
            }
            SharedTransition::ProbeEnded { tool } => {
                self.pending.entry(tool).or_default().release = true;
            }
            SharedTransition::Systemic {
                pattern,
                cause,
                tools,
                category,
            } => {
                let event = SystemicValue {
                    v: FORMAT,
                    id: format!("{}-{:016x}", self.config.worker, random()),
                    worker: self.config.worker.clone(),
                    pattern,
                    cause,
                    tools,
                    category,
                    at_ms,
                    recovered_by: None,
                };
                self.remember_event(event.id.clone());
                self.paused_for = Some(event.clone());
                self.systemic = Some(event);
            }
            SharedTransition::Recovered => {
                let Some(mut event) = self.paused_for.take() else {
                    return;
                };
                if self.systemic.as_ref().is_some_and(|s| s.id == event.id) {
                    // Over before the fleet heard of it: nobody paused for it.
                    self.systemic = None;
                    return;
                }
                event.recovered_by = Some(self.config.worker.clone());
                self.recovery = Some(event);
            }
        }
    }

    /// This worker's next transition of `tool`: one place after the latest it knows.
    fn next_value(
        &mut self,
        tool: &str,
        state: ToolState,
        at_ms: u64,
        fill: impl FnOnce(&mut ToolValue),
    ) -> ToolValue {
        let ver = self.known.get(tool).map_or(0, |k| k.ver) + 1;
        let mut value = ToolValue {
            v: FORMAT,
            state,
            ver,
            at_ms,
            worker: self.config.worker.clone(),
            message: String::new(),
            category: None,
            due_ms: None,
            probes: 0,
        };
        fill(&mut value);
        self.known.insert(tool.to_owned(), value.clone());
        value
    }

    /// Writes what is queued: each tool's transition if it is still the newest (the script
    /// decides, atomically), the leases to give back, the systemic event, the recovery.
    pub(super) async fn write(&mut self) -> Result<(), String> {
        let tools: Vec<String> = self.pending.keys().cloned().collect();
        for tool in tools {
            let Some(p) = self.pending.get(&tool) else {
                continue;
            };
            let release = p.release;
            if let Some(value) = p.state.clone() {
                self.changed |= self.apply(&tool, &value).await?;
            }
            if release && let Some(token) = self.leases.get(&tool).map(|l| l.token.clone()) {
                self.release(&tool, &token).await?;
            }
            self.pending.remove(&tool);
        }
        if let Some(event) = self.systemic.clone() {
            let left =
                millis(self.config.open_ttl).saturating_sub(now_ms().saturating_sub(event.at_ms));
            if left > 0 {
                let mut cmd = ::redis::cmd("SET");
                cmd.arg(self.keys.systemic())
                    .arg(json(&event))
                    .arg("PX")
                    .arg(left);
                match self.query::<()>(&cmd).await {
                    Ok(()) => self.changed = true,
                    Err(Fault::Unreachable(why)) => return Err(why),
                    Err(Fault::Refused(why)) => {
                        tracing::warn!(%why, "redis fleet: the systemic event was refused; dropped");
                    }
                }
            }
            self.systemic = None;
        }
        if let Some(event) = self.recovery.clone() {
            let mut cmd = ::redis::cmd("EVAL");
            cmd.arg(RECOVER_SCRIPT)
                .arg(1)
                .arg(self.keys.systemic())
                .arg(&event.id)
                .arg(json(&event));
            match self.query::<i64>(&cmd).await {
                Ok(marked) => self.changed |= marked == 1,
                Err(Fault::Unreachable(why)) => return Err(why),
                Err(Fault::Refused(why)) => {
                    tracing::warn!(%why, "redis fleet: the recovery was refused; dropped");
                }
            }
            self.recovery = None;
        }
        if std::mem::take(&mut self.changed) {
            self.notify().await?;
        }
        Ok(())
    }

    /// Tells the fleet the store changed (`notice.rs`): a refusal (an ACL user without the
    /// channel) is said once, and the fleet reads every poll interval as before.
    async fn notify(&mut self) -> Result<(), String> {
        let mut cmd = ::redis::cmd("PUBLISH");
        cmd.arg(self.keys.channel()).arg("");
        match self.query::<i64>(&cmd).await {
            Ok(_) => Ok(()),
            Err(Fault::Unreachable(why)) => Err(why),
            Err(Fault::Refused(why)) => {
                if !std::mem::replace(&mut self.notices_refused, true) {
                    tracing::info!(%why, "redis fleet: change notices refused; the fleet reads every poll interval");
                }
                Ok(())
            }
        }
    }

    /// One tool's transition, through the script that writes it only if it is the newest:
    /// whether it was written.
    pub(super) async fn apply(&mut self, tool: &str, value: &ToolValue) -> Result<bool, String> {
        let opening = value.state == ToolState::Open;
        let mut cmd = ::redis::cmd("EVAL");
        cmd.arg(APPLY_SCRIPT)
            .arg(2)
            .arg(self.keys.tool(tool))
            .arg(self.keys.seen(tool))
            .arg(json(value))
            .arg(value.ver)
            .arg(value.at_ms)
            .arg(&value.worker)
            .arg(millis(self.config.open_ttl))
            .arg(millis(self.config.max_skew))
            .arg(self.config.quorum)
            .arg(if opening { "1" } else { "0" })
            .arg(
                self.config
                    .allowed
                    .as_ref()
                    .map_or_else(String::new, |allowed| {
                        allowed
                            .iter()
                            .map(String::as_str)
                            .collect::<Vec<_>>()
                            .join("\n")
                    }),
            );
        match self.query::<i64>(&cmd).await {
            Ok(1) => Ok(true),
            // A newer transition is there, which the read applies; or waiting for the quorum.
            Ok(0 | -4) => Ok(false),
            Ok(-3) => {
                tracing::debug!(
                    tool,
                    "redis fleet: a transition older than the open TTL was dropped"
                );
                Ok(false)
            }
            Ok(-2) => {
                tracing::warn!(
                    tool,
                    "redis fleet: this worker's clock is ahead of Redis's by more than the clock skew allowed; its transition was refused"
                );
                Ok(false)
            }
            Ok(code) => {
                tracing::warn!(tool, code, "redis fleet: unexpected answer to a write");
                Ok(false)
            }
            Err(Fault::Unreachable(why)) => Err(why),
            Err(Fault::Refused(why)) => {
                tracing::warn!(tool, %why, "redis fleet: a write was refused; dropped");
                Ok(false)
            }
        }
    }
}
