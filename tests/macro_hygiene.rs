//! Hygiene: the code `#[toolbox]` generates names everything by absolute paths (`::agent_circuit_breaker`,
//! `_cb::__private_v0_1::core`), so a crate that shadows `circuit_breaker`, `core`, `Result`, `Option`,
//! `Some`/`None`/`Ok`/`Err` and the runtime's own type names still compiles and works.

#![allow(dead_code, non_camel_case_types)]

/// Shadows the runtime crate's name for every unqualified path.
mod agent_circuit_breaker {}

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
struct Outcome;
mod outcome {}
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

#[::agent_circuit_breaker::toolbox(policy(threshold = 1, budget = 3, probe_every = 2))]
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
        fallback = "ask the user to paste file contents",
        timeout = "30s"
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
    assert!(direct.route().is_none());

    // One failure opens grep (threshold 1); the next call goes through the adapter to bash.
    agent.toolbox().broken.set(true);
    let failed = agent.grep("TODO").expect_err("grep fails");
    assert_eq!(
        failed.tool_error().map(ToString::to_string).as_deref(),
        ::std::option::Option::Some("grep is broken")
    );
    let routed = agent.grep("TODO").expect("routed to bash");
    assert_eq!(routed.value, ::std::vec!["rg TODO".to_owned()]);
    assert!(routed.is_degraded() || routed.route().is_some());

    assert_eq!(
        GuardedWorkspace::now(&agent).map(|r| r.value).ok(),
        ::std::option::Option::Some(0)
    );
}

/// Shadows the names a `json` toolbox's expansion might have used unqualified.
mod serde {}
mod schemars {}
mod serde_json {}
struct String;
struct Vec;
struct Value;
struct Reply;
struct ToolDefinition;
trait ToolDispatch {}
trait Deserialize {}
trait JsonSchema {}
trait Send {}
trait Sync {}
fn ready() {}
fn arguments() {}

pub struct Shell {
    broken: ::std::sync::atomic::AtomicBool,
}

#[::agent_circuit_breaker::toolbox(json, policy(threshold = 1))]
impl Shell {
    #[tool(
        provides = "command execution",
        alternatives(script(method = "write a script", via = run_by_script)),
        fallback = "report commands that need to be run manually"
    )]
    fn run(
        &self,
        /// The command line.
        command: &str,
        dir: ::std::option::Option<&str>,
    ) -> Result<::std::string::String> {
        if self.broken.load(::std::sync::atomic::Ordering::SeqCst) {
            return ::std::result::Result::Err(Failure("run is broken"));
        }
        ::std::result::Result::Ok(::std::format!("{command} in {dir:?}"))
    }

    fn run_by_script(
        &self,
        command: &str,
        _dir: ::std::option::Option<&str>,
    ) -> Result<::std::string::String> {
        self.script(::std::vec![command.into()])
    }

    #[tool(provides = "scripts", fallback = "write the script for the user")]
    fn script(
        &self,
        lines: ::std::vec::Vec<::std::string::String>,
    ) -> Result<::std::string::String> {
        ::std::result::Result::Ok(lines.join("\n"))
    }

    #[tool(provides = "waiting", fallback = "wait by hand")]
    async fn wait(&self, millis: &u64) -> Result<u64> {
        ::std::result::Result::Ok(*millis)
    }
}

#[test]
fn b8_json_toolbox_uses_absolute_paths() {
    use ::agent_circuit_breaker::dispatch::ToolDispatch as _;
    let agent = GuardedShell::new(Shell {
        broken: ::std::sync::atomic::AtomicBool::new(false),
    });
    let block_on = |future: ::agent_circuit_breaker::dispatch::ReplyFuture<'_>| {
        let mut future = future;
        let mut cx = ::std::task::Context::from_waker(::std::task::Waker::noop());
        loop {
            if let ::std::task::Poll::Ready(reply) = future.as_mut().poll(&mut cx) {
                return reply;
            }
        }
    };
    let names: ::std::vec::Vec<::std::string::String> =
        agent.definitions().into_iter().map(|d| d.name).collect();
    assert_eq!(names, ["run", "script", "wait"]);
    let reply = block_on(agent.dispatch("run", ::serde_json::json!({"command": "ls"})));
    assert_eq!(
        reply.value,
        ::std::option::Option::Some(::serde_json::json!("ls in None"))
    );
    let reply = block_on(agent.dispatch("wait", ::serde_json::json!({"millis": 5})));
    assert_eq!(
        reply.value,
        ::std::option::Option::Some(::serde_json::json!(5))
    );

    agent
        .toolbox()
        .broken
        .store(true, ::std::sync::atomic::Ordering::SeqCst);
    assert!(block_on(agent.dispatch("run", ::serde_json::json!({"command": "ls"}))).is_error());
    let routed = block_on(agent.dispatch("run", ::serde_json::json!({"command": "ls"})));
    assert_eq!(
        routed.value,
        ::std::option::Option::Some(::serde_json::json!("ls"))
    );
    assert!(block_on(agent.dispatch("nope", ::serde_json::Value::Null)).is_error());
}
