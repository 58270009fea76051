//! Scope, freshness, budget, cascades and pre-call checks through generated handles:
//! `#[tool(caches)]`, `#[tool(freshness)]` with `Dated` outputs, `#[tool(serve_stale)]`,
//! `#[tool(precheck = f)]` (sync and async), deferred sub-tasks and a systemic pause as the
//! dispatcher sees them, and the source document's budget block reached through real failing
//! tools (R5, R6, R7, R9, R10).

#[path = "../common/mod.rs"]
mod common;

use common::{YieldOnce, block_on};

use std::cell::{Cell, RefCell};
use std::io;
use std::time::Duration;

use agent_circuit_breaker::{
    Availability, CallError, CircuitState, FailureCategory, PauseReason, SkipReason, Task,
    capability::Severity,
    clock::{ManualClock, Timestamp},
    freshness::{Dated, Freshness},
    route::RouteKind,
    scope::ScopeError,
    toolbox,
};
use common::{T0, assert_golden, assert_no_retry_invitation};

/// A fetched page: its body and when it was last modified.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Page {
    body: String,
    modified: Timestamp,
}

impl Dated for Page {
    fn data_time(&self) -> Option<Timestamp> {
        Some(self.modified)
    }
}

/// Network tools over a pretend server that can go down or be reported unhealthy.
struct Net {
    down: Cell<bool>,
    body: RefCell<String>,
    modified: Cell<Timestamp>,
    health: RefCell<Availability>,
    checks: Cell<u32>,
    fetches: Cell<u32>,
    searches: Cell<u32>,
}

impl Default for Net {
    fn default() -> Self {
        Net {
            down: Cell::new(false),
            body: RefCell::new("v1.2.0: fixed the parser".into()),
            modified: Cell::new(T0),
            health: RefCell::new(Availability::Available),
            checks: Cell::new(0),
            fetches: Cell::new(0),
            searches: Cell::new(0),
        }
    }
}

fn refused() -> io::Error {
    io::Error::from(io::ErrorKind::ConnectionRefused)
}

#[toolbox(policy(threshold = 3, budget = 20, probe_every = 10))]
impl Net {
    #[tool(
        name = "WebSearch",
        provides = "external information retrieval",
        fallback = "state what information is needed; ask user to provide it",
        caches
    )]
    fn web_search(&self, query: &str) -> io::Result<Vec<String>> {
        self.searches.set(self.searches.get() + 1);
        if self.down.get() {
            return Err(refused());
        }
        Ok(vec![format!("https://example.invalid/?q={query}")])
    }

    #[tool(
        name = "WebFetch",
        provides = "fetch a web page",
        fallback = "ask the user to paste the page",
        freshness,
        serve_stale,
        precheck = server_health
    )]
    fn web_fetch(&self, url: &str) -> io::Result<Page> {
        self.fetches.set(self.fetches.get() + 1);
        if self.down.get() {
            return Err(refused());
        }
        Ok(Page {
            body: format!("{url}: {}", self.body.borrow()),
            modified: self.modified.get(),
        })
    }

    /// The pre-call check: is the server healthy?
    fn server_health(&self) -> Availability {
        self.checks.set(self.checks.get() + 1);
        self.health.borrow().clone()
    }

    #[tool(
        name = "Read",
        provides = "file content inspection",
        fallback = "ask the user to paste file contents",
        freshness
    )]
    fn read(&self, path: &str) -> io::Result<String> {
        Ok(format!("{path}: {}", self.body.borrow()))
    }
}

fn net() -> (GuardedNet, ManualClock) {
    let clock = ManualClock::new(T0);
    let agent = GuardedNet::with_expeditor(Net::default(), |b| b.clock(clock.clone()));
    (agent, clock)
}

/// Opens WebFetch with three refused connections.
fn break_fetch(agent: &GuardedNet) {
    agent.toolbox().down.set(true);
    for _ in 0..3 {
        let err = agent
            .web_fetch("https://example.invalid/changelog")
            .unwrap_err();
        assert!(matches!(err, CallError::Failed { .. }), "{err}");
    }
    assert_eq!(
        agent.expeditor().state(NetTool::WebFetch),
        Some(CircuitState::Open)
    );
}

#[test]
fn r6_2_a_tool_declared_caches_labels_every_result_unverified() {
    let (agent, clock) = net();
    assert!(agent.expeditor().is_caching(NetTool::WebSearch));
    assert!(!agent.expeditor().is_caching(NetTool::WebFetch));
    assert!(
        NetTool::capability_map()
            .get("WebSearch")
            .unwrap()
            .is_caching()
    );
    clock.advance(Duration::from_secs(90));
    for query in ["rust", "rust", "serde"] {
        let routed = agent.web_search(query).unwrap();
        assert_eq!(
            *routed.freshness(),
            Freshness::Unverified {
                tool: "WebSearch".into(),
                from: T0.plus(Duration::from_secs(90)),
            }
        );
        assert_eq!(
            routed.freshness().to_string(),
            "[UNVERIFIED — WebSearch result from 2026-11-30; current status unknown]"
        );
    }
}

#[test]
fn r6_2_a_freshness_tool_labels_an_identical_output_for_the_same_arguments_cached() {
    let (agent, _clock) = net();
    let first = agent.read("config.toml").unwrap();
    assert_eq!(*first.freshness(), Freshness::Fresh);
    assert!(!first.freshness().is_labelled());
    let again = agent.read("config.toml").unwrap();
    assert_eq!(
        *again.freshness(),
        Freshness::Cached {
            tool: "Read".into(),
            source: "the source".into(),
        }
    );
    assert_eq!(
        again.freshness().to_string(),
        "[CACHED RESULT — Read returned identical results to previous call; the source may \
         have changed since]"
    );
    // Other arguments: their own baseline.
    assert_eq!(
        *agent.read("Cargo.toml").unwrap().freshness(),
        Freshness::Fresh
    );
    // A changed output: fresh again.
    *agent.toolbox().body.borrow_mut() = "v1.3.0".into();
    assert_eq!(
        *agent.read("config.toml").unwrap().freshness(),
        Freshness::Fresh
    );
    // Data dated inside the current cycle carries no label either.
    let page = agent.web_fetch("https://example.invalid/a").unwrap();
    assert_eq!(*page.freshness(), Freshness::Fresh);
}

#[test]
fn r6_2_a_dated_output_older_than_the_cycle_is_stale_data() {
    let (agent, _clock) = net();
    let yesterday = Timestamp::from_millis(T0.as_millis() - 86_400_000);
    agent.toolbox().modified.set(yesterday);
    let routed = agent
        .web_fetch("https://example.invalid/changelog")
        .unwrap();
    assert_eq!(
        *routed.freshness(),
        Freshness::Stale {
            retrieved_at: yesterday
        }
    );
    assert_eq!(
        routed.freshness().to_string(),
        "[STALE DATA — retrieved at 2026-11-29T07:35:03Z, may not reflect current state]"
    );
}

#[test]
fn r6_serve_stale_answers_an_open_tool_with_its_last_good_result_labelled() {
    let (agent, clock) = net();
    let url = "https://example.invalid/changelog";
    let good = agent.web_fetch(url).unwrap().value;
    let retrieved = T0;
    clock.advance(Duration::from_secs(600));

    // A failure of the tool itself is the tool's error, never a stale copy (R3.5).
    agent.toolbox().down.set(true);
    let err = agent.web_fetch(url).unwrap_err();
    assert_eq!(
        err.tool_error().map(io::Error::kind),
        Some(io::ErrorKind::ConnectionRefused)
    );
    agent.toolbox().down.set(false);
    agent.web_fetch(url).unwrap();
    break_fetch(&agent);
    let fetches = agent.toolbox().fetches.get();
    let consumed = agent.expeditor().budget().consumed();

    clock.advance(Duration::from_secs(60));
    let stale = agent.web_fetch(url).expect("the last good result");
    assert_eq!(
        agent.toolbox().fetches.get(),
        fetches,
        "the tool is not called"
    );
    assert_eq!(stale.value, good);
    // The last good result is the one from 10 minutes in, not the first.
    let kept_at = retrieved.plus(Duration::from_secs(600));
    assert_eq!(
        *stale.freshness(),
        Freshness::Stale {
            retrieved_at: kept_at
        }
    );
    assert_eq!(
        stale.freshness().to_string(),
        "[STALE DATA — retrieved at 2026-11-30T07:45:03Z, may not reflect current state]"
    );
    assert!(stale.is_degraded(), "never silently: the route says so");
    let route = stale.route().unwrap();
    assert_eq!(
        (route.kind, route.from.as_str(), route.severity),
        (RouteKind::Stale, "WebFetch", Severity::High)
    );
    assert_eq!(
        route.to_string(),
        "WebFetch circuit OPEN → last good result for the same arguments\n  → Decision: STALE \
         DATA — labelled, not fresh"
    );
    assert_eq!(agent.expeditor().budget().consumed(), consumed, "no charge");

    // Arguments never answered: the refusal itself.
    let err = agent
        .web_fetch("https://example.invalid/other")
        .unwrap_err();
    let refusal = err.refusal().expect("refused, not failed");
    assert_eq!(refusal.reason(), SkipReason::Open);
    assert_eq!(refusal.route().unwrap().kind, RouteKind::Fallback);

    // Opt-in: a tool without `serve_stale` is refused even for arguments it answered.
    let (agent, _clock) = net();
    agent.web_search("rust").unwrap();
    agent.toolbox().down.set(true);
    for _ in 0..3 {
        let _ = agent.web_search("rust");
    }
    let err = agent.web_search("rust").unwrap_err();
    assert_eq!(err.refusal().unwrap().reason(), SkipReason::Open);
}

#[test]
fn r10_a_precheck_runs_when_due_and_its_result_is_kept() {
    let (agent, _clock) = net();
    assert_eq!(
        agent.toolbox().checks.get(),
        0,
        "nothing runs before a call"
    );
    agent.web_fetch("https://example.invalid/a").unwrap();
    agent.web_fetch("https://example.invalid/b").unwrap();
    assert_eq!(agent.toolbox().checks.get(), 1, "checked once, then cached");
    assert!(!agent.expeditor().precheck_due(NetTool::WebFetch));
    // Tools without a precheck are never checked by the handle.
    agent.read("x").unwrap();
    assert!(agent.expeditor().precheck_due(NetTool::Read));
    agent.expeditor().invalidate_prechecks();
    agent.web_fetch("https://example.invalid/a").unwrap();
    assert_eq!(agent.toolbox().checks.get(), 2);
}

#[test]
fn r10_2_an_unavailable_precheck_refuses_without_a_call_or_a_charge() {
    let (agent, _clock) = net();
    *agent.toolbox().health.borrow_mut() = Availability::Unavailable("server down".into());
    let err = agent.web_fetch("https://example.invalid/a").unwrap_err();
    let refusal = err.refusal().expect("refused, not called");
    assert_eq!(refusal.reason(), SkipReason::Unavailable);
    assert_eq!(
        refusal.note().to_string(),
        "WebFetch is unavailable: the pre-call check says UNAVAILABLE — server down. Do not \
         call WebFetch. Instead: no other tool can do this — ask the user to paste the page."
    );
    assert_no_retry_invitation(&refusal.note().to_string());
    assert_eq!(agent.toolbox().fetches.get(), 0);
    assert_eq!(agent.expeditor().budget().consumed(), 0);
    assert_eq!(
        agent.expeditor().state(NetTool::WebFetch),
        Some(CircuitState::Closed)
    );
    // Cached: not checked again on the next call, still refused.
    assert!(agent.web_fetch("https://example.invalid/a").is_err());
    assert_eq!(agent.toolbox().checks.get(), 1);
    // Healthy again and checked again: called.
    *agent.toolbox().health.borrow_mut() = Availability::Available;
    agent.expeditor().invalidate_prechecks();
    assert!(agent.web_fetch("https://example.invalid/a").is_ok());
    assert_eq!(agent.toolbox().fetches.get(), 1);
}

#[test]
fn r10_2_serve_stale_also_answers_an_unavailable_tool() {
    let (agent, _clock) = net();
    let url = "https://example.invalid/a";
    let good = agent.web_fetch(url).unwrap().value;
    *agent.toolbox().health.borrow_mut() = Availability::Unavailable("server down".into());
    agent.expeditor().invalidate_prechecks();
    let stale = agent.web_fetch(url).unwrap();
    assert_eq!(stale.value, good);
    assert_eq!(*stale.freshness(), Freshness::Stale { retrieved_at: T0 });
    assert_eq!(agent.toolbox().fetches.get(), 1);
}

#[test]
fn r10_2_a_degraded_precheck_lowers_the_tools_threshold() {
    let (agent, _clock) = net();
    *agent.toolbox().health.borrow_mut() = Availability::Degraded("high latency".into());
    agent.toolbox().down.set(true);
    let _ = agent.web_fetch("https://example.invalid/a");
    let err = agent.web_fetch("https://example.invalid/a").unwrap_err();
    let CallError::Failed { recorded, .. } = err else {
        panic!("the tool ran and failed")
    };
    assert!(recorded.opened, "threshold 3 - 1 = 2");
    assert_eq!(recorded.consecutive_failures, 2);
}

#[test]
fn r10_3_a_systemic_event_pauses_every_handle_and_prechecks_run_again_after_recovery() {
    let (agent, _clock) = net();
    let url = "https://example.invalid/changelog";
    agent.web_fetch(url).unwrap();
    assert_eq!(agent.toolbox().checks.get(), 1);
    break_fetch(&agent);
    for _ in 0..2 {
        let _ = agent.web_search("rust");
    }
    let err = agent.web_search("rust").unwrap_err();
    let CallError::Failed { recorded, .. } = err else {
        panic!("WebSearch ran and failed")
    };
    assert!(recorded.opened && recorded.paused);
    let pause = PauseReason::Systemic {
        category: Some(FailureCategory::Network),
    };
    assert_eq!(agent.expeditor().paused(), Some(pause));

    // Every handle is refused with the pause, stale copies included (R6: never for a pause).
    for err in [
        agent.read("config.toml").unwrap_err(),
        agent.web_fetch(url).map(|r| r.value.body).unwrap_err(),
    ] {
        let refusal = err.refusal().expect("refused");
        assert_eq!(refusal.reason(), SkipReason::Paused { pause });
        assert_eq!(refusal.route(), None);
        assert_golden(
            &format!(
                "r9_2_systemic_pause_model_note_{}.txt",
                refusal.tool().to_lowercase()
            ),
            &refusal.note().to_string(),
        );
    }
    assert_eq!(
        agent.toolbox().fetches.get(),
        4,
        "no tool runs while paused"
    );

    agent.toolbox().down.set(false);
    agent.expeditor().confirm_recovery().unwrap();
    assert!(agent.expeditor().precheck_due(NetTool::WebFetch));
    let checks = agent.toolbox().checks.get();
    assert_eq!(agent.read("config.toml").unwrap().route(), None);
    // WebFetch is still OPEN (its probe is not due): its check runs, then the stale copy.
    let stale = agent.web_fetch(url).unwrap();
    assert_eq!(
        agent.toolbox().checks.get(),
        checks + 1,
        "checked again after recovery"
    );
    assert_eq!(stale.route().unwrap().kind, RouteKind::Stale);
}

#[test]
fn r5_3_the_dispatcher_refuses_a_deferred_subtasks_tools() {
    let (agent, _clock) = net();
    let url = "https://example.invalid/changelog";
    agent.web_fetch(url).unwrap();
    break_fetch(&agent);
    let task = Task::new()
        .subtask("Read configuration files", [NetTool::Read.name()])
        .subtask("Fetch the changelog", [NetTool::WebFetch.name()]);
    let scope = agent.expeditor().scope(&task);
    assert_eq!(scope.achievable().collect::<Vec<_>>(), [1]);
    assert!(matches!(
        agent.expeditor().begin_subtask(&task, 2),
        Err(ScopeError::Deferred(_))
    ));
    let fetches = agent.toolbox().fetches.get();
    let err = agent.web_fetch(url).unwrap_err();
    assert_eq!(
        err.refusal().unwrap().reason(),
        SkipReason::Deferred,
        "not answered from the stale copy: the sub-task is not to be attempted"
    );
    assert_eq!(agent.toolbox().fetches.get(), fetches);
    assert!(
        agent.read("config.toml").is_ok(),
        "other tools are not held"
    );
    assert_eq!(agent.expeditor().begin_subtask(&task, 1), Ok(()));
    assert_eq!(
        agent.web_fetch(url).unwrap().route().unwrap().kind,
        RouteKind::Stale
    );
}

/// The source document's tools with its errors (step 7), as real `io::Error`s.
struct Seed {
    bash_errors: RefCell<Vec<io::Error>>,
    search_errors: RefCell<Vec<io::Error>>,
}

#[toolbox]
impl Seed {
    #[tool(
        name = "Bash",
        provides = "command execution, build tools, git operations",
        fallback = "report commands that need to be run manually"
    )]
    fn bash(&self, command: &str) -> io::Result<String> {
        match self.bash_errors.borrow_mut().pop() {
            Some(error) => Err(error),
            None => Ok(command.to_owned()),
        }
    }

    #[tool(
        name = "WebSearch",
        provides = "external information retrieval",
        fallback = "state what information is needed; ask user to provide it"
    )]
    fn web_search(&self, query: &str) -> io::Result<String> {
        match self.search_errors.borrow_mut().pop() {
            Some(error) => Err(error),
            None => Ok(query.to_owned()),
        }
    }
}

#[test]
fn r7_2_the_source_documents_budget_block_at_4_of_5_through_real_failing_tools() {
    use io::ErrorKind as K;
    let errors = |list: &[(K, &str)]| {
        RefCell::new(
            list.iter()
                .rev()
                .map(|(kind, message)| io::Error::new(*kind, *message))
                .collect(),
        )
    };
    let agent = GuardedSeed::with_expeditor(
        Seed {
            bash_errors: errors(&[
                (K::PermissionDenied, "permission denied"),
                (K::NotFound, "command not found"),
                (K::TimedOut, "timeout after 120s"),
            ]),
            search_errors: errors(&[(K::ConnectionRefused, "connection refused")]),
        },
        |b| b.clock(ManualClock::new(T0)),
    );
    let expeditor = agent.expeditor();
    while expeditor.step() < 3 {
        expeditor.advance_step();
    }
    assert!(agent.bash("make test").is_err());
    assert!(agent.bash("make test").is_err());
    expeditor.advance_step();
    assert!(agent.bash("make test").is_err());
    expeditor.advance_step();
    assert!(agent.web_search("release notes").is_err());

    let budget = expeditor.budget();
    let categories: Vec<FailureCategory> = budget
        .ledger()
        .iter()
        .map(|e| e.failure.category())
        .collect();
    assert_eq!(
        categories,
        [
            FailureCategory::Permission,
            FailureCategory::NotFound,
            FailureCategory::Timeout,
            FailureCategory::Network,
        ]
    );
    assert_eq!(expeditor.paused(), None, "no cascade: nothing correlates");
    // The source document's block exactly (the golden file is its text, never rewritten).
    assert_golden("seed_budget_block.txt", &budget.to_string());
}

#[derive(Default)]
struct Mcp {
    reachable: Cell<bool>,
    async_checks: Cell<u32>,
    sync_checks: Cell<u32>,
    calls: Cell<u32>,
}

#[toolbox]
impl Mcp {
    #[tool(
        name = "Search",
        provides = "search through an MCP server",
        fallback = "ask the user",
        precheck = ping
    )]
    async fn search(&self, query: String) -> io::Result<String> {
        self.calls.set(self.calls.get() + 1);
        YieldOnce(false).await;
        Ok(query)
    }

    /// An async pre-call check: asks the server.
    async fn ping(&self) -> Availability {
        YieldOnce(false).await;
        self.async_checks.set(self.async_checks.get() + 1);
        if self.reachable.get() {
            Availability::Available
        } else {
            Availability::Unavailable("MCP server not responding".into())
        }
    }

    #[tool(
        name = "Notes",
        provides = "local notes",
        fallback = "ask the user",
        precheck = notes_allowed
    )]
    async fn notes(&self, key: String) -> io::Result<String> {
        Ok(key)
    }

    /// A sync check on an async tool.
    fn notes_allowed(&self) -> Availability {
        self.sync_checks.set(self.sync_checks.get() + 1);
        Availability::Degraded("read-only".into())
    }
}

#[test]
fn r10_1_an_async_precheck_on_an_async_tool() {
    let agent = GuardedMcp::new(Mcp::default());
    let err = block_on(agent.search("rust".into())).unwrap_err();
    let refusal = err.refusal().expect("refused");
    assert_eq!(refusal.reason(), SkipReason::Unavailable);
    assert_eq!(
        (
            agent.toolbox().async_checks.get(),
            agent.toolbox().calls.get()
        ),
        (1, 0)
    );
    assert_eq!(
        agent.expeditor().availability(McpTool::Search),
        Some(Availability::Unavailable(
            "MCP server not responding".into()
        ))
    );
    // Kept until checked again.
    agent.toolbox().reachable.set(true);
    assert!(block_on(agent.search("rust".into())).is_err());
    assert_eq!(agent.toolbox().async_checks.get(), 1);
    agent.expeditor().invalidate_prechecks();
    assert_eq!(block_on(agent.search("rust".into())).unwrap().value, "rust");
    assert_eq!(
        (
            agent.toolbox().async_checks.get(),
            agent.toolbox().calls.get()
        ),
        (2, 1)
    );
    assert_eq!(agent.expeditor().budget().consumed(), 0);

    // A sync check on an async tool runs too.
    assert_eq!(block_on(agent.notes("todo".into())).unwrap().value, "todo");
    assert_eq!(agent.toolbox().sync_checks.get(), 1);
    assert_eq!(
        agent.expeditor().availability(McpTool::Notes),
        Some(Availability::Degraded("read-only".into()))
    );
}

/// Grep reaches Bash and Read through adapters; Bash has a pre-call check.
#[derive(Default)]
struct Shell {
    grep_down: Cell<bool>,
    shell_allowed: Cell<bool>,
    shell_checks: Cell<u32>,
}

#[toolbox(policy(budget = 20, probe_every = 10))]
impl Shell {
    #[tool(
        name = "Grep",
        provides = "content search across files",
        alternatives(
            bash(
                method = "rg or grep command",
                degradation = "loses Grep's built-in output formatting",
                via = grep_with_rg
            ),
            read(
                method = "read suspected files directly",
                degradation = high("requires knowing which files to check; no broad search"),
                via = grep_by_reading
            ),
        ),
        fallback = "ask the user which files to examine"
    )]
    fn grep(&self, pattern: &str) -> io::Result<String> {
        if self.grep_down.get() {
            Err(io::Error::from(io::ErrorKind::PermissionDenied))
        } else {
            Ok(format!("grep {pattern}"))
        }
    }

    fn grep_with_rg(&self, pattern: &str) -> io::Result<String> {
        self.bash(&format!("rg {pattern}"))
    }

    fn grep_by_reading(&self, pattern: &str) -> io::Result<String> {
        Ok(format!("read config.toml for {pattern}"))
    }

    #[tool(
        name = "Bash",
        provides = "command execution",
        fallback = "report commands that need to be run manually",
        precheck = shell_policy
    )]
    fn bash(&self, command: &str) -> io::Result<String> {
        Ok(command.to_owned())
    }

    fn shell_policy(&self) -> Availability {
        self.shell_checks.set(self.shell_checks.get() + 1);
        if self.shell_allowed.get() {
            Availability::Available
        } else {
            Availability::Unavailable("shell not allowed in this session".into())
        }
    }

    #[tool(
        name = "Read",
        provides = "file content inspection",
        fallback = "ask the user to paste file contents"
    )]
    fn read(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }
}

#[test]
fn r10_2_routing_through_adapters_passes_over_an_alternative_its_check_finds_unavailable() {
    let agent = GuardedShell::new(Shell::default());
    agent.toolbox().grep_down.set(true);
    for _ in 0..3 {
        assert!(agent.grep("API_KEY").is_err());
    }
    // Grep's call ran Bash's check (an alternative it may route through).
    assert_eq!(agent.toolbox().shell_checks.get(), 1);
    let routed = agent.grep("API_KEY").unwrap();
    assert_eq!(routed.value, "read config.toml for API_KEY");
    let route = routed.route().unwrap();
    assert_eq!(
        (route.kind, route.to.as_deref()),
        (RouteKind::Alternative, Some("Read"))
    );
    assert_eq!(agent.toolbox().shell_checks.get(), 1, "cached");
    // Allowed once checked again: the low-degradation route through Bash comes first.
    agent.toolbox().shell_allowed.set(true);
    agent.expeditor().invalidate_prechecks();
    let routed = agent.grep("API_KEY").unwrap();
    assert_eq!(routed.value, "rg API_KEY");
    assert_eq!(routed.route().unwrap().to.as_deref(), Some("Bash"));
    assert_eq!(agent.toolbox().shell_checks.get(), 2);
}
