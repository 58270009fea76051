//! Hop latency of the guard proxy (B17): one `tools/call` from an rmcp client in this process,
//! straight to an upstream and through proxies in front of the same upstream, sequential calls
//! in interleaved rounds, p50 and p99 of each path (criterion reports no p99).
//!
//! This binary plays every part: run again as a child with `HOP_BENCH_ROLE` set, it is the
//! upstream (N tools with small realistic schemas; the called one answers a short text at
//! once) or a plain rmcp forwarder (a `ServerHandler` passing `tools/list` and `tools/call`
//! to an rmcp client of the upstream, nothing else). The guard is the real binary, given a
//! config in a temporary folder. PyPI's `mcp-proxy` is installed into a virtualenv under the
//! target dir on the first run; without it, its rows are left out and the reason printed.
//!
//! `cargo bench -p agent-circuit-breaker-guard --bench hop` (about 5 minutes);
//! `HOP_QUICK=1` (or `-- --quick`) for a smoke run; `HOP_TOOLS=3,1000` and `HOP_CALLS=2000`
//! to choose; `HOP_ONLY=guard,direct` for some rows; `HOP_WRAP` runs the proxies under a tool
//! and `HOP_WRAP_UPSTREAM` the upstreams they start on their stdio ([`wrapped`]);
//! `HOP_LIFECYCLE=initialize` has the guard start its upstream with `initialize` (2025-11-25,
//! as the forwarder does) rather than 2026-07-28's discovery; `HOP_GUARD=path` runs another
//! build of the guard (a copy of an earlier one, to compare builds in interleaved runs) and
//! `HOP_GUARD_ARGS` gives it more arguments (`--threads 2`); `HOP_FORWARDER_THREADS=2` runs
//! the plain forwarder on 2 workers rather than on the guard's default one thread.

#![allow(clippy::print_stdout, clippy::print_stderr)]

#[path = "hop/children.rs"]
mod children;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use agent_circuit_breaker::mcp::rmcp;
use children::child_main;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, BufReader};
use tokio::process::{Child, Command};

const GUARD: &str = env!("CARGO_BIN_EXE_circuit-breaker-guard");
/// Another build of the guard to run instead of this one's, e.g. a copy of an earlier build,
/// to compare two builds in interleaved runs.
const GUARD_PATH: &str = "HOP_GUARD";
/// More arguments for the guard, split at spaces (`--threads 2`).
const GUARD_ARGS: &str = "HOP_GUARD_ARGS";
/// The forwarder's threads: 1 (the default, as the guard's) is a current-thread runtime; N ≥ 2 workers.
const FORWARDER_THREADS: &str = "HOP_FORWARDER_THREADS";
/// `upstream` or `forwarder`: the part a child plays.
const ROLE: &str = "HOP_BENCH_ROLE";
/// How many tools the upstream offers.
const TOOLS: &str = "HOP_BENCH_TOOLS";
/// `http`: serve streamable HTTP on 127.0.0.1 and print the URL; else stdio.
const SERVE: &str = "HOP_BENCH_SERVE";
/// The forwarder's upstream over HTTP; without it, it starts one on its stdio.
const UPSTREAM_URL: &str = "HOP_BENCH_UPSTREAM_URL";
/// A tool (and its first arguments) the proxies run under.
const PROXY_WRAP: &str = "HOP_WRAP";
/// A tool the upstreams the proxies start on their stdio run under.
const UPSTREAM_WRAP: &str = "HOP_WRAP_UPSTREAM";
/// The tool every path calls.
const CALLED: &str = "search_000";
const MCP_PROXY: &str = "0.13.0";

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("upstream") => return child_main(false),
        Ok("forwarder") => return child_main(true),
        _ => {}
    }
    let args: Vec<String> = std::env::args().collect();
    // `cargo test --benches` runs this without `--bench`: nothing to measure then.
    if !args.iter().any(|a| a == "--bench") {
        println!("hop: run with `cargo bench --bench hop`");
        return;
    }
    let quick = args.iter().any(|a| a == "--quick") || std::env::var_os("HOP_QUICK").is_some();
    let settings = Settings::new(quick);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(bench(settings));
}

// ---------------------------------------------------------------------------------------------
// Starting the paths.

/// The guard to run, with `HOP_GUARD_ARGS`, under `HOP_WRAP`.
fn guard_command() -> Command {
    let mut command = Command::new(std::env::var(GUARD_PATH).unwrap_or_else(|_| GUARD.to_owned()));
    if let Ok(args) = std::env::var(GUARD_ARGS) {
        command.args(args.split_whitespace());
    }
    wrapped(PROXY_WRAP, command)
}

fn self_command(role: &str, tools: usize) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("this bench's path"));
    command
        .env(ROLE, role)
        .env(TOOLS, tools.to_string())
        .env_remove(SERVE)
        .env_remove(UPSTREAM_URL);
    command
}

/// `command` run under the prefix in the environment variable `var`: `HOP_WRAP` for the
/// proxies (guard and forwarder), e.g. `HOP_WRAP="valgrind --tool=callgrind
/// --callgrind-out-file=/tmp/cg.%p"` for their instruction counts per call, which a busy
/// machine does not blur (run twice with different `HOP_CALLS`: the difference over the
/// difference in calls is one call's cost); `HOP_WRAP_UPSTREAM` for the upstreams the proxies
/// start on their stdio. The HTTP children are stopped with SIGTERM, so a profiler writes its
/// output.
fn wrapped(var: &str, command: Command) -> Command {
    let Some((tool, args)) = wrapper(var) else {
        return command;
    };
    let inner = command.as_std();
    let mut out = Command::new(tool);
    out.args(args)
        .arg(inner.get_program())
        .args(inner.get_args());
    for (key, value) in inner.get_envs() {
        match value {
            Some(value) => out.env(key, value),
            None => out.env_remove(key),
        };
    }
    out
}

/// The tool in the environment variable `var` and its first arguments, if set.
fn wrapper(var: &str) -> Option<(String, Vec<String>)> {
    let prefix = std::env::var(var).ok()?;
    let mut words = prefix.split_whitespace().map(str::to_owned);
    let tool = words.next()?;
    Some((tool, words.collect()))
}

fn spawn_stdio(command: Command) -> TokioChildProcess {
    TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("a child starts")
        .0
}

type Client = RunningService<RoleClient, ()>;

async fn over_stdio(command: Command) -> Result<Client, String> {
    ().serve(spawn_stdio(command))
        .await
        .map_err(|e| format!("initialize over stdio: {e}"))
}

async fn over_http(url: &str) -> Result<Client, String> {
    ().serve(StreamableHttpClientTransport::from_uri(url.to_owned()))
        .await
        .map_err(|e| format!("initialize over HTTP at {url}: {e}"))
}

/// Starts an HTTP server child and reads its URL: the first line of its stdout that starts
/// with `http://` after `prefix` (stdout, or stderr for the guard); the rest is drained.
async fn http_child(mut command: Command, from_stderr: bool, prefix: &str) -> (Child, String) {
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("an HTTP server starts");
    let read: Box<dyn tokio::io::AsyncRead + Unpin + Send> = if from_stderr {
        drain(child.stdout.take().expect("piped"));
        Box::new(child.stderr.take().expect("piped"))
    } else {
        drain(child.stderr.take().expect("piped"));
        Box::new(child.stdout.take().expect("piped"))
    };
    let mut lines = BufReader::new(read).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(at) = line.find(prefix) {
                return Some(line[at + prefix.len()..].trim().to_owned());
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .expect("the HTTP server's URL");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

/// Stops the HTTP children as an operator would (stdin closed, SIGTERM) and waits for them,
/// so that a proxy run under a profiler (`HOP_WRAP`) ends normally and writes its profile;
/// one still running after a minute is killed.
async fn stop(children: Vec<Child>) {
    let mut waiting = Vec::new();
    for mut child in children {
        drop(child.stdin.take());
        if let Some(pid) = child.id() {
            let _ = Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .await;
        }
        waiting.push(child);
    }
    for mut child in waiting {
        if tokio::time::timeout(Duration::from_secs(60), child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    }
}

fn drain(mut pipe: impl tokio::io::AsyncRead + Unpin + Send + 'static) {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 8192];
        while matches!(pipe.read(&mut buf).await, Ok(n) if n > 0) {}
    });
}

fn guard_config(dir: &Path, tools: usize, upstream_url: Option<&str>) -> PathBuf {
    let exe = std::env::current_exe().expect("this bench's path");
    let mut upstream = match (upstream_url, wrapper(UPSTREAM_WRAP)) {
        (Some(url), _) => format!("  - name: up\n    url: {url}\n"),
        (None, None) => format!("  - name: up\n    command: {exe:?}\n"),
        (None, Some((tool, mut args))) => {
            args.push(exe.display().to_string());
            format!("  - name: up\n    command: {tool:?}\n    args: {args:?}\n")
        }
    };
    if upstream_url.is_none() {
        upstream.push_str(&format!(
            "    env: {{ {ROLE}: upstream, {TOOLS}: \"{tools}\" }}\n"
        ));
    }
    if let Ok(lifecycle) = std::env::var("HOP_LIFECYCLE") {
        upstream.push_str(&format!("    lifecycle: {lifecycle}\n"));
    }
    let path = dir.join(format!(
        "guard-{tools}-{}.yaml",
        if upstream_url.is_some() {
            "http"
        } else {
            "stdio"
        }
    ));
    std::fs::write(&path, format!("upstreams:\n{upstream}")).expect("the config written");
    path
}

/// A free port on 127.0.0.1 (for mcp-proxy, which cannot be asked for port 0 and say which).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// `mcp-proxy` in the virtualenv, installed on the first run; or why not.
fn mcp_proxy() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // target/release/deps/hop-HASH
    let target = exe
        .ancestors()
        .nth(3)
        .ok_or("no target dir above this bench")?;
    let venv = target.join("py-mcp-proxy");
    let script = r#"
import os, shutil, subprocess, sys, fcntl
venv, version = sys.argv[1], sys.argv[2]
python = os.path.join(venv, "bin", "python")
probe = [python, "-c", f"import importlib.metadata as m, mcp_proxy; assert m.version('mcp-proxy') == {version!r}"]
with open(venv + ".lock", "w") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    if os.path.exists(python) and subprocess.run(probe, capture_output=True).returncode == 0:
        sys.exit(0)
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                    "--quiet", f"mcp-proxy=={version}"], check=True)
    subprocess.run(probe, check=True)
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&venv)
        .arg(MCP_PROXY)
        .output()
        .map_err(|e| format!("python3: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(5).collect();
        return Err(format!(
            "installing mcp-proxy=={MCP_PROXY} failed: {}",
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ));
    }
    Ok(venv.join("bin").join("mcp-proxy"))
}

/// mcp-proxy serving `command` (a stdio upstream) over streamable HTTP: its URL once it
/// answers `initialize`.
async fn mcp_proxy_http(proxy: &Path, tools: usize) -> Result<(Child, Client), String> {
    let port = free_port();
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let child = Command::new(proxy)
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--log-level", "WARNING", "--pass-environment"])
        .args(["-e", ROLE, "upstream", "-e", TOOLS, &tools.to_string()])
        .arg(&exe)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("mcp-proxy: {e}"))?;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let started = Instant::now();
    loop {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok((child, over_http(&url).await?));
        }
        if started.elapsed() > Duration::from_secs(60) {
            return Err("mcp-proxy did not listen within 60 s".to_owned());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Measuring.

struct Settings {
    tools: Vec<usize>,
    calls: usize,
    warmup: usize,
    rounds: usize,
}

impl Settings {
    fn new(quick: bool) -> Self {
        let env = |name: &str| std::env::var(name).ok();
        let tools = env("HOP_TOOLS")
            .map(|list| {
                list.split(',')
                    .filter_map(|n| n.trim().parse().ok())
                    .collect()
            })
            .unwrap_or_else(|| vec![3, 200, 1000]);
        let calls = env("HOP_CALLS")
            .and_then(|n| n.parse().ok())
            .unwrap_or(if quick { 300 } else { 5000 });
        Settings {
            tools,
            calls,
            warmup: (calls / 10).max(50),
            rounds: 3,
        }
    }
}

/// Which chains a row is, for its baseline and the guard's share.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Group {
    /// Client and upstream on stdio; the proxy spawned by the client, spawning the upstream.
    Stdio,
    /// The proxy served on HTTP, its upstream on its stdio.
    HttpToStdio,
    /// The proxy on the client's stdio, its upstream served on HTTP.
    StdioToHttp,
}

struct Row {
    name: &'static str,
    chain: &'static str,
    group: Group,
    /// What the row is measured against: direct over stdio or over HTTP.
    direct: bool,
    /// For the guard's share: the guard and the forwarder of its group.
    kind: Kind,
    client: Client,
    /// Every sample, and each round's median.
    samples: Vec<Duration>,
    rounds: Vec<Duration>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Direct,
    Forwarder,
    Guard,
    McpProxy,
}

fn arguments() -> CallToolRequestParams {
    let Value::Object(arguments) = json!({ "path": "src", "query": "fn main", "limit": 20 }) else {
        unreachable!("an object literal")
    };
    CallToolRequestParams::new(CALLED).with_arguments(arguments)
}

async fn run(client: &Client, calls: usize, into: Option<&mut Vec<Duration>>) -> Vec<Duration> {
    let params = arguments();
    let mut times = Vec::with_capacity(calls);
    for _ in 0..calls {
        let params = params.clone();
        let t = Instant::now();
        let result = client.call_tool(params).await;
        times.push(t.elapsed());
        match result {
            Ok(result) if result.is_error != Some(true) => {}
            Ok(result) => panic!("{CALLED} failed: {:?}", result.content),
            Err(error) => panic!("{CALLED}: {error}"),
        }
    }
    if let Some(into) = into {
        into.extend_from_slice(&times);
    }
    times
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    // Nearest rank.
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn signed(a: Duration, b: Duration) -> String {
    format!("{:+.0}", us(a) - us(b))
}

async fn paths(
    tools: usize,
    dir: &Path,
    proxy: &Result<PathBuf, String>,
) -> (Vec<Row>, Vec<Child>) {
    let mut keep = Vec::new();
    let mut rows = Vec::new();
    // `HOP_ONLY=guard` and the like: only the rows whose name has one of these words.
    let only = std::env::var("HOP_ONLY").ok();
    let wanted = |name: &str| {
        only.as_deref()
            .is_none_or(|only| only.split(',').any(|word| name.contains(word.trim())))
    };
    let mut add =
        |name: &'static str, chain, group, kind, client: Result<Client, String>| match client {
            Ok(_) if !wanted(name) => {}
            Ok(client) => rows.push(Row {
                name,
                chain,
                group,
                direct: kind == Kind::Direct,
                kind,
                client,
                samples: Vec::new(),
                rounds: Vec::new(),
            }),
            Err(error) => println!("  {name}: left out: {error}"),
        };
    // The upstream served on HTTP, shared by the HTTP-upstream rows.
    let mut command = self_command("upstream", tools);
    command.env(SERVE, "http");
    let (upstream, upstream_url) = http_child(command, false, "http://").await;
    let upstream_url = format!("http://{upstream_url}");
    keep.push(upstream);

    add(
        "direct stdio",
        "client -stdio-> upstream",
        Group::Stdio,
        Kind::Direct,
        over_stdio(self_command("upstream", tools)).await,
    );
    add(
        "forwarder stdio",
        "client -stdio-> rmcp forwarder -stdio-> upstream",
        Group::Stdio,
        Kind::Forwarder,
        over_stdio(wrapped(PROXY_WRAP, self_command("forwarder", tools))).await,
    );
    let mut guard = guard_command();
    guard.arg("--config").arg(guard_config(dir, tools, None));
    add(
        "guard stdio",
        "client -stdio-> guard -stdio-> upstream",
        Group::Stdio,
        Kind::Guard,
        over_stdio(guard).await,
    );

    add(
        "direct HTTP",
        "client -HTTP-> upstream",
        Group::StdioToHttp,
        Kind::Direct,
        over_http(&upstream_url).await,
    );
    let mut command = wrapped(PROXY_WRAP, self_command("forwarder", tools));
    command.env(SERVE, "http");
    let (child, url) = http_child(command, false, "http://").await;
    keep.push(child);
    add(
        "forwarder HTTP>stdio",
        "client -HTTP-> rmcp forwarder -stdio-> upstream",
        Group::HttpToStdio,
        Kind::Forwarder,
        over_http(&format!("http://{url}")).await,
    );
    let mut guard = guard_command();
    guard
        .arg("--config")
        .arg(guard_config(dir, tools, None))
        .args(["--http", "127.0.0.1:0"]);
    let (child, url) = http_child(guard, true, "serving streamable HTTP at ").await;
    keep.push(child);
    add(
        "guard HTTP>stdio",
        "client -HTTP-> guard -stdio-> upstream",
        Group::HttpToStdio,
        Kind::Guard,
        over_http(&url).await,
    );
    match proxy {
        Ok(proxy) => match mcp_proxy_http(proxy, tools).await {
            Ok((child, client)) => {
                keep.push(child);
                add(
                    "mcp-proxy HTTP>stdio",
                    "client -HTTP-> mcp-proxy -stdio-> upstream",
                    Group::HttpToStdio,
                    Kind::McpProxy,
                    Ok(client),
                );
            }
            Err(error) => println!("  mcp-proxy HTTP>stdio: left out: {error}"),
        },
        Err(error) => println!("  mcp-proxy rows left out: {error}"),
    }

    let mut command = wrapped(PROXY_WRAP, self_command("forwarder", tools));
    command.env(UPSTREAM_URL, &upstream_url);
    add(
        "forwarder stdio>HTTP",
        "client -stdio-> rmcp forwarder -HTTP-> upstream",
        Group::StdioToHttp,
        Kind::Forwarder,
        over_stdio(command).await,
    );
    let mut guard = guard_command();
    guard
        .arg("--config")
        .arg(guard_config(dir, tools, Some(&upstream_url)));
    add(
        "guard stdio>HTTP",
        "client -stdio-> guard -HTTP-> upstream",
        Group::StdioToHttp,
        Kind::Guard,
        over_stdio(guard).await,
    );
    if let Ok(proxy) = proxy {
        let mut command = Command::new(proxy);
        command
            .args(["--transport", "streamablehttp", "--log-level", "WARNING"])
            .arg(&upstream_url);
        add(
            "mcp-proxy stdio>HTTP",
            "client -stdio-> mcp-proxy -HTTP-> upstream",
            Group::StdioToHttp,
            Kind::McpProxy,
            over_stdio(command).await,
        );
    }
    (rows, keep)
}

async fn bench(settings: Settings) {
    #[allow(
        deprecated,
        reason = "ring builds without cmake; a bench needs no more"
    )]
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = std::env::temp_dir().join(format!("hop-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    let proxy = mcp_proxy();
    println!(
        "hop: {} sequential calls of {CALLED} per path and round, {} interleaved rounds after {} \
         warm-up calls (mcp-proxy: a fifth of the calls per round); p50/p99 over all rounds, in µs",
        settings.calls, settings.rounds, settings.warmup
    );
    let mut summary = Vec::new();
    for &tools in &settings.tools {
        println!("\n== {tools} upstream tools ==");
        let (mut rows, keep) = paths(tools, &dir, &proxy).await;
        for row in &rows {
            // The offer listed once, as a client does first.
            let listed = row.client.list_all_tools().await.map(|t| t.len());
            assert_eq!(listed.ok(), Some(tools), "{}: tools/list", row.name);
            run(&row.client, settings.warmup, None).await;
        }
        for _ in 0..settings.rounds {
            for row in &mut rows {
                // mcp-proxy is some twenty times slower: a fifth of the calls keeps a run short
                // and still gives its p99 from a thousand samples.
                let calls = if row.kind == Kind::McpProxy {
                    settings.calls / 5
                } else {
                    settings.calls
                };
                let mut times = run(&row.client, calls, Some(&mut row.samples)).await;
                times.sort_unstable();
                row.rounds.push(percentile(&times, 50.0));
            }
        }
        report(tools, &mut rows, &mut summary);
        for row in rows {
            let _ = row.client.cancel().await;
        }
        stop(keep).await;
    }
    println!("\n== the guard's own share (guard − plain forwarder, same run) ==");
    println!("{:>6}  {:<14} {:>8} {:>8}", "tools", "chain", "p50", "p99");
    for line in summary {
        println!("{line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn report(tools: usize, rows: &mut [Row], summary: &mut Vec<String>) {
    for row in rows.iter_mut() {
        row.samples.sort_unstable();
    }
    let stat = |row: &Row| {
        (
            percentile(&row.samples, 50.0),
            percentile(&row.samples, 99.0),
        )
    };
    let direct = |transport_http: bool| {
        rows.iter()
            .find(|r| r.direct && (r.group != Group::Stdio) == transport_http)
            .map(stat)
    };
    let (direct_stdio, direct_http) = (direct(false), direct(true));
    println!(
        "{:<22} {:>7} {:>7} {:>8} {:>8}  {:<24} chain",
        "path", "p50", "p99", "+p50", "+p99", "round p50s"
    );
    for row in rows.iter() {
        let (p50, p99) = stat(row);
        // Each row against the direct call over the transport its upstream speaks.
        let base = match row.group {
            Group::Stdio | Group::HttpToStdio => direct_stdio,
            Group::StdioToHttp => direct_http,
        };
        let base = if row.direct { None } else { base };
        let (a50, a99) = base.map_or((String::new(), String::new()), |(b50, b99)| {
            (signed(p50, b50), signed(p99, b99))
        });
        let rounds: Vec<String> = row
            .rounds
            .iter()
            .map(|d| format!("{:.0}", us(*d)))
            .collect();
        println!(
            "{:<22} {:>7.0} {:>7.0} {:>8} {:>8}  {:<24} {}",
            row.name,
            us(p50),
            us(p99),
            a50,
            a99,
            rounds.join("/"),
            row.chain
        );
    }
    for (group, label) in [
        (Group::Stdio, "stdio"),
        (Group::HttpToStdio, "HTTP>stdio"),
        (Group::StdioToHttp, "stdio>HTTP"),
    ] {
        let find = |kind| rows.iter().find(|r| r.group == group && r.kind == kind);
        if let (Some(guard), Some(forwarder)) = (find(Kind::Guard), find(Kind::Forwarder)) {
            let ((g50, g99), (f50, f99)) = (stat(guard), stat(forwarder));
            summary.push(format!(
                "{tools:>6}  {label:<14} {:>8} {:>8}",
                signed(g50, f50),
                signed(g99, f99)
            ));
        }
    }
}
