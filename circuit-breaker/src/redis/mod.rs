//! A fleet store on Redis (B11, B16, feature `redis`): tool health shared by every worker
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
//! on). Decisions never wait on it: [`FleetStore::share`] stamps the transitions with the
//! system clock and pushes them into an unbounded channel. The task, every poll interval and
//! whenever transitions are queued:
//!
//! 1. writes the queued transitions, each through one Lua script that writes it only if it is
//!    newer than what the key holds (see *Order* below), and publishes a change notice when
//!    the store changed;
//! 2. reads, in one round trip (one `MGET`), the key of every tool of the map and the
//!    systemic key, and applies what is newer than what this worker knows through the
//!    [`FleetLink`]: another worker's opening → the tool is OPEN here ([`FleetLink::open`]),
//!    with the fleet's due time for its probe; another worker's close → CLOSED here
//!    ([`FleetLink::cleared`] with `true`); another worker's opening gone with its TTL →
//!    `false`; a systemic event not seen before → paused here too, once per event id; the
//!    recovery of the event this worker paused for → resumed ([`FleetLink::recovered`]);
//! 3. renews the probe leases whose probe still runs here, at a third of the lease TTL;
//! 4. for every shared circuit whose probe is due here ([`FleetLink::probes_wanted`]), tries
//!    to take the fleet's probe lease; the worker that wins it probes, the others keep
//!    skipping. The lease is given back by compare-and-delete when the probe ends or closes
//!    the circuit; a lease whose holder died expires after the lease TTL.
//!
//! One `RedisFleet` (and its clones) serves one expeditor: a second
//! [`attach`] is ignored, with a warning in the log. Connect once per
//! expeditor. The task ends when the expeditor is dropped (within one poll interval), giving
//! back any probe lease it holds.
//!
//! # Key layout
//! Every key is under `{namespace}:v2:`, so that a fleet on another layout version never
//! reads ours, and we never read theirs:
//!
//! | key | value | expiry |
//! |---|---|---|
//! | `tool:{tool}` | JSON `{"v":2,"state":"open"\|"closed","ver","at_ms","worker"}`, and for an opening `"message","category","due_ms"` | what is left of the open TTL (default 30 s) after `at_ms` |
//! | `probe:{tool}` | the lease holder's token, `{worker}:{16 hex digits}` | probe lease TTL (default 10 s), renewed while the probe runs |
//! | `seen:{tool}` | set of the workers that saw it open (quorum only) | open TTL |
//! | `changed` | a pub/sub channel, not a key: an empty notice after each write that changed the store | — |
//! | `systemic` | JSON `{"v":2,"id","worker","pattern","cause","tools","category","at_ms"}`, and `"recovered_by"` once a worker confirmed the recovery | what is left of the open TTL |
//!
//! The expiry of a tool key ends the shared OPEN state: a worker that opened a circuit and
//! then died does not keep the fleet off the tool for longer than the open TTL. With a quorum
//! of N ([`RedisFleetBuilder::quorum`]), a worker that opens a circuit adds itself to
//! `seen:{tool}` and the opening is written only once N distinct workers are in it.
//!
//! # Access
//! A Redis ACL user limited to the namespace's keys and channels is all a worker needs
//! (`ACL SETUSER worker on >password ~{namespace}:* &{namespace}:* +@all -@dangerous`, then
//! `redis://worker:password@host:port`; `b16_an_acl_user_limited_to_the_namespace_works`).
//! Without the channels, the change notices are refused (said once in the log) and the
//! workers read every poll interval.
//! With feature `redis-tls`, a `rediss://` URL connects over TLS (rustls), checking the
//! server's certificate against the system's roots or the one given to
//! [`RedisFleetBuilder::tls_root_certificate`] (`b16_the_fleet_shares_tool_health_over_tls`,
//! on a `redis-server` serving TLS with a certificate the test makes). Without the feature, a
//! `rediss://` URL is refused with an error that names it.
//!
//! # What the fleet promises, and the test that shows it
//! Decisions are local and the store is eventually consistent: available, and never wrong
//! about order.
//!
//! - **Order.** A transition is stamped when it happens and takes the next place in its
//!   tool's order after the latest this worker knows (`ver`; ties broken by `at_ms`, then the
//!   worker id). The script writes it only if it is newer than the key's; a worker applies
//!   only what is newer than what it knows. A close queued during an outage never erases the
//!   openings other workers made after it (`b16_a_stale_close_written_after_an_outage_never_erases_newer_openings`).
//! - **Nothing over is replayed.** A systemic event lifted before it was written is never
//!   written (`b16_a_pause_detected_and_lifted_during_an_outage_is_never_replayed`); a
//!   transition older than the open TTL is dropped, not written.
//! - **Shared recovery.** A recovery confirmed on one worker (by a person, or by a health
//!   check in a service) resumes every worker that paused for the same event, also when it
//!   was confirmed during an outage (`b11_redis_r9_a_systemic_event_seen_by_one_worker_pauses_the_fleet_once`,
//!   `b16_a_pause_lifted_during_an_outage_resumes_the_fleet_once_it_returns`).
//! - **One probe fleet-wide, however long.** The lease is renewed while its probe runs
//!   (`b16_a_probe_longer_than_its_lease_stays_the_only_probe`), and taken only on the
//!   store's latest view of the tool, so that a worker that has not yet read a failed probe's
//!   new opening cannot probe on the old one. Whatever else holds a lease is bounded by the
//!   lease TTL, and logged once (`b16_a_junk_lease_is_bounded_by_the_lease_ttl`). While
//!   Redis is paused past the TTL, a renewal can fail: that is logged, and a second worker may
//!   then probe.
//! - **Shared cool-downs.** With a time-based cool-down, an opening carries its probe's due
//!   time and every worker waits for it: the fleet probes once per cool-down
//!   (`b16_with_a_time_based_cool_down_the_fleet_probes_once_per_cool_down`). A count of
//!   attempts ([`ProbeUnit`](crate::policy::ProbeUnit)) stays each worker's own.
//! - **Bounded contents.** A value that is not our JSON, of another format, larger than
//!   64 KiB, dated further in the future than the clock skew bound
//!   ([`RedisFleetBuilder::max_clock_skew`], default 10 s), older than the open TTL (a key
//!   that came back with Redis's files), or written by a worker outside the allowed set
//!   ([`RedisFleetBuilder::allowed_workers`]) is logged once and acts on nothing; the script
//!   overwrites it (`b11_redis_hostile_store_contents_are_ignored_never_a_panic`,
//!   `b16_future_dated_values_and_unknown_workers_act_on_nothing`).
//! - **Staleness.** After a write that changed the store, the writer publishes a change
//!   notice on `{namespace}:v2:changed` (Redis pub/sub); every worker listens and reads at
//!   once, so a transition reaches the fleet in about one round trip (3 ms measured, with a
//!   2 s poll: `b16_a_change_notice_carries_an_opening_to_the_fleet_before_the_next_poll`).
//!   A notice carries nothing: what changed is read from the keys, checked as always. The
//!   poll stays, for a notice lost with a connection and where pub/sub is not allowed: a
//!   transition reaches every other worker within **poll interval + op timeout + one round
//!   trip** (default 1 s + 250 ms + RTT) while Redis answers
//!   (`b11_redis_a_circuit_opened_by_one_worker_is_open_for_the_others_within_the_bound`).
//!
//! # Store faults
//! Every Redis operation runs under the op timeout (default 250 ms). An error or timeout
//! makes the worker decide on local state alone ([`FleetLink::unreachable`]: a
//! `StoreUnavailable` event, a line of the state table), keeps the queued transitions (the
//! latest per tool: bounded by the map) and tries again every poll interval; meanwhile each
//! worker probes on its own breaker, one probe per worker per cool-down. When Redis answers
//! again, [`FleetLink::reachable`] (`StoreRestored`) and the queue is written, in order. What
//! this worker knows and the store lost (a restart without its files, or from older files) is
//! written again. Nothing recorded locally is lost: the local breakers and budget never
//! depend on the store.
//!
//! [`attach`]: crate::expeditor::FleetStore::attach
//! [`FleetStore::share`]: crate::expeditor::FleetStore::share
//! [`FleetLink`]: crate::expeditor::FleetLink
//! [`FleetLink::open`]: crate::expeditor::FleetLink::open
//! [`FleetLink::cleared`]: crate::expeditor::FleetLink::cleared
//! [`FleetLink::probes_wanted`]: crate::expeditor::FleetLink::probes_wanted
//! [`FleetLink::unreachable`]: crate::expeditor::FleetLink::unreachable
//! [`FleetLink::recovered`]: crate::expeditor::FleetLink::recovered
//! [`FleetLink::reachable`]: crate::expeditor::FleetLink::reachable

mod keys;
mod lease;
mod notice;
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
