//! The two clocks: wall time for timestamps, and the agent's steps for everything the source document
//! counts ("every 3rd attempt", "probe at step 3, 6, 12").
//!
//! Steps are the expeditor's own counter, moved only by
//! [`Expeditor::advance_step`](crate::Expeditor::advance_step); wall time comes from a
//! [`WallClock`] you can replace. Together they make every test deterministic: no test sleeps.
//!
//! A wall clock also says when a deadline is reached ([`WallClock::sleep_until`], a
//! [`Sleep`]): the per-tool timeouts of B13 wait on the expeditor's own clock, so a test
//! on a [`ManualClock`] times a hung tool out by moving the clock, without sleeping and
//! without a runtime.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod timer;

/// A point in wall time, in whole milliseconds since the Unix epoch (UTC).
///
/// Renders and serializes as RFC 3339 (`2026-11-30T07:35:03Z`); millisecond precision is kept
/// in serialized form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The Unix epoch.
    pub const EPOCH: Timestamp = Timestamp(0);

    /// A timestamp from milliseconds since the Unix epoch.
    pub const fn from_millis(millis: u64) -> Self {
        Timestamp(millis)
    }

    /// A timestamp from whole seconds since the Unix epoch.
    pub const fn from_secs(secs: u64) -> Self {
        Timestamp(secs.saturating_mul(1000))
    }

    /// Milliseconds since the Unix epoch.
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// This timestamp as a [`SystemTime`].
    pub fn to_system_time(self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.0)
    }

    /// A timestamp from a [`SystemTime`]; times before the epoch clamp to the epoch.
    pub fn from_system_time(time: SystemTime) -> Self {
        let millis = time
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        Timestamp(millis)
    }

    /// Parses an RFC 3339 timestamp in UTC (`2026-11-30T07:35:03Z`, fractions allowed).
    ///
    /// # Errors
    /// Returns a [`TimestampError`] naming the input when it is not RFC 3339.
    pub fn parse(text: &str) -> Result<Self, TimestampError> {
        humantime::parse_rfc3339_weak(text)
            .map(Self::from_system_time)
            .map_err(|_| TimestampError {
                input: text.chars().take(64).collect(),
            })
    }

    /// This timestamp advanced by `duration` (saturating).
    #[must_use]
    pub fn plus(self, duration: Duration) -> Self {
        let millis = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        Timestamp(self.0.saturating_add(millis))
    }
}

impl fmt::Display for Timestamp {
    /// RFC 3339, whole seconds: `2026-11-30T07:35:03Z`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&humantime::format_rfc3339_seconds(self.to_system_time()), f)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = humantime::format_rfc3339_millis(self.to_system_time()).to_string();
        serializer.serialize_str(&text)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Timestamp::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A string that is not an RFC 3339 timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimestampError {
    input: String,
}

impl fmt::Display for TimestampError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not an RFC 3339 timestamp (expected e.g. 2026-11-30T07:35:03Z)",
            self.input
        )
    }
}

impl std::error::Error for TimestampError {}

/// Where the expeditor reads wall time from. Read only on slow paths (failures, transitions,
/// the first success of a tool in a step), never on the healthy path.
pub trait WallClock: Send + Sync + 'static {
    /// The current wall time.
    fn now(&self) -> Timestamp;

    /// A future that completes once this clock reads `deadline` or later (at once when it
    /// already does). Cancel it by dropping it.
    ///
    /// Needs no async runtime: any executor can poll it (B2). The default waits in real time
    /// for the wall time left by this clock's reading now, on one background thread the crate
    /// starts the first time a deadline is set (there for every clock that follows real
    /// time, [`SystemClock`] among them); a jump of the system's clock after that does not
    /// move it. [`ManualClock`] overrides it: its sleeps complete when the clock is
    /// [`set`](ManualClock::set) or [`advance`](ManualClock::advance)d to the deadline, so
    /// tests never sleep. A clock of your own that does not follow real time overrides it
    /// the same way.
    fn sleep_until(&self, deadline: Timestamp) -> Sleep {
        let left = deadline.as_millis().saturating_sub(self.now().as_millis());
        let at = Instant::now().checked_add(Duration::from_millis(left));
        match at {
            Some(at) => Sleep::new(timer::Delay::until(at)),
            // Past the end of what `Instant` can hold: never.
            None => Sleep::new(std::future::pending()),
        }
    }
}

/// A deadline being waited for: the future [`WallClock::sleep_until`] returns. It completes
/// (with `()`) once its clock reaches the deadline; dropping it cancels the wait.
///
/// A boxed `Send` future, so that any clock can make one and any executor can poll it.
#[must_use = "a sleep does nothing unless polled (`.await`ed)"]
pub struct Sleep(Pin<Box<dyn Future<Output = ()> + Send + 'static>>);

impl Sleep {
    /// A sleep that completes when `future` does: for a [`WallClock`] of your own.
    pub fn new(future: impl Future<Output = ()> + Send + 'static) -> Self {
        Sleep(Box::pin(future))
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep").finish_non_exhaustive()
    }
}

/// The system's real-time clock.
///
/// On Linux it reads the kernel's *coarse* real-time clock (`CLOCK_REALTIME_COARSE`): the
/// time of the kernel's last tick, 1 to 4 ms behind the precise clock, read from the vDSO
/// without a system call. Timestamps are milliseconds, rendered in whole seconds, so the
/// tick is below what any report shows; the read costs about a quarter of a precise one
/// (10 ns against 45 ns on the machine of `BENCHMARKS.md`), and the first success of a tool
/// in a step and every failure read it once. Elsewhere it is [`SystemTime::now`].
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl WallClock for SystemClock {
    #[inline]
    fn now(&self) -> Timestamp {
        coarse_now()
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
#[inline]
fn coarse_now() -> Timestamp {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
    // Before the epoch (a clock set wrong) clamps to the epoch, as `from_system_time` does.
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let millis = u64::try_from(t.tv_nsec).unwrap_or(0) / 1_000_000;
    Timestamp(secs.saturating_mul(1000).saturating_add(millis))
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
#[inline]
fn coarse_now() -> Timestamp {
    Timestamp::from_system_time(SystemTime::now())
}

/// A wall clock that moves only when told to: for tests, replays and simulations.
///
/// Clones share the same time, so a test can keep one handle and give another to the
/// expeditor. Its [`sleep_until`](WallClock::sleep_until) completes when the clock is moved
/// to the deadline or past it: the futures waiting are kept and woken by
/// [`set`](Self::set) and [`advance`](Self::advance), nothing polls and nothing sleeps.
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    inner: Arc<Manual>,
}

#[derive(Debug, Default)]
struct Manual {
    millis: AtomicU64,
    /// The sleeps waiting, each with its deadline.
    waiters: Mutex<Waiters>,
}

#[derive(Debug, Default)]
struct Waiters {
    next: u64,
    /// (sleep's id, deadline in ms, its task's waker)
    list: Vec<(u64, u64, Waker)>,
}

impl ManualClock {
    /// A manual clock that starts at `start`.
    pub fn new(start: Timestamp) -> Self {
        ManualClock {
            inner: Arc::new(Manual {
                millis: AtomicU64::new(start.as_millis()),
                waiters: Mutex::default(),
            }),
        }
    }

    /// Sets the current time, and wakes the sleeps whose deadline it reaches.
    pub fn set(&self, time: Timestamp) {
        self.inner.millis.store(time.as_millis(), Ordering::Release);
        self.wake_due();
    }

    /// Moves the clock forward by `duration`, and wakes the sleeps whose deadline it reaches.
    pub fn advance(&self, duration: Duration) {
        let millis = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        // Saturating: a clock pushed past the end of time stays there instead of wrapping.
        let _ = self
            .inner
            .millis
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |m| {
                Some(m.saturating_add(millis))
            });
        self.wake_due();
    }

    fn millis(&self) -> u64 {
        self.inner.millis.load(Ordering::Acquire)
    }

    fn waiters(&self) -> std::sync::MutexGuard<'_, Waiters> {
        self.inner
            .waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes, outside the lock, every sleep whose deadline the clock has reached.
    fn wake_due(&self) {
        let now = self.millis();
        let due: Vec<Waker> = {
            let mut waiters = self.waiters();
            if waiters.list.is_empty() {
                return;
            }
            let (due, waiting) = std::mem::take(&mut waiters.list)
                .into_iter()
                .partition(|(_, at, _)| *at <= now);
            waiters.list = waiting;
            due.into_iter().map(|(_, _, waker)| waker).collect()
        };
        due.into_iter().for_each(Waker::wake);
    }
}

impl WallClock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.millis())
    }

    fn sleep_until(&self, deadline: Timestamp) -> Sleep {
        let id = {
            let mut waiters = self.waiters();
            waiters.next = waiters.next.wrapping_add(1);
            waiters.next
        };
        Sleep::new(ManualSleep {
            clock: self.clone(),
            id,
            at: deadline.as_millis(),
        })
    }
}

/// A [`ManualClock`]'s sleep: ready once the clock reads its deadline; while waiting, its
/// waker is in the clock's list (one entry per sleep, replaced on each poll, removed on drop).
struct ManualSleep {
    clock: ManualClock,
    id: u64,
    at: u64,
}

impl Future for ManualSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.clock.millis() >= self.at {
            return Poll::Ready(());
        }
        let mut waiters = self.clock.waiters();
        // Read again under the lock: a `set` that moved the clock before this entry is in
        // the list wakes nobody, so the sleep must see that move itself.
        if self.clock.millis() >= self.at {
            return Poll::Ready(());
        }
        let waker = cx.waker();
        match waiters.list.iter_mut().find(|(id, _, _)| *id == self.id) {
            Some((_, _, w)) if w.will_wake(waker) => {}
            Some((_, _, w)) => w.clone_from(waker),
            None => waiters.list.push((self.id, self.at, waker.clone())),
        }
        Poll::Pending
    }
}

impl Drop for ManualSleep {
    fn drop(&mut self) {
        let id = self.id;
        self.clock.waiters().list.retain(|(i, _, _)| *i != id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_render_and_parse_as_rfc3339() {
        let t = Timestamp::from_secs(1_796_024_103);
        assert_eq!(t.to_string(), "2026-11-30T07:35:03Z");
        assert_eq!(Timestamp::parse("2026-11-30T07:35:03Z"), Ok(t));
        let json = serde_json::to_string(&t.plus(Duration::from_millis(250))).unwrap();
        assert_eq!(json, "\"2026-11-30T07:35:03.250Z\"");
        let back: Timestamp = serde_json::from_str(&json).unwrap();
        assert_eq!(back.as_millis(), t.as_millis() + 250);
        assert!(Timestamp::parse("yesterday").is_err());
    }

    #[test]
    fn the_system_clock_is_within_a_tick_of_the_precise_clock() {
        let before = Timestamp::from_system_time(SystemTime::now());
        let coarse = SystemClock.now();
        let after = Timestamp::from_system_time(SystemTime::now());
        // The coarse clock is at most one kernel tick (<= 10 ms on any configuration) behind.
        assert!(
            coarse.as_millis() + 10 >= before.as_millis(),
            "{coarse:?} vs {before:?}"
        );
        assert!(coarse <= after, "{coarse:?} vs {after:?}");
    }

    struct Count(AtomicU64);

    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::AcqRel);
        }
    }

    #[test]
    fn a_manual_sleep_completes_when_the_clock_is_moved_to_its_deadline() {
        let clock = ManualClock::new(Timestamp::from_secs(100));
        let woken = Arc::new(Count(AtomicU64::new(0)));
        let waker = Waker::from(Arc::clone(&woken));
        let mut cx = Context::from_waker(&waker);
        let mut sleep = clock.sleep_until(Timestamp::from_secs(102));
        let mut dropped = clock.sleep_until(Timestamp::from_secs(101));
        assert!(Pin::new(&mut sleep).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut sleep).poll(&mut cx).is_pending());
        assert!(Pin::new(&mut dropped).poll(&mut cx).is_pending());
        drop(dropped);
        // One entry per sleep, however often it is polled; a dropped sleep leaves none.
        assert_eq!(clock.waiters().list.len(), 1);
        clock.advance(Duration::from_millis(1999));
        assert_eq!(woken.0.load(Ordering::Acquire), 0);
        assert!(Pin::new(&mut sleep).poll(&mut cx).is_pending());
        clock.advance(Duration::from_millis(1));
        assert_eq!(woken.0.load(Ordering::Acquire), 1);
        assert!(Pin::new(&mut sleep).poll(&mut cx).is_ready());
        assert!(clock.waiters().list.is_empty());
        // A deadline already reached is ready at once, and `set` wakes as `advance` does.
        assert!(
            Pin::new(&mut clock.sleep_until(Timestamp::from_secs(1)))
                .poll(&mut cx)
                .is_ready()
        );
        let mut later = clock.sleep_until(Timestamp::from_secs(500));
        assert!(Pin::new(&mut later).poll(&mut cx).is_pending());
        clock.set(Timestamp::from_secs(600));
        assert_eq!(woken.0.load(Ordering::Acquire), 2);
        assert!(Pin::new(&mut later).poll(&mut cx).is_ready());
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(Timestamp::from_secs(10));
        let shared = clock.clone();
        assert_eq!(clock.now(), Timestamp::from_secs(10));
        shared.advance(Duration::from_secs(5));
        assert_eq!(clock.now(), Timestamp::from_secs(15));
        clock.advance(Duration::MAX);
        assert_eq!(clock.now().as_millis(), u64::MAX);
    }
}
