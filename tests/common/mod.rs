//! Shared fixtures for the integration tests: the source document's capability map (step 1) and
//! task (step 5), a wall clock fixed at a known instant, helpers that drive the expeditor the way
//! an executor does, an event log, and golden-file comparison.
//!
//! Golden files live in `tests/golden/`. Each file holds the rendered text followed by one
//! newline. A missing or different file fails the test. Run with `UPDATE_GOLDEN=1` (exactly
//! `1`; any other value compares) to rewrite them after an intended change — except the
//! `seed_*` files, which are copied verbatim from the source document and are never rewritten.

// Every test binary includes this module and uses a different subset of it.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_circuit_breaker::{
    AlternativeSpec, CapabilityMap, Decision, Degradation, Expeditor, Failure, Policy, Task,
    ToolSpec,
    capability::ToolSpecBuilder,
    clock::{ManualClock, Timestamp},
    event::{Event, Observer},
    expeditor::{Recorded, ToolId},
};

/// 2026-11-30T07:35:03Z: every test's wall clock starts here.
pub const T0: Timestamp = Timestamp::from_secs(1_796_024_103);

pub const SEED_TOOLS: [&str; 6] = ["Grep", "Bash", "Read", "Write", "Edit", "WebSearch"];

pub fn grep_spec() -> ToolSpecBuilder {
    ToolSpec::new("Grep")
        .provides("content search across files")
        .alternative(
            AlternativeSpec::new("Bash")
                .method("rg or grep command")
                .degradation(Degradation::low("loses Grep's built-in output formatting")),
        )
        .alternative(
            AlternativeSpec::new("Read")
                .method("read suspected files directly")
                .degradation(Degradation::high(
                    "requires knowing which files to check; no broad search",
                )),
        )
        .fallback("ask the user which files to examine")
}

pub fn bash_spec() -> ToolSpecBuilder {
    ToolSpec::new("Bash")
        .provides("command execution, build tools, git operations")
        .fallback("report commands that need to be run manually")
}

pub fn read_spec() -> ToolSpecBuilder {
    ToolSpec::new("Read")
        .provides("file content inspection")
        .alternative(
            AlternativeSpec::new("Bash")
                .method("cat or head command")
                .degradation(Degradation::low(
                    "loses line numbering and truncation safety",
                )),
        )
        .fallback("ask the user to paste file contents")
}

pub fn write_spec() -> ToolSpecBuilder {
    ToolSpec::new("Write")
        .provides("file creation")
        .alternative(
            AlternativeSpec::new("Edit")
                .method("create via full-file edit")
                .degradation(Degradation::high("requires file to already exist for Edit")),
        )
        .alternative(
            AlternativeSpec::new("Bash")
                .method("echo/cat heredoc")
                .degradation(Degradation::low("loses Write's atomic file creation")),
        )
        .fallback("output file contents for the user to save manually")
}

/// Not in the source document's map (which names it only as an alternative of Write): our own
/// spec.
pub fn edit_spec() -> ToolSpecBuilder {
    ToolSpec::new("Edit")
        .provides("in-place file modification")
        .fallback("describe the edit for the user to apply")
}

pub fn websearch_spec() -> ToolSpecBuilder {
    ToolSpec::new("WebSearch")
        .provides("external information retrieval")
        .fallback("state what information is needed; ask user to provide it")
}

/// The source document's capability map with Edit declared, in the order of its state table.
pub fn seed_map() -> CapabilityMap {
    CapabilityMap::new()
        .tool(grep_spec())
        .tool(bash_spec())
        .tool(read_spec())
        .tool(write_spec())
        .tool(edit_spec())
        .tool(websearch_spec())
}

/// The source document's capability map exactly as it writes it: Write names Edit, which the map
/// never declares.
pub fn seed_map_as_written() -> CapabilityMap {
    CapabilityMap::new()
        .tool(grep_spec())
        .tool(bash_spec())
        .tool(read_spec())
        .tool(write_spec())
        .tool(websearch_spec())
}

/// The source document's task (steps 5 and 7): five sub-tasks and the tools they need.
pub fn seed_task() -> Task {
    Task::new()
        .subtask("Read configuration files", ["Read"])
        .subtask("Search for deprecated patterns", ["Grep"])
        .subtask("Run test suite", ["Bash"])
        .subtask("Update documentation", ["Edit"])
        .subtask("Deploy to staging", ["Bash"])
}

pub fn clock() -> ManualClock {
    ManualClock::new(T0)
}

pub fn policy_with_budget(budget: u32) -> Policy {
    Policy::builder()
        .budget(budget)
        .build()
        .expect("valid policy")
}

/// An expeditor over `map` with `policy` and `clock`.
pub fn expeditor_with(map: CapabilityMap, policy: Policy, clock: &ManualClock) -> Expeditor {
    Expeditor::builder(map)
        .policy(policy)
        .clock(clock.clone())
        .build()
        .expect("valid map")
}

/// The source document's map, the default policy (3 / 5 / 3) and a manual clock at [`T0`].
pub fn seed_expeditor() -> (Expeditor, ManualClock) {
    let clock = clock();
    let expeditor = expeditor_with(seed_map(), Policy::default(), &clock);
    (expeditor, clock)
}

pub fn id(expeditor: &Expeditor, name: &str) -> ToolId {
    expeditor
        .tool(name)
        .unwrap_or_else(|| panic!("tool {name} is not registered"))
}

/// Asks the expeditor and, given a CALL or PROBE, records a failure through the ticket.
pub fn fail(expeditor: &Expeditor, name: &str, failure: impl Into<Failure>) -> Recorded {
    match expeditor.decide(id(expeditor, name)) {
        Decision::Call(ticket) | Decision::Probe(ticket) => ticket.failure(failure),
        other => panic!("expected CALL or PROBE for {name}, got {}", other.kind()),
    }
}

/// Asks the expeditor and, given a CALL or PROBE, records a success through the ticket.
pub fn succeed(expeditor: &Expeditor, name: &str) {
    match expeditor.decide(id(expeditor, name)) {
        Decision::Call(ticket) | Decision::Probe(ticket) => ticket.success(),
        other => panic!("expected CALL or PROBE for {name}, got {}", other.kind()),
    }
}

/// Fails `name` once per message; returns what the last failure did.
pub fn fail_all(expeditor: &Expeditor, name: &str, messages: &[&'static str]) -> Recorded {
    let mut last = None;
    for message in messages {
        last = Some(fail(expeditor, name, *message));
    }
    last.expect("at least one message")
}

/// Opens `name` with the default threshold of 3.
pub fn open3(expeditor: &Expeditor, name: &str) -> Recorded {
    let recorded = fail_all(
        expeditor,
        name,
        &[
            "permission denied",
            "command not found",
            "timeout after 120s",
        ],
    );
    assert!(recorded.opened, "{name} should be OPEN after 3 failures");
    recorded
}

/// The kind of a decision (`CALL`, `PROBE`, `SKIP`, `PAUSE`); a ticket is dropped unrecorded.
/// The decision's name. A ticket in it is given back unused (`Ticket::cancel`): looking at a
/// decision is no call, so it is not counted as a cancellation by the caller (B13).
pub fn kind(decision: Decision<'_>) -> &'static str {
    let kind = decision.kind();
    if let Decision::Call(ticket) | Decision::Probe(ticket) = decision {
        ticket.cancel();
    }
    kind
}

/// Every event the expeditor reports, in order.
#[derive(Clone, Default)]
pub struct EventLog(Arc<Mutex<Vec<Event>>>);

impl EventLog {
    pub fn observer(&self) -> impl Observer + use<> {
        let log = Arc::clone(&self.0);
        move |event: &Event| log.lock().unwrap().push(event.clone())
    }

    pub fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }

    pub fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }

    pub fn kinds(&self) -> Vec<&'static str> {
        self.0.lock().unwrap().iter().map(Event::kind).collect()
    }
}

fn golden_path(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("golden")
        .join(file)
}

/// Whether the environment asks to rewrite golden files: `UPDATE_GOLDEN` set to exactly `1`.
/// Unset, empty, `0`, `true` or anything else compares (`.ci/run` unsets it).
pub fn update_golden_requested() -> bool {
    update_requested(std::env::var_os("UPDATE_GOLDEN").as_deref())
}

/// The rule behind [`update_golden_requested`], apart from the environment so it can be tested.
pub fn update_requested(value: Option<&std::ffi::OsStr>) -> bool {
    value.is_some_and(|v| v == "1")
}

/// Compares `actual` with `tests/golden/<file>` (which holds `actual` plus one newline).
/// `UPDATE_GOLDEN=1` (exactly) rewrites the file instead, except for the source document's
/// verbatim `seed_*` files; without it a missing or different file fails. On a mismatch,
/// panics with a line diff.
#[track_caller]
pub fn assert_golden(file: &str, actual: &str) {
    let verbatim = file.starts_with("seed_");
    if let Err(message) = compare_golden(
        &golden_path(file),
        actual,
        update_golden_requested(),
        verbatim,
    ) {
        panic!("{message}");
    }
}

/// What [`assert_golden`] does, with the update switch and the path passed in: `update`
/// rewrites the file (unless `verbatim`) and reports it on stderr; otherwise a missing or
/// different file is an error (with a line diff). Never creates a file when `update` is false.
pub fn compare_golden(
    path: &std::path::Path,
    actual: &str,
    update: bool,
    verbatim: bool,
) -> Result<(), String> {
    let wanted = format!("{actual}\n");
    if update && !verbatim {
        if std::fs::read_to_string(path).ok().as_deref() != Some(wanted.as_str()) {
            std::fs::create_dir_all(path.parent().expect("golden dir")).expect("create golden dir");
            std::fs::write(path, &wanted).expect("write golden file");
            eprintln!("UPDATE_GOLDEN=1: rewrote {}", path.display());
        }
        return Ok(());
    }
    let expected = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "golden file {} not readable ({e}); {}.\nactual text:\n{actual}",
            path.display(),
            if verbatim {
                "it is copied verbatim from the source document and never generated"
            } else {
                "run with UPDATE_GOLDEN=1 to create it, then review it"
            },
        )
    })?;
    if expected != wanted {
        return Err(format!(
            "rendered text differs from golden file {}{}\n\
             (- golden, + actual; `·` marks a trailing space, `⏎` a missing final newline)\n{}",
            path.display(),
            if verbatim {
                " (copied verbatim from the source document: fix the code, not the file)"
            } else {
                "; if the change is intended, rerun with UPDATE_GOLDEN=1"
            },
            line_diff(&expected, &wanted)
        ));
    }
    Ok(())
}

/// A small line diff (longest common subsequence), readable in a test failure.
pub fn line_diff(expected: &str, actual: &str) -> String {
    let show = |line: &str| -> String {
        let trimmed = line.trim_end_matches(' ');
        let spaces = line.len() - trimmed.len();
        format!("{trimmed}{}", "·".repeat(spaces))
    };
    let split = |text: &str| -> Vec<String> {
        let mut lines: Vec<String> = text.split('\n').map(show).collect();
        match lines.last() {
            Some(last) if last.is_empty() => {
                lines.pop();
            }
            Some(_) => {
                let last = lines.pop().expect("non-empty");
                lines.push(format!("{last}⏎"));
            }
            None => {}
        }
        lines
    };
    let (a, b) = (split(expected), split(actual));
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut out = String::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            let _ = writeln!(out, "  {:>3} | {}", i + 1, a[i]);
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            let _ = writeln!(out, "- {:>3} | {}", i + 1, a[i]);
            i += 1;
        } else {
            let _ = writeln!(out, "+ {:>3} | {}", j + 1, b[j]);
            j += 1;
        }
    }
    out
}

/// Asserts that a text for the model never invites a retry (B7).
#[track_caller]
pub fn assert_no_retry_invitation(text: &str) {
    let lower = text.to_lowercase();
    for phrase in ["retry", "try again", "again later"] {
        assert!(
            !lower.contains(phrase),
            "text for the model contains {phrase:?}: {text}"
        );
    }
}

/// Drives a future to completion on this thread (no async runtime is chosen by the crate).
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return value;
        }
    }
}

/// Suspends once, like real I/O that is not ready at first poll.
pub struct YieldOnce(pub bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            std::task::Poll::Ready(())
        } else {
            self.0 = true;
            std::task::Poll::Pending
        }
    }
}

/// The map the fleet tests share (B11): `search` (routed to `fetch`), `fetch`, `lint`.
pub fn fleet_map() -> CapabilityMap {
    CapabilityMap::new()
        .tool(
            ToolSpec::new("search")
                .provides("web search")
                .alternative(
                    agent_circuit_breaker::AlternativeSpec::new("fetch")
                        .method("fetch the likely pages")
                        .degradation(agent_circuit_breaker::Degradation::low("no ranking")),
                )
                .fallback("ask the user"),
        )
        .tool(
            ToolSpec::new("fetch")
                .provides("page fetching")
                .fallback("ask the user for the page"),
        )
        .tool(
            ToolSpec::new("lint")
                .provides("linting")
                .fallback("lint by hand"),
        )
}
