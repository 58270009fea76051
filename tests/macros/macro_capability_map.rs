//! The source document's capability map as a `#[toolbox]` over real failing functions (R1, R4, B2,
//! B7): after 3 failures Grep is OPEN and calls go to Bash through its adapter with the degradation
//! reported; when Bash is OPEN too, to Read; then the fallback refusal.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;

use agent_circuit_breaker::{
    CallError, CircuitState, Classify, FailureCategory, SkipReason, capability::Severity,
    route::RouteKind, toolbox, toolbox::ToolSet,
};

/// Real work over an in-memory file tree; each tool can be broken the way real tools break.
#[derive(Default)]
struct Workspace {
    files: Vec<(&'static str, &'static str)>,
    grep_broken: Cell<bool>,
    bash_broken: Cell<bool>,
    read_broken: Cell<bool>,
    calls: RefCell<Vec<String>>,
}

impl Workspace {
    fn seed() -> Self {
        Workspace {
            files: vec![
                ("config.toml", "API_KEY = \"x\"\nmode = \"legacy\""),
                ("src/main.rs", "fn main() {}"),
            ],
            ..Workspace::default()
        }
    }

    fn log(&self, call: String) {
        self.calls.borrow_mut().push(call);
    }
}

fn broken(flag: &Cell<bool>, kind: io::ErrorKind) -> io::Result<()> {
    if flag.get() {
        Err(io::Error::from(kind))
    } else {
        Ok(())
    }
}

#[toolbox(policy(threshold = 3, budget = 20, probe_every = 10))]
impl Workspace {
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
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        self.log(format!("grep {pattern}"));
        broken(&self.grep_broken, io::ErrorKind::PermissionDenied)?;
        Ok(self
            .files
            .iter()
            .filter(|(_, text)| text.contains(pattern))
            .map(|(path, _)| (*path).to_owned())
            .collect())
    }

    /// Grep's goal through Bash: `rg -l`.
    fn grep_with_rg(&self, pattern: &str) -> io::Result<Vec<String>> {
        let out = self.bash(&format!("rg -l {pattern}"))?;
        Ok(out.lines().map(str::to_owned).collect())
    }

    /// Grep's goal through Read: only the files we suspect.
    fn grep_by_reading(&self, pattern: &str) -> io::Result<Vec<String>> {
        let text = self.read("config.toml")?;
        Ok(if text.contains(pattern) {
            vec!["config.toml".to_owned()]
        } else {
            Vec::new()
        })
    }

    #[tool(
        name = "Bash",
        provides = "command execution, build tools, git operations",
        fallback = "report commands that need to be run manually"
    )]
    fn bash(&self, command: &str) -> io::Result<String> {
        self.log(format!("bash {command}"));
        broken(&self.bash_broken, io::ErrorKind::NotFound)?;
        let pattern = command.trim_start_matches("rg -l ");
        Ok(self
            .files
            .iter()
            .filter(|(_, text)| text.contains(pattern))
            .map(|(path, _)| *path)
            .collect::<Vec<_>>()
            .join("\n"))
    }

    #[tool(
        name = "Read",
        provides = "file content inspection",
        alternatives(bash(
            method = "cat or head command",
            degradation = "loses line numbering and truncation safety"
        )),
        fallback = "ask the user to paste file contents"
    )]
    fn read(&self, path: &str) -> io::Result<String> {
        self.log(format!("read {path}"));
        broken(&self.read_broken, io::ErrorKind::ConnectionRefused)?;
        self.files
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, text)| (*text).to_owned())
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }
}

/// Fails a tool three times in one step, then moves to the next step: circuits that open
/// in different steps with unrelated errors stay independent (R9.6).
fn open_with_failures(agent: &GuardedWorkspace, tool: WorkspaceTool, mut call: impl FnMut()) {
    for _ in 0..3 {
        call();
    }
    assert_eq!(agent.expeditor().state(tool), Some(CircuitState::Open));
    agent.expeditor().advance_step();
}

#[test]
fn b2_generated_enum_and_map_match_the_declaration() {
    assert_eq!(
        WorkspaceTool::ALL,
        [
            WorkspaceTool::Grep,
            WorkspaceTool::Bash,
            WorkspaceTool::Read
        ]
    );
    assert_eq!(WorkspaceTool::Grep.to_string(), "Grep");
    assert_eq!("Read".parse::<WorkspaceTool>(), Ok(WorkspaceTool::Read));
    let err = "Raed".parse::<WorkspaceTool>().unwrap_err();
    assert_eq!(err.suggestion.as_deref(), Some("Read"));
    assert_eq!(
        serde_json::to_string(&WorkspaceTool::Bash).unwrap(),
        "\"Bash\""
    );
    assert_eq!(
        serde_json::from_str::<WorkspaceTool>("\"Grep\"").unwrap(),
        WorkspaceTool::Grep
    );
    assert!(serde_json::from_str::<WorkspaceTool>("\"grep\"").is_err());

    let map = WorkspaceTool::capability_map();
    assert_eq!(map.validate(), Ok(()));
    let grep = map.get("Grep").unwrap();
    assert_eq!(grep.alternatives().len(), 2);
    assert_eq!(grep.alternatives()[0].tool(), "Bash");
    assert_eq!(
        grep.alternatives()[1].degradation().severity(),
        Severity::High
    );
    let critical: Vec<&str> = map.critical().map(|t| t.name()).collect();
    assert_eq!(critical, ["Bash"]);
    let policy = <WorkspaceTool as ToolSet>::policy();
    assert_eq!(
        (policy.threshold(), policy.budget(), policy.probe_every()),
        (3, 20, 10)
    );
}

#[test]
fn r4_1_the_source_documents_routes_chain_grep_bash_read_fallback() {
    let agent = GuardedWorkspace::new(Workspace::seed());
    let hits = agent.grep("API_KEY").unwrap();
    assert_eq!(hits.value, ["config.toml"]);
    assert!(hits.route().is_none(), "the tool itself answered");

    agent.toolbox().grep_broken.set(true);
    open_with_failures(&agent, WorkspaceTool::Grep, || {
        let err = agent.grep("API_KEY").unwrap_err();
        let CallError::Failed { error, tool, .. } = err else {
            panic!("a CLOSED tool is called and its error returned untouched")
        };
        assert_eq!(error.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(tool, "Grep");
    });

    // R4.2: the route taken and its degradation travel with the result.
    agent.toolbox().calls.borrow_mut().clear();
    let routed = agent.grep("API_KEY").unwrap();
    assert_eq!(routed.value, ["config.toml"]);
    let route = routed.route().expect("routed");
    assert_eq!(route.kind, RouteKind::Alternative);
    assert_eq!(route.from, "Grep");
    assert_eq!(route.to.as_deref(), Some("Bash"));
    assert_eq!(route.method.as_deref(), Some("rg or grep command"));
    assert_eq!(
        route.degradation.as_deref(),
        Some("loses Grep's built-in output formatting")
    );
    assert_eq!(route.severity, Severity::Low);
    assert_eq!(
        *agent.toolbox().calls.borrow(),
        ["bash rg -l API_KEY"],
        "Grep itself is not called while OPEN"
    );

    agent.toolbox().bash_broken.set(true);
    open_with_failures(&agent, WorkspaceTool::Bash, || {
        assert!(agent.bash("make test").is_err());
    });
    let routed = agent.grep("API_KEY").unwrap();
    let route = routed.route().expect("routed");
    assert_eq!(route.to.as_deref(), Some("Read"));
    assert_eq!(route.severity, Severity::High);

    agent.toolbox().read_broken.set(true);
    open_with_failures(&agent, WorkspaceTool::Read, || {
        assert!(agent.read("config.toml").is_err());
    });
    agent.toolbox().calls.borrow_mut().clear();
    let err = agent.grep("API_KEY").unwrap_err();
    let refusal = err.refusal().expect("nothing left to call");
    assert_eq!(refusal.reason(), SkipReason::Open);
    let route = refusal.route().unwrap();
    assert_eq!(route.kind, RouteKind::Fallback);
    assert_eq!(
        route.fallback.as_deref(),
        Some("ask the user which files to examine")
    );
    assert!(
        agent.toolbox().calls.borrow().is_empty(),
        "no tool was called"
    );
    let text = err.to_string();
    assert!(text.starts_with("Grep is unavailable: circuit OPEN after 3 consecutive failures"));
    assert!(
        text.contains("ask the user which files to examine"),
        "{text}"
    );
}

#[test]
fn r4_1_an_alternative_without_adapter_is_returned_as_advice() {
    let agent = GuardedWorkspace::new(Workspace::seed());
    agent.toolbox().read_broken.set(true);
    open_with_failures(&agent, WorkspaceTool::Read, || {
        let _ = agent.read("config.toml");
    });
    agent.toolbox().calls.borrow_mut().clear();
    let err = agent.read("config.toml").unwrap_err();
    let refusal = err.refusal().expect("advice, not a call");
    let route = refusal.route().unwrap();
    assert_eq!(route.kind, RouteKind::Alternative);
    assert_eq!(route.to.as_deref(), Some("Bash"));
    assert_eq!(route.method.as_deref(), Some("cat or head command"));
    assert!(agent.toolbox().calls.borrow().is_empty());
    assert!(
        refusal
            .note()
            .to_string()
            .contains("use Bash — cat or head command")
    );
}

#[test]
fn r3_2_the_handle_probes_on_schedule_and_closes_on_success() {
    let agent = GuardedWorkspace::with_expeditor(Workspace::seed(), |b| {
        b.policy(
            agent_circuit_breaker::Policy::builder()
                .probe_every(2)
                .budget(20)
                .build()
                .unwrap(),
        )
    });
    agent.toolbox().bash_broken.set(true);
    open_with_failures(&agent, WorkspaceTool::Bash, || {
        let _ = agent.bash("ls");
    });
    agent.toolbox().bash_broken.set(false);
    agent.toolbox().calls.borrow_mut().clear();
    assert!(
        agent.bash("ls").unwrap_err().refusal().is_some(),
        "1st attempt skipped"
    );
    let probed = agent.bash("ls").expect("2nd attempt is the probe");
    assert!(probed.route().is_none());
    assert_eq!(*agent.toolbox().calls.borrow(), ["bash ls"]);
    assert_eq!(
        agent.expeditor().state(WorkspaceTool::Bash),
        Some(CircuitState::Closed)
    );
}

#[test]
fn r3_4_a_paused_toolbox_refuses_every_tool() {
    let agent = GuardedWorkspace::with_expeditor(Workspace::seed(), |b| {
        b.policy(
            agent_circuit_breaker::Policy::builder()
                .budget(2)
                .build()
                .unwrap(),
        )
    });
    agent.toolbox().read_broken.set(true);
    let _ = agent.read("a");
    let _ = agent.read("b");
    agent.toolbox().calls.borrow_mut().clear();
    let err = agent.grep("API_KEY").unwrap_err();
    let refusal = err.refusal().unwrap();
    assert!(matches!(refusal.reason(), SkipReason::Paused { .. }));
    assert!(agent.toolbox().calls.borrow().is_empty());
    assert_eq!(
        err.to_string(),
        "Grep was not called: all tools are paused: failure budget exhausted (2 / 2 failures \
         this cycle). Do not call Grep or any other tool. Instead: stop and report the completed \
         and incomplete work to the user."
    );
}

/// An error type that knows its category (R9.1), and one that only displays.
#[derive(Debug)]
struct Offline;

impl fmt::Display for Offline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("search backend offline")
    }
}

impl Classify for Offline {
    fn category(&self) -> FailureCategory {
        FailureCategory::Network
    }
}

struct Plain;

impl fmt::Display for Plain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("request timed out after 30s")
    }
}

struct Search;

#[toolbox]
impl Search {
    #[tool(provides = "web search", fallback = "ask the user")]
    fn web(&self) -> Result<(), Offline> {
        Err(Offline)
    }

    #[tool(provides = "local search", fallback = "ask the user")]
    fn local(&self) -> Result<(), Plain> {
        Err(Plain)
    }

    #[tool(provides = "files", fallback = "ask the user")]
    fn files(&self) -> Result<(), io::Error> {
        Err(io::Error::from(io::ErrorKind::ReadOnlyFilesystem))
    }
}

#[test]
fn r9_1_failure_categories_come_from_the_error_type() {
    let search = GuardedSearch::new(Search);
    let category = |tool: SearchTool| {
        search
            .expeditor()
            .breaker(tool)
            .and_then(|b| b.last_failure().map(|m| m.failure.category()))
    };
    let _ = search.web();
    let _ = search.local();
    let _ = search.files();
    assert_eq!(category(SearchTool::Web), Some(FailureCategory::Network));
    assert_eq!(category(SearchTool::Local), Some(FailureCategory::Timeout));
    assert_eq!(
        category(SearchTool::Files),
        Some(FailureCategory::Filesystem)
    );
    let ledger = search.expeditor().budget();
    let messages: Vec<&str> = ledger
        .ledger()
        .iter()
        .map(|e| e.failure.message())
        .collect();
    assert_eq!(
        messages,
        [
            "search backend offline",
            "request timed out after 30s",
            "read-only filesystem or storage medium"
        ]
    );
}
