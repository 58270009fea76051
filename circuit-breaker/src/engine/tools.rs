//! Registering tools: a map's tools in one batch, whose alternatives may name each other,
//! and a tool found at run time, checked like a map entry.

use std::collections::HashMap;
use std::sync::Arc;

use super::fleet::FleetSlot;
use super::{Changes, Engine};
use crate::capability::{MapError, MapErrors, ToolSpec, check_tool};
use crate::event::Event;
use crate::freshness::FreshnessProfile;
use crate::model::breaker::BreakerRecord;
use crate::model::id::ToolId;
use crate::model::precheck::Precheck;
use crate::model::registry::ToolDef;

/// The most tools one expeditor holds.
pub(crate) const MAX_TOOLS: usize = (u32::MAX - 1) as usize;

impl Engine {
    /// Registers `specs` in order. Their alternatives may name tools already known or any
    /// tool of the batch (ids are planned ahead); an alternative naming no tool stays in
    /// place, unresolved, and is never routed to. Checking the specs is the caller's.
    pub(crate) fn register(&mut self, specs: Vec<ToolSpec>, changes: &mut Changes) -> Vec<ToolId> {
        let first = self.records.len();
        let room = MAX_TOOLS.saturating_sub(first);
        let specs: Vec<ToolSpec> = specs.into_iter().take(room).collect();
        let planned: HashMap<&str, ToolId> = specs
            .iter()
            .enumerate()
            .filter_map(|(k, s)| {
                let id = u32::try_from(first + k).ok()?;
                Some((s.name(), ToolId::from_index(id)))
            })
            .collect();
        let defs: Vec<ToolDef> = specs
            .iter()
            .map(|spec| {
                ToolDef::new(spec.clone(), &self.policy, |name| {
                    self.id(name).or_else(|| planned.get(name).copied())
                })
            })
            .collect();
        drop(planned);
        let mut ids = Vec::with_capacity(defs.len());
        // Exactly: a map's tools come in one batch, and doubling would leave up to half of
        // each table unused (B5's heap per tool).
        if defs.len() > 1 {
            self.records.reserve_exact(defs.len());
            self.prechecks.reserve_exact(defs.len());
            self.defs.reserve_exact(defs.len());
        }
        for def in defs {
            let Ok(index) = u32::try_from(self.records.len()) else {
                break;
            };
            let id = ToolId::from_index(index);
            let def = Arc::new(def);
            let name = def.spec.name();
            let disallowed = self
                .allowed
                .as_ref()
                .is_some_and(|allowed| !allowed.iter().any(|a| a == name));
            self.prechecks.push(Precheck {
                result: None,
                disallowed,
            });
            if def.spec.is_caching() {
                self.freshness.set_profile(
                    name,
                    FreshnessProfile {
                        caches: true,
                        source: None,
                    },
                );
            }
            self.records.push(BreakerRecord::default());
            if let Some(fleet) = &mut self.fleet {
                fleet.slots.push(FleetSlot::default());
            }
            self.groups.register(id, def.spec.server());
            self.defs.push(Arc::clone(&def));
            changes.rare().registered.push((id, def));
            changes.touch(id);
            ids.push(id);
        }
        self.index_names(&ids);
        // Tools registered before, whose alternatives name one of these (on a server that
        // came up late): routed to from now on.
        if first > 0 && !ids.is_empty() {
            for def in &self.defs[..first] {
                def.resolve_late(|name| self.id(name).filter(|id| id.index() as usize >= first));
            }
        }
        self.shares = None;
        ids
    }

    /// Adds `ids` (just registered, in id order) to the name index: one sort of the whole
    /// index, stable, so that of two tools of one name the first registered stays first,
    /// and only it is kept.
    fn index_names(&mut self, ids: &[ToolId]) {
        if let [id] = ids {
            // One tool found at run time: put in its place.
            if let Err(at) = self.name_slot(self.defs[id.index() as usize].spec.name()) {
                self.names.insert(at, *id);
            }
            return;
        }
        self.names.reserve_exact(ids.len());
        self.names.extend_from_slice(ids);
        let defs = &self.defs;
        let name = |id: &ToolId| defs.get(id.index() as usize).map_or("", |d| d.spec.name());
        self.names.sort_by(|a, b| name(a).cmp(name(b)));
        self.names
            .dedup_by(|later, first| name(later) == name(first));
    }

    /// Registers a tool found at run time (R2.4, B6), checked like a map entry (R1.4).
    pub(crate) fn discover(
        &mut self,
        spec: ToolSpec,
        changes: &mut Changes,
    ) -> Result<ToolId, MapErrors> {
        if let Some(id) = self.id(spec.name()) {
            let same = self.def(id).is_some_and(|d| d.spec == spec);
            return if same {
                Ok(id)
            } else {
                Err(MapErrors(vec![MapError::DuplicateTool {
                    tool: spec.name().to_owned(),
                    first: id.index() as usize,
                    index: self.records.len(),
                }]))
            };
        }
        let mut errors = Vec::new();
        let index = self.records.len();
        if spec.name().trim().is_empty() {
            errors.push(MapError::EmptyName { index });
        }
        if index >= MAX_TOOLS {
            errors.push(MapError::TooManyTools { limit: MAX_TOOLS });
        }
        check_tool(&spec, index, &self.names_in_order(), &mut errors);
        if !errors.is_empty() {
            return Err(MapErrors(errors));
        }
        let name = spec.name().to_owned();
        let id = self.register(vec![spec], changes);
        changes.events.push(Event::ToolDiscovered { tool: name });
        id.first()
            .copied()
            .ok_or(MapErrors(vec![MapError::TooManyTools { limit: MAX_TOOLS }]))
    }
}
