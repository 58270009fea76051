//! Telemetry: events through tracing, execute_tool spans, OpenTelemetry metrics, the live view
//! (B4, B12).
//!
//! One test binary for the area; each file is one module (its tests are named after it),
//! public so that what a file declares for its own use counts as used, as at a crate root.

// Each file keeps the shared fixtures (`common/`) it declared as a binary of its own: they are
// compiled once per file here, which costs seconds, not the rewrite of every file.
#![allow(clippy::duplicate_mod)]

#[path = "b12_mcp_spans.rs"]
pub mod b12_mcp_spans;
#[path = "b12_otel.rs"]
pub mod b12_otel;
#[path = "b12_otel_sync.rs"]
pub mod b12_otel_sync;
#[path = "b12_spans.rs"]
pub mod b12_spans;
#[path = "b12_telemetry_example.rs"]
pub mod b12_telemetry_example;
#[path = "b12_watch.rs"]
pub mod b12_watch;
#[path = "b18_call_ids.rs"]
pub mod b18_call_ids;
#[path = "b4_tracing.rs"]
pub mod b4_tracing;
