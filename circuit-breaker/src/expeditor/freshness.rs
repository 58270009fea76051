//! Freshness (R6): the label of a result, from the baseline of the tool's earlier outputs
//! and the cycle's start.

use super::Expeditor;
use crate::model::clock::Timestamp;
use crate::model::freshness::{Freshness, FreshnessProfile, Observation};
use crate::model::id::ToolId;

impl Expeditor {
    /// Labels one result of `tool` (R6.2) and remembers it as the baseline for the next:
    /// CACHED RESULT when the output equals the previous one for the same arguments, STALE
    /// DATA when the data is older than the current cycle or was contradicted, UNVERIFIED for
    /// a tool declared as caching, FRESHNESS UNKNOWN for data with no baseline at all, and no
    /// label for fresh data (R6.3).
    pub fn observe(&self, tool: impl Into<ToolId>, observation: Observation) -> Freshness {
        let tool = tool.into();
        let now = self.now();
        self.lock().observe(tool, observation, now)
    }

    /// The user reports that the last output of `tool` for these arguments (their digest)
    /// contradicts a more recent observation: that output is STALE DATA from the time it was
    /// retrieved, and so is the same output seen again. `None` when it was never seen.
    pub fn contradict(&self, tool: impl Into<ToolId>, args: u64) -> Option<Freshness> {
        self.lock().contradict(tool.into(), args)
    }

    /// Declares how `tool` behaves with respect to freshness (caching, what may change
    /// under it). Returns `false` for an unknown tool.
    pub fn set_freshness_profile(
        &self,
        tool: impl Into<ToolId>,
        profile: FreshnessProfile,
    ) -> bool {
        self.lock().set_freshness_profile(tool.into(), profile)
    }

    /// When the current cycle began: data older than this is STALE (R6.2).
    pub fn cycle_started_at(&self) -> Timestamp {
        self.lock().cycle_started_at()
    }
}
