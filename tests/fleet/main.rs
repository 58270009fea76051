//! A fleet of workers sharing tool health, on a real redis-server (B11), and under faults (B16).
//!
//! One test binary for the area; each file is one module (its tests are named after it),
//! public so that what a file declares for its own use counts as used, as at a crate root.

// Each file keeps the shared fixtures (`common/`) it declared as a binary of its own: they are
// compiled once per file here, which costs seconds, not the rewrite of every file.
#![allow(clippy::duplicate_mod)]

#[path = "b11_fleet_core.rs"]
pub mod b11_fleet_core;
#[path = "b11_fleet_workers.rs"]
pub mod b11_fleet_workers;
#[path = "b11_redis.rs"]
pub mod b11_redis;
#[path = "b16_faults.rs"]
pub mod b16_faults;
#[cfg(feature = "redis")]
#[path = "b16_redis.rs"]
pub mod b16_redis;
#[cfg(feature = "redis-tls")]
#[path = "b16_tls.rs"]
pub mod b16_tls;
#[cfg(feature = "redis")]
#[path = "redis_fleet.rs"]
pub mod redis_fleet;
