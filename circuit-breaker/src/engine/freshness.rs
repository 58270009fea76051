//! The freshness of what tools return (R6): observations and contradictions, kept per tool
//! by name, dated within the cycle.

use super::Engine;
use crate::clock::Timestamp;
use crate::freshness::{Freshness, FreshnessProfile, Observation};
use crate::model::id::ToolId;

impl Engine {
    pub(crate) fn observe(
        &mut self,
        tool: ToolId,
        observation: Observation,
        now: Timestamp,
    ) -> Freshness {
        let Some(def) = self.defs.get(tool.index() as usize) else {
            return Freshness::Unknown;
        };
        self.freshness
            .observe(def.spec.name(), observation, now, self.cycle_started_at)
    }

    pub(crate) fn contradict(&mut self, tool: ToolId, args: u64) -> Option<Freshness> {
        let def = self.defs.get(tool.index() as usize)?;
        self.freshness.contradict(def.spec.name(), args)
    }

    pub(crate) fn set_freshness_profile(
        &mut self,
        tool: ToolId,
        profile: FreshnessProfile,
    ) -> bool {
        let Some(def) = self.defs.get(tool.index() as usize) else {
            return false;
        };
        self.freshness.set_profile(def.spec.name(), profile);
        true
    }
}
