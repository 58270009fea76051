//! Hostile input: maps, snapshots, configs and store contents that are wrong in every way give
//! error values, never panics.
//!
//! One test binary for the area; each file is one module (its tests are named after it),
//! public so that what a file declares for its own use counts as used, as at a crate root.

// Each file keeps the shared fixtures (`common/`) it declared as a binary of its own: they are
// compiled once per file here, which costs seconds, not the rewrite of every file.
#![allow(clippy::duplicate_mod)]

#[path = "hostile_input.rs"]
pub mod hostile_input;
