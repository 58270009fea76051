//! Starting the real guard binary with a config, driven by a real rmcp client over its stdio,
//! in front of upstreams that are this test binary run again (`upstream.rs`).

#![allow(deprecated)] // logging: what desktop clients still use

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_circuit_breaker::mcp::rmcp;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, LoggingMessageNotificationParam,
    ProgressNotificationParam,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{Map, Value};
use tokio::io::AsyncReadExt as _;

pub const GUARD: &str = env!("CARGO_BIN_EXE_circuit-breaker-guard");
pub const META_KEY: &str = "io.github.agent-circuit-breaker/guard";

/// A fresh folder for one test's config and logs.
pub fn scratch(name: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "guard-test-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

/// An upstream entry that runs this test binary as the server `flavor`. The test harness
/// prints to its stdout before any test runs, so the shell hands the guard's end of the pipe
/// to the server as descriptor 3 and sends the harness's stdout to stderr.
pub fn upstream(dir: &Path, name: &str, flavor: &str) -> String {
    let exe = std::env::current_exe().expect("the test binary");
    format!(
        "  - name: {name}\n    command: sh\n    args: [\"-c\", \"exec \\\"$0\\\" upstream::upstream_server --exact --nocapture --test-threads=1 3>&1 1>&2\", {exe:?}]\n    env: {{ GUARD_TEST_UPSTREAM: {flavor}, GUARD_TEST_LOG: {log:?} }}\n    deadline: 10s\n",
        log = dir.join(format!("{name}.log")),
    )
}

/// The config of most tests: alpha and beta, `cat` on beta the alternative of `read_file`
/// on alpha; health checks too slow to bring a killed upstream back within a test.
pub fn two_upstreams(dir: &Path) -> PathBuf {
    let text = format!(
        "upstreams:\n{}{}\
overlay:
  capability_map:
    - tool: read_file
      alternatives:
        - tool: cat
          method: \"print beta's copy with cat\"
          degradation: \"beta's copy, which may lag behind\"
policy:
  threshold: 3
  cool_down: 60s
health:
  check_every: 60s
  ttl: 60s
  connect_timeout: 30s
",
        upstream(dir, "alpha", "alpha"),
        upstream(dir, "beta", "beta"),
    );
    let path = dir.join("guard.yaml");
    std::fs::write(&path, text).expect("the config written");
    path
}

/// What the client was sent besides answers.
#[derive(Clone, Default)]
pub struct Recorder {
    pub events: Arc<Mutex<Vec<String>>>,
}

impl Recorder {
    fn push(&self, event: String) {
        self.events.lock().unwrap().push(event);
    }

    pub fn count(&self, prefix: &str) -> usize {
        self.events
            .lock()
            .unwrap()
            .iter()
            .filter(|e| e.starts_with(prefix))
            .count()
    }
}

impl ClientHandler for Recorder {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.push("tools/list_changed".to_owned());
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.push(format!(
            "progress {} {}",
            params.progress_token.0, params.progress
        ));
    }

    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.push(format!(
            "log {} {}",
            params.logger.unwrap_or_default(),
            params.data
        ));
    }
}

/// The guard running, with a client connected to it.
pub struct Session {
    pub client: RunningService<RoleClient, Recorder>,
    pub recorder: Recorder,
    pub stderr: Arc<Mutex<String>>,
    pub pid: u32,
    pub child: tokio::process::Child,
    pub dir: PathBuf,
}

/// The guard started with `config`, its stdin and stdout piped for a client, its stderr
/// gathered as it comes.
pub struct Spawned {
    pub child: tokio::process::Child,
    pub pid: u32,
    pub stderr: Arc<Mutex<String>>,
    pub io: (tokio::process::ChildStdout, tokio::process::ChildStdin),
}

pub fn spawn_guard(config: &Path) -> Spawned {
    let mut child = tokio::process::Command::new(GUARD)
        .arg("--config")
        .arg(config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the guard starts");
    let pid = child.id().expect("the guard's pid");
    let text = Arc::new(Mutex::new(String::new()));
    if let Some(mut stderr) = child.stderr.take() {
        let text = Arc::clone(&text);
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                text.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
    }
    let io = (
        child.stdout.take().expect("its stdout"),
        child.stdin.take().expect("its stdin"),
    );
    Spawned {
        child,
        pid,
        stderr: text,
        io,
    }
}

/// Starts the guard with `config` and connects a client over its stdin and stdout, which
/// the test holds itself: closing them is the client leaving, and the guard is not killed.
pub async fn start(dir: &Path, config: &Path) -> Session {
    let Spawned {
        child,
        pid,
        stderr: text,
        io,
    } = spawn_guard(config);
    let recorder = Recorder::default();
    let client = match recorder.clone().serve(io).await {
        Ok(client) => client,
        Err(error) => panic!(
            "the guard's initialize failed: {error}\n--- its stderr\n{}",
            text.lock().unwrap()
        ),
    };
    Session {
        client,
        recorder,
        stderr: text,
        pid,
        child,
        dir: dir.to_owned(),
    }
}

impl Session {
    pub async fn call(&self, name: &str, arguments: Value) -> CallToolResult {
        let Value::Object(arguments) = arguments else {
            panic!("arguments are an object")
        };
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        match self.client.call_tool(params).await {
            Ok(result) => result,
            Err(error) => panic!("{name}: {error}\n--- the guard's stderr\n{}", self.stderr()),
        }
    }

    pub async fn tool_names(&self) -> Vec<String> {
        let tools = self.client.list_all_tools().await.expect("tools/list");
        tools.into_iter().map(|t| t.name.into_owned()).collect()
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// What the upstream `name` was asked, line by line.
    pub fn upstream_log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{name}.log"))).unwrap_or_default()
    }

    /// The pid the upstream `name` wrote when it started (its latest start).
    pub fn upstream_pid(&self, name: &str) -> u32 {
        let log = self.upstream_log(name);
        log.lines()
            .filter_map(|l| l.strip_prefix("pid "))
            .next_back()
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("upstream {name} wrote no pid:\n{log}"))
    }
}

/// Waits up to `limit` for `done`, polling.
pub async fn wait_for(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    done()
}

/// The guard's data in a result's `_meta`.
pub fn guard_meta(result: &CallToolResult) -> Map<String, Value> {
    result
        .meta
        .as_ref()
        .and_then(|m| m.0.get(META_KEY))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_else(|| panic!("no {META_KEY} in {result:?}"))
}

/// The text blocks of a result, joined.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs the guard with `args` to its end (no client), with a time limit: its exit code,
/// stdout and stderr.
pub fn run_guard(args: &[&str], limit: Duration) -> (Option<i32>, String, String) {
    let mut child = std::process::Command::new(GUARD)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the guard starts");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("its status") {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = child.wait_with_output().expect("its output");
    (
        status.and_then(|s| s.code()),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Writes `text` as the config at `path`, then runs the guard on it (with `args` after
/// `--config PATH`) to its end: its exit code, stdout and stderr.
pub fn run_config(path: &Path, text: &str, args: &[&str]) -> (Option<i32>, String, String) {
    std::fs::write(path, text).expect("the config written");
    let mut all = vec!["--config", path.to_str().expect("a UTF-8 path")];
    all.extend_from_slice(args);
    run_guard(&all, Duration::from_secs(30))
}
