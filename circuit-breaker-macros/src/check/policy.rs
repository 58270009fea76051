//! The toolbox's `policy(..)` and the deadlines (`timeout = ".."`) of the toolbox and its
//! tools: each value in the range the runtime accepts, or an error that says why it is none.

use darling::Error;
use darling::error::Accumulator;
use darling::util::SpannedValue;
use std::time::Duration;

use super::model::Policy;
use crate::parse::Toolbox;
use crate::suggest::suggest;

pub const THRESHOLD: &str =
    "`threshold` must be at least 1: it is the number of consecutive failures that open a circuit";
const BUDGET: &str = "`budget` must be at least 1: it is the number of failures allowed per cycle before the agent pauses";
pub const PROBE_EVERY: &str = "`probe_every` must be at least 1: once a circuit is open, every N-th attempt is let through as a probe";
const MISTAKE_LIMIT: &str = "`mistake_limit` must be at least 1: it is the number of the model's mistakes allowed per cycle before every call pauses";

/// The longest deadline, one day: the runtime's `capability::MAX_TIMEOUT` (the same bound
/// for maps built or loaded at run time; a proc-macro crate cannot read the runtime's).
const MAX_TIMEOUT_MS: u128 = 24 * 60 * 60 * 1000;

/// The longest duration of a policy key, a year: the runtime's `policy::MAX_DURATION`.
const MAX_POLICY_MS: u128 = 365 * 24 * 60 * 60 * 1000;

/// The policy as declared; a key with a mistake is reported and left to the runtime's default.
pub fn check_policy(toolbox: &Toolbox, errors: &mut Accumulator) -> Policy {
    let mut policy = Policy {
        threshold: None,
        budget: None,
        probe_every: None,
        steps: None,
        cool_down: None,
        cool_down_cap: None,
        budget_window: None,
        mistake_limit: None,
    };
    let Some(args) = &toolbox.args.policy else {
        return policy;
    };
    for (value, slot, key) in [
        (&args.cool_down, &mut policy.cool_down, "cool_down"),
        (
            &args.cool_down_cap,
            &mut policy.cool_down_cap,
            "cool_down_cap",
        ),
        (
            &args.budget_window,
            &mut policy.budget_window,
            "budget_window",
        ),
    ] {
        if let Some(d) = value {
            *slot = check_policy_duration(key, d, errors);
        }
    }
    check_cap(&policy, args.cool_down_cap.as_ref(), errors);
    for (value, slot, what) in [
        (&args.threshold, &mut policy.threshold, THRESHOLD),
        (&args.budget, &mut policy.budget, BUDGET),
        (&args.probe_every, &mut policy.probe_every, PROBE_EVERY),
        (
            &args.mistake_limit,
            &mut policy.mistake_limit,
            MISTAKE_LIMIT,
        ),
    ] {
        if let Some(v) = value {
            if **v == 0 {
                errors.push(Error::custom(what).with_span(&v.span()));
            } else {
                *slot = Some(**v);
            }
        }
    }
    if let Some(unit) = &args.probe_unit {
        policy.steps = probe_unit(unit, errors);
    }
    policy
}

/// `cool_down_cap` is at least `cool_down`.
fn check_cap(
    policy: &Policy,
    cap_written: Option<&SpannedValue<Duration>>,
    errors: &mut Accumulator,
) {
    if let (Some(cool_down), Some(cap), Some(span)) =
        (policy.cool_down, policy.cool_down_cap, cap_written)
        && cap < cool_down
    {
        errors.push(
            Error::custom(format!(
                "`cool_down_cap` is shorter than `cool_down`: the cap is the longest a cool-down grows to after failed probes, so it must be at least `cool_down = \"{}\"`",
                humantime::format_duration(Duration::from_millis(cool_down))
            ))
            .with_span(&span.span()),
        );
    }
}

/// `probe_unit = "steps"` (`Some(true)`) or `"attempts"` (`Some(false)`).
fn probe_unit(unit: &SpannedValue<String>, errors: &mut Accumulator) -> Option<bool> {
    match unit.as_str() {
        "attempts" => Some(false),
        "steps" => Some(true),
        other => {
            errors.push(
                Error::custom(format!(
                    "unknown probe unit `{other}`: expected \"attempts\" or \"steps\"{}",
                    suggest(other, ["attempts", "steps"].into_iter())
                ))
                .with_span(&unit.span()),
            );
            None
        }
    }
}

/// A declared `timeout`, in milliseconds, when it is a deadline a call can be given: at
/// least 1ms, whole milliseconds (the clocks count them), at most a day.
pub fn check_timeout(timeout: &SpannedValue<Duration>, errors: &mut Accumulator) -> Option<u64> {
    let written = humantime::format_duration(**timeout);
    let problem = if timeout.is_zero() {
        format!(
            "`timeout = \"{written}\"` is no deadline: every call would time out at once; give the longest a call may take, e.g. `timeout = \"30s\"`, or leave `timeout` out"
        )
    } else if !timeout.subsec_nanos().is_multiple_of(1_000_000) {
        format!(
            "`timeout = \"{written}\"` is not a whole number of milliseconds, the clocks' unit: e.g. `timeout = \"500ms\"`"
        )
    } else if timeout.as_millis() > MAX_TIMEOUT_MS {
        format!(
            "`timeout = \"{written}\"` is longer than a day, the longest deadline a tool call may have: is the unit right?"
        )
    } else {
        return u64::try_from(timeout.as_millis()).ok();
    };
    errors.push(Error::custom(problem).with_span(&timeout.span()));
    None
}

/// A policy duration (`cool_down`, `cool_down_cap`, `budget_window`), in milliseconds, when
/// it is one: at least a millisecond, whole milliseconds, at most a year.
fn check_policy_duration(
    key: &str,
    value: &SpannedValue<Duration>,
    errors: &mut Accumulator,
) -> Option<u64> {
    let written = humantime::format_duration(**value);
    let problem = if value.as_millis() == 0 {
        format!(
            "`{key} = \"{written}\"` is too short: at least a millisecond, e.g. `{key} = \"10s\"`"
        )
    } else if !value.subsec_nanos().is_multiple_of(1_000_000) {
        format!("`{key} = \"{written}\"` is not a whole number of milliseconds, the clocks' unit")
    } else if value.as_millis() > MAX_POLICY_MS {
        format!("`{key} = \"{written}\"` is longer than a year: is the unit right?")
    } else {
        return u64::try_from(value.as_millis()).ok();
    };
    errors.push(Error::custom(problem).with_span(&value.span()));
    None
}
