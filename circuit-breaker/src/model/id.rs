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

/// A tool's name as records keep it: a `'static` text as given, or shared text, so that
/// writing it down (a ledger line, an event) copies a pointer, never the text, and a
/// `'static` name (a generated map's, a spec built from a literal) touches no reference
/// count. Reads as a `&str` ([`as_str`](Self::as_str), `Deref`), compares, orders and hashes
/// as its text, and serializes as one.
#[derive(Clone)]
pub struct ToolName(Repr);

#[derive(Clone)]
enum Repr {
    Static(&'static str),
    Shared(std::sync::Arc<str>),
}

impl ToolName {
    /// The name.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Static(name) => name,
            Repr::Shared(name) => name,
        }
    }

    /// A `'static` name, kept as given.
    pub(crate) const fn from_static(name: &'static str) -> Self {
        ToolName(Repr::Static(name))
    }
}

impl From<&str> for ToolName {
    fn from(name: &str) -> Self {
        ToolName(Repr::Shared(std::sync::Arc::from(name)))
    }
}

impl From<String> for ToolName {
    fn from(name: String) -> Self {
        ToolName(Repr::Shared(std::sync::Arc::from(name)))
    }
}

impl std::ops::Deref for ToolName {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for ToolName {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for ToolName {}

impl PartialOrd for ToolName {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ToolName {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl std::hash::Hash for ToolName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl AsRef<str> for ToolName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for ToolName {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Debug for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for ToolName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for ToolName {
    fn eq(&self, other: &str) -> bool {
        *self.as_str() == *other
    }
}

impl PartialEq<&str> for ToolName {
    fn eq(&self, other: &&str) -> bool {
        *self.as_str() == **other
    }
}

impl PartialEq<String> for ToolName {
    fn eq(&self, other: &String) -> bool {
        *self.as_str() == **other
    }
}

impl PartialEq<ToolName> for str {
    fn eq(&self, other: &ToolName) -> bool {
        *self == *other.as_str()
    }
}

impl PartialEq<ToolName> for &str {
    fn eq(&self, other: &ToolName) -> bool {
        **self == *other.as_str()
    }
}

impl Serialize for ToolName {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ToolName {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Ok(ToolName::from(&*name))
    }
}
