//! Tool ids: the lowest layer, named by every other module (SPEC R2.4: tools known in
//! advance and discovered at run time share one numbering).

use serde::{Deserialize, Serialize};

/// A tool known to an [`Expeditor`](crate::Expeditor): its position in registration order (the capability
/// map's order, then tools discovered at run time).
///
/// Get one from [`Expeditor::tool`](crate::Expeditor::tool) or [`Expeditor::discover`](crate::Expeditor::discover); a `#[toolbox]` enum converts
/// to it directly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ToolId(pub(crate) u32);

impl ToolId {
    /// The id of the tool at `index` in registration order. An id that names no tool of an
    /// expeditor is not an error: deciding on it gives a SKIP to scope reduction.
    pub const fn from_index(index: u32) -> Self {
        ToolId(index)
    }

    /// The position in registration order.
    pub const fn index(self) -> u32 {
        self.0
    }
}
