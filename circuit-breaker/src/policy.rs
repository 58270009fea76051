//! The declared policy (SPEC R2.2): failure threshold, failure budget per cycle, half-open
//! probe interval. Defaults are the seed's; every value is validated where it is made.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What the probe interval counts (R2.2: "every 3rd attempt or step after opening").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProbeUnit {
    /// Attempts to use the tool since its circuit opened: with `probe_every = 3`, the 1st and
    /// 2nd attempts are skipped and the 3rd is the probe. The seed's default.
    #[default]
    Attempts,
    /// The agent's steps ([`Expeditor::advance_step`](crate::Expeditor::advance_step)) since
    /// the circuit opened: with `probe_every = 3`, a circuit opened at step 4 probes from step 7.
    Steps,
}

/// Threshold, budget and probe interval, validated (R2.2).
///
/// ```
/// use circuit_breaker::Policy;
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
    mistake_limit: u32,
}

impl Policy {
    /// The seed's default threshold: 3 consecutive failures open a circuit.
    pub const DEFAULT_THRESHOLD: u32 = 3;
    /// The seed's default budget: 5 failures per cycle, then pause and report.
    pub const DEFAULT_BUDGET: u32 = 5;
    /// The seed's default probe interval: every 3rd attempt after opening.
    pub const DEFAULT_PROBE_EVERY: u32 = 3;
    /// Circuits failing within this many steps of each other count together for cascade
    /// detection (R9.2): 2, the same step or up to two steps apart — two tools behind one
    /// broken network usually open in the same or the next task step, while a tool that
    /// broke long before says nothing about a new failure now (0: the same step only).
    pub const DEFAULT_CASCADE_WINDOW: u64 = 2;
    /// The seed's cap on probe backoff after a cascade: 20 steps.
    pub const DEFAULT_BACKOFF_CAP: u32 = 20;
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
            mistake_limit: Self::DEFAULT_MISTAKE_LIMIT,
        }
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
        let p = Policy::default();
        PolicyBuilder {
            threshold: p.threshold,
            budget: p.budget,
            probe_every: p.probe_every,
            probe_unit: p.probe_unit,
            cascade_window: p.cascade_window,
            backoff_cap: p.backoff_cap,
            cascade_detection: p.cascade_detection,
            mistake_limit: p.mistake_limit,
        }
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
