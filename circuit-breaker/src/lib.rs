#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::pedantic)]
#![allow(clippy::module_name_repetitions, clippy::must_use_candidate)]

//! # Layout
//!
//! The crate root holds the names you write; the modules hold the rest, one concern each.
//! The expeditor decides; it never calls tools (R8). Dependencies run one way:
//!
//! - ids, the map and the policy: [`capability`], [`policy`], [`failure`], [`clock`]
//! - one concern each, plain data: breakers, budget and ledger, cascades, pre-call checks,
//!   [`freshness`], [`scope`], [`route`], [`snapshot`], [`event`]
//! - the engine: the whole state machine as one plain value, no locks inside
//! - the mirror: what the lock-free paths read, written only by the expeditor's `publish`
//! - [`expeditor`]: the thread-safe shell and its whole public API, in one file
//! - [`report`]: state table, pause report, the offer and the notes for a model, read from
//!   one view of the engine
//! - the executor's side of the line: [`Routed`], [`CallError`], [`Refusal`] (what a guarded
//!   call returns) and [`toolbox`](mod@toolbox) (the trait of the enum `#[toolbox]` generates)
//! - [`telemetry`]: the `execute_tool` span every guarded call runs in, by the OpenTelemetry
//!   GenAI conventions, through `tracing` (B12); with feature `otel`, `otel` reads the spans
//!   and the expeditor into OpenTelemetry metrics

mod breaker;
mod budget;
pub mod capability;
mod cascade;
pub mod clock;
#[cfg(feature = "json")]
pub mod dispatch;
mod engine;
pub mod event;
mod executor;
pub mod expeditor;
pub mod failure;
pub mod fleet;
pub mod freshness;
mod group;
mod id;
#[cfg(feature = "mcp")]
pub mod mcp;
mod mirror;
#[cfg(feature = "otel")]
pub mod otel;
pub mod policy;
mod precheck;
#[cfg(feature = "redis")]
pub mod redis;
mod registry;
pub mod report;
#[cfg(feature = "rig")]
pub mod rig;
pub mod route;
pub mod scope;
mod signal;
pub mod snapshot;
mod sync;
pub mod telemetry;
mod timer;
pub mod toolbox;

pub use agent_circuit_breaker_macros::{tool, toolbox};

pub use breaker::CircuitState;
pub use capability::{AlternativeSpec, CapabilityMap, Degradation, ServerSpec, ToolSpec};
pub use executor::{CallError, Refusal, Routed};
pub use expeditor::{Decision, Expeditor, PauseReason, SkipReason};
pub use failure::{Blame, Classify, Failure, FailureCategory};
pub use policy::Policy;
pub use precheck::Availability;
pub use route::Route;
pub use scope::Task;

/// Support for the code `#[toolbox]` generates. Not a public API: it may change in any
/// release.
#[doc(hidden)]
pub mod __private;

#[doc(hidden)]
pub mod __engine;
