//! MCP: the server and the client, with rmcp, the official Python SDK's client and child processes
//! (B9, B10), over streamable HTTP too, and the official conformance suite through the guard
//! (B17).
//!
//! One test binary for the area; each file is one module (its tests are named after it),
//! public so that what a file declares for its own use counts as used, as at a crate root.

// Each file keeps the shared fixtures (`common/`) it declared as a binary of its own: they are
// compiled once per file here, which costs seconds, not the rewrite of every file.
#![allow(clippy::duplicate_mod)]

#[path = "b10_mcp_agent.rs"]
pub mod b10_mcp_agent;
#[path = "b10_mcp_client.rs"]
pub mod b10_mcp_client;
#[path = "b10_servers.rs"]
pub mod b10_servers;
#[path = "b17_arguments.rs"]
pub mod b17_arguments;
#[path = "b17_conformance.rs"]
pub mod b17_conformance;
#[path = "b17_http.rs"]
pub mod b17_http;
#[path = "b17_protocol.rs"]
pub mod b17_protocol;
#[path = "b18_model_loop.rs"]
pub mod b18_model_loop;
#[path = "b9_example_servers.rs"]
pub mod b9_example_servers;
#[path = "b9_mcp.rs"]
pub mod b9_mcp;
#[path = "b9_python_client.rs"]
pub mod b9_python_client;
