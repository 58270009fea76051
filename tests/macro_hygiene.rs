//! Hygiene: the code `#[toolbox]` generates names everything by absolute paths (`::circuit_breaker`,
//! `_cb::__private::core`), so a crate that shadows `circuit_breaker`, `core`, `Result`, `Option`,
//! `Some`/`None`/`Ok`/`Err` and the runtime's own type names still compiles and works.

#![allow(dead_code, non_camel_case_types)]

/// Shadows the runtime crate's name for every unqualified path.
mod circuit_breaker {}

/// Shadows `core::..` for every unqualified path.
mod core {}

/// A one-parameter `Result`, as many crates define.
type Result<T> = ::std::result::Result<T, Failure>;

/// Shadows the prelude's `Option` (and, below, its variants and `Result`'s).
struct Option;
struct Some;
struct None;
struct Ok;
struct Err;

/// Shadow the runtime's public names in case generated code used them unqualified.
struct Expeditor;
struct ToolSet;
struct CapabilityMap;
struct CallError;
struct Routed;
trait ToolResult {}
fn plan() {}
fn finish() {}

#[derive(Debug)]
pub struct Failure(&'static str);

impl ::std::fmt::Display for Failure {
    fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
        f.write_str(self.0)
    }
}

impl ::std::error::Error for Failure {}

pub struct Workspace {
    broken: ::std::cell::Cell<bool>,
}

#[::circuit_breaker::toolbox(policy(threshold = 1, budget = 3, probe_every = 2))]
impl Workspace {
    #[tool(
        provides = "content search across files",
        alternatives(
            bash(method = "rg or grep command", degradation = "loses Grep's built-in output formatting", via = grep_with_rg),
            read(method = "read suspected files directly", degradation = high("no broad search")),
        ),
        fallback = "ask the user which files to examine",
    )]
    fn grep(&self, pattern: &str) -> Result<::std::vec::Vec<::std::string::String>> {
        if self.broken.get() {
            return ::std::result::Result::Err(Failure("grep is broken"));
        }
        ::std::result::Result::Ok(::std::vec![pattern.into()])
    }

    fn grep_with_rg(&self, pattern: &str) -> Result<::std::vec::Vec<::std::string::String>> {
        self.bash(pattern).map(|out| ::std::vec![out])
    }

    #[tool(
        provides = "command execution",
        fallback = "report commands that need to be run manually"
    )]
    fn bash(&self, command: &str) -> Result<::std::string::String> {
        ::std::result::Result::Ok(::std::format!("rg {command}"))
    }

    #[tool(
        provides = "file content inspection",
        fallback = "ask the user to paste file contents"
    )]
    async fn read(&mut self, path: ::std::string::String) -> Result<::std::string::String> {
        ::std::result::Result::Ok(path)
    }

    #[tool(provides = "the time", fallback = "ask the user for the time")]
    fn now() -> Result<u64> {
        ::std::result::Result::Ok(0)
    }
}

#[test]
fn b1_generated_code_uses_absolute_paths() {
    assert_eq!(WorkspaceTool::ALL.len(), 4);
    assert_eq!(WorkspaceTool::Grep.to_string(), "grep");
    assert_eq!(
        "bash".parse::<WorkspaceTool>().ok(),
        ::std::option::Option::Some(WorkspaceTool::Bash)
    );

    let agent = GuardedWorkspace::new(Workspace {
        broken: ::std::cell::Cell::new(false),
    });
    let direct = agent.grep("TODO").expect("grep is healthy");
    assert_eq!(direct.value, ::std::vec!["TODO".to_owned()]);
    assert!(direct.route.is_none());

    // One failure opens grep (threshold 1); the next call goes through the adapter to bash.
    agent.toolbox().broken.set(true);
    let failed = agent.grep("TODO").expect_err("grep fails");
    assert_eq!(
        failed.tool_error().map(ToString::to_string).as_deref(),
        ::std::option::Option::Some("grep is broken")
    );
    let routed = agent.grep("TODO").expect("routed to bash");
    assert_eq!(routed.value, ::std::vec!["rg TODO".to_owned()]);
    assert!(routed.is_degraded() || routed.route.is_some());

    assert_eq!(
        GuardedWorkspace::now(&agent).map(|r| r.value).ok(),
        ::std::option::Option::Some(0)
    );
}
