//! The main job end to end: the example agent's scenarios run in-process against
//! golden outputs, so the whole story — real tools, real faults, what the agent prints —
//! cannot regress silently.
//!
//! Each scenario runs the agent's own modules (included from `examples/agent/`) with its
//! output captured in a `Vec<u8>`. Before comparing with `tests/golden/agent_*.txt`, what
//! differs from run to run is normalised: wall-clock timestamps, the temporary directory,
//! the search server's port. Nothing else varies: the faults are real but deterministic
//! (`--flaky` draws from a seeded PRNG). A missing golden file fails; `UPDATE_GOLDEN=1`
//! (exactly) rewrites the files. `tests/reports/readme_output.rs` ties the real-output block of
//! `docs/transcripts.md` (and README.md's excerpt of it) to `agent_break_bash.txt`: a change
//! here that is intended means a fresh run pasted there.

#[path = "../examples/agent/agent.rs"]
mod agent;
mod common;
#[path = "../examples/agent/faults.rs"]
mod faults;
#[path = "common/run_output.rs"]
mod run_output;
#[path = "../examples/agent/search_server.rs"]
mod search_server;
#[path = "../examples/agent/workspace.rs"]
mod workspace;

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use agent_circuit_breaker::{FailureCategory, PauseReason};

use agent::Outcome;
use faults::Options;
use run_output::normalise;

/// One scenario at a time: each spawns shells and (for `--break bash`) keeps a CPU busy for
/// the length of the Bash timeout; in parallel they would only slow each other down.
static SERIAL: Mutex<()> = Mutex::new(());

/// Runs the agent with `args`; its output and outcome.
fn run(args: &[&str]) -> (String, Outcome) {
    let _serial = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    let options = Options::parse(args)
        .expect("valid arguments")
        .expect("not --help");
    let mut out: Vec<u8> = Vec::new();
    let outcome = agent::run(&options, &mut out).expect("the agent runs");
    (String::from_utf8(out).expect("UTF-8 output"), outcome)
}

/// The workspace directory the run printed.
fn workspace_of(output: &str) -> PathBuf {
    let line = output
        .lines()
        .find_map(|l| l.strip_prefix("Workspace:"))
        .expect("the run names its workspace");
    PathBuf::from(line.trim().split(' ').next().expect("a path"))
}

#[test]
fn normalise_replaces_only_what_varies() {
    let temp = std::env::temp_dir();
    let text = format!(
        "| 2026-11-30T07:35:03Z x |\n\"at\": \"2026-11-30T07:35:03.123Z\"\n{}/circuit-breaker-agent-123-4/workspace\nhttp://127.0.0.1:40123/search\ntimeout after 1s\nWorkspace: /var/tmp/x/circuit-breaker-agent-9-0/workspace (copy)\n",
        temp.display()
    );
    let normalised = normalise(&text);
    assert_eq!(
        normalised,
        "| YYYY-MM-DDThh:mm:ssZ x |\n\"at\": \"YYYY-MM-DDThh:mm:ss.mmmZ\"\n\
         $TMPDIR/circuit-breaker-agent-<pid>-<n>/workspace\nhttp://127.0.0.1:<port>/search\n\
         timeout after 1s\nWorkspace: $TMPDIR/circuit-breaker-agent-<pid>-<n>/workspace (copy)"
    );
    assert_eq!(
        normalise(&normalised),
        normalised,
        "normalising twice changes nothing"
    );
}

#[test]
fn healthy_every_subtask_done() {
    let (output, outcome) = run(&[]);
    assert_eq!(outcome.done, [1, 2, 3, 4, 5, 6]);
    assert!(outcome.deferred.is_empty());
    assert_eq!(outcome.paused, None);
    assert!(
        !workspace_of(&output).exists(),
        "the workspace is removed at the end"
    );
    assert!(
        output.contains("[CACHED RESULT — Grep returned identical results to previous call"),
        "a repeated identical search is labelled"
    );
    common::assert_golden("agent_healthy.txt", &normalise(&output));
}

#[test]
fn break_bash_defers_3_and_5_as_in_the_source_document() {
    let (output, outcome) = run(&["--break", "bash"]);
    assert_eq!(outcome.done, [1, 2, 4, 6]);
    assert_eq!(outcome.deferred, [3, 5]);
    for failure in [
        "permission denied (exit 126)",
        "command not found (exit 127)",
        "timeout after 1s",
    ] {
        assert!(
            output.contains(&format!("FAILED Bash: {failure}")),
            "{failure}"
        );
    }
    assert!(output.contains("Bash: OPEN (3 consecutive failures — permission/command/timeout)"));
    assert!(output.contains("Deferred: 2 sub-tasks require Bash (circuit OPEN)"));
    assert!(!workspace_of(&output).exists());
    common::assert_golden("agent_break_bash.txt", &normalise(&output));
}

#[test]
fn outage_network_reduces_the_research_honestly() {
    let (output, outcome) = run(&["--outage", "network"]);
    assert_eq!(outcome.done, [1, 2, 3, 4, 5]);
    assert_eq!(outcome.deferred, [6]);
    assert!(output.contains("FAILED WebSearch: Connection refused"));
    assert!(
        output.contains("SKIP   WebSearch is unavailable: circuit OPEN after 3 consecutive"),
        "the open circuit is not called again"
    );
    assert!(output.contains("FALLBACK state what information is needed; ask user to provide it"));
    common::assert_golden("agent_outage_network.txt", &normalise(&output));
}

#[test]
fn read_only_with_outage_pauses_on_a_systemic_failure() {
    let (output, outcome) = run(&["--read-only", "--outage", "network"]);
    assert_eq!(outcome.done, [1, 2, 3]);
    assert_eq!(
        outcome.paused,
        Some(PauseReason::Systemic {
            category: Some(FailureCategory::Permission)
        })
    );
    assert!(output.contains("SYSTEMIC FAILURE — PAUSING"));
    assert!(
        output.contains("was not called: all tools are paused"),
        "the next call is refused"
    );
    assert!(output.contains(
        "Multiple tools failing with Permission denied (os error 13) — likely permissions issue"
    ));
    assert!(
        !workspace_of(&output).exists(),
        "a read-only workspace is removed too"
    );
    common::assert_golden("agent_read_only_outage_network.txt", &normalise(&output));
}

#[test]
fn flaky_grep_is_deterministic_with_its_seed() {
    // Seed 15 tells the whole story: Grep fails, opens, is routed through Bash, closes
    // after a probe; the second attempt at sub-task 2 spends the failure budget.
    let args = ["--flaky", "grep=0.5", "--seed", "15"];
    let (first, outcome) = run(&args);
    let (second, _) = run(&args);
    assert_eq!(normalise(&first), normalise(&second), "same seed, same run");
    assert!(first.contains("Circuit OPENED for Grep: 3 consecutive failures"));
    assert!(first.contains("[STALE DATA — retrieved at"));
    assert!(first.contains("Grep circuit OPEN → Bash (rg or grep command)"));
    assert!(first.contains("Circuit HALF-OPEN for Grep: one probe call allowed"));
    assert!(first.contains("Circuit CLOSED for Grep: probe succeeded"));
    assert!(first.contains("\n  FAILURE BUDGET EXHAUSTED — PAUSING\n"));
    assert_eq!(outcome.done, [1, 3, 4, 5, 6]);
    assert_eq!(
        outcome.paused,
        Some(PauseReason::BudgetExhausted {
            consumed: 5,
            limit: 5
        })
    );
    common::assert_golden("agent_flaky_grep_seed_15.txt", &normalise(&first));
}

#[test]
fn json_prints_the_final_report_instead() {
    let (output, outcome) = run(&["--break", "bash", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&output).expect("only JSON is printed");
    assert_eq!(report["done"], serde_json::json!([1, 2, 4, 6]));
    assert_eq!(report["deferred"], serde_json::json!([3, 5]));
    assert_eq!(report["report"]["budget"]["consumed"], 3);
    assert_eq!(outcome.deferred, [3, 5]);
    common::assert_golden("agent_break_bash_json.txt", &normalise(&output));
}

#[test]
fn command_line_mistakes_are_usage_errors() {
    let parse = |args: &[&str]| Options::parse(args).map(|o| o.map(|o| o.faults));
    let faults = parse(&["--flaky=grep=0.25", "--seed=9", "--read-only"])
        .unwrap()
        .unwrap();
    assert_eq!(faults.flaky, [("grep".to_owned(), 0.25)]);
    assert_eq!(faults.seed, 9);
    assert!(faults.read_only);
    assert_eq!(parse(&["--help"]), Ok(None));
    for bad in [
        &["--break", "grep"][..],
        &["--outage", "disk"],
        &["--flaky", "grpe=0.5"],
        &["--flaky", "grep=2"],
        &["--seed", "x"],
        &["--seed"],
        &["--frobnicate"],
    ] {
        assert!(parse(bad).is_err(), "{bad:?} is refused");
    }
}
