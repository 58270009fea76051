//! The capability map, routes, scope reduction and freshness (R1, R4, R5, R6, B6).
//!
//! One test binary for the area; each file is one module (its tests are named after it),
//! public so that what a file declares for its own use counts as used, as at a crate root.

// Each file keeps the shared fixtures (`common/`) it declared as a binary of its own: they are
// compiled once per file here, which costs seconds, not the rewrite of every file.
#![allow(clippy::duplicate_mod)]

#[path = "b6_yaml_map.rs"]
pub mod b6_yaml_map;
#[path = "r1_capability_map.rs"]
pub mod r1_capability_map;
#[path = "r4_routing.rs"]
pub mod r4_routing;
#[path = "r5_scope.rs"]
pub mod r5_scope;
#[path = "r5_typed_subtasks.rs"]
pub mod r5_typed_subtasks;
#[path = "r6_freshness.rs"]
pub mod r6_freshness;
#[path = "r6_freshness_source.rs"]
pub mod r6_freshness_source;
