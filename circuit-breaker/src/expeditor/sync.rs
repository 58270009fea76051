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

/// Keeps a value on its own cache line, so that writes to it do not slow readers of its
/// neighbours (and writes to them do not slow its readers).
#[derive(Debug, Default)]
#[repr(align(64))]
pub(crate) struct CachePadded<T>(pub(crate) T);

impl<T> std::ops::Deref for CachePadded<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        &self.0
    }
}
