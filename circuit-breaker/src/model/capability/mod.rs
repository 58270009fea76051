//! The capability map (step 1 of the source document, R1): what each tool provides, which other tools can
//! stand in for it (with the method used and the degradation accepted), and the manual
//! fallback when none can.
//!
//! A map is plain data. It can be written as a `static` (the `#[toolbox]` macro does that),
//! built at run time with [`ToolSpec::new`] (a builder), or loaded with serde in the source document's YAML shape
//! (`capability_map: [ { tool, provides, alternatives: [ { tool, method, degradation } ],
//! fallback } ]`). [`CapabilityMap::validate`] checks it (R1.4) and returns every problem at
//! once as an error value; nothing here panics on bad input.

use std::borrow::Cow;

mod alternative;
mod check;
mod degradation;
pub(crate) mod encoded;
mod map;
pub(crate) mod static_tool;
mod timeout;
mod tool;
mod wire;

pub use alternative::{AlternativeSpec, AlternativeSpecBuilder};
pub(crate) use check::check_tool;
pub use check::{MapError, MapErrors, did_you_mean};
pub use degradation::{Degradation, Severity, UNKNOWN_DEGRADATION};
pub use map::{CapabilityMap, ServerSpec};
pub use timeout::{MAX_TIMEOUT, MIN_TIMEOUT, timeout_problem};
pub use tool::{ToolSpec, ToolSpecBuilder};

/// Text that is `'static` in a generated map and owned in a map built or loaded at run time.
pub type Text = Cow<'static, str>;
