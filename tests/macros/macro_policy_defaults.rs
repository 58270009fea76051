//! R2.2: the policy a `#[toolbox]` declares takes every key it leaves out from the runtime's
//! `Policy` defaults (3 / 5 / 3, counted in attempts): the defaults live in one place, the
//! runtime, and the macro only passes on what was written.

use std::io;

use agent_circuit_breaker::{Policy, policy::ProbeUnit, toolbox, toolbox::ToolSet};

struct Plain;

#[toolbox]
impl Plain {
    #[tool(
        provides = "content search across files",
        fallback = "ask the user which files to examine"
    )]
    fn grep(&self, pattern: &str) -> io::Result<String> {
        Ok(pattern.to_owned())
    }
}

struct Partial;

#[toolbox(policy(budget = 7, probe_unit = "steps"))]
impl Partial {
    #[tool(
        provides = "content search across files",
        fallback = "ask the user which files to examine"
    )]
    fn grep(&self, pattern: &str) -> io::Result<String> {
        Ok(pattern.to_owned())
    }
}

struct Full;

#[toolbox(policy(threshold = 2, budget = 4, probe_every = 6, probe_unit = "attempts"))]
impl Full {
    #[tool(
        provides = "content search across files",
        fallback = "ask the user which files to examine"
    )]
    fn grep(&self, pattern: &str) -> io::Result<String> {
        Ok(pattern.to_owned())
    }
}

#[test]
fn r2_2_a_toolbox_without_policy_has_the_runtimes_default_policy() {
    assert_eq!(<PlainTool as ToolSet>::policy(), Policy::default());
    let policy = <PlainTool as ToolSet>::policy();
    assert_eq!(
        (
            policy.threshold(),
            policy.budget(),
            policy.probe_every(),
            policy.probe_unit()
        ),
        (
            Policy::DEFAULT_THRESHOLD,
            Policy::DEFAULT_BUDGET,
            Policy::DEFAULT_PROBE_EVERY,
            ProbeUnit::Attempts
        )
    );
}

#[test]
fn r2_2_keys_left_out_take_the_runtimes_defaults() {
    let expected = Policy::builder()
        .budget(7)
        .probe_unit(ProbeUnit::Steps)
        .build()
        .unwrap();
    assert_eq!(<PartialTool as ToolSet>::policy(), expected);
    assert_eq!(expected.threshold(), Policy::DEFAULT_THRESHOLD);
    assert_eq!(expected.probe_every(), Policy::DEFAULT_PROBE_EVERY);
}

#[test]
fn r2_2_keys_given_are_taken_as_written() {
    let expected = Policy::builder()
        .threshold(2)
        .budget(4)
        .probe_every(6)
        .build()
        .unwrap();
    assert_eq!(<FullTool as ToolSet>::policy(), expected);
    let agent = GuardedFull::new(Full);
    assert_eq!(agent.expeditor().policy(), expected);
}
