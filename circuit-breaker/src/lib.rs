#![doc = include_str!("../../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![warn(clippy::pedantic)]
#![allow(clippy::module_name_repetitions, clippy::must_use_candidate)]

//! # Layout
//!
//! The modules follow the seed's words. The expeditor decides; it never calls tools:
//!
//! - decision layer (no tool API, no tool error type, R8): [`capability`], [`policy`],
//!   [`breaker`], [`expeditor`], [`route`], [`budget`], [`scope`], [`freshness`],
//!   [`cascade`], [`precheck`], [`clock`], [`event`], [`report`], [`snapshot`]
//! - the executor's side of the line: [`executor`] (what a guarded call returns, and the plan
//!   of the one call to make), [`failure`] (a tool's error turned into data), [`toolbox`](mod@toolbox)
//!   (the trait of the enum `#[toolbox]` generates)

pub mod breaker;
pub mod budget;
pub mod capability;
pub mod cascade;
pub mod clock;
mod engine;
pub mod event;
pub mod expeditor;
pub mod failure;
pub mod freshness;
mod id;
mod mirror;
pub mod policy;
pub mod precheck;
mod registry;
pub mod report;
pub mod route;
pub mod scope;
pub mod snapshot;
mod sync;

pub use circuit_breaker_macros::{tool, toolbox};

pub use breaker::{BreakerRecord, CircuitState, FailureMark, SuccessMark};
pub use budget::{Budget, BudgetStatus, LedgerEntry};
pub use capability::{
    AlternativeSpec, CapabilityMap, Degradation, MapError, MapErrors, Severity, ToolSpec,
    UNKNOWN_DEGRADATION,
};
pub use cascade::SystemicEvent;
pub use clock::{ManualClock, SystemClock, Timestamp, WallClock};
pub use event::{Event, Observer};
pub use expeditor::{
    Decision, Expeditor, ExpeditorBuilder, PANICKED, Pause, PauseReason, Recorded, Skip,
    SkipReason, Ticket, ToolId,
};
pub use failure::{Classify, Failure, FailureCategory};
pub use freshness::{
    Dated, Freshness, FreshnessProfile, Labelled, Observation, StaleCache, digest,
};
pub use policy::{Policy, PolicyBuilder, PolicyError, PolicyProblem, ProbeUnit};
pub use precheck::Availability;
pub use report::{ModelNote, PauseReport, StateRow, StateTable, ToolHealth, ToolOffer, WorkLine};
pub use route::{AlternativeRoute, Route, RouteKind, RouteTaken, Routes};
pub use scope::{
    Deferral, ScopeError, ScopeLine, ScopeReport, SubTask, Task, ToolStanding, WorkStatus,
};
#[cfg(feature = "json")]
pub use snapshot::SnapshotFileError;
pub use snapshot::{RestoreError, SNAPSHOT_FORMAT, SNAPSHOT_VERSION, Snapshot, ToolSnapshot};
pub mod executor;
pub mod toolbox;

pub use executor::{
    CallError, Freshen, Plan, Refusal, Routed, finish, finish_fresh, keep_last_good, plan,
    plan_direct, serve_stale,
};
pub use toolbox::{ToolSet, UnknownTool};

/// Support for the code `#[toolbox]` generates. Not a public API: it may change in any
/// release.
#[doc(hidden)]
pub mod __private;

/// The engine behind a plain driver, for the model-based test only. Not a public API.
#[doc(hidden)]
pub mod __engine;
