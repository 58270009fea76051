//! The synchronization primitives the decision layer uses, in one place: std's, or shuttle's
//! when the crate is built with `RUSTFLAGS="--cfg shuttle"` for the model check of the ticket
//! path (`circuit-breaker/tests/shuttle_tickets.rs`), so that every lock and every atomic of
//! the breakers is a point where shuttle's scheduler can switch threads.

#[cfg(not(shuttle))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
#[cfg(not(shuttle))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(shuttle)]
pub(crate) use shuttle::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
#[cfg(shuttle)]
pub(crate) use shuttle::sync::{Mutex, MutexGuard};
