//! A fleet store on Redis (B11, feature `redis`): tool health shared by every worker
//! that attaches a [`RedisFleet`] on the same namespace.
//!
//! ```no_run
//! # async fn run(map: agent_circuit_breaker::CapabilityMap) -> Result<(), Box<dyn std::error::Error>> {
//! use agent_circuit_breaker::Expeditor;
//! use agent_circuit_breaker::redis::RedisFleet;
//!
//! let fleet = RedisFleet::connect("redis://127.0.0.1:6379", "agents")
//!     .worker("w-1")
//!     .await?;
//! let expeditor = Expeditor::builder(map).fleet(fleet).build()?;
//! # drop(expeditor); Ok(()) }
//! ```
//!
//! For a `#[toolbox]`: `Guarded::with_expeditor(toolbox, |b| b.fleet(fleet))`.
//!
//! # What it does
//! The store owns one tokio task (spawned on the runtime [`RedisFleet::connect`] was awaited
//! on). Decisions never wait on it: [`FleetStore::share`] only pushes the transitions into an
//! unbounded channel. The task, every poll interval and whenever transitions are queued:
//!
//! 1. writes the queued transitions (one Lua script per transition, atomic in Redis);
//! 2. reads, in one round trip (one `MGET`), the open key and the closed marker of every
//!    tool of the map and the systemic key, and applies what changed through the
//!    [`FleetLink`]: a new open key written by another worker → the tool is OPEN here
//!    ([`FleetLink::open`]); an open key gone, with a closed marker of another worker → closed
//!    by that worker's probe ([`FleetLink::cleared`] with `true`); gone without one → expired
//!    (`false`); a systemic event not seen before → paused here too, once per event id;
//! 3. for every shared circuit whose probe is due here ([`FleetLink::probes_wanted`]), tries
//!    to take the fleet's probe lease (`SET NX PX`, a random token; a value there without
//!    an expiry is no lease and is removed first); the worker that wins it
//!    probes, the others keep skipping. The lease is released by compare-and-delete (only if
//!    it still holds our token) when the probe ends or closes the circuit; a lease whose
//!    holder died expires after the lease TTL, and another worker probes then.
//!
//! One `RedisFleet` (and its clones) serves one expeditor: a second
//! [`attach`] is ignored, with a warning in the log. Connect once per
//! expeditor. The task ends when the expeditor is dropped (within one poll interval), giving
//! back any probe lease it holds.
//!
//! # Key layout
//! Every key is under `{namespace}:v1:`, so that a fleet on another layout version (`v2`)
//! never reads ours, and we never read theirs:
//!
//! | key | value | expiry |
//! |---|---|---|
//! | `open:{tool}` | JSON `{"v":1,"worker","message","category","at_ms"}` | open TTL (default 30 s), renewed when the circuit opens again (a failed probe) |
//! | `closed:{tool}` | JSON `{"v":1,"worker","at_ms"}`: a probe closed it (the open key is deleted) | 3 × poll interval |
//! | `probe:{tool}` | the lease holder's token | probe lease TTL (default 10 s) |
//! | `seen:{tool}` | set of the workers that saw it open (quorum only) | open TTL |
//! | `systemic` | JSON `{"v":1,"id","worker","pattern","cause","tools","category"}` | open TTL |
//!
//! The expiry of the open key ends the shared OPEN state: a worker that opened a circuit and
//! then died does not keep the fleet off the tool for longer than the open TTL. With a
//! quorum of N ([`RedisFleetBuilder::quorum`]), a worker that opens a circuit adds itself to
//! `seen:{tool}` and the open key is written only once N distinct workers are in it.
//!
//! Store contents are never trusted: a value that is not our JSON, of another version, or
//! larger than 64 KiB is logged (`tracing`, warn) and ignored as if absent; nothing in the
//! store can make a worker panic.
//!
//! # Consistency
//! Decisions are local and the store is eventually consistent: a transition reaches every
//! other worker within **poll interval + op timeout + one round trip** (default
//! 1 s + 250 ms + RTT) while Redis answers. Between two polls a worker may still call a tool
//! another worker just opened (at most what it calls in one interval). The probe is single
//! fleet-wide while Redis answers and a probe lasts less than the lease TTL; while Redis is
//! unreachable every worker probes on its own breaker.
//!
//! # Store faults
//! Every Redis operation runs under the op timeout (default 250 ms). An error or timeout
//! makes the worker decide on local state alone ([`FleetLink::unreachable`]: a
//! `StoreUnavailable` event, a line of the state table), keeps the queued transitions (the
//! latest per tool: bounded by the map) and tries again every poll interval; when Redis
//! answers again, [`FleetLink::reachable`] (`StoreRestored`; what opened here meanwhile is
//! published again) and the queue is written. Nothing recorded locally is lost: the local
//! breakers and budget never depend on the store.
//!
//! [`attach`]: crate::expeditor::FleetStore::attach
//! [`FleetStore::share`]: crate::expeditor::FleetStore::share
//! [`FleetLink`]: crate::expeditor::FleetLink
//! [`FleetLink::open`]: crate::expeditor::FleetLink::open
//! [`FleetLink::cleared`]: crate::expeditor::FleetLink::cleared
//! [`FleetLink::probes_wanted`]: crate::expeditor::FleetLink::probes_wanted
//! [`FleetLink::unreachable`]: crate::expeditor::FleetLink::unreachable
//! [`FleetLink::reachable`]: crate::expeditor::FleetLink::reachable

mod keys;
mod lease;
mod read;
mod store;
mod task;
mod write;

pub use store::{RedisFleet, RedisFleetBuilder, RedisFleetError};

/// The `redis` crate this store is built on, for a program's own Redis commands (a task
/// queue, say) on the same version.
pub use ::redis;

/// The layout version of every key (`{namespace}:v2:…`).
pub const LAYOUT: &str = "v2";
