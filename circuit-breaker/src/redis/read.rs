//! What the other workers told the fleet: read in one round trip, checked (ours, from an
//! allowed worker, not from the future, not past its TTL), and applied through the link only
//! when it is newer than what this worker knows.

use std::cmp::Ordering;

use super::keys::{SystemicValue, ToolState, ToolValue, parse};
use super::task::{Fault, Task, admissible, millis, now_ms};
use crate::model::clock::Timestamp;
use crate::model::failure::FailureCategory;
use crate::model::fleet::SharedOpen;

impl Task {
    /// Reads every tool key of the map and the systemic key (one `MGET`) and applies what is
    /// newer than what this worker knows.
    pub(super) async fn read(&mut self) -> Result<(), String> {
        let tools = self.link.tools();
        let mut cmd = ::redis::cmd("MGET");
        for tool in &tools {
            cmd.arg(self.keys.tool(tool));
        }
        cmd.arg(self.keys.systemic());
        let values: Vec<Option<Vec<u8>>> = match self.query(&cmd).await {
            Ok(v) => v,
            Err(Fault::Unreachable(why) | Fault::Refused(why)) => {
                return Err(why);
            }
        };
        if values.len() != tools.len() + 1 {
            return Err(format!(
                "MGET answered {} values for {} keys",
                values.len(),
                tools.len() + 1
            ));
        }
        let mut values = values.into_iter();
        for (tool, raw) in tools.iter().zip(values.by_ref()) {
            let read = parse(raw).and_then(|v: Option<ToolValue>| match v {
                Some(v) => admissible(&self.config, &v.worker, v.at_ms).map(|()| Some(v)),
                None => Ok(None),
            });
            let value = self.logged(self.keys.tool(tool), read);
            self.tool_read(tool, value).await?;
        }
        let raw = values.next().flatten();
        let read = parse(raw).and_then(|v: Option<SystemicValue>| match v {
            Some(v) => {
                admissible(&self.config, &v.worker, v.at_ms)?;
                if let Some(by) = &v.recovered_by {
                    admissible(&self.config, by, v.at_ms)?;
                }
                Ok(Some(v))
            }
            None => Ok(None),
        });
        let event = self.logged(self.keys.systemic(), read);
        if let Some(event) = event {
            self.systemic_read(event);
        }
        Ok(())
    }

    /// One tool's key as read: applied when newer than what this worker knows; what this
    /// worker knows better (the store lost it, or went back to older files) written again.
    async fn tool_read(&mut self, tool: &str, value: Option<ToolValue>) -> Result<(), String> {
        let known = self.known.get(tool).cloned();
        let ours_in_force = known.as_ref().filter(|k| {
            k.worker == self.config.worker
                && k.at_ms.saturating_add(millis(self.config.open_ttl)) > now_ms()
        });
        let Some(value) = value else {
            if let Some(mine) = ours_in_force.cloned() {
                // The store lost what this worker told it (a restart without its files).
                self.repair(tool, &mine).await?;
                return Ok(());
            }
            if let Some(gone) = self.known.remove(tool)
                && gone.worker != self.config.worker
                && gone.state == ToolState::Open
            {
                // Another worker's opening expired: this worker's own breaker goes on.
                self.link.cleared(tool, false);
            }
            return Ok(());
        };
        match known.as_ref().map(|k| value.order(k)) {
            Some(Ordering::Equal) => Ok(()),
            Some(Ordering::Less) => {
                // Older than what this worker knows: it never acts. If what it knows is its
                // own, the store is told again (it went back to older files).
                if let Some(mine) = ours_in_force.cloned() {
                    self.repair(tool, &mine).await?;
                }
                Ok(())
            }
            Some(Ordering::Greater) | None => {
                self.known.insert(tool.to_owned(), value.clone());
                if value.worker == self.config.worker {
                    return Ok(());
                }
                match value.state {
                    ToolState::Open => {
                        self.link.open(
                            tool,
                            SharedOpen {
                                worker: value.worker,
                                message: value.message,
                                category: value.category.unwrap_or(FailureCategory::Other),
                                at: Timestamp::from_millis(value.at_ms),
                                due: value.due_ms.map(Timestamp::from_millis),
                                failed_probes: value.probes,
                            },
                        );
                    }
                    ToolState::Closed => {
                        self.link.cleared(tool, true);
                    }
                }
                Ok(())
            }
        }
    }

    /// Writes again what this worker knows of `tool` and the store lost, unless it is queued.
    async fn repair(&mut self, tool: &str, mine: &ToolValue) -> Result<(), String> {
        if self.pending.get(tool).is_some_and(|p| p.state.is_some()) {
            return Ok(());
        }
        tracing::debug!(
            tool,
            "redis fleet: the store lost a transition; written again"
        );
        self.changed |= self.apply(tool, mine).await?;
        Ok(())
    }

    /// The systemic key as read: a new event pauses this worker; the recovery of the event
    /// it paused for resumes it; an event already recovered pauses nobody.
    fn systemic_read(&mut self, event: SystemicValue) {
        let mine = event.worker == self.config.worker;
        let paused_for_it = self.paused_for.as_ref().is_some_and(|p| p.id == event.id);
        if let Some(by) = &event.recovered_by {
            if paused_for_it && *by != self.config.worker {
                self.paused_for = None;
                self.link.recovered(by);
            }
            if !self.seen_events.contains(&event.id) {
                self.remember_event(event.id);
            }
            return;
        }
        if self.seen_events.contains(&event.id) {
            return;
        }
        self.remember_event(event.id.clone());
        if !mine
            && self
                .link
                .systemic(event.pattern.clone(), event.tools.clone(), event.category)
        {
            self.paused_for = Some(event);
        }
    }
}
