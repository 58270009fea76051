//! Reports, events, snapshots, the notes for a model and the documented real runs (R2.3, R5.2,
//! R7.3, B3, B4, B7).
//!
//! One test binary for the area; each file is one module (its tests are named after it),
//! public so that what a file declares for its own use counts as used, as at a crate root.

// Each file keeps the shared fixtures (`common/`) it declared as a binary of its own: they are
// compiled once per file here, which costs seconds, not the rewrite of every file.
#![allow(clippy::duplicate_mod)]

#[path = "b3_serde_snapshot.rs"]
pub mod b3_serde_snapshot;
#[path = "b4_events.rs"]
pub mod b4_events;
#[path = "b7_model_text.rs"]
pub mod b7_model_text;
#[path = "durable_snapshot.rs"]
pub mod durable_snapshot;
#[path = "readme_output.rs"]
pub mod readme_output;
