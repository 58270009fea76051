//! The guard proxy (B17), run as the real binary in front of real upstream MCP servers (this
//! binary run again, `upstream.rs`) and driven by a real rmcp client over its stdio.
//!
//! One test binary; each file is one module, public so that what a file declares for the
//! others counts as used.

#[path = "b17_check.rs"]
pub mod b17_check;
#[path = "b17_guard.rs"]
pub mod b17_guard;
#[path = "b17_http.rs"]
pub mod b17_http;
#[path = "b17_latency.rs"]
pub mod b17_latency;
#[cfg(feature = "otel")]
#[path = "b17_otel.rs"]
pub mod b17_otel;
#[path = "b17_pass_through.rs"]
pub mod b17_pass_through;
#[path = "b17_relay.rs"]
pub mod b17_relay;
#[path = "b17_startup.rs"]
pub mod b17_startup;
#[path = "common.rs"]
pub mod common;
#[path = "upstream.rs"]
pub mod upstream;
