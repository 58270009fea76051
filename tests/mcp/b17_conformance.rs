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
#[path = "../common/examples.rs"]
mod examples;

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use conformance::{Conformance, ServerProcess, SuiteRun, free_port, table, target_dir};
use examples::example_binary;

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

/// The guard's binary, built (or found up to date) by cargo once per test process: this
/// package cannot name another package's binary, and a test run on its own builds none.
fn guard_binary() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().expect("the test's path");
            let profile = exe
                .parent()
                .and_then(|deps| deps.parent())
                .expect("target/<profile>/deps");
            let mut cargo = Command::new(env!("CARGO"));
            cargo
                .args(["build", "--quiet", "-p", GUARD_PACKAGE, "--bin", GUARD_BIN])
                .arg("--manifest-path")
                .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
                .arg("--target-dir")
                .arg(target_dir());
            if profile.file_name().is_some_and(|p| p == "release") {
                cargo.arg("--release");
            }
            let status = cargo.status().expect("run cargo");
            assert!(status.success(), "cargo build -p {GUARD_PACKAGE} failed");
            profile.join(format!("{GUARD_BIN}{}", std::env::consts::EXE_SUFFIX))
        })
        .clone()
}

const GUARD_PACKAGE: &str = "agent-circuit-breaker-guard";
const GUARD_BIN: &str = "circuit-breaker-guard";

/// The guard serving streamable HTTP on a free port, in front of the one upstream `upstream`
/// (the YAML of one `upstreams:` entry, without its name), with its default policy.
fn guard(suite: &Conformance, label: &str, upstream: &str) -> ServerProcess {
    let dir = suite.fresh_dir(label);
    std::fs::create_dir_all(&dir).expect("the guard's dir");
    let port = free_port();
    let config = dir.join("guard.yaml");
    let text = format!("upstreams:\n  - name: upstream\n{upstream}");
    std::fs::write(&config, text).expect("write the guard's config");
    let mut command = Command::new(guard_binary());
    command
        .arg("--config")
        .arg(&config)
        .arg("--http")
        .arg(format!("127.0.0.1:{port}"));
    ServerProcess::start(command, port, dir.join("guard.log"))
}

/// `value` as a YAML scalar (JSON's string syntax is YAML's double-quoted one).
fn yaml(value: &str) -> String {
    serde_json::Value::from(value).to_string()
}

#[test]
fn b17_conformance_through_the_guard() {
    let start = Instant::now();
    let suite = Conformance::installed();
    let installed = start.elapsed();
    let start = Instant::now();
    guard_binary();
    println!(
        "install (or the check that it is there): {:.1} s; the guard's build: {:.1} s",
        installed.as_secs_f64(),
        start.elapsed().as_secs_f64()
    );
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

    // The common case: the upstream is the guard's child, over stdio.
    let (node, args) = suite.everything_stdio();
    let stdio_guard = guard(&suite, "guard-stdio", &stdio_upstream(&node, &args));
    let stdio = suite.run("stdio", &stdio_guard.url);
    // The upstream over streamable HTTP: the reference server already running.
    let http_guard = guard(
        &suite,
        "guard-http",
        &format!("    url: {}\n", yaml(&everything.url)),
    );
    let http = suite.run("http", &http_guard.url);

    println!("{}", table(&[&direct, &stdio, &http]));
    for (run, guard) in [(&stdio, &stdio_guard), (&http, &http_guard)] {
        let lost = lost(&direct, run);
        assert!(
            lost.is_empty(),
            "through the guard ({} upstream), the suite fails what passes directly: {lost:#?}\n{}\n{}\nguard log:\n{}",
            run.label,
            table(&[&direct, &stdio, &http]),
            run.output,
            guard.log_text()
        );
    }
}

/// A command line as the YAML of an upstream over stdio.
fn stdio_upstream(command: &std::path::Path, args: &[String]) -> String {
    let args: Vec<String> = args.iter().map(|arg| yaml(arg)).collect();
    format!(
        "    command: {}\n    args: [{}]\n",
        yaml(&command.display().to_string()),
        args.join(", ")
    )
}

/// The example server (`examples/mcp_server`, a guarded `#[toolbox(json)]`) behind the guard:
/// it has no resources or prompts, and none of the suite's fixture tools, so most scenarios
/// fail for what it lacks; the lifecycle and the tools list must pass.
#[test]
fn b17_conformance_of_the_example_server_through_the_guard() {
    let suite = Conformance::installed();
    let example = guard(
        &suite,
        "guard-example",
        &stdio_upstream(&example_binary("mcp_server"), &[]),
    );
    let run = suite.run("example", &example.url);
    println!("{}", table(&[&run]));
    let failed: Vec<&str> = ["server-initialize", "ping", "tools-list"]
        .into_iter()
        .filter(|scenario| !run.outcome(scenario).is_some_and(|o| o.passed()))
        .collect();
    assert!(
        failed.is_empty(),
        "the example fails {failed:?} through the guard:\n{}\n{}\nguard log:\n{}",
        table(&[&run]),
        run.output,
        example.log_text()
    );
}
