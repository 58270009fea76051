//! The expeditor's tools: by name and id, their specs, the capability map as it stands, and
//! tools discovered at run time (R2.4, B6).

use super::Expeditor;
use crate::model::capability::{CapabilityMap, MapErrors, ToolSpec};
use crate::model::id::ToolId;

impl Expeditor {
    /// The id of the tool named `name`, if known.
    pub fn tool(&self, name: &str) -> Option<ToolId> {
        self.lock().id(name)
    }

    /// The name of a tool.
    pub fn tool_name(&self, tool: impl Into<ToolId>) -> Option<&str> {
        self.spec(tool.into()).map(ToolSpec::name)
    }

    /// A tool's spec, read from the lock-free mirror: O(1), no lock, no clone (a refusal's
    /// text renders its route from it).
    pub(crate) fn spec(&self, tool: ToolId) -> Option<&ToolSpec> {
        self.inner.mirror.get(tool).map(|s| &s.def.spec)
    }

    /// Registers a tool found at run time (R2.4, B6), given as a [`ToolSpec`] or the builder
    /// that makes one, checked like a map entry (R1.4): its alternatives must name known
    /// tools. It starts CLOSED. Registering a name already known returns its id unchanged when
    /// the spec is the same.
    ///
    /// # Errors
    /// [`MapErrors`] with every problem of the spec, including a different spec under a
    /// known name.
    pub fn discover(&self, spec: impl Into<ToolSpec>) -> Result<ToolId, MapErrors> {
        let spec = spec.into();
        self.command(|engine, changes, _| engine.discover(spec, changes))
    }

    /// Every registered tool, in registration order.
    pub fn tools(&self) -> impl Iterator<Item = ToolId> + '_ {
        let n = u32::try_from(self.lock().len()).unwrap_or(u32::MAX);
        (0..n).map(ToolId::from_index)
    }

    /// The capability map as it stands: the declared tools and those discovered since.
    pub fn capability_map(&self) -> CapabilityMap {
        self.tools()
            .filter_map(|id| self.inner.mirror.get(id))
            .fold(CapabilityMap::new(), |map, slot| {
                map.tool(slot.def.spec.clone())
            })
    }

    /// Tools with no alternative (R1.3).
    pub fn is_critical(&self, tool: impl Into<ToolId>) -> Option<bool> {
        self.inner
            .mirror
            .get(tool.into())
            .map(|s| s.def.spec.is_critical())
    }

    /// Whether `tool` is declared as caching (R6.2).
    pub fn is_caching(&self, tool: impl Into<ToolId>) -> bool {
        self.inner
            .mirror
            .get(tool.into())
            .is_some_and(|s| s.def.spec.is_caching())
    }
}
