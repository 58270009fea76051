//! The declared policy (R2.2, B13): failure threshold, failure budget per cycle,
//! half-open probe interval, and the time a long-running service needs (cool-down, budget
//! window). Defaults are the source document's; every value is validated where it is made.
//!
//! # Two clocks
//!
//! A probe is due by the count the source document gives ("every 3rd attempt or step after
//! opening", [`ProbeUnit`]) **or** by time, whichever comes first: with a
//! [`cool_down`](PolicyBuilder::cool_down), an OPEN circuit is due for its probe once it has
//! been open that long. After each failed probe the cool-down doubles, up to
//! [`cool_down_cap`](PolicyBuilder::cool_down_cap), and each is shortened by a random part of
//! up to [`jitter`](PolicyBuilder::jitter) percent, so that a fleet of workers does not probe in
//! step, and so that no circuit ever waits longer than its cool-down. A failure's retry-after
//! hint ([`Failure::retry_after`](crate::Failure::retry_after)) sets the cool-down of the
//! opening it causes, bounded by one second and the cap. After a systemic event the cool-down
//! doubles per failed probe as the count does (R9.5).
//!
//! Counting suits one task run by an agent that steps; time suits a service that runs for days
//! and is never asked for a tool it does not offer. A typed agent has no cool-down unless it
//! declares one (the source document's scenario is counted in attempts); an MCP server, an MCP
//! client serving as a proxy and a fleet worker fill in [`Policy::for_service`]'s values where
//! their policy gives none.
//!
//! # Budgets that renew
//!
//! The budget belongs to a cycle ([`Expeditor::new_cycle`](crate::Expeditor::new_cycle)) or,
//! with a [`budget_window`](PolicyBuilder::budget_window), to a rolling window: a failure older
//! than the window stops counting, and a budget pause lifts as soon as the window frees room.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What the probe interval counts (R2.2: "every 3rd attempt or step after opening").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeUnit {
    /// Attempts to use the tool since its circuit opened: with `probe_every = 3`, the 1st and
    /// 2nd attempts are skipped and the 3rd is the probe. The source document's default.
    #[default]
    Attempts,
    /// The agent's steps ([`Expeditor::advance_step`](crate::Expeditor::advance_step)) since
    /// the circuit opened: with `probe_every = 3`, a circuit opened at step 4 probes from step 7.
    Steps,
}

/// Threshold, budget and probe interval, validated (R2.2).
///
/// ```
/// use agent_circuit_breaker::Policy;
/// let policy = Policy::default();
/// assert_eq!((policy.threshold(), policy.budget(), policy.probe_every()), (3, 5, 3));
/// assert!(Policy::builder().threshold(0).budget(0).build().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "PolicyBuilder", into = "PolicyBuilder")]
pub struct Policy {
    threshold: u32,
    budget: u32,
    probe_every: u32,
    probe_unit: ProbeUnit,
    cascade_window: u64,
    backoff_cap: u32,
    cascade_detection: bool,
    cool_down: Option<Duration>,
    cool_down_cap: Duration,
    jitter: u8,
    budget_window: Option<Duration>,
    mistake_limit: u32,
}

impl Policy {
    /// The source document's default threshold: 3 consecutive failures open a circuit.
    pub const DEFAULT_THRESHOLD: u32 = 3;
    /// The source document's default budget: 5 failures per cycle, then pause and report.
    pub const DEFAULT_BUDGET: u32 = 5;
    /// The source document's default probe interval: every 3rd attempt after opening.
    pub const DEFAULT_PROBE_EVERY: u32 = 3;
    /// Circuits failing within this many steps of each other count together for cascade
    /// detection (R9.2): 2, the same step or up to two steps apart — two tools behind one
    /// broken network usually open in the same or the next task step, while a tool that
    /// broke long before says nothing about a new failure now (0: the same step only).
    pub const DEFAULT_CASCADE_WINDOW: u64 = 2;
    /// The source document's cap on probe backoff after a cascade: 20 steps.
    pub const DEFAULT_BACKOFF_CAP: u32 = 20;
    /// The longest a cool-down grows to after failed probes, unless the policy says otherwise:
    /// 30 s, so that a tool mended while its circuit was open comes back within half a minute.
    pub const DEFAULT_COOL_DOWN_CAP: Duration = Duration::from_secs(30);
    /// How much of each cool-down is taken off at random, in percent: 20.
    pub const DEFAULT_JITTER: u8 = 20;
    /// A service's cool-down where its policy gives none ([`for_service`](Self::for_service)):
    /// 5 s, doubling after each failed probe up to the cap.
    pub const SERVICE_COOL_DOWN: Duration = Duration::from_secs(5);
    /// A service's budget window where its policy gives none: 60 s.
    pub const SERVICE_BUDGET_WINDOW: Duration = Duration::from_mins(1);
    /// The shortest cool-down a retry-after hint can ask for.
    pub const MIN_RETRY_AFTER: Duration = Duration::from_secs(1);
    /// The model's mistakes allowed per cycle before every call pauses (B14): 20. Far more
    /// than an agent that reads its errors makes, and far fewer than one stuck repeating a
    /// bad call hundreds of times.
    pub const DEFAULT_MISTAKE_LIMIT: u32 = 20;

    /// A builder starting from the defaults.
    pub fn builder() -> PolicyBuilder {
        PolicyBuilder::default()
    }

    /// A policy from values already checked to be at least 1 (by the `#[toolbox]` macro).
    pub(crate) const fn from_checked(
        threshold: u32,
        budget: u32,
        probe_every: u32,
        probe_unit: ProbeUnit,
    ) -> Self {
        Policy {
            threshold,
            budget,
            probe_every,
            probe_unit,
            cascade_window: Self::DEFAULT_CASCADE_WINDOW,
            backoff_cap: Self::DEFAULT_BACKOFF_CAP,
            cascade_detection: true,
            cool_down: None,
            cool_down_cap: Self::DEFAULT_COOL_DOWN_CAP,
            jitter: Self::DEFAULT_JITTER,
            budget_window: None,
            mistake_limit: Self::DEFAULT_MISTAKE_LIMIT,
        }
    }

    /// A policy declared with time and a mistake limit (by the `#[toolbox]` macro, whose
    /// values are checked: each duration at least 1 ms and at most a year, the cap at least
    /// the cool-down, the limit at least 1). A value that reached here unchecked is made valid
    /// rather than panic: a zero raised, a cap below the cool-down raised to it.
    #[must_use]
    pub(crate) const fn with_declared(
        mut self,
        cool_down: Option<Duration>,
        cool_down_cap: Option<Duration>,
        budget_window: Option<Duration>,
        mistake_limit: Option<u32>,
    ) -> Self {
        const fn at_least_1ms(d: Duration) -> Duration {
            if d.as_millis() == 0 {
                Duration::from_millis(1)
            } else {
                d
            }
        }
        if let Some(cool_down) = cool_down {
            let cool_down = at_least_1ms(cool_down);
            self.cool_down = Some(cool_down);
            if cool_down.as_millis() > self.cool_down_cap.as_millis() {
                self.cool_down_cap = cool_down;
            }
        }
        if let Some(cap) = cool_down_cap {
            let cap = at_least_1ms(cap);
            self.cool_down_cap = match self.cool_down {
                Some(c) if c.as_millis() > cap.as_millis() => c,
                _ => cap,
            };
        }
        if let Some(window) = budget_window {
            self.budget_window = Some(at_least_1ms(window));
        }
        if let Some(limit) = mistake_limit {
            self.mistake_limit = if limit == 0 { 1 } else { limit };
        }
        self
    }

    /// This policy as a long-running service runs it (B15): where it gives no cool-down, the
    /// [`SERVICE_COOL_DOWN`](Self::SERVICE_COOL_DOWN); where it gives no budget window, the
    /// [`SERVICE_BUDGET_WINDOW`](Self::SERVICE_BUDGET_WINDOW). Everything it declares is kept.
    ///
    /// ```
    /// use std::time::Duration;
    /// use agent_circuit_breaker::Policy;
    /// let service = Policy::default().for_service();
    /// assert_eq!(service.cool_down(), Some(Duration::from_secs(5)));
    /// assert_eq!(service.budget_window(), Some(Duration::from_secs(60)));
    /// assert_eq!(service.threshold(), 3);
    /// ```
    #[must_use]
    pub fn for_service(mut self) -> Self {
        if self.cool_down.is_none() {
            self.cool_down = Some(Self::SERVICE_COOL_DOWN.min(self.cool_down_cap));
        }
        if self.budget_window.is_none() {
            self.budget_window = Some(Self::SERVICE_BUDGET_WINDOW);
        }
        self
    }

    /// Consecutive failures that open a circuit.
    pub const fn threshold(&self) -> u32 {
        self.threshold
    }

    /// Failures allowed per cycle before the mandatory pause.
    pub const fn budget(&self) -> u32 {
        self.budget
    }

    /// How many attempts or steps after opening a probe is due.
    pub const fn probe_every(&self) -> u32 {
        self.probe_every
    }

    /// What [`probe_every`](Self::probe_every) counts.
    pub const fn probe_unit(&self) -> ProbeUnit {
        self.probe_unit
    }

    /// The cascade window in steps (R9.2): a circuit opening correlates with an open one of
    /// the same infrastructure category that last failed at most this many steps before, and
    /// three circuits opening within it are a systemic event (the rule is documented in the
    /// `cascade` module).
    pub const fn cascade_window(&self) -> u64 {
        self.cascade_window
    }

    /// The most a probe waits after a cascade, and the most the intervals along a chain of
    /// routes add up to (R9.5).
    pub const fn backoff_cap(&self) -> u32 {
        self.backoff_cap
    }

    /// Whether correlated openings are treated as one systemic event (R9.2).
    pub const fn cascade_detection(&self) -> bool {
        self.cascade_detection
    }

    /// The model's mistakes allowed per cycle (B14): unknown tools, bad arguments, calls a
    /// tool rejected as the caller's. The mistake that reaches it pauses every call until a
    /// new cycle, with a report.
    pub const fn mistake_limit(&self) -> u32 {
        self.mistake_limit
    }
    /// How long an OPEN circuit waits before its probe is due by time, if it waits by time
    /// (B13; see the [module](self)).
    pub const fn cool_down(&self) -> Option<Duration> {
        self.cool_down
    }

    /// The longest a cool-down grows to after failed probes, and the longest a retry-after
    /// hint can set it to.
    pub const fn cool_down_cap(&self) -> Duration {
        self.cool_down_cap
    }

    /// How much of each cool-down is taken off at random, in percent (0 to 90).
    pub const fn jitter(&self) -> u8 {
        self.jitter
    }

    /// The rolling window of the failure budget, if it renews by time (B13).
    pub const fn budget_window(&self) -> Option<Duration> {
        self.budget_window
    }

    /// Whether anything in this policy runs on wall time: a cool-down or a budget window.
    pub(crate) const fn is_timed(&self) -> bool {
        self.cool_down.is_some() || self.budget_window.is_some()
    }

    /// The cool-down of an opening after `failed_probes` failed probes (doubling, capped),
    /// or the retry-after `hint` bounded to [1 s, cap]; `None` without a cool-down. Jitter is
    /// the caller's ([`jittered`]).
    pub(crate) fn cool_down_after(
        &self,
        failed_probes: u32,
        hint: Option<Duration>,
    ) -> Option<Duration> {
        let base = self.cool_down?;
        if let Some(hint) = hint {
            return Some(hint.clamp(
                Self::MIN_RETRY_AFTER.min(self.cool_down_cap),
                self.cool_down_cap,
            ));
        }
        let factor = 1u32.checked_shl(failed_probes.min(31)).unwrap_or(u32::MAX);
        Some(
            base.saturating_mul(factor)
                .min(self.cool_down_cap.max(base)),
        )
    }
}

/// `delay` shortened by up to `percent` percent, by the random `draw` (any u64): never longer
/// than `delay`, so that a jittered cool-down keeps the promise its nominal one makes.
pub(crate) fn jittered(delay: Duration, percent: u8, draw: u64) -> Duration {
    let millis = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
    let span = millis / 100 * u64::from(percent) + millis % 100 * u64::from(percent) / 100;
    let off = if span == 0 { 0 } else { draw % (span + 1) };
    Duration::from_millis(millis - off)
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            threshold: Self::DEFAULT_THRESHOLD,
            budget: Self::DEFAULT_BUDGET,
            probe_every: Self::DEFAULT_PROBE_EVERY,
            probe_unit: ProbeUnit::Attempts,
            cascade_window: Self::DEFAULT_CASCADE_WINDOW,
            backoff_cap: Self::DEFAULT_BACKOFF_CAP,
            cascade_detection: true,
            cool_down: None,
            cool_down_cap: Self::DEFAULT_COOL_DOWN_CAP,
            jitter: Self::DEFAULT_JITTER,
            budget_window: None,
            mistake_limit: Self::DEFAULT_MISTAKE_LIMIT,
        }
    }
}

/// Builds a [`Policy`]; [`build`](Self::build) validates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyBuilder {
    threshold: u32,
    budget: u32,
    probe_every: u32,
    probe_unit: ProbeUnit,
    cascade_window: u64,
    backoff_cap: u32,
    cascade_detection: bool,
    #[serde(
        with = "duration_text::option",
        skip_serializing_if = "Option::is_none"
    )]
    cool_down: Option<Duration>,
    #[serde(
        with = "duration_text::option",
        skip_serializing_if = "Option::is_none"
    )]
    cool_down_cap: Option<Duration>,
    jitter: u8,
    #[serde(
        with = "duration_text::option",
        skip_serializing_if = "Option::is_none"
    )]
    budget_window: Option<Duration>,
    #[serde(skip_serializing_if = "is_default_mistake_limit")]
    mistake_limit: u32,
}

/// A policy written before the mistake limit existed reads the same.
#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
fn is_default_mistake_limit(limit: &u32) -> bool {
    *limit == Policy::DEFAULT_MISTAKE_LIMIT
}

impl Default for PolicyBuilder {
    fn default() -> Self {
        Policy::default().into()
    }
}

impl PolicyBuilder {
    /// Consecutive failures that open a circuit (at least 1).
    #[must_use]
    pub fn threshold(mut self, threshold: u32) -> Self {
        self.threshold = threshold;
        self
    }

    /// Failures allowed per cycle (at least 1).
    #[must_use]
    pub fn budget(mut self, budget: u32) -> Self {
        self.budget = budget;
        self
    }

    /// Attempts or steps after opening before a probe (at least 1).
    #[must_use]
    pub fn probe_every(mut self, probe_every: u32) -> Self {
        self.probe_every = probe_every;
        self
    }

    /// What the probe interval counts.
    #[must_use]
    pub fn probe_unit(mut self, unit: ProbeUnit) -> Self {
        self.probe_unit = unit;
        self
    }

    /// The cascade window in steps (default [`Policy::DEFAULT_CASCADE_WINDOW`]): failures this
    /// many steps apart or less can correlate (R9.2).
    #[must_use]
    pub fn cascade_window(mut self, steps: u64) -> Self {
        self.cascade_window = steps;
        self
    }

    /// The cap on probe backoff after a cascade (at least 1).
    #[must_use]
    pub fn backoff_cap(mut self, cap: u32) -> Self {
        self.backoff_cap = cap;
        self
    }

    /// Whether correlated openings are treated as one systemic event (default: yes). Turn it
    /// off for tools known to share nothing: every breaker then stays independent (R9.6).
    #[must_use]
    pub fn cascade_detection(mut self, on: bool) -> Self {
        self.cascade_detection = on;
        self
    }

    /// An OPEN circuit is due for its probe after this long, whatever the count says (B13);
    /// it doubles after each failed probe up to the [cap](Self::cool_down_cap). At least 1 ms.
    #[must_use]
    pub fn cool_down(mut self, cool_down: Duration) -> Self {
        self.cool_down = Some(cool_down);
        self
    }

    /// The longest a cool-down grows to (default: [`Policy::DEFAULT_COOL_DOWN_CAP`], or the
    /// cool-down when that is longer); at least the cool-down.
    #[must_use]
    pub fn cool_down_cap(mut self, cap: Duration) -> Self {
        self.cool_down_cap = Some(cap);
        self
    }

    /// How much of each cool-down is taken off at random, in percent (default
    /// [`Policy::DEFAULT_JITTER`]; at most 90).
    #[must_use]
    pub fn jitter(mut self, percent: u8) -> Self {
        self.jitter = percent;
        self
    }

    /// The budget renews in a rolling window of this length instead of by cycles alone (B13):
    /// a failure older than the window stops counting. At least 1 ms.
    #[must_use]
    pub fn budget_window(mut self, window: Duration) -> Self {
        self.budget_window = Some(window);
        self
    }

    /// The model's mistakes allowed per cycle before every call pauses (at least 1; default
    /// [`Policy::DEFAULT_MISTAKE_LIMIT`]). Zero is refused like every other zero of a policy:
    /// it would pause at the first typo. For no practical limit, give `u32::MAX`.
    #[must_use]
    pub fn mistake_limit(mut self, limit: u32) -> Self {
        self.mistake_limit = limit;
        self
    }

    /// Validates and builds the policy.
    ///
    /// # Errors
    /// A [`PolicyError`] listing every value that is zero.
    pub fn build(self) -> Result<Policy, PolicyError> {
        let mut problems = Vec::new();
        if self.threshold == 0 {
            problems.push(PolicyProblem::ZeroThreshold);
        }
        if self.budget == 0 {
            problems.push(PolicyProblem::ZeroBudget);
        }
        if self.probe_every == 0 {
            problems.push(PolicyProblem::ZeroProbeInterval);
        }
        if self.backoff_cap == 0 {
            problems.push(PolicyProblem::ZeroBackoffCap);
        }
        let too_short = |d: Duration| d < Duration::from_millis(1);
        let cool_down_cap = self.cool_down_cap.unwrap_or_else(|| {
            Policy::DEFAULT_COOL_DOWN_CAP.max(self.cool_down.unwrap_or_default())
        });
        if self.cool_down.is_some_and(too_short) {
            problems.push(PolicyProblem::ZeroCoolDown);
        }
        if too_short(cool_down_cap) || self.cool_down.is_some_and(|c| c > cool_down_cap) {
            problems.push(PolicyProblem::CoolDownCapBelowCoolDown);
        }
        if self.budget_window.is_some_and(too_short) {
            problems.push(PolicyProblem::ZeroBudgetWindow);
        }
        if self.jitter > 90 {
            problems.push(PolicyProblem::JitterTooLarge);
        }
        let too_long = |d: Duration| d > MAX_DURATION;
        if self.cool_down.is_some_and(too_long)
            || too_long(cool_down_cap)
            || self.budget_window.is_some_and(too_long)
        {
            problems.push(PolicyProblem::DurationTooLong);
        }
        if self.mistake_limit == 0 {
            problems.push(PolicyProblem::ZeroMistakeLimit);
        }
        if problems.is_empty() {
            Ok(Policy {
                threshold: self.threshold,
                budget: self.budget,
                probe_every: self.probe_every,
                probe_unit: self.probe_unit,
                cascade_window: self.cascade_window,
                backoff_cap: self.backoff_cap,
                cascade_detection: self.cascade_detection,
                cool_down: self.cool_down,
                cool_down_cap,
                jitter: self.jitter,
                budget_window: self.budget_window,
                mistake_limit: self.mistake_limit,
            })
        } else {
            Err(PolicyError(problems))
        }
    }
}

impl From<Policy> for PolicyBuilder {
    fn from(p: Policy) -> Self {
        PolicyBuilder {
            threshold: p.threshold,
            budget: p.budget,
            probe_every: p.probe_every,
            probe_unit: p.probe_unit,
            cascade_window: p.cascade_window,
            backoff_cap: p.backoff_cap,
            cascade_detection: p.cascade_detection,
            mistake_limit: p.mistake_limit,
            cool_down: p.cool_down,
            cool_down_cap: (p.cool_down_cap != Policy::DEFAULT_COOL_DOWN_CAP)
                .then_some(p.cool_down_cap),
            jitter: p.jitter,
            budget_window: p.budget_window,
        }
    }
}

/// The longest duration a policy accepts: a year. Longer is a mistake (a unit slip), and
/// would overflow nothing, but would never let a circuit come back.
pub const MAX_DURATION: Duration = Duration::from_hours(8760);

/// Durations as the text people write: `"30s"`, `"5m"`, `"1h 30m"` (humantime).
mod duration_text {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&humantime::format_duration(*d))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        humantime::parse_duration(&text).map_err(|e| {
            let shown: String = text.chars().take(40).collect();
            serde::de::Error::custom(format_args!(
                "`{shown}` is not a duration ({e}); write e.g. \"30s\", \"5m\" or \"1h 30m\""
            ))
        })
    }

    pub(super) mod option {
        use std::time::Duration;

        use serde::{Deserializer, Serializer};

        #[allow(clippy::ref_option)] // serde's `with` passes a reference
        pub(in super::super) fn serialize<S: Serializer>(
            d: &Option<Duration>,
            s: S,
        ) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => super::serialize(d, s),
                None => s.serialize_none(),
            }
        }

        pub(in super::super) fn deserialize<'de, D: Deserializer<'de>>(
            d: D,
        ) -> Result<Option<Duration>, D::Error> {
            super::deserialize(d).map(Some)
        }
    }
}

impl TryFrom<PolicyBuilder> for Policy {
    type Error = PolicyError;
    fn try_from(builder: PolicyBuilder) -> Result<Self, PolicyError> {
        builder.build()
    }
}

/// One invalid policy value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyProblem {
    /// A threshold of 0 would open every circuit before any call.
    ZeroThreshold,
    /// A budget of 0 would pause before any call.
    ZeroBudget,
    /// A probe interval of 0 would probe on the call that just failed.
    ZeroProbeInterval,
    /// A backoff cap of 0 would leave no time between probes after a cascade.
    ZeroBackoffCap,
    /// A cool-down shorter than a millisecond would probe on the call that just failed.
    ZeroCoolDown,
    /// A cool-down cap below the cool-down (or under a millisecond).
    CoolDownCapBelowCoolDown,
    /// A budget window shorter than a millisecond would forget every failure at once.
    ZeroBudgetWindow,
    /// Jitter above 90 % would leave next to no cool-down.
    JitterTooLarge,
    /// A cool-down, cap or window longer than [`MAX_DURATION`].
    DurationTooLong,
    /// A mistake limit of 0 would pause at the model's first mistake.
    ZeroMistakeLimit,
}

impl fmt::Display for PolicyProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PolicyProblem::ZeroThreshold => "threshold must be at least 1 consecutive failure",
            PolicyProblem::ZeroBudget => "budget must be at least 1 failure per cycle",
            PolicyProblem::ZeroProbeInterval => "probe_every must be at least 1",
            PolicyProblem::ZeroBackoffCap => "backoff_cap must be at least 1",
            PolicyProblem::ZeroCoolDown => "cool_down must be at least 1ms",
            PolicyProblem::CoolDownCapBelowCoolDown => {
                "cool_down_cap must be at least the cool_down (and at least 1ms)"
            }
            PolicyProblem::ZeroBudgetWindow => "budget_window must be at least 1ms",
            PolicyProblem::JitterTooLarge => "jitter must be at most 90 percent",
            PolicyProblem::DurationTooLong => {
                "cool_down, cool_down_cap and budget_window must be at most a year"
            }
            PolicyProblem::ZeroMistakeLimit => "mistake_limit must be at least 1",
        })
    }
}

/// Every invalid value of a policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicyError(pub Vec<PolicyProblem>);

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid policy: ")?;
        for (i, problem) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            fmt::Display::fmt(problem, f)?;
        }
        Ok(())
    }
}

impl std::error::Error for PolicyError {}
