//! A call's deadline (B13): started after the decision, waited on through the expeditor's
//! own clock, and a call past it recorded as a timeout failure.

use std::future::Future;
use std::task::Poll;
use std::time::Duration;

use super::outcome::timed_out_message;
use super::{CallError, Routed};
use crate::expeditor::{Expeditor, Ticket};
use crate::model::clock::Timestamp;
use crate::model::failure::Failure;
use crate::model::route::RouteTaken;

/// A call's deadline (B13), from when the call starts (after the decision): the one clock
/// read a tool with a timeout costs before it is called. Tools without a timeout never make
/// one.
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    at: Timestamp,
    after: Duration,
}

impl Deadline {
    /// A deadline `millis` from now, by the expeditor's clock.
    #[inline]
    pub fn start(expeditor: &Expeditor, millis: u64) -> Self {
        let after = Duration::from_millis(millis);
        Deadline {
            at: expeditor.now().plus(after),
            after,
        }
    }

    /// The time the call must answer by.
    pub fn at(&self) -> Timestamp {
        self.at
    }

    /// The timeout the deadline was set with.
    pub fn after(&self) -> Duration {
        self.after
    }

    /// Whether the expeditor's clock has reached the deadline: a sync tool's answer read
    /// after it returns. An answer at or past its deadline is late, as if none had come.
    #[inline]
    pub fn passed(&self, expeditor: &Expeditor) -> bool {
        expeditor.now() >= self.at
    }

    /// Runs `future` against the deadline: its output when it answered in time, `None` when
    /// the deadline came first (or it answered, but late) — the future is then dropped, which
    /// is how an async call is cancelled. The timer ([`WallClock::sleep_until`] of the
    /// expeditor's clock) is set only if the future does not answer on its first poll.
    ///
    /// [`WallClock::sleep_until`]: crate::clock::WallClock::sleep_until
    pub async fn within<F: Future>(self, expeditor: &Expeditor, future: F) -> Option<F::Output> {
        let mut future = std::pin::pin!(future);
        let mut sleep: Option<crate::model::clock::Sleep> = None;
        std::future::poll_fn(|cx| {
            if let Poll::Ready(output) = future.as_mut().poll(cx) {
                return Poll::Ready((!self.passed(expeditor)).then_some(output));
            }
            let sleep = sleep.get_or_insert_with(|| expeditor.sleep_until(self.at));
            match std::pin::Pin::new(sleep).poll(cx) {
                Poll::Ready(()) => Poll::Ready(None),
                Poll::Pending => Poll::Pending,
            }
        })
        .await
    }
}

/// A call past its deadline: recorded through its ticket as a failure of category timeout,
/// `timed out after ..` (B13), and answered as [`CallError::TimedOut`]. Out of line, like
/// `failed`: cold, and one instantiation for every tool.
///
/// # Errors
/// Always: the timeout.
#[cold]
#[inline(never)]
pub fn timed_out<T, E>(
    ticket: Ticket<'_>,
    route: Option<Box<RouteTaken>>,
    deadline: Deadline,
) -> Result<Routed<T>, CallError<E>> {
    let tool = ticket.tool_name().to_owned();
    let failure = Failure::with_category(
        timed_out_message(deadline.after),
        crate::model::failure::FailureCategory::Timeout,
    );
    let recorded = crate::telemetry::traced_failure(failure, |f| ticket.failure(f));
    Err(CallError::TimedOut {
        tool,
        after: deadline.after,
        recorded,
        route,
    })
}
