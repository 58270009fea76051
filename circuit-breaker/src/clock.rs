//! The two clocks: wall time for timestamps, and the agent's steps for everything the seed
//! counts ("every 3rd attempt", "probe at step 3, 6, 12").
//!
//! Steps are the expeditor's own counter, moved only by
//! [`Expeditor::advance_step`](crate::Expeditor::advance_step); wall time comes from a
//! [`WallClock`] you can replace. Together they make every test deterministic: no test sleeps.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
/// expeditor.
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    millis: Arc<AtomicU64>,
}

impl ManualClock {
    /// A manual clock that starts at `start`.
    pub fn new(start: Timestamp) -> Self {
        ManualClock {
            millis: Arc::new(AtomicU64::new(start.as_millis())),
        }
    }

    /// Sets the current time.
    pub fn set(&self, time: Timestamp) {
        self.millis.store(time.as_millis(), Ordering::Release);
    }

    /// Moves the clock forward by `duration`.
    pub fn advance(&self, duration: Duration) {
        let millis = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        // Saturating: a clock pushed past the end of time stays there instead of wrapping.
        let _ = self
            .millis
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |m| {
                Some(m.saturating_add(millis))
            });
    }
}

impl WallClock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp(self.millis.load(Ordering::Acquire))
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
