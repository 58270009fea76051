//! The circuit-breaker pattern for an AI agent's tool calls.
//!
//! An agent that calls five tools, one of them broken, should not fail. This crate notices the
//! broken tool (consecutive failures open its circuit), stops calling it, routes to what still
//! works (an alternative tool, ranked by what it loses, or the manual fallback), reduces the
//! scope to the sub-tasks that can still be done, labels stale or unverified data, and reports
//! honestly what was skipped: a state table, a scope report, a failure budget that pauses the
//! run, and short notes for a model that never invite a retry.
//!
//! The [`Expeditor`] decides — [`Decision::Call`], [`Decision::Probe`], [`Decision::Skip`]
//! with a [`Route`], or [`Decision::Pause`] — and never calls a tool itself. The executor
//! calls: the guarded handle [`#[toolbox]`](macro@toolbox) generates, the JSON dispatcher, or
//! your own agent loop, which reports each outcome back through the ticket it was given.
//!
//! # Example
//!
//! Annotate the tool methods of an impl block. The macros build the capability map, an enum
//! of the tools (`WorkspaceTool`) and a guarded handle (`GuardedWorkspace`) at compile time,
//! and refuse to compile a tool without a `fallback`.
//!
//! ```
//! use agent_circuit_breaker::{CircuitState, toolbox};
//! use std::io;
//!
//! struct Workspace;
//!
//! #[toolbox]
//! impl Workspace {
//!     #[tool(
//!         provides = "content search across files",
//!         alternatives(bash(
//!             method = "rg or grep command",
//!             degradation = "loses Grep's built-in output formatting",
//!             via = grep_with_rg,
//!         )),
//!         fallback = "ask the user which files to examine",
//!     )]
//!     fn grep(&self, _pattern: &str) -> io::Result<Vec<String>> {
//!         Err(io::ErrorKind::PermissionDenied.into()) // broken
//!     }
//!
//!     /// Grep's goal reached through Bash.
//!     fn grep_with_rg(&self, pattern: &str) -> io::Result<Vec<String>> {
//!         Ok(self.bash(&format!("rg -l {pattern}"))?.lines().map(String::from).collect())
//!     }
//!
//!     #[tool(provides = "command execution", fallback = "report commands to run by hand")]
//!     fn bash(&self, _command: &str) -> io::Result<String> {
//!         Ok("config.toml".into())
//!     }
//! }
//!
//! let tools = GuardedWorkspace::new(Workspace);
//! for _ in 0..3 {
//!     assert!(tools.grep("API_KEY").is_err()); // the tool's own error, untouched
//! }
//! assert_eq!(tools.expeditor().state(WorkspaceTool::Grep), Some(CircuitState::Open));
//!
//! // Grep is not called again: Bash stands in, and the answer says what was lost.
//! let hits = tools.grep("API_KEY")?;
//! assert_eq!(hits.value, ["config.toml"]);
//! let route = hits.route().expect("routed around grep");
//! assert_eq!(route.degradation.as_deref(), Some("loses Grep's built-in output formatting"));
//!
//! println!("{}", tools.expeditor().state_table()); // every circuit, and the failure budget
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Each guarded method returns `Result<Routed<T>, CallError<E>>` ([`outcome::Outcome`]): the
//! value with the route taken ([`Routed`]), or the tool's own error untouched, or a
//! [`Refusal`] that says why nothing was called ([`CallError`]). Sync tools need no async
//! runtime; async tools need none chosen by this crate.
//!
//! # The names you write
//!
//! - [`toolbox`](macro@toolbox) and [`tool`](macro@tool): the attributes. Per toolbox they
//!   generate `<Type>Tool` (an enum of the tools, see [`toolbox::ToolSet`]) and
//!   `Guarded<Type>` (the guarded handle).
//! - A map built or loaded at run time: [`CapabilityMap`], [`ToolSpec`], [`AlternativeSpec`],
//!   [`Degradation`], [`ServerSpec`]; the settings: [`Policy`].
//! - Driving the expeditor by hand: [`Expeditor::decide`] gives a [`Decision`]; the ticket of
//!   a call records its outcome as a [`Failure`] (with its [`FailureCategory`] and [`Blame`],
//!   from your error types through [`Classify`]); a skip says why ([`SkipReason`]) and where
//!   to go ([`Route`]), a pause why ([`PauseReason`]); [`Availability`] is a pre-call check's
//!   answer, [`CircuitState`] a tool's state, [`Task`] the sub-tasks of a scope report.
//!
//! The rest sits in one module per concern: [`expeditor`] (tickets, the builder, tool ids),
//! [`report`] (state table, pause report, budget and ledger, notes for a model), [`scope`],
//! [`route`], [`freshness`], [`snapshot`], [`clock`], [`event`], [`policy`], [`capability`],
//! [`failure`], [`toolbox`](mod@toolbox), [`telemetry`] (the `execute_tool` span every
//! guarded call runs in) and [`fleet`] (tool health shared by workers).
//!
//! # Features
//!
//! | feature | adds | module |
//! |---|---|---|
//! | `json` (default) | tools called by name with JSON arguments and a JSON Schema each (`#[toolbox(json)]`), in the shapes of OpenAI, Anthropic and Gemini, with call ids; snapshot files | [`dispatch`] |
//! | `mcp` | a guarded toolbox as an MCP server, and the tools of MCP servers guarded as a client (rmcp) | [`mcp`] |
//! | `rig` | guarded tools as rig tools, the offer as rig's per-request tool list | [`rig`] |
//! | `redis` | a fleet store on Redis: tool health shared by a fleet of workers | [`redis`] |
//! | `redis-tls` | the fleet store over TLS (`rediss://`, rustls) | [`redis`] |
//! | `otel` | OpenTelemetry metrics, read from the `execute_tool` spans and the expeditors | [`otel`] |
//!
//! A parameter of a `#[toolbox(json)]` tool whose type is your own needs serde's
//! `Deserialize` and schemars' `JsonSchema`. schemars needs no dependency of your own: bring
//! the runtime's into scope with `use agent_circuit_breaker::schemars;` and derive
//! `schemars::JsonSchema` as usual (the derive finds `schemars` where it is written):
//!
//! ```
//! use agent_circuit_breaker::schemars;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Query {
//!     text: String,
//! }
//! ```
//!
//! # Further reading
//!
//! The repository's `docs/` folder has the attribute grammar (`attributes.md`), a guide per
//! topic (`guide.md`, `mcp.md`, `services.md`, `fleet.md`, `telemetry.md`), real runs of the
//! examples (`transcripts.md`), the layers (`architecture.md`) and the numbered requirements
//! cited across these docs as R1–R10 and B1–B18 (`requirements.md`).
//!
#![cfg_attr(
    not(feature = "json"),
    doc = "[`dispatch`]: https://docs.rs/agent-circuit-breaker/latest/agent_circuit_breaker/dispatch/"
)]
#![cfg_attr(
    not(feature = "mcp"),
    doc = "[`mcp`]: https://docs.rs/agent-circuit-breaker/latest/agent_circuit_breaker/mcp/"
)]
#![cfg_attr(
    not(feature = "rig"),
    doc = "[`rig`]: https://docs.rs/agent-circuit-breaker/latest/agent_circuit_breaker/rig/"
)]
#![cfg_attr(
    not(feature = "redis"),
    doc = "[`redis`]: https://docs.rs/agent-circuit-breaker/latest/agent_circuit_breaker/redis/"
)]
#![cfg_attr(
    not(feature = "otel"),
    doc = "[`otel`]: https://docs.rs/agent-circuit-breaker/latest/agent_circuit_breaker/otel/"
)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::pedantic)]
#![allow(clippy::module_name_repetitions, clippy::must_use_candidate)]

// The layers, from the bottom up: each names only the layers before it in this list (the
// folders follow them; `tests/layout.rs` checks it).

// Plain data: ids, the clocks, the policy, failures, the capability map, events, one tool's
// breaker, the budget and its ledger, cascades, freshness, scope, routes, snapshots, pre-call
// checks, what a fleet shares.
mod model;
#[doc(inline)]
pub use model::{
    capability, clock, event, failure, fleet, freshness, policy, route, scope, snapshot,
};

// The state machine as one plain value: no lock, no atomic.
mod engine;

// The reports, built from one view of the state; the `execute_tool` span calls record into.
pub mod report;
pub mod telemetry;

// The engine's thread-safe shell: it decides and remembers, and never calls a tool.
pub mod expeditor;

// What calls tools: what a guarded call returns, the one call to make, the trait of a
// toolbox's tool enum, the dispatcher by name and JSON arguments.
mod executor;
#[cfg(feature = "json")]
#[doc(inline)]
pub use executor::dispatch;
#[doc(inline)]
pub use executor::outcome;
#[doc(inline)]
pub use executor::toolbox;

// The adapters at the edge, each behind its own feature.
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "otel")]
pub mod otel;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "rig")]
pub mod rig;

// The names most code writes, at the root (the crate documentation above lists them).
pub use agent_circuit_breaker_macros::{tool, toolbox};

// The schemars this crate builds JSON Schemas with, so that the argument types of
// `#[toolbox(json)]` tools derive `JsonSchema` with no dependency of their own (`use
// agent_circuit_breaker::schemars;`, then `#[derive(schemars::JsonSchema)]`; the crate docs
// above say so). A hidden module rather than a `pub use` of the crate: through a visible path,
// rustc would name serde_json's types in compile errors by schemars' internal module
// (`agent_circuit_breaker::schemars::_private::serde_json::..`).
#[cfg(feature = "json")]
#[doc(hidden)]
pub mod schemars {
    //! schemars 1, re-exported for the argument types of `#[toolbox(json)]` tools.
    pub use ::schemars::*;
}

#[doc(no_inline)]
pub use capability::{AlternativeSpec, CapabilityMap, Degradation, ServerSpec, ToolSpec};
pub use executor::{CallError, Refusal, Routed};
pub use expeditor::{Decision, Expeditor, PauseReason, SkipReason};
#[doc(no_inline)]
pub use failure::{Blame, Classify, Failure, FailureCategory};
#[doc(inline)]
pub use model::breaker::CircuitState;
#[doc(inline)]
pub use model::precheck::Availability;
#[doc(no_inline)]
pub use policy::Policy;
#[doc(no_inline)]
pub use route::Route;
#[doc(no_inline)]
pub use scope::Task;

// Hidden, above every layer: what the code `#[toolbox]` generates calls, and the model-based
// test of the engine.

/// Support for the code `#[toolbox]` generates. Not a public API: it may change in any
/// release. Its name carries the release line, and the macro crate names it from one
/// constant (`PRIVATE_MODULE`): the two are released together, pinned to each other.
#[doc(hidden)]
#[path = "__private.rs"]
pub mod __private_v0_1;

#[cfg(test)]
mod model_test;

/// The Rust examples of the README and of `docs/`, compiled and run as doctests. The paths
/// stay inside the package: `circuit-breaker/README.md` and `circuit-breaker/docs` are links
/// to the workspace's `README.md` and `docs/`.
#[cfg(doctest)]
mod doc_examples {
    #[doc = include_str!("../README.md")]
    pub struct Readme;
    #[doc = include_str!("../docs/attributes.md")]
    pub struct Attributes;
    #[doc = include_str!("../docs/guide.md")]
    pub struct Guide;
    #[doc = include_str!("../docs/mcp.md")]
    pub struct Mcp;
    #[doc = include_str!("../docs/services.md")]
    pub struct Services;
    #[doc = include_str!("../docs/fleet.md")]
    pub struct Fleet;
    #[doc = include_str!("../docs/telemetry.md")]
    pub struct Telemetry;
}
