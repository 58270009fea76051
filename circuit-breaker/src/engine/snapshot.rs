//! Snapshots (R3.7, B3): the whole state written out, and restored, checked first so that
//! a bad snapshot changes nothing.

use super::{Changes, Engine, PauseReason};
use crate::capability::{MapError, MapErrors, ToolSpec, check_tool};
use crate::event::Event;
use crate::model::breaker::{BreakerRecord, SuccessMark};
use crate::model::cascade::Cascade;
use crate::model::id::ToolId;
use crate::snapshot::{RestoreError, SNAPSHOT_FORMAT, SNAPSHOT_VERSION, Snapshot};

impl Engine {
    /// The whole state; `record` gives each tool's record with the mirror's cells filled in.
    pub(crate) fn snapshot(
        &self,
        step: u64,
        record: impl Fn(ToolId) -> Option<BreakerRecord>,
    ) -> Snapshot {
        let tools = self
            .defs
            .iter()
            .enumerate()
            .filter_map(|(i, def)| {
                let id = ToolId::from_index(u32::try_from(i).ok()?);
                Some(crate::snapshot::ToolSnapshot {
                    spec: def.spec.clone(),
                    breaker: record(id)?,
                })
            })
            .collect();
        Snapshot {
            format: SNAPSHOT_FORMAT.to_owned(),
            version: SNAPSHOT_VERSION,
            step,
            budget: self.budget.clone(),
            systemic: self.cascade.event.clone(),
            tools,
        }
    }

    /// Restores a saved state (R3.7); on error nothing changes.
    pub(crate) fn restore(
        &mut self,
        snapshot: &Snapshot,
        changes: &mut Changes,
    ) -> Result<usize, RestoreError> {
        snapshot.check()?;
        let mut budget = snapshot.budget.clone();
        // A ledger written by another build may be longer than this one keeps.
        budget.compact();
        budget.rebase(self.policy.budget());
        let mut halt = budget
            .status()
            .is_exhausted()
            .then_some(PauseReason::BudgetExhausted {
                consumed: budget.consumed,
                limit: budget.limit,
            });
        // Check the unknown tools' specs against every name they may refer to.
        let mut names = self.names_in_order();
        names.extend(snapshot.tools.iter().map(|t| t.spec.name()));
        let mut errors = Vec::new();
        for (index, tool) in snapshot.tools.iter().enumerate() {
            if self.id(tool.spec.name()).is_none() {
                if tool.spec.name().trim().is_empty() {
                    errors.push(MapError::EmptyName { index });
                }
                check_tool(&tool.spec, index, &names, &mut errors);
            }
        }
        if !errors.is_empty() {
            return Err(RestoreError::Map(MapErrors(errors)));
        }
        drop(names);
        // All checked: apply. New tools first, with ids planned ahead so that they may name
        // each other as alternatives.
        let new: Vec<ToolSpec> = snapshot
            .tools
            .iter()
            .filter(|t| self.id(t.spec.name()).is_none())
            .map(|t| t.spec.clone())
            .collect();
        self.register(new, changes);
        // Every record replaced by the snapshot's (fresh CLOSED for tools it does not name);
        // epochs move on so that no ticket issued before the restore matches a record after.
        for record in &mut self.records {
            let epoch = record.epoch.wrapping_add(1);
            *record = BreakerRecord {
                epoch,
                ..BreakerRecord::default()
            };
        }
        let mut successes: Vec<Option<SuccessMark>> = vec![None; self.records.len()];
        let mut cancellations: Vec<u64> = vec![0; self.records.len()];
        for tool in &snapshot.tools {
            let Some(id) = self.id(tool.spec.name()) else {
                continue;
            };
            let i = id.index() as usize;
            let epoch = self.records[i].epoch;
            successes[i] = tool.breaker.last_success().copied();
            cancellations[i] = tool.breaker.cancelled();
            let mut record = BreakerRecord {
                probe: false,
                epoch,
                ..tool.breaker.clone()
            };
            // The mirror's cells keep the last success and the cancellations, not the engine.
            record.set_last_success(None);
            // A saved due time is not trusted (a snapshot may come from anywhere, or from
            // long ago): an OPEN circuit gets its cool-down afresh from the restore (B13).
            record.set_due(None);
            record.set_cancelled(0);
            self.records[i] = record;
        }
        for (i, ((record, success), cancelled)) in self
            .records
            .iter()
            .zip(successes)
            .zip(cancellations)
            .enumerate()
        {
            let Ok(index) = u32::try_from(i) else { break };
            let id = ToolId::from_index(index);
            let rare = changes.rare();
            rare.attempts.push((id, record.attempts_since_open));
            rare.successes.push((id, success));
            rare.cancellations.push((id, cancelled));
        }
        for precheck in &mut self.prechecks {
            precheck.result = None;
        }
        self.budget = budget;
        self.cascade = Cascade::default();
        // The records say what is OPEN; an outage in force is not in a snapshot, so the
        // restored tools of a server probe on their own.
        self.groups.clear_outages();
        self.shares = None;
        if let Some(event) = &snapshot.systemic {
            self.cascade.involved = event.tools.iter().filter_map(|t| self.id(t)).collect();
            if !event.recovered {
                halt = Some(PauseReason::Systemic {
                    category: event.category,
                });
            }
            self.cascade.event = Some(event.clone());
        }
        self.halt = halt;
        self.deferred = None;
        changes.rare().step = Some(snapshot.step);
        changes.touch_all();
        changes.events.push(Event::Restored {
            tools: snapshot.tools.len(),
            step: snapshot.step,
        });
        Ok(snapshot.tools.len())
    }
}
