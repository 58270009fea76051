//! The attribute macros at run time: the generated map, policies, handles and async tools (B1,
//! B2). Every user mistake as a compile error is the macro crate's own test
//! (`circuit-breaker-macros/tests/ui.rs`).
//!
//! One test binary for the area; each file is one module (its tests are named after it),
//! public so that what a file declares for its own use counts as used, as at a crate root.

// Each file keeps the shared fixtures (`common/`) it declared as a binary of its own: they are
// compiled once per file here, which costs seconds, not the rewrite of every file.
#![allow(clippy::duplicate_mod)]

#[path = "macro_async.rs"]
pub mod macro_async;
#[path = "macro_capability_map.rs"]
pub mod macro_capability_map;
#[path = "macro_handles.rs"]
pub mod macro_handles;
#[path = "macro_policy_defaults.rs"]
pub mod macro_policy_defaults;
