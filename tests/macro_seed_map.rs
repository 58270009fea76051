//! The seed's capability map as a `#[toolbox]` on real failing functions (R1, R4, B2).

use std::cell::Cell;
use std::io;

use circuit_breaker::{CallError, CircuitState, RouteKind, ToolSet, toolbox};

#[derive(Default)]
struct Workspace {
    grep_broken: Cell<bool>,
    bash_broken: Cell<bool>,
    read_broken: Cell<bool>,
}

fn fail(broken: &Cell<bool>, kind: io::ErrorKind) -> io::Result<()> {
    if broken.get() { Err(io::Error::from(kind)) } else { Ok(()) }
}

#[toolbox(policy(budget = 20, probe_every = 10))]
impl Workspace {
    #[tool(
        name = "Grep",
        provides = "content search across files",
        alternatives(
            bash(method = "rg or grep command", degradation = "loses Grep's built-in output formatting", via = grep_with_rg),
            read(method = "read suspected files directly", degradation = high("requires knowing which files to check; no broad search"), via = grep_by_reading),
        ),
        fallback = "ask the user which files to examine",
    )]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        fail(&self.grep_broken, io::ErrorKind::PermissionDenied)?;
        Ok(vec![format!("grep:{pattern}")])
    }

    fn grep_with_rg(&self, pattern: &str) -> io::Result<Vec<String>> {
        self.bash(&format!("rg {pattern}")).map(|out| vec![out])
    }

    fn grep_by_reading(&self, pattern: &str) -> io::Result<Vec<String>> {
        self.read("config.toml").map(|text| vec![format!("{text}:{pattern}")])
    }

    #[tool(name = "Bash", provides = "command execution, build tools, git operations", fallback = "report commands that need to be run manually")]
    fn bash(&self, command: &str) -> io::Result<String> {
        fail(&self.bash_broken, io::ErrorKind::NotFound)?;
        Ok(format!("bash:{command}"))
    }

    #[tool(name = "Read", provides = "file content inspection",
           alternatives(bash(method = "cat or head command", degradation = "loses line numbering and truncation safety")),
           fallback = "ask the user to paste file contents")]
    fn read(&self, path: &str) -> io::Result<String> {
        fail(&self.read_broken, io::ErrorKind::ConnectionRefused)?;
        Ok(format!("read:{path}"))
    }
}

#[test]
fn r4_1_seed_routes_chain_grep_bash_read_fallback() {
    let agent = GuardedWorkspace::new(Workspace::default());
    assert_eq!(WorkspaceTool::ALL.len(), 3);
    assert_eq!(WorkspaceTool::Grep.to_string(), "Grep");
    assert_eq!("Bash".parse::<WorkspaceTool>().unwrap(), WorkspaceTool::Bash);
    let ok = agent.grep("API_KEY").unwrap();
    assert_eq!(ok.value, vec!["grep:API_KEY".to_owned()]);
    assert!(ok.route.is_none());

    agent.toolbox().grep_broken.set(true);
    for _ in 0..3 {
        let err = agent.grep("API_KEY").unwrap_err();
        assert!(matches!(err, CallError::Failed { .. }), "{err}");
    }
    assert_eq!(agent.expeditor().state(WorkspaceTool::Grep), Some(CircuitState::Open));
    let routed = agent.grep("API_KEY").unwrap();
    assert_eq!(routed.value, vec!["bash:rg API_KEY".to_owned()]);
    let route = routed.route.unwrap();
    assert_eq!(route.to.as_deref(), Some("Bash"));
    assert_eq!(route.degradation.as_deref(), Some("loses Grep's built-in output formatting"));

    agent.toolbox().bash_broken.set(true);
    for _ in 0..3 {
        let _ = agent.bash("true");
    }
    assert_eq!(agent.expeditor().state(WorkspaceTool::Bash), Some(CircuitState::Open));
    let routed = agent.grep("API_KEY").unwrap();
    assert_eq!(routed.route.unwrap().to.as_deref(), Some("Read"));

    agent.toolbox().read_broken.set(true);
    for _ in 0..3 {
        let _ = agent.read("x");
    }
    println!("{}", agent.expeditor().state_table());
    let refused = agent.grep("API_KEY").unwrap_err();
    let refusal = refused.refusal().expect("refused");
    assert_eq!(refusal.route.as_ref().unwrap().kind, RouteKind::Fallback);
    println!("{refused}");
    let _ = WorkspaceTool::capability_map();
    let _ = <WorkspaceTool as ToolSet>::policy();
}
