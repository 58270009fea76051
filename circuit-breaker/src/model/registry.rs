//! A registered tool as the decision layer sees it: its spec, its alternatives resolved to
//! ids, and its breaker settings. Immutable once made, shared by the engine and the lock-free
//! mirror.

use crate::model::breaker::Settings;
use crate::model::capability::ToolSpec;
use crate::model::id::{ToolId, ToolName};
use crate::model::policy::Policy;

/// One tool's definition.
#[derive(Debug)]
pub(crate) struct ToolDef {
    /// Its name shared ([`ToolSpec::shared_name`]): the one copy of the text that ledger
    /// lines and events point at.
    pub(crate) spec: ToolSpec,
    /// One entry per [`ToolSpec::alternatives`], in the same order: the id of the tool it
    /// names, or `None` when it names no tool (never routed to). Kept aligned by index, so an
    /// alternative that names no tool can never shift the others (a misroute).
    pub(crate) alternatives: Box<[Option<ToolId>]>,
    pub(crate) settings: Settings,
    /// Whether the spec's fallback says anything (not empty nor blank): a route, read once.
    pub(crate) fallback_given: bool,
}

impl ToolDef {
    /// Resolves `spec` under `policy`, naming alternatives through `resolve`.
    pub(crate) fn new(
        mut spec: ToolSpec,
        policy: &Policy,
        resolve: impl Fn(&str) -> Option<ToolId>,
    ) -> Self {
        let alternatives = spec
            .alternatives()
            .iter()
            .map(|a| resolve(a.tool()))
            .collect();
        let settings = Settings {
            threshold: spec.threshold().unwrap_or(policy.threshold()),
            probe_every: spec.probe_every().unwrap_or(policy.probe_every()),
            probe_unit: policy.probe_unit(),
        };
        spec.share_name();
        ToolDef {
            fallback_given: spec.fallback().chars().any(|c| !c.is_whitespace()),
            spec,
            alternatives,
            settings,
        }
    }

    /// The tool's name as records keep it: the spec's own text, shared (a pointer, no copy).
    pub(crate) fn name(&self) -> ToolName {
        self.spec.shared_name()
    }

    /// The ids of the alternatives that name a tool.
    pub(crate) fn alternative_ids(&self) -> impl Iterator<Item = ToolId> + '_ {
        self.alternatives.iter().flatten().copied()
    }
}
