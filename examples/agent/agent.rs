//! The agent: the source document's example task worked with the guarded toolbox. Every call
//! goes through the expeditor; the agent prints what the source document asks to be visible —
//! the capability map, every decision that is not a plain CALL (a route and its degradation, a
//! probe, a skip, a pause), the state table whenever it changes, freshness labels, the scope
//! reduction report and the final status or pause report — to any `io::Write`, or the final
//! report as JSON.
//!
//! A [`Watcher`] (`--watch`, `watch.rs`) is told of the run as it goes: the expeditor once it
//! is built, every event as it happens, the stage (step and sub-task), and a refresh point
//! after each call. Without one the run prints exactly the same.

use std::fmt::Display;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use agent_circuit_breaker::{
    CallError, CircuitState, Expeditor, PauseReason, Routed, SkipReason, Task,
    clock::Timestamp,
    event::Event,
    freshness::Freshness,
    report::{Budget, PauseReport, StateTable, SystemicEvent},
    route::RouteKind,
    scope::{ScopeError, ScopeReport, WorkStatus},
};
use serde::Serialize;

use crate::faults::{Faults, Options};
use crate::search_server::{DOCUMENTS, SearchHit, SearchServer};
use crate::workspace::{BASH_TIMEOUT, GuardedWorkspace, STALE_LOCK, Workspace};

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Sub-tasks done.
    pub done: Vec<usize>,
    /// Sub-tasks the final scope report defers.
    pub deferred: Vec<usize>,
    /// Why the expeditor paused, if it did.
    pub paused: Option<PauseReason>,
}

/// Runs the agent once: starts the search server, lays out the workspace, injects the faults,
/// works the task, prints to `out`, and removes the workspace.
///
/// # Errors
/// I/O errors of the agent itself (its output, the workspace's creation or removal); the
/// tools' errors are part of the run, not errors of it.
pub fn run(options: &Options, out: &mut dyn Write) -> io::Result<Outcome> {
    run_with(options, out, None)
}

/// What a live view of the run (`--watch`) is told as the run goes. Every method is called on
/// the agent's thread, never while it writes to its output.
pub trait Watcher: Send + Sync {
    /// The expeditor is built: the watcher may read its state from now on.
    fn attach(&self, expeditor: &Expeditor);
    /// An event, as it happens: inside a guarded call, after the expeditor released its lock.
    fn event(&self, event: &Event);
    /// Where the run is: `step 3 · sub-task 3: Run test suite`, `end of run`, `paused`.
    fn stage(&self, stage: String);
    /// The output is between calls: a place to show the state if it changed.
    fn refresh(&self);
    /// The run is over; the watcher lets go of the expeditor.
    fn close(&self);
}

/// [`run`], with `watcher` told of the run as it goes (`out` is then usually the watcher's own
/// writer, so that its frames and the log share one lock).
///
/// # Errors
/// As [`run`].
pub fn run_with(
    options: &Options,
    out: &mut dyn Write,
    watcher: Option<Arc<dyn Watcher>>,
) -> io::Result<Outcome> {
    let mut server = SearchServer::start(&DOCUMENTS)?;
    let addr = server.addr();
    if options.faults.outage_network {
        server.stop();
    }
    let (run_dir, workspace) = Workspace::create(&options.faults, addr)?;
    let events = EventLog::default();
    let observer = events.clone();
    let watching = watcher.clone();
    let tools = GuardedWorkspace::with_expeditor(workspace, move |builder| {
        let builder = builder.observer(move |event: &Event| observer.push(event));
        match watching {
            Some(watcher) => builder.observer(move |event: &Event| watcher.event(event)),
            None => builder,
        }
    });
    if let Some(watcher) = &watcher {
        watcher.attach(tools.expeditor());
    }
    let outcome = Agent {
        tools: &tools,
        watcher: watcher.as_deref(),
        events,
        out,
        json: options.json,
        faults: &options.faults,
        search: addr,
        task: Task::new()
            .subtask("Read configuration files", ["Read"])
            .subtask("Search for deprecated patterns", ["Grep"])
            .subtask("Run test suite", ["Bash"])
            .subtask("Update documentation", ["Grep", "Edit", "Write"])
            .subtask("Deploy to staging", ["Bash"])
            .subtask("Research the replacement APIs", ["WebSearch"]),
        decisions: Vec::new(),
        deprecations: Vec::new(),
        found: Vec::new(),
        last_table: None,
        last_deferred: Vec::new(),
        current: None,
    }
    .work();
    if let Some(watcher) = &watcher {
        watcher.close();
    }
    drop(tools);
    run_dir.remove()?;
    drop(server);
    outcome
}

/// Every event the expeditor emits, kept until the agent prints it.
#[derive(Clone, Default)]
struct EventLog(Arc<Mutex<Vec<Event>>>);

impl EventLog {
    fn push(&self, event: &Event) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(event.clone());
    }

    fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// One deprecated API, from `config/deprecations.toml`.
#[derive(Debug, Clone, Serialize)]
struct Deprecation {
    old: String,
    new: String,
}

impl Deprecation {
    /// The API's bare name: `legacy_connect`.
    fn name(&self) -> &str {
        self.old.trim_end_matches('(')
    }

    /// A regex for it, valid for the `regex` crate and for `grep -E` alike.
    fn pattern(&self) -> String {
        let mut pattern = String::from(r"\b");
        for c in self.old.chars() {
            if ".[]()*+?{}|^$\\".contains(c) {
                pattern.push('\\');
            }
            pattern.push(c);
        }
        pattern
    }
}

/// Where a deprecated API was found, and when.
#[derive(Debug, Clone)]
struct Found {
    files: Vec<String>,
    at: Timestamp,
}

/// One decision that was not a plain CALL, for the JSON report.
#[derive(Debug, Clone, Serialize)]
struct Decision {
    step: u64,
    subtask: Option<usize>,
    kind: &'static str,
    tool: Option<String>,
    detail: String,
}

/// Why a sub-task's work stops early.
enum Stop {
    /// Every call is paused.
    Paused,
    Io(io::Error),
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        Stop::Io(e)
    }
}

type Flow<T> = Result<T, Stop>;

/// What the state table showed last: states, consecutive failures, budget.
type TableKey = (Vec<(CircuitState, u32)>, u32);

struct Agent<'a> {
    tools: &'a GuardedWorkspace,
    watcher: Option<&'a dyn Watcher>,
    events: EventLog,
    out: &'a mut dyn Write,
    json: bool,
    faults: &'a Faults,
    search: SocketAddr,
    task: Task,
    decisions: Vec<Decision>,
    deprecations: Vec<Deprecation>,
    found: Vec<Option<Found>>,
    last_table: Option<TableKey>,
    last_deferred: Vec<usize>,
    current: Option<usize>,
}

/// The final report, as `--json` prints it.
#[derive(Serialize)]
struct FinalReport<'a> {
    faults: Vec<String>,
    outcome: &'static str,
    done: Vec<usize>,
    deferred: Vec<usize>,
    task: &'a Task,
    decisions: &'a [Decision],
    state_table: StateTable,
    budget: Budget,
    scope: ScopeReport,
    report: PauseReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    systemic: Option<SystemicEvent>,
}

/// Indents every line after the first by `indent` spaces.
fn hang(text: &str, indent: usize) -> String {
    text.replace('\n', &format!("\n{}", " ".repeat(indent)))
}

/// Indents every line by `indent` spaces.
fn block(text: &str, indent: usize) -> String {
    let pad = " ".repeat(indent);
    text.lines()
        .map(|l| {
            if l.is_empty() {
                String::new()
            } else {
                format!("{pad}{l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Read's numbered lines (`     1\ttext`) back to the text.
fn unnumbered(text: &str) -> String {
    text.lines()
        .map(|l| l.split_once('\t').map_or(l, |(_, rest)| rest))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `key = "value"` pairs of the `[[deprecated]]` tables.
fn parse_deprecations(toml: &str) -> Vec<Deprecation> {
    let value = |line: &str, key: &str| -> Option<String> {
        let rest = line.trim().strip_prefix(key)?.trim_start();
        let rest = rest.strip_prefix('=')?.trim();
        Some(rest.trim_matches('"').to_owned())
    };
    let mut list = Vec::new();
    let mut old: Option<String> = None;
    for line in toml.lines() {
        if let Some(v) = value(line, "old") {
            old = Some(v);
        } else if let (Some(v), Some(o)) = (value(line, "new"), old.take()) {
            list.push(Deprecation { old: o, new: v });
        }
    }
    list
}

/// The file of a `path:line:…` search hit, without a leading `./`.
fn hit_file(hit: &str) -> &str {
    let file = hit.split(':').next().unwrap_or(hit);
    file.strip_prefix("./").unwrap_or(file)
}

fn files_of(hits: &[String]) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for hit in hits {
        let file = hit_file(hit).to_owned();
        if !files.contains(&file) {
            files.push(file);
        }
    }
    files
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn list(numbers: &[usize]) -> String {
    let text: Vec<String> = numbers.iter().map(ToString::to_string).collect();
    match text.as_slice() {
        [] => "none".to_owned(),
        [one] => one.clone(),
        [head @ .., last] => format!("{} and {last}", head.join(", ")),
    }
}

impl Agent<'_> {
    fn say(&mut self, text: impl Display) -> io::Result<()> {
        if self.json {
            return Ok(());
        }
        writeln!(self.out, "{text}")
    }

    /// Tells the watcher where the run is.
    fn stage(&self, stage: String) {
        if let Some(watcher) = self.watcher {
            watcher.stage(stage);
        }
    }

    fn note(&mut self, kind: &'static str, tool: Option<&str>, detail: impl Into<String>) {
        self.decisions.push(Decision {
            step: self.tools.expeditor().step(),
            subtask: self.current_subtask(),
            kind,
            tool: tool.map(str::to_owned),
            detail: detail.into(),
        });
    }

    fn current_subtask(&self) -> Option<usize> {
        self.current
    }

    fn fault_lines(&self) -> Vec<String> {
        let f = self.faults;
        let mut lines = Vec::new();
        if f.break_bash {
            lines.push(format!(
                "--break bash: the shell is broken — the workspace's scripts lost their exec bits \
                 (permission denied), PATH is an empty directory (command not found), and a \
                 crashed test run left {STALE_LOCK} behind (a command waiting for it is killed \
                 by the {}s timeout)",
                BASH_TIMEOUT.as_secs()
            ));
        }
        if f.outage_network {
            lines.push(format!(
                "--outage network: the search server on {} was stopped before the run — \
                 connections are refused",
                self.search
            ));
        }
        if f.read_only {
            lines.push(
                "--read-only: the workspace tree is made read-only (chmod a-w). Root ignores \
                 permission bits, so Write and Edit also check them themselves and fail with \
                 EACCES (Permission denied), as the kernel does for a normal user; Bash is not \
                 emulated"
                    .to_owned(),
            );
        }
        for (tool, rate) in &f.flaky {
            lines.push(format!(
                "--flaky {tool}={rate}: each call of that tool fails at rate {rate}, drawn from \
                 xorshift64* seeded with {}",
                f.seed
            ));
        }
        lines
    }

    fn work(mut self) -> io::Result<Outcome> {
        self.header()?;
        let count = self.task.subtasks().len();
        let mut paused = false;
        for number in 1..=count {
            if !self.subtask(number, false, number < count)? {
                paused = true;
                break;
            }
        }
        if !paused {
            // The scope report recommends completing what failed but is achievable now (a
            // circuit closed again after a probe, say): one more pass, each in a later step —
            // never an immediate retry of a failed call.
            let scope = self.tools.expeditor().scope(&self.task);
            let again: Vec<usize> = scope
                .lines
                .iter()
                .filter(|l| l.achievable && matches!(l.status, WorkStatus::Failed { .. }))
                .map(|l| l.number)
                .collect();
            for (i, &number) in again.iter().enumerate() {
                if !self.subtask(number, true, i + 1 < again.len())? {
                    paused = true;
                    break;
                }
            }
        }
        self.finish(paused)
    }

    fn header(&mut self) -> io::Result<()> {
        let expeditor = self.tools.expeditor();
        let root = self.tools.toolbox().root().display().to_string();
        let policy = expeditor.policy();
        let map = expeditor.capability_map();
        let table = expeditor.state_table();
        self.last_table = Some(Self::key(&table));
        self.say(
            "circuit-breaker example agent: the inventory-api maintenance task on real tools\n",
        )?;
        self.say(format!(
            "Workspace:     {root} (a temporary copy of the inventory-api project, removed at the end)"
        ))?;
        self.say(format!(
            "Search server: http://{}/search?q=… over {} local documents",
            self.search,
            DOCUMENTS.len()
        ))?;
        let faults = self.fault_lines();
        if faults.is_empty() {
            self.say("Faults:        none")?;
        } else {
            self.say("Faults:")?;
            for fault in faults {
                self.say(format!("  {}", hang(&fault, 4)))?;
            }
        }
        self.say("")?;
        self.say(&map)?;
        self.say(format!(
            "\nPolicy: a circuit opens after {} consecutive failures; failure budget {} per \
             cycle; half-open probe every {} attempts after opening.\n",
            policy.threshold(),
            policy.budget(),
            policy.probe_every()
        ))?;
        self.say(&table)?;
        self.say(format!(
            "\nTask: move inventory-api's docs off the APIs removed upstream, test, ship to staging \
             — {}",
            plural(self.task.subtasks().len(), "sub-task", "sub-tasks")
        ))?;
        let lines: Vec<String> = self
            .task
            .subtasks()
            .iter()
            .enumerate()
            .map(|(i, s)| format!("  {}. {:<32} [{}]", i + 1, s.title, s.needs.join(", ")))
            .collect();
        for line in lines {
            self.say(line)?;
        }
        Ok(())
    }

    /// Works one sub-task (`again`: a second attempt, after it failed); `more`: others follow.
    /// `false` when every call is paused and the run must stop.
    fn subtask(&mut self, number: usize, again: bool, more: bool) -> io::Result<bool> {
        let expeditor = self.tools.expeditor();
        let step = expeditor.advance_step();
        self.current = Some(number);
        let sub = self.task.subtasks()[number - 1].clone();
        self.say(format!(
            "\n── Step {step} · Sub-task {number}: {} [{}]",
            sub.title,
            sub.needs.join(", ")
        ))?;
        self.stage(format!("step {step} · sub-task {number}: {}", sub.title));
        if again {
            let reason = match &sub.status {
                WorkStatus::Failed { reason } => reason.clone(),
                _ => String::new(),
            };
            self.say(format!(
                "  again: it FAILED in an earlier step ({reason}) and the scope report finds \
                 its tools working now"
            ))?;
        }
        match expeditor.begin_subtask(&self.task, number) {
            Ok(()) => {}
            Err(ScopeError::Deferred(deferral)) => {
                self.print_events(false)?;
                // The expeditor's event said why; this says what would unblock it.
                self.say(format!(
                    "    DEFER  not attempted — {}",
                    hang(&deferral.unblock, 11)
                ))?;
                self.note(
                    "defer",
                    Some(&deferral.blocked_by),
                    format!(
                        "requires {} ({}) — {}",
                        deferral.blocked_by,
                        deferral.reason,
                        deferral.unblock.replace('\n', " ")
                    ),
                );
                self.manual_fallback(number)?;
                expeditor.end_subtask();
                return self.after_subtask(more);
            }
            Err(e) => return Err(io::Error::other(e.to_string())),
        }
        let result = match number {
            1 => self.read_configuration(),
            2 => self.search_deprecated(),
            3 => self.run_tests(),
            4 => self.update_docs(),
            5 => self.deploy(),
            _ => self.research(),
        };
        let verdict = match result {
            Ok(verdict) => verdict,
            Err(Stop::Paused) => Err(self.failure_reason(&sub.needs, None)),
            Err(Stop::Io(e)) => return Err(e),
        };
        expeditor.end_subtask();
        match verdict {
            Ok(()) => {
                self.task
                    .done(number)
                    .map_err(|e| io::Error::other(e.to_string()))?;
                self.say(format!("  ✓ Sub-task {number} done"))?;
            }
            Err(reason) => {
                self.say(format!("  ✗ Sub-task {number} FAILED — {reason}"))?;
                self.task
                    .failed(number, reason)
                    .map_err(|e| io::Error::other(e.to_string()))?;
            }
        }
        self.after_subtask(more)
    }

    /// After a sub-task: the state table if it changed, the scope report if the scope did;
    /// `false` when every call is paused.
    fn after_subtask(&mut self, more: bool) -> io::Result<bool> {
        let expeditor = self.tools.expeditor();
        let table = expeditor.state_table();
        let key = Self::key(&table);
        if self.last_table.as_ref() != Some(&key) {
            self.last_table = Some(key);
            self.say(format!("\n{}", block(&table.to_string(), 2)))?;
        }
        if Self::halted(expeditor.paused()) {
            return Ok(false);
        }
        let scope = expeditor.reduce_scope(&self.task);
        let deferred: Vec<usize> = scope.deferred.iter().map(|d| d.number).collect();
        // After the last sub-task the final report shows the scope.
        if deferred != self.last_deferred && more {
            self.last_deferred = deferred;
            self.say(format!("\n{}", block(&scope.to_string(), 2)))?;
        }
        Ok(!Self::halted(expeditor.paused()))
    }

    /// Whether a pause stops the run: the budget is spent or a systemic failure holds. A
    /// pause for lack of achievable work does not: what is left is deferred, one by one.
    fn halted(pause: Option<PauseReason>) -> bool {
        matches!(
            pause,
            Some(PauseReason::BudgetExhausted { .. } | PauseReason::Systemic { .. })
        )
    }

    fn key(table: &StateTable) -> TableKey {
        (
            table
                .rows
                .iter()
                .map(|r| (r.state, r.consecutive_failures))
                .collect(),
            table.budget.consumed,
        )
    }

    /// Why a sub-task failed: the circuits of its tools that are OPEN, else `fallback`.
    fn failure_reason(&self, needs: &[String], fallback: Option<String>) -> String {
        let expeditor = self.tools.expeditor();
        let open: Vec<&str> = needs
            .iter()
            .filter(|n| {
                expeditor
                    .tool(n)
                    .is_some_and(|id| expeditor.state(id) == Some(CircuitState::Open))
            })
            .map(String::as_str)
            .collect();
        let failing: Vec<&str> = needs
            .iter()
            .filter(|n| {
                expeditor
                    .tool(n)
                    .and_then(|id| expeditor.breaker(id))
                    .is_some_and(|b| b.consecutive_failures() > 0)
            })
            .map(String::as_str)
            .collect();
        let mut reason = match open.as_slice() {
            [] if failing.is_empty() => fallback.unwrap_or_else(|| "its tools failed".to_owned()),
            [] => fallback.unwrap_or_else(|| format!("{} failed", failing.join(", "))),
            [one] => format!("{one} circuit OPEN"),
            many => format!("{} circuits OPEN", many.join(", ")),
        };
        match expeditor.paused() {
            Some(PauseReason::Systemic { .. }) => reason.push_str("; paused: systemic failure"),
            Some(PauseReason::BudgetExhausted { .. }) => {
                reason.push_str("; paused: failure budget exhausted");
            }
            _ => {}
        }
        reason
    }

    /// Prints the events since the last call: the probe ones (`pre`) or the others.
    fn print_events(&mut self, pre: bool) -> io::Result<()> {
        let events = self.events.take();
        let (now, later): (Vec<Event>, Vec<Event>) = events
            .into_iter()
            .partition(|e| !pre || matches!(e, Event::HalfOpened { .. }));
        for event in later {
            self.events.push(&event);
        }
        for event in now {
            let kind = match event {
                Event::HalfOpened { .. } => "PROBE ",
                _ => "EVENT ",
            };
            self.say(format!("    {kind} {event}"))?;
            self.note(
                if kind == "PROBE " { "probe" } else { "event" },
                event.tool(),
                event.to_string(),
            );
        }
        Ok(())
    }

    /// Prints one guarded call and its outcome; the value when there is one. A pause stops
    /// the sub-task. Then the watcher, if any, may show the state the call left.
    fn called<T>(
        &mut self,
        tool: &str,
        what: &str,
        result: Result<Routed<T>, CallError<io::Error>>,
        show: impl FnOnce(&T) -> Vec<String>,
    ) -> Flow<Option<Routed<T>>> {
        let shown = self.show_call(tool, what, result, show);
        if let Some(watcher) = self.watcher {
            watcher.refresh();
        }
        shown
    }

    /// [`called`](Self::called)'s lines.
    fn show_call<T>(
        &mut self,
        tool: &str,
        what: &str,
        result: Result<Routed<T>, CallError<io::Error>>,
        show: impl FnOnce(&T) -> Vec<String>,
    ) -> Flow<Option<Routed<T>>> {
        self.say(format!("  {tool} {what}"))?;
        self.print_events(true)?;
        match result {
            Ok(routed) => {
                if let Some(route) = routed.route() {
                    let kind = if route.kind == RouteKind::Stale {
                        "STALE "
                    } else {
                        "ROUTE "
                    };
                    self.say(format!("    {kind} {}", hang(&route.to_string(), 11)))?;
                    self.note("route", Some(tool), route.to_string());
                }
                if routed.freshness().is_labelled() {
                    self.say(format!("    {}", routed.freshness()))?;
                    self.note("label", Some(tool), routed.freshness().to_string());
                }
                for line in show(&routed.value) {
                    self.say(format!("    {line}"))?;
                }
                self.print_events(false)?;
                Ok(Some(routed))
            }
            Err(CallError::Failed {
                tool: failed,
                error,
                recorded,
                route,
            }) => {
                if let Some(route) = &route {
                    self.say(format!("    ROUTE  {}", hang(&route.to_string(), 11)))?;
                    self.note("route", Some(tool), route.to_string());
                }
                self.say(format!("    FAILED {failed}: {error}"))?;
                self.note("failed", Some(&failed), error.to_string());
                let budget = self.tools.expeditor().budget();
                let charge = match budget.ledger().last() {
                    Some(e) if e.systemic => " (part of a systemic event: charged once)",
                    Some(e) if e.pending => {
                        " (same category as an OPEN circuit: held, not charged unless it recovers)"
                    }
                    Some(e) if !e.charged => " (after the pause: not charged)",
                    _ => "",
                };
                self.say(format!(
                    "           Budget: {} / {} consumed{charge} — {}",
                    recorded.budget.consumed, recorded.budget.limit, recorded.budget
                ))?;
                // Even when this failure paused everything, the agent goes on as usual: the
                // expeditor answers its next call with PAUSE.
                self.print_events(false)?;
                Ok(None)
            }
            Err(CallError::Rejected {
                tool: rejected_by,
                error,
                ..
            }) => {
                // The call's own mistake (B14): nothing charged, nothing opened.
                self.say(format!("    MISTAKE {rejected_by}: {error} (not charged)"))?;
                self.note("mistake", Some(&rejected_by), error.to_string());
                self.print_events(false)?;
                Ok(None)
            }
            // A tool past its deadline (B13): a failure like any other, said as one.
            Err(timed_out @ CallError::TimedOut { .. }) => {
                self.say(format!("    FAILED {timed_out}"))?;
                self.note("failed", Some(tool), timed_out.to_string());
                self.print_events(false)?;
                Ok(None)
            }
            Err(CallError::Refused(refusal)) => {
                let paused = matches!(refusal.reason(), SkipReason::Paused { .. });
                let kind = if paused { "PAUSE " } else { "SKIP  " };
                let note = refusal.to_string();
                self.say(format!("    {kind} {note}"))?;
                self.note(
                    if paused { "pause" } else { "skip" },
                    Some(refusal.tool()),
                    note,
                );
                if let Some(route) = refusal.route().filter(|_| !paused) {
                    self.say(format!("           {}", hang(&route.to_string(), 11)))?;
                }
                self.print_events(false)?;
                if paused {
                    return Err(Stop::Paused);
                }
                Ok(None)
            }
        }
    }

    /// What to do by hand for a deferred sub-task: the tool's manual fallback, made concrete.
    fn manual_fallback(&mut self, number: usize) -> io::Result<()> {
        let commands: &[&str] = match number {
            3 => &[
                "./run_tests.sh --unit",
                "sh -n deploy.sh",
                "./run_tests.sh --integration",
            ],
            5 => &["./deploy.sh ../staging"],
            _ => &[],
        };
        if !commands.is_empty() {
            self.say("    Commands to run manually (Bash's fallback):")?;
            for command in commands {
                self.say(format!("      $ {command}"))?;
            }
        }
        Ok(())
    }

    fn read_configuration(&mut self) -> Flow<Result<(), String>> {
        let mut failed = Vec::new();
        for path in ["config/app.toml", "config/deprecations.toml"] {
            let result = self.tools.read(path);
            let shown = self.called("Read", path, result, |text| {
                vec![plural(text.lines().count(), "line", "lines")]
            })?;
            let Some(routed) = shown else {
                failed.push(path);
                continue;
            };
            let raw = match routed.route() {
                Some(r) if r.kind == RouteKind::Alternative => routed.value.clone(),
                _ => unnumbered(&routed.value),
            };
            if path.ends_with("deprecations.toml") {
                self.deprecations = parse_deprecations(&raw);
                self.found = vec![None; self.deprecations.len()];
                let lines: Vec<String> = self
                    .deprecations
                    .iter()
                    .map(|d| format!("deprecated: {:<16} → {}", d.old, d.new))
                    .collect();
                for line in lines {
                    self.say(format!("    {line}"))?;
                }
            }
        }
        Ok(if failed.is_empty() {
            Ok(())
        } else {
            Err(self.failure_reason(
                &["Read".to_owned()],
                Some(format!("could not read {}", failed.join(", "))),
            ))
        })
    }

    fn search_deprecated(&mut self) -> Flow<Result<(), String>> {
        if self.deprecations.is_empty() {
            return Ok(Err(
                "nothing to search for: the deprecation list was not read".to_owned(),
            ));
        }
        let mut missed = Vec::new();
        for (i, d) in self.deprecations.clone().iter().enumerate() {
            let pattern = d.pattern();
            let result = self.tools.grep(&pattern, ".");
            let shown = self.called("Grep", &format!("/{pattern}/ in ."), result, |hits| {
                let mut lines = vec![format!(
                    "{} in {}",
                    plural(hits.len(), "match", "matches"),
                    plural(files_of(hits).len(), "file", "files")
                )];
                lines.extend(hits.iter().map(|h| format!("  {h}")));
                lines
            })?;
            match shown {
                Some(routed) => {
                    self.found[i] = Some(Found {
                        files: files_of(&routed.value),
                        at: self.tools.expeditor().now(),
                    });
                }
                None => missed.push(d.name().to_owned()),
            }
        }
        Ok(if missed.is_empty() {
            Ok(())
        } else {
            Err(self.failure_reason(
                &["Grep".to_owned()],
                Some(format!(
                    "not searched: {}; a failed call is not retried at once",
                    missed.join(", ")
                )),
            ))
        })
    }

    fn run_tests(&mut self) -> Flow<Result<(), String>> {
        let checks = [
            ("./run_tests.sh --unit", "unit tests"),
            ("sh -n deploy.sh", "syntax of the deploy script"),
            (
                "while [ -e .test.lock ]; do :; done; ./run_tests.sh --integration",
                "integration tests, once no other run holds .test.lock",
            ),
        ];
        let mut failed = 0;
        for (command, purpose) in checks {
            let result = self.tools.bash(command);
            let shown = self.called(
                "Bash",
                &format!("$ {command}   # {purpose}"),
                result,
                |out| {
                    let last = out.lines().rfind(|l| !l.trim().is_empty());
                    vec![last.unwrap_or("(no output: OK)").to_owned()]
                },
            )?;
            if shown.is_none() {
                failed += 1;
            }
        }
        Ok(if failed == 0 {
            Ok(())
        } else {
            Err(self.failure_reason(
                &["Bash".to_owned()],
                Some(format!("{failed} of {} checks failed", checks.len())),
            ))
        })
    }

    fn update_docs(&mut self) -> Flow<Result<(), String>> {
        if self.deprecations.is_empty() {
            return Ok(Err(
                "nothing to update: the deprecation list was not read".to_owned()
            ));
        }
        let mut problems: Vec<String> = Vec::new();
        for (i, d) in self.deprecations.clone().iter().enumerate() {
            // Locate the API again: the tree may have changed since step 2.
            let pattern = d.pattern();
            let result = self.tools.grep(&pattern, ".");
            let shown = self.called("Grep", &format!("/{pattern}/ in ."), result, |hits| {
                vec![format!(
                    "{} in {}",
                    plural(hits.len(), "match", "matches"),
                    plural(files_of(hits).len(), "file", "files")
                )]
            })?;
            let files = if let Some(routed) = shown {
                files_of(&routed.value)
            } else if let Some(found) = self.found[i].clone() {
                let label = Freshness::Stale {
                    retrieved_at: found.at,
                };
                self.say(format!("    {label}"))?;
                self.say(format!(
                    "    using the files step 2 found: {}",
                    found.files.join(", ")
                ))?;
                self.note("label", Some("Grep"), label.to_string());
                found.files
            } else {
                problems.push(format!("{} not located", d.name()));
                continue;
            };
            for file in files.iter().filter(|f| f.starts_with("docs/")) {
                let result = self.tools.edit(file, &d.old, &d.new);
                let what = format!("{file}: {} → {}", d.old, d.new);
                let shown = self.called("Edit", &what, result, |n| {
                    vec![plural(*n, "replacement", "replacements")]
                })?;
                if shown.is_none() {
                    problems.push(format!("{file} not edited"));
                }
            }
        }
        let mut guide = String::from(
            "# Migrating off the APIs removed in 3.0\n\n| deprecated | use instead |\n|---|---|\n",
        );
        for d in &self.deprecations {
            guide.push_str(&format!("| `{}` | `{}` |\n", d.old, d.new));
        }
        let result = self.tools.write("docs/MIGRATION.md", &guide);
        let shown = self.called("Write", "docs/MIGRATION.md", result, |n| {
            vec![format!("{n} bytes written")]
        })?;
        if shown.is_none() {
            problems.push("docs/MIGRATION.md not written".to_owned());
        }
        // Verify: nothing deprecated left in the docs (the migration guide names them on
        // purpose).
        let all = self
            .deprecations
            .iter()
            .map(|d| d.pattern()[2..].to_owned())
            .collect::<Vec<_>>()
            .join("|");
        let pattern = format!(r"\b({all})");
        let result = self.tools.grep(&pattern, "docs");
        let shown = self.called("Grep", &format!("/{pattern}/ in docs"), result, |hits| {
            let left: Vec<&String> = hits
                .iter()
                .filter(|h| hit_file(h) != "docs/MIGRATION.md")
                .collect();
            if left.is_empty() {
                vec!["verified: no deprecated API left in docs/ but the migration guide".to_owned()]
            } else {
                let mut lines = vec![format!(
                    "{} still there:",
                    plural(left.len(), "use", "uses")
                )];
                lines.extend(left.iter().map(|h| format!("  {h}")));
                lines
            }
        })?;
        if shown.is_none() {
            self.say("    (not verified)")?;
        }
        Ok(if problems.is_empty() {
            Ok(())
        } else {
            Err(self.failure_reason(
                &["Edit".to_owned(), "Write".to_owned()],
                Some(problems.join("; ")),
            ))
        })
    }

    fn deploy(&mut self) -> Flow<Result<(), String>> {
        let command = "./deploy.sh ../staging";
        let result = self.tools.bash(command);
        let shown = self.called("Bash", &format!("$ {command}"), result, |out| {
            out.lines().map(str::to_owned).collect()
        })?;
        Ok(match shown {
            Some(_) => Ok(()),
            None => Err(self.failure_reason(&["Bash".to_owned()], None)),
        })
    }

    fn research(&mut self) -> Flow<Result<(), String>> {
        // One look-up per deprecated API, then the release notes that remove them.
        let mut lookups: Vec<(String, String, Vec<String>)> = self
            .deprecations
            .iter()
            .map(|d| {
                let replacement = d.new.trim_end_matches('(').to_owned();
                (
                    format!("{} replacement", d.name()),
                    format!(
                        "the documented replacement for `{}` (the config says `{}`, unconfirmed)",
                        d.old, d.new
                    ),
                    vec![replacement],
                )
            })
            .collect();
        lookups.push((
            "release notes 3.0".to_owned(),
            "the release that removes the deprecated APIs".to_owned(),
            self.deprecations
                .iter()
                .map(|d| d.name().to_owned())
                .collect(),
        ));
        let mut needed = Vec::new();
        for (query, what, expected) in &lookups {
            let result = self.tools.web_search(query);
            let shown = self.called("WebSearch", &format!("\"{query}\""), result, |hits| {
                show_hits(hits, expected)
            })?;
            if shown.is_none() {
                needed.push(what.clone());
            }
        }
        if needed.is_empty() {
            return Ok(Ok(()));
        }
        let fallback = self
            .tools
            .expeditor()
            .capability_map()
            .get("WebSearch")
            .map(|t| t.fallback().to_owned())
            .unwrap_or_default();
        self.say(format!("    FALLBACK {fallback}:"))?;
        for what in &needed {
            self.say(format!("      needed: {what}"))?;
        }
        self.note("fallback", Some("WebSearch"), fallback);
        Ok(Err(self.failure_reason(
            &["WebSearch".to_owned()],
            Some(format!(
                "{} of {} look-ups failed; the rest must come from the user",
                needed.len(),
                lookups.len()
            )),
        )))
    }

    fn finish(mut self, paused: bool) -> io::Result<Outcome> {
        let expeditor = self.tools.expeditor();
        self.stage(if paused { "paused" } else { "end of run" }.to_owned());
        self.say(format!(
            "\n══ {} ══",
            if paused { "Paused" } else { "End of run" }
        ))?;
        let table = expeditor.state_table();
        if self.last_table.as_ref() != Some(&Self::key(&table)) {
            self.say(format!("\n{}", block(&table.to_string(), 2)))?;
        }
        let budget = expeditor.budget();
        self.say(format!(
            "\n  Failure Budget Enforcement:\n\n{}",
            block(&budget.to_string(), 2)
        ))?;
        let scope = expeditor.scope(&self.task);
        self.say(format!("\n{}", block(&scope.to_string(), 2)))?;
        let report = expeditor.pause_report(&self.task);
        self.say(format!("\n{}", block(&report.to_string(), 2)))?;
        let done: Vec<usize> = self
            .task
            .subtasks()
            .iter()
            .enumerate()
            .filter(|(_, s)| s.status == WorkStatus::Done)
            .map(|(i, _)| i + 1)
            .collect();
        let deferred: Vec<usize> = scope.deferred.iter().map(|d| d.number).collect();
        let others: Vec<usize> = (1..=self.task.subtasks().len())
            .filter(|n| !done.contains(n) && !deferred.contains(n))
            .collect();
        let mut result = format!(
            "\nResult: {} of {} sub-tasks done ({})",
            done.len(),
            self.task.subtasks().len(),
            list(&done)
        );
        if !deferred.is_empty() {
            result.push_str(&format!("; deferred: {}", list(&deferred)));
        }
        if !others.is_empty() {
            result.push_str(&format!("; not done: {}", list(&others)));
        }
        match expeditor.paused() {
            Some(PauseReason::Systemic { .. }) => {
                result.push_str(". Paused on a systemic failure: recovery not confirmed.");
            }
            Some(PauseReason::BudgetExhausted { .. }) => {
                result.push_str(". Paused: the failure budget is spent.");
            }
            Some(PauseReason::NothingAchievable) => {
                result.push_str(". Stopped: what is left needs tools that are down.");
            }
            _ => result.push('.'),
        }
        self.say(result)?;
        let paused_reason = expeditor.paused();
        if self.json {
            let outcome = match paused_reason {
                None => "completed",
                Some(PauseReason::NothingAchievable) => "stopped: nothing achievable left",
                Some(PauseReason::BudgetExhausted { .. }) => "paused: failure budget exhausted",
                Some(PauseReason::Systemic { .. }) => "paused: systemic failure",
                Some(_) => "paused",
            };
            let report = FinalReport {
                faults: self.fault_lines(),
                outcome,
                done: done.clone(),
                deferred: deferred.clone(),
                task: &self.task,
                decisions: &self.decisions,
                state_table: table,
                budget,
                systemic: report.systemic.clone(),
                scope,
                report,
            };
            serde_json::to_writer_pretty(&mut *self.out, &report).map_err(io::Error::other)?;
            writeln!(self.out)?;
        }
        Ok(Outcome {
            done,
            deferred,
            paused: paused_reason,
        })
    }
}

/// The best hit of a search, and whether it names what the config says it should.
fn show_hits(hits: &[SearchHit], expected: &[String]) -> Vec<String> {
    let Some(best) = hits.first() else {
        return vec!["no results".to_owned()];
    };
    let missing: Vec<&str> = expected
        .iter()
        .filter(|e| !best.snippet.contains(e.as_str()))
        .map(String::as_str)
        .collect();
    let verdict = if missing.is_empty() {
        format!("confirms: {}", expected.join(", "))
    } else {
        format!("does not mention {}", missing.join(", "))
    };
    vec![
        format!(
            "{} — best: \"{}\" <{}>",
            plural(hits.len(), "result", "results"),
            best.title,
            best.url
        ),
        format!("  {}", best.snippet),
        format!("  {verdict}"),
    ]
}
