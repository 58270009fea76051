//! Called by name with JSON arguments, as a model calls tools; and through rig (B8).
//!
//! One test binary for the area; each file is one module (its tests are named after it),
//! public so that what a file declares for its own use counts as used, as at a crate root.

// Each file keeps the shared fixtures (`common/`) it declared as a binary of its own: they are
// compiled once per file here, which costs seconds, not the rewrite of every file.
#![allow(clippy::duplicate_mod)]

#[path = "b18_model_apis.rs"]
pub mod b18_model_apis;
#[path = "b8_dispatch.rs"]
pub mod b8_dispatch;
#[path = "b8_rig.rs"]
pub mod b8_rig;
