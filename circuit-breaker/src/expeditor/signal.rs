//! A change counter that futures can wait on: the expeditor bumps it after a command that
//! changed something, and a [`Watch`](crate::expeditor::Watch) waits for the next bump. No
//! runtime is assumed: a waiting future leaves its waker here and is woken by the bump.

use std::task::{Context, Poll, Waker};

use super::sync::{AtomicBool, AtomicU64, Mutex, Ordering};

/// The counter and the wakers of the futures waiting for it to move.
#[derive(Debug, Default)]
pub(crate) struct Signal {
    version: AtomicU64,
    /// Whether the version was ever read (a watch made, the changes counted): until then no
    /// one can tell a bump from none, so a bump moves nothing. Most expeditors are never
    /// watched, and a failure's bump was one more atomic read-modify-write on its path.
    observed: AtomicBool,
    /// Whether `wakers` may hold any: a bump with no one waiting takes no lock.
    waiting: AtomicBool,
    wakers: Mutex<Vec<Waker>>,
}

impl Signal {
    /// The number of bumps so far.
    pub(crate) fn version(&self) -> u64 {
        if !self.observed.load(Ordering::SeqCst) {
            self.observed.store(true, Ordering::SeqCst);
        }
        self.version.load(Ordering::SeqCst)
    }

    /// Moves the counter and wakes every waiting future.
    #[inline]
    pub(crate) fn bump(&self) {
        // SeqCst with `version`'s: either the bump sees `observed`, or the first reader's
        // store of it came after this load, so after the change this bump is for was made
        // (under the engine's lock, released before): a watch made then starts from a
        // version that has it already, and counting it would change nothing it can see.
        if self.observed.load(Ordering::SeqCst) {
            self.bump_observed();
        }
    }

    #[inline(never)]
    fn bump_observed(&self) {
        // SeqCst here and in `poll_changed`: either the bump sees `waiting`, or the waiter sees
        // the new version.
        self.version.fetch_add(1, Ordering::SeqCst);
        // A load first: with no one waiting (the usual case) the bump is one atomic
        // read-modify-write, not two. The load is SeqCst too, so the argument above holds.
        if self.waiting.load(Ordering::SeqCst) && self.waiting.swap(false, Ordering::SeqCst) {
            let wakers = std::mem::take(&mut *self.lock());
            for waker in wakers {
                waker.wake();
            }
        }
    }

    /// Ready with the version once it differs from `seen`; else the waker is kept until the
    /// next bump.
    pub(crate) fn poll_changed(&self, seen: u64, cx: &mut Context<'_>) -> Poll<u64> {
        let now = self.version();
        if now != seen {
            return Poll::Ready(now);
        }
        let mut wakers = self.lock();
        // Said before the version is read again: a bump from here on wakes this waker.
        self.waiting.store(true, Ordering::SeqCst);
        let now = self.version();
        if now != seen {
            return Poll::Ready(now);
        }
        if !wakers.iter().any(|w| w.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }

    fn lock(&self) -> super::sync::MutexGuard<'_, Vec<Waker>> {
        self.wakers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
