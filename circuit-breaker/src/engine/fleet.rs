//! Tool health shared with a fleet of workers through a store (B11): circuits opened here by
//! a shared category are told to the fleet, circuits another worker opened go OPEN here, and
//! the store grants a shared circuit's probe to one worker. Decisions stay local, and while
//! the store is unreachable they are this worker's alone.

use super::{Changes, Engine, PauseReason};
use crate::clock::Timestamp;
use crate::event::Event;
use crate::failure::{Failure, FailureCategory};
use crate::fleet::{SharedOpen, SharedTransition, StoreStatus};
use crate::model::breaker::{CircuitState, Transition};
use crate::model::cascade::SystemicEvent;

/// One tool's standing with the fleet (B11).
#[derive(Debug, Clone, Default)]
pub(super) struct FleetSlot {
    /// Its circuit is the fleet's: opened here by a shared category, or by another worker.
    pub(super) shared: bool,
    /// Opened by another worker: who, and what it said.
    remote: Option<SharedOpen>,
    /// The store granted this worker its probe.
    pub(super) granted: bool,
    /// Its probe is due and waits for the store's grant.
    pub(super) wanted: bool,
}

/// The fleet this worker shares tool health with (B11).
#[derive(Debug)]
pub(super) struct Fleet {
    store: String,
    pub(super) slots: Vec<FleetSlot>,
    /// Since when, and why, the store is unreachable: decisions are local meanwhile.
    pub(super) unreachable: Option<(Timestamp, String)>,
}

impl Engine {
    /// Shares tool health with a fleet through `store` (B11); before any tool is registered.
    pub(crate) fn enable_fleet(&mut self, store: String) {
        self.fleet = Some(Fleet {
            store,
            slots: vec![FleetSlot::default(); self.records.len()],
            unreachable: None,
        });
    }

    /// A transition of tool `i` here: a circuit opened (or re-opened by its probe) by a
    /// shared category is told to the fleet; a granted probe that failed is ended.
    pub(super) fn fleet_opened_here(&mut self, i: usize, t: Transition, changes: &mut Changes) {
        let Some(fleet) = &mut self.fleet else {
            return;
        };
        let Some(slot) = fleet.slots.get_mut(i) else {
            return;
        };
        let tool = self.defs[i].spec.name().to_owned();
        if t == Transition::Reopened && slot.granted {
            slot.granted = false;
            changes
                .rare()
                .shared
                .push(SharedTransition::ProbeEnded { tool: tool.clone() });
        }
        if !matches!(t, Transition::Opened | Transition::Reopened) {
            return;
        }
        let Some(mark) = self.records[i].last_failure() else {
            return;
        };
        let category = mark.failure.category();
        if category.is_shared() || slot.shared {
            slot.shared = true;
            changes.rare().shared.push(SharedTransition::Opened {
                tool,
                message: mark.failure.summary().into_owned(),
                category,
                due: None,
                failed_probes: 0,
            });
        }
    }

    /// The due time of every circuit this command opens for the fleet (B16): known once its
    /// cool-down is armed, after the command.
    pub(crate) fn fleet_dues(&self, changes: &mut Changes) {
        for t in changes.shared_mut() {
            if let SharedTransition::Opened {
                tool,
                due,
                failed_probes,
                ..
            } = t
                && let Some(id) = self.id(tool)
                && let Some(record) = self.records.get(id.index() as usize)
            {
                *due = record.probe_due_at();
                *failed_probes = record.failed_probes();
            }
        }
    }

    /// Tool `i`'s probe closed it here: a shared circuit is closed for the fleet.
    pub(super) fn fleet_closed_here(&mut self, i: usize, changes: &mut Changes) {
        if let Some(slot) = self.fleet.as_mut().and_then(|f| f.slots.get_mut(i)) {
            if slot.shared {
                changes.rare().shared.push(SharedTransition::Closed {
                    tool: self.defs[i].spec.name().to_owned(),
                });
            }
            *slot = FleetSlot::default();
        }
    }

    /// Tool `i`'s granted probe was dropped: the store may grant it to another worker.
    pub(super) fn fleet_probe_ended(&mut self, i: usize, changes: &mut Changes) {
        if let Some(slot) = self.fleet.as_mut().and_then(|f| f.slots.get_mut(i))
            && slot.granted
        {
            slot.granted = false;
            changes.rare().shared.push(SharedTransition::ProbeEnded {
                tool: self.defs[i].spec.name().to_owned(),
            });
        }
    }

    /// Another worker opened `tool` (B11): OPEN here too, its failure written down (not
    /// charged to this worker's budget), its probe the fleet's. Returns `false` for a name
    /// that is no tool here, or when no fleet is attached.
    pub(crate) fn fleet_open(
        &mut self,
        tool: &str,
        open: SharedOpen,
        step: u64,
        now: Timestamp,
        changes: &mut Changes,
    ) -> bool {
        let Some(id) = self.id(tool) else {
            return false;
        };
        let i = id.index() as usize;
        let Some(slot) = self.fleet.as_mut().and_then(|f| f.slots.get_mut(i)) else {
            return false;
        };
        slot.shared = true;
        let record = &mut self.records[i];
        let known = slot
            .remote
            .as_ref()
            .is_some_and(|r| r.worker == open.worker);
        let takes_it_down = record.state == CircuitState::Closed
            || (record.state == CircuitState::HalfOpen && !record.probe);
        // The fleet probes once per cool-down: a newer opening sets when, for every worker.
        let newer = slot
            .remote
            .as_ref()
            .is_none_or(|r| r.at < open.at || r.due != open.due);
        if newer && open.due.is_some() {
            slot.wanted = false;
        }
        if takes_it_down {
            let failure = Failure::with_category(
                format!("{} (opened by {})", open.message, open.worker),
                open.category,
            );
            record.go_down(now, step, failure);
            changes.rare().attempts.push((id, 0));
            changes.touch(id);
            changes.events.push(Event::SharedOpened {
                tool: tool.to_owned(),
                worker: open.worker.clone(),
                message: open.message.clone(),
            });
            self.shares = None;
        } else if !known || newer {
            changes.touch(id);
        }
        let record = &mut self.records[i];
        record.at_least_failed_probes(open.failed_probes);
        if record.state == CircuitState::Open
            && let Some(due) = open.due
            && self.policy.cool_down().is_some()
        {
            record.set_due(Some(due));
            self.timers.next = Some(self.timers.next.map_or(due, |n| n.min(due)));
        }
        slot.remote = Some(open);
        true
    }

    /// `tool`'s shared OPEN state ended in the store (B11): `closed` by another worker's
    /// probe (CLOSED here too, unless a probe of its own is in flight), or expired (the
    /// circuit goes on by this worker's own breaker, its probe still the fleet's).
    pub(crate) fn fleet_cleared(
        &mut self,
        tool: &str,
        closed: bool,
        changes: &mut Changes,
    ) -> bool {
        let Some(id) = self.id(tool) else {
            return false;
        };
        let i = id.index() as usize;
        let Some(slot) = self.fleet.as_mut().and_then(|f| f.slots.get_mut(i)) else {
            return false;
        };
        if !slot.shared {
            return false;
        }
        let record = &self.records[i];
        if closed && record.state != CircuitState::Closed && !record.probe {
            *slot = FleetSlot::default();
            self.bring_back(id, changes);
            changes.events.push(Event::SharedClosed {
                tool: tool.to_owned(),
            });
            return true;
        }
        if slot.remote.take().is_some() {
            changes.touch(id);
        }
        true
    }

    /// The store granted this worker the probe of `tool` (B11). Returns `false` when its
    /// probe is not wanted here (the store gives the grant back).
    pub(crate) fn fleet_grant(&mut self, tool: &str) -> bool {
        let Some(id) = self.id(tool) else {
            return false;
        };
        let Some(slot) = self
            .fleet
            .as_mut()
            .and_then(|f| f.slots.get_mut(id.index() as usize))
        else {
            return false;
        };
        if slot.wanted && slot.shared {
            slot.wanted = false;
            slot.granted = true;
            true
        } else {
            false
        }
    }

    /// Whether this worker still holds the fleet's probe of `tool` (B16): granted, and not yet
    /// ended. The store renews its lease while it does.
    pub(crate) fn fleet_holds(&self, tool: &str) -> bool {
        self.id(tool)
            .and_then(|id| self.fleet.as_ref()?.slots.get(id.index() as usize))
            .is_some_and(|slot| slot.granted)
    }

    /// The grant of `tool`'s probe lapsed unused (no call made it within the lease), or the
    /// store lost the lease (B16): the probe waits for a new grant.
    pub(crate) fn fleet_revoke(&mut self, tool: &str) -> bool {
        let Some(id) = self.id(tool) else {
            return false;
        };
        let i = id.index() as usize;
        let in_flight = self.records.get(i).is_some_and(|r| r.probe);
        let Some(slot) = self.fleet.as_mut().and_then(|f| f.slots.get_mut(i)) else {
            return false;
        };
        // A probe already made is let finish: its outcome is what the fleet waits for.
        if !slot.granted || in_flight {
            return false;
        }
        slot.granted = false;
        true
    }

    /// The shared circuits whose probe is due here and waits for the store's grant.
    pub(crate) fn fleet_wanted(&self) -> Vec<String> {
        let Some(fleet) = &self.fleet else {
            return Vec::new();
        };
        fleet
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.wanted && !s.granted)
            .filter_map(|(i, _)| self.defs.get(i).map(|d| d.spec.name().to_owned()))
            .collect()
    }

    /// The store cannot be reached (B11): local decisions alone until it answers.
    pub(crate) fn fleet_unreachable(&mut self, why: String, now: Timestamp, changes: &mut Changes) {
        let Some(fleet) = &mut self.fleet else {
            return;
        };
        if fleet.unreachable.is_some() {
            return;
        }
        for slot in &mut fleet.slots {
            slot.wanted = false;
        }
        changes.events.push(Event::StoreUnavailable {
            store: fleet.store.clone(),
            message: why.clone(),
        });
        fleet.unreachable = Some((now, why));
        changes.touch_all();
    }

    /// The store answers again (B11). What happened here meanwhile is still queued in the
    /// store with when it happened, so that it is ordered with what the other workers did
    /// meanwhile (B16); grants made before are void.
    pub(crate) fn fleet_reachable(&mut self, changes: &mut Changes) {
        let Some(fleet) = &mut self.fleet else {
            return;
        };
        if fleet.unreachable.take().is_none() {
            return;
        }
        changes.events.push(Event::StoreRestored {
            store: fleet.store.clone(),
        });
        for slot in &mut fleet.slots {
            slot.granted = false;
        }
        changes.touch_all();
    }

    /// Another worker detected a systemic failure (R9, B11): every call pauses here too, as
    /// the same one event (charged to that worker's budget, not this one's).
    pub(crate) fn fleet_systemic(
        &mut self,
        pattern: String,
        tools: Vec<String>,
        category: Option<FailureCategory>,
        step: u64,
        now: Timestamp,
        changes: &mut Changes,
    ) -> bool {
        if self.fleet.is_none() || self.cascade.active() {
            return false;
        }
        let event = SystemicEvent {
            category,
            pattern,
            tools,
            step,
            at: now,
            recovered: false,
        };
        self.cascade.involved = event.tools.iter().filter_map(|t| self.id(t)).collect();
        changes.events.push(Event::Systemic {
            pattern: event.pattern.clone(),
            cause: event.cause().to_owned(),
            tools: event.tools.clone(),
        });
        self.cascade.event = Some(event);
        self.halt = Some(PauseReason::Systemic { category });
        for precheck in &mut self.prechecks {
            precheck.result = None;
        }
        changes.touch_all();
        true
    }

    /// Another worker confirmed the recovery from the systemic event this worker paused for
    /// (B16): calls resume here as after a confirmation here, without telling the fleet again.
    pub(crate) fn fleet_recovered(
        &mut self,
        worker: String,
        step: u64,
        changes: &mut Changes,
    ) -> bool {
        let paused = matches!(self.halt, Some(PauseReason::Systemic { .. }));
        if self.fleet.is_none() || !self.cascade.active() || !paused {
            return false;
        }
        self.timers.trials = 0;
        self.recover(step, changes);
        changes.events.push(Event::SharedRecovery { worker });
        true
    }

    /// The fleet's store and what it says, for the reports (B11).
    pub(crate) fn fleet_status(&self) -> Option<StoreStatus> {
        let fleet = self.fleet.as_ref()?;
        Some(StoreStatus {
            store: fleet.store.clone(),
            unreachable: fleet.unreachable.clone(),
            opened_elsewhere: fleet
                .slots
                .iter()
                .enumerate()
                .filter(|(i, _)| {
                    self.records
                        .get(*i)
                        .is_some_and(|r| r.state != CircuitState::Closed)
                })
                .filter_map(|(i, s)| {
                    let remote = s.remote.as_ref()?;
                    Some((self.defs[i].spec.name().to_owned(), remote.worker.clone()))
                })
                .collect(),
        })
    }
}
