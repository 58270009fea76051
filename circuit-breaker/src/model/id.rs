//! Tool ids: the lowest layer, named by every other module (R2.4: tools known in
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

/// A tool's name as records keep it: shared, so that writing it down (a ledger line, an
/// event) copies a pointer, never the text. Reads as a `&str` ([`as_str`](Self::as_str),
/// `Deref`), compares with strings, and serializes as one.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ToolName(std::sync::Arc<str>);

impl ToolName {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for ToolName {
    fn from(name: &str) -> Self {
        ToolName(std::sync::Arc::from(name))
    }
}

impl From<String> for ToolName {
    fn from(name: String) -> Self {
        ToolName(std::sync::Arc::from(name))
    }
}

impl std::ops::Deref for ToolName {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for ToolName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for ToolName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for ToolName {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for ToolName {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<String> for ToolName {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<ToolName> for str {
    fn eq(&self, other: &ToolName) -> bool {
        *self == *other.0
    }
}

impl PartialEq<ToolName> for &str {
    fn eq(&self, other: &ToolName) -> bool {
        **self == *other.0
    }
}

impl Serialize for ToolName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for ToolName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(ToolName::from(&*name))
    }
}
