//! A registered tool as the decision layer sees it: its spec, its alternatives resolved to
//! ids, and its breaker settings. Immutable once made, shared by the engine and the lock-free
//! mirror, but for an alternative naming a tool not registered yet: it is resolved when that
//! tool is (a server that came up late), in place, so that routing sees it at once.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::model::breaker::Settings;
use crate::model::capability::ToolSpec;
use crate::model::id::{ToolId, ToolName};
use crate::model::policy::Policy;

/// An alternative naming no registered tool: `u32::MAX` is no tool's index (an expeditor
/// holds fewer tools).
const UNRESOLVED: u32 = u32::MAX;

/// One tool's definition.
#[derive(Debug)]
pub(crate) struct ToolDef {
    /// Its name ([`ToolSpec::shared_name`]): the one copy of the text that ledger lines and
    /// events point at (a `'static` one stays where it is).
    pub(crate) spec: ToolSpec,
    /// One entry per [`ToolSpec::alternatives`], in the same order: the index of the tool it
    /// names, or [`UNRESOLVED`] while it names no tool (never routed to). Kept aligned by
    /// index, so an alternative that names no tool can never shift the others (a misroute).
    /// Written only under the engine's lock, once, from unresolved to an id.
    alternatives: Box<[AtomicU32]>,
    pub(crate) settings: Settings,
    /// Whether the spec's fallback says anything (not empty nor blank): a route, read once.
    pub(crate) fallback_given: bool,
}

impl ToolDef {
    /// Resolves `spec` under `policy`, naming alternatives through `resolve`.
    pub(crate) fn new(
        spec: ToolSpec,
        policy: &Policy,
        resolve: impl Fn(&str) -> Option<ToolId>,
    ) -> Self {
        let alternatives = spec
            .alternatives()
            .iter()
            .map(|a| AtomicU32::new(resolve(a.tool()).map_or(UNRESOLVED, ToolId::index)))
            .collect();
        let settings = Settings {
            threshold: spec.threshold().unwrap_or(policy.threshold()),
            probe_every: spec.probe_every().unwrap_or(policy.probe_every()),
            probe_unit: policy.probe_unit(),
        };
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

    /// Whether the spec names any alternative.
    pub(crate) fn has_alternatives(&self) -> bool {
        !self.alternatives.is_empty()
    }

    /// The tool the `index`th alternative names, if it is registered.
    pub(crate) fn alternative(&self, index: usize) -> Option<ToolId> {
        let id = self.alternatives.get(index)?.load(Ordering::Acquire);
        (id != UNRESOLVED).then(|| ToolId::from_index(id))
    }

    /// The ids of the alternatives that name a tool.
    pub(crate) fn alternative_ids(&self) -> impl Iterator<Item = ToolId> + '_ {
        (0..self.alternatives.len()).filter_map(|i| self.alternative(i))
    }

    /// Resolves the alternatives that named no tool when this one was registered and name
    /// one now; under the engine's lock.
    pub(crate) fn resolve_late(&self, resolve: impl Fn(&str) -> Option<ToolId>) {
        for (slot, alternative) in self.alternatives.iter().zip(self.spec.alternatives()) {
            if slot.load(Ordering::Acquire) == UNRESOLVED
                && let Some(id) = resolve(alternative.tool())
            {
                slot.store(id.index(), Ordering::Release);
            }
        }
    }
}
