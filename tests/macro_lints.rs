//! Generated code is lint-quiet: a toolbox under `missing_docs`, `unused_qualifications` and
//! clippy's pedantic group, all denied (checked by `cargo clippy --all-targets` in CI).

#![deny(unused_qualifications, missing_docs, clippy::pedantic, clippy::all)]
#![deny(unused, nonstandard_style, rust_2018_idioms, unreachable_pub)]

use std::io;

use agent_circuit_breaker::toolbox;

/// A workspace.
#[derive(Debug, Default)]
pub struct Workspace {
    calls: std::cell::Cell<u32>,
}

#[toolbox(policy(threshold = 2, budget = 10, probe_every = 4))]
impl Workspace {
    /// Searches.
    ///
    /// # Errors
    /// When the search fails.
    #[tool(
        provides = "content search across files",
        alternatives(
            read(method = "read suspected files", degradation = high("no broad search"), via = grep_by_reading),
            fetch(method = "ask the index")
        ),
        fallback = "ask the user which files to examine"
    )]
    pub fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        self.calls.set(self.calls.get() + 1);
        Ok(vec![pattern.to_owned()])
    }

    fn grep_by_reading(&self, pattern: &str) -> io::Result<Vec<String>> {
        self.read(pattern).map(|t| vec![t])
    }

    /// Reads.
    ///
    /// # Errors
    /// When the file cannot be read.
    #[tool(
        provides = "file content inspection",
        fallback = "ask the user to paste file contents",
        timeout = "5s"
    )]
    pub fn read(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }

    /// Fetches, asynchronously.
    ///
    /// # Errors
    /// When the index is down.
    #[tool(
        provides = "index lookups",
        fallback = "skip the index",
        threshold = 1,
        timeout = "2s"
    )]
    pub async fn fetch(&mut self, key: String) -> Result<u64, std::fmt::Error> {
        let len = async { key.len() }.await;
        Ok(u64::try_from(len).unwrap_or(u64::MAX))
    }

    /// A tool without a receiver.
    ///
    /// # Errors
    /// Never.
    #[tool(provides = "the time", fallback = "ask the user for the time")]
    pub fn now() -> Result<u64, io::Error> {
        Ok(0)
    }
}

#[test]
fn b2_lint_quiet_toolbox_works() {
    let agent = GuardedWorkspace::new(Workspace::default());
    assert_eq!(
        agent.grep("x").map(|r| r.value).ok(),
        Some(vec!["x".to_owned()])
    );
    assert_eq!(GuardedWorkspace::now(&agent).map(|r| r.value).ok(), Some(0));
}

/// A `json` toolbox (B8): the argument structs, their derives and `ToolDispatch` stay quiet
/// under the same lints.
#[derive(Debug, Default)]
pub struct Shell {
    runs: std::sync::atomic::AtomicU32,
}

#[toolbox(json, policy(threshold = 2))]
impl Shell {
    /// Runs a command.
    ///
    /// # Errors
    /// When the command fails.
    #[tool(
        provides = "command execution",
        alternatives(script(method = "write a script", via = run_by_script)),
        fallback = "report commands that need to be run manually"
    )]
    pub fn run(
        &self,
        /// The command line.
        command: &str,
        /// Its arguments.
        args: &[String],
        /// Where to run it.
        dir: Option<&std::path::Path>,
    ) -> io::Result<String> {
        self.runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(format!("{command} {} in {dir:?}", args.join(" ")))
    }

    fn run_by_script(
        &self,
        command: &str,
        args: &[String],
        dir: Option<&std::path::Path>,
    ) -> io::Result<String> {
        self.script(&format!("{command} {}", args.join(" ")), dir.map(|_| 1))
    }

    /// Runs a script.
    ///
    /// # Errors
    /// Never.
    #[tool(provides = "scripts", fallback = "write the script for the user")]
    pub fn script(&self, body: &str, times: Option<u32>) -> io::Result<String> {
        Ok(format!("{body} x{}", times.unwrap_or(1)))
    }

    /// Waits, asynchronously.
    ///
    /// # Errors
    /// Never.
    #[tool(provides = "waiting", fallback = "wait by hand")]
    pub async fn wait(&self, millis: u64) -> Result<u64, std::fmt::Error> {
        Ok(async { millis }.await)
    }

    /// A tool without a receiver or parameters.
    ///
    /// # Errors
    /// Never.
    #[tool(provides = "the date", fallback = "ask the user for the date")]
    pub fn today() -> Result<u64, io::Error> {
        Ok(0)
    }
}

#[test]
fn b8_lint_quiet_json_toolbox_works() {
    use agent_circuit_breaker::dispatch::ToolDispatch;
    let agent = GuardedShell::new(Shell::default());
    assert_eq!(agent.definitions().len(), 4);
    let future = agent.dispatch("script", serde_json::json!({"body": "ls"}));
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let std::task::Poll::Ready(reply) = future.as_mut().poll(&mut cx) else {
        panic!("a sync tool's reply is ready at once");
    };
    assert_eq!(reply.value, Some(serde_json::json!("ls x1")));
}
