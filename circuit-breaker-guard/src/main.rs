//! `circuit-breaker-guard`: a guard proxy any MCP client starts in front of its MCP servers
//! (B17). Each upstream tool gets a circuit breaker, routes across servers by degradation, a
//! failure budget and honest notes for the model; what it does not guard passes through.
//! The config is one YAML file (see the README).

mod config;
mod fields;
mod locate;
#[cfg(feature = "otel")]
mod otel;
#[cfg(not(feature = "otel"))]
mod otel {
    //! Without feature `otel` nothing is exported: a config that asks for it is refused
    //! before anything starts, so no value of this type is ever made.

    pub enum Exporters {}

    impl Exporters {
        pub fn observe(&self, _: &agent_circuit_breaker::Expeditor) {
            match *self {}
        }

        pub fn shutdown(self) {
            match self {}
        }
    }
}
mod proxy;
mod relay;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use agent_circuit_breaker::capability::did_you_mean;
use agent_circuit_breaker::mcp::rmcp::ServiceExt as _;
use agent_circuit_breaker::mcp::{McpClient, McpClientBuilder, McpClientError};

use config::{Config, Transport};

const HELP: &str = "\
circuit-breaker-guard: a guard proxy in front of MCP servers

USAGE:
    circuit-breaker-guard --config guard.yaml [--stdio | --http ADDR]
    circuit-breaker-guard --config guard.yaml --check

OPTIONS:
    -c, --config FILE   the config (YAML): upstreams, overlay, policy, serve, fleet, telemetry
        --check         read and check the config, print a summary or every problem, and exit
                        (0: ok, 2: problems)
        --stdio         serve MCP on stdin/stdout (the default unless the config says `serve: http`)
        --http ADDR     serve streamable HTTP on ADDR (e.g. 127.0.0.1:8931)
        --threads N     run on N threads (default: the config's `runtime.threads`, else 1)
    -h, --help          this text
    -V, --version       the version

Logs and the state table go to stderr; the state table also on SIGUSR1 and at exit.
";

const FLAGS: [&str; 10] = [
    "--config",
    "-c",
    "--check",
    "--stdio",
    "--http",
    "--threads",
    "--help",
    "-h",
    "--version",
    "-V",
];

/// What the command line asks for.
#[derive(Debug, Default)]
struct Args {
    config: Option<PathBuf>,
    check: bool,
    stdio: bool,
    http: Option<String>,
    threads: Option<usize>,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut out = Args::default();
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "-h" | "--help" => {
                print!("{HELP}");
                return Ok(None);
            }
            "-V" | "--version" => {
                println!("circuit-breaker-guard {}", env!("CARGO_PKG_VERSION"));
                return Ok(None);
            }
            "-c" | "--config" => out.config = Some(PathBuf::from(value("--config")?)),
            "--check" => out.check = true,
            "--stdio" => out.stdio = true,
            "--http" => out.http = Some(value("--http")?),
            "--threads" => {
                let text = value("--threads")?;
                let threads = text
                    .parse()
                    .map_err(|_| format!("--threads {text}: not a number of threads"))?;
                config::check_threads(threads).map_err(|e| format!("--threads: {e}"))?;
                out.threads = Some(threads);
            }
            other => {
                let mut message = format!("unknown argument `{other}`");
                if let Some(s) = did_you_mean(other, FLAGS) {
                    message.push_str(&format!("; did you mean `{s}`?"));
                }
                return Err(message);
            }
        }
    }
    if out.stdio && out.http.is_some() {
        return Err("--stdio and --http exclude each other".to_owned());
    }
    Ok(Some(out))
}

fn main() -> ExitCode {
    // The HTTP clients (upstreams by URL, the OTLP exporters) use rustls, which has no
    // crypto provider until the program installs one. ring's builds without cmake; rustls
    // marks it deprecated for lacking post-quantum key exchange, which no MCP server or
    // collector requires.
    #[allow(deprecated)]
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => return ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("circuit-breaker-guard: {message}\n(--help for usage)");
            return ExitCode::from(2);
        }
    };
    let Some(path) = args.config.clone() else {
        eprintln!("circuit-breaker-guard: no config: give --config guard.yaml\n(--help for usage)");
        return ExitCode::from(2);
    };
    let config = match load(&path) {
        Ok(config) => config,
        Err(report) => {
            eprintln!("{report}");
            return ExitCode::from(2);
        }
    };
    if args.check {
        println!("ok: {}", path.display());
        print!("{}", summary(&config));
        return ExitCode::SUCCESS;
    }
    let exporters = match init_logs(&config) {
        Ok(exporters) => exporters,
        Err(message) => {
            eprintln!("circuit-breaker-guard: {message}");
            return ExitCode::from(2);
        }
    };
    let threads = args.threads.unwrap_or(config.runtime.threads);
    let runtime = match runtime(threads) {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("circuit-breaker-guard: no runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(run(config, args, exporters.as_ref()));
    // Child processes and connections are closed by then; tasks still waiting are dropped.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    if let Some(exporters) = exporters {
        exporters.shutdown();
    }
    code
}

/// The async runtime on `threads` threads. One is a current-thread runtime: the tasks, the
/// I/O driver and the timers all on the thread that runs the guard, so that no hand-off
/// between rmcp's tasks on a call's way has another thread to wake.
fn runtime(threads: usize) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(threads);
        builder
    };
    builder.enable_all().build()
}

/// The config at `path`, or the report of every problem.
fn load(path: &Path) -> Result<Config, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("circuit-breaker-guard: cannot read {}: {e}", path.display()))?;
    config::parse(&text, &|name| std::env::var(name).ok()).map_err(|problems| {
        let n = problems.len();
        let mut report = format!(
            "{}: {n} problem{}",
            path.display(),
            if n == 1 { "" } else { "s" }
        );
        for problem in problems {
            report.push_str(&format!("\n  {problem}"));
        }
        report
    })
}

fn summary(config: &Config) -> String {
    let mut out = String::new();
    out.push_str(&format!("upstreams ({}):\n", config.upstreams.len()));
    for upstream in &config.upstreams {
        let how = match &upstream.transport {
            Transport::Stdio { command, args, .. } => {
                let mut line = format!("stdio: {command}");
                for arg in args {
                    line.push(' ');
                    line.push_str(arg);
                }
                line
            }
            Transport::Http { url, headers } => {
                let names: Vec<&str> = headers.keys().map(String::as_str).collect();
                if names.is_empty() {
                    format!("http: {url}")
                } else {
                    format!("http: {url} (headers: {})", names.join(", "))
                }
            }
        };
        let deadline = upstream
            .deadline
            .map(|d| format!(", deadline {}", humantime::format_duration(d)))
            .unwrap_or_default();
        let required = if upstream.required { ", required" } else { "" };
        let lifecycle = if upstream.initialize_only {
            ", initialize only"
        } else {
            ""
        };
        out.push_str(&format!(
            "  {}: {how}{deadline}{required}{lifecycle}\n",
            upstream.name
        ));
    }
    match &config.overlay {
        Some(overlay) => {
            let tools: Vec<&str> = overlay.tools().iter().map(|t| t.name()).collect();
            out.push_str(&format!(
                "overlay tools ({}): {}\n",
                tools.len(),
                tools.join(", ")
            ));
        }
        None => out.push_str("overlay: none\n"),
    }
    let policy = config.policy.for_service();
    let human = |d: Option<std::time::Duration>| {
        d.map_or("none".to_owned(), |d| {
            humantime::format_duration(d).to_string()
        })
    };
    out.push_str(&format!(
        "policy: threshold {}, budget {} per {}, cool-down {} (cap {})\n",
        policy.threshold(),
        policy.budget(),
        human(policy.budget_window()),
        human(policy.cool_down()),
        humantime::format_duration(policy.cool_down_cap()),
    ));
    out.push_str(&format!(
        "health: check every {}, trusted {}\n",
        humantime::format_duration(config.health.check_every),
        humantime::format_duration(config.health.ttl)
    ));
    match &config.http {
        Some(http) => out.push_str(&format!(
            "serve: streamable HTTP on http://{}{}\n",
            http.bind, http.path
        )),
        None => out.push_str("serve: stdio\n"),
    }
    let threads = config.runtime.threads;
    out.push_str(&format!(
        "runtime: {threads} thread{}\n",
        if threads == 1 { "" } else { "s" }
    ));
    if let Some(fleet) = &config.fleet {
        out.push_str(&format!(
            "fleet: {} (namespace {})\n",
            fleet.redis, fleet.namespace
        ));
    }
    if let Some(otlp) = &config.telemetry.otlp {
        let protocol = match otlp.protocol {
            config::OtlpProtocol::HttpProtobuf => "http/protobuf",
            config::OtlpProtocol::HttpJson => "http/json",
        };
        out.push_str(&format!(
            "telemetry: spans and metrics over OTLP ({protocol}) to {}, metrics every {}\n",
            otlp.endpoint,
            humantime::format_duration(otlp.export_every)
        ));
    }
    out
}

/// The guard's logs, and its spans and metrics when `telemetry.otlp` asks for them.
fn init_logs(config: &Config) -> Result<Option<otel::Exporters>, String> {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::fmt::writer::BoxMakeWriter;
    let level: tracing::Level = config
        .telemetry
        .log
        .parse()
        .map_err(|e| format!("telemetry.log: {e}"))?;
    let writer = match &config.telemetry.log_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|e| format!("cannot open the log file {}: {e}", path.display()))?;
            BoxMakeWriter::new(Arc::new(file))
        }
        None => BoxMakeWriter::new(std::io::stderr),
    };
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    // rmcp's own info lines (every connection's peer info, every notification) are its
    // debugging; the guard's and the runtime's are what an operator reads.
    let filter = tracing_subscriber::filter::Targets::new()
        .with_default(level)
        .with_target("rmcp", level.min(tracing::Level::WARN));
    // The level is the logs' alone: what is exported does not depend on how much is logged.
    // Every call's span has its fields written by this layer when it opens, line or not:
    // `Fields` writes the same text for less.
    let logs = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(false)
        .with_target(false)
        .fmt_fields(fields::Fields)
        .with_filter(filter);
    let registry = tracing_subscriber::registry().with(logs);
    #[cfg(feature = "otel")]
    if let Some(otlp) = &config.telemetry.otlp {
        let exporters = otel::Exporters::start(otlp, &config.name)?;
        let spans = tracing_opentelemetry::layer()
            .with_tracer(exporters.tracer())
            .with_filter(
                tracing_subscriber::filter::Targets::new()
                    .with_target("circuit_breaker", tracing::Level::TRACE),
            );
        registry
            .with(spans)
            .with(exporters.telemetry.layer())
            .try_init()
            .map_err(|e| format!("logging: {e}"))?;
        return Ok(Some(exporters));
    }
    #[cfg(not(feature = "otel"))]
    if config.telemetry.otlp.is_some() {
        return Err("`telemetry.otlp` needs a build with the `otel` feature".to_owned());
    }
    registry.try_init().map_err(|e| format!("logging: {e}"))?;
    Ok(None)
}

async fn run(config: Config, args: Args, exporters: Option<&otel::Exporters>) -> ExitCode {
    let downstream = relay::Downstream::new();
    let mut deadlines = HashMap::new();
    let mut builder = McpClient::builder()
        .policy(config.policy)
        .health_ttl(config.health.ttl)
        .connect_timeout(config.health.connect_timeout)
        .check_every(config.health.check_every)
        .relay(Arc::clone(&downstream) as Arc<dyn agent_circuit_breaker::mcp::Relay>);
    if let Some(overlay) = config.overlay.clone() {
        builder = builder.overlay(overlay);
    }
    if let Some(separator) = &config.qualify_names {
        builder = builder.qualify_names(separator.clone());
    }
    for upstream in &config.upstreams {
        if let Some(deadline) = upstream.deadline {
            builder = builder.deadline_for(upstream.name.clone(), deadline);
            deadlines.insert(upstream.name.clone(), deadline);
        }
        if !upstream.required {
            builder = builder.optional(upstream.name.clone());
        }
        builder = match add_upstream(builder, upstream) {
            Ok(builder) => builder,
            Err(message) => {
                eprintln!(
                    "circuit-breaker-guard: upstream {}: {message}",
                    upstream.name
                );
                return ExitCode::from(2);
            }
        };
    }
    #[cfg(feature = "fleet")]
    if let Some(fleet) = &config.fleet {
        let worker = fleet
            .worker
            .clone()
            .unwrap_or_else(|| format!("guard-{}", std::process::id()));
        match agent_circuit_breaker::redis::RedisFleet::connect(&fleet.redis, &fleet.namespace)
            .worker(worker)
            .await
        {
            Ok(store) => builder = builder.expeditor(move |b| b.fleet(store)),
            Err(error) => {
                eprintln!("circuit-breaker-guard: fleet {}: {error}", fleet.redis);
                return ExitCode::FAILURE;
            }
        }
    }
    #[cfg(not(feature = "fleet"))]
    if config.fleet.is_some() {
        eprintln!("circuit-breaker-guard: `fleet:` needs a build with the `fleet` feature");
        return ExitCode::from(2);
    }
    let client = match builder.build().await {
        Ok(client) => client,
        Err(McpClientError::Connect { server, message }) => {
            eprintln!(
                "circuit-breaker-guard: upstream {server} is `required: true` and could not be started: {message}"
            );
            return ExitCode::FAILURE;
        }
        Err(error) => {
            eprintln!("circuit-breaker-guard: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(exporters) = exporters {
        exporters.observe(client.expeditor());
    }
    announce_upstreams(&client, &config);
    let shared = Arc::new(proxy::Shared::new(
        client.clone(),
        config.name.clone(),
        downstream,
        deadlines,
    ));
    spawn_state_on_signal(client.clone());
    let http = args.http.clone().or_else(|| {
        (!args.stdio)
            .then(|| config.http.as_ref().map(|h| h.bind.to_string()))
            .flatten()
    });
    let code = match http {
        Some(addr) => serve_http(Arc::clone(&shared), &addr, &config).await,
        None => serve_stdio(Arc::clone(&shared)).await,
    };
    shared.close();
    // A moment for the cancellations to reach the upstreams before they are closed.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    eprintln!("{}", state(&client));
    client.shutdown().await;
    code
}

/// Which upstreams answered at start; those that did not are down, each said loudly, and an
/// empty offer more loudly still: the guard serves anyway, so that a client configured with
/// it keeps working, and the upstreams join as they answer.
fn announce_upstreams(client: &McpClient, config: &Config) {
    let down = client.unconnected();
    let retry = humantime::format_duration(config.health.check_every);
    for (server, why) in &down {
        tracing::warn!(
            "upstream {server} is down at start: {why}; tried again every {retry} or more \
             (backoff), its tools join the offer when it answers"
        );
    }
    let tools = agent_circuit_breaker::dispatch::ToolDispatch::definitions(client).len();
    if down.len() == config.upstreams.len() {
        tracing::error!(
            "NO upstream answered at start: serving an empty offer until one does \
             (mark an upstream `required: true` to refuse to start without it)"
        );
    } else {
        let up: Vec<&str> = client
            .servers()
            .into_iter()
            .filter(|s| !down.iter().any(|(d, _)| d == s))
            .collect();
        tracing::info!(upstreams = %up.join(", "), tools, "upstreams connected");
    }
}

/// The state table, and a line for each upstream not connected since the start (the table
/// knows servers by their tools, and those have none yet).
fn state(client: &McpClient) -> String {
    let mut out = client.expeditor().state_table().to_string();
    for (server, why) in client.unconnected() {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!(
            "Server {server}: DOWN since start — {why} (its tools not known yet)"
        ));
    }
    out
}

fn add_upstream(
    builder: McpClientBuilder,
    upstream: &config::Upstream,
) -> Result<McpClientBuilder, String> {
    let builder = if upstream.initialize_only {
        builder.initialize_only(upstream.name.clone())
    } else {
        builder
    };
    match &upstream.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let mut child = std::process::Command::new(command);
            child.args(args).envs(env);
            if let Some(cwd) = cwd {
                child.current_dir(cwd);
            }
            Ok(builder.child(upstream.name.clone(), &child))
        }
        Transport::Http { url, headers } => Ok(builder.url_with(
            upstream.name.clone(),
            url.clone(),
            headers.iter().map(|(k, v)| (k.clone(), v.clone())),
        )),
    }
}

/// The client's side of stdio, as rmcp's transport takes it.
type StdioPair = (
    Box<dyn tokio::io::AsyncRead + Send + Unpin>,
    Box<dyn tokio::io::AsyncWrite + Send + Unpin>,
);

/// The client's stdin and stdout on the event loop, when both are pipes or sockets (as the
/// clients that spawn the guard make them). tokio's own stdin and stdout hand every read and
/// write to its blocking pool: a hand-off to another thread and back per message each way.
/// A terminal or a file keeps tokio's.
#[cfg(unix)]
fn stdio_on_event_loop() -> Option<StdioPair> {
    use std::os::fd::{AsFd as _, OwnedFd};
    use std::os::unix::fs::FileTypeExt as _;
    use tokio::net::unix::pipe;
    // Whether `fd` is a pipe (`Some(true)`) or a socket (`Some(false)`).
    let is_pipe = |fd: &OwnedFd| {
        let file_type = std::fs::File::from(fd.try_clone().ok()?)
            .metadata()
            .ok()?
            .file_type();
        (file_type.is_fifo() || file_type.is_socket()).then_some(file_type.is_fifo())
    };
    let socket = |fd: OwnedFd| {
        let stream = std::os::unix::net::UnixStream::from(fd);
        stream.set_nonblocking(true).ok()?;
        tokio::net::UnixStream::from_std(stream).ok()
    };
    let input = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let output = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    // Both checked before either is made non-blocking: a fallback to tokio's stdio on a
    // non-blocking descriptor would read `WouldBlock` as an error.
    let (input_pipe, output_pipe) = (is_pipe(&input)?, is_pipe(&output)?);
    let read: Box<dyn tokio::io::AsyncRead + Send + Unpin> = if input_pipe {
        Box::new(pipe::Receiver::from_owned_fd(input).ok()?)
    } else {
        Box::new(socket(input)?)
    };
    let write: Box<dyn tokio::io::AsyncWrite + Send + Unpin> = if output_pipe {
        Box::new(pipe::Sender::from_owned_fd(output).ok()?)
    } else {
        Box::new(socket(output)?)
    };
    Some((read, write))
}

#[cfg(not(unix))]
fn stdio_on_event_loop() -> Option<StdioPair> {
    None
}

async fn serve_stdio(shared: Arc<proxy::Shared>) -> ExitCode {
    let guard = proxy::Guard::new(shared);
    let served = match stdio_on_event_loop() {
        Some(io) => guard.serve(io).await,
        None => {
            guard
                .serve(agent_circuit_breaker::mcp::rmcp::transport::stdio())
                .await
        }
    };
    let running = match served {
        Ok(running) => running,
        Err(error) => {
            eprintln!("circuit-breaker-guard: the client's initialize failed: {error}");
            return ExitCode::FAILURE;
        }
    };
    match running.waiting().await {
        Ok(reason) => {
            tracing::info!(?reason, "the client closed the session");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("circuit-breaker-guard: the session ended: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve_http(shared: Arc<proxy::Shared>, addr: &str, config: &Config) -> ExitCode {
    use agent_circuit_breaker::mcp::{HttpOptions, serve_http};
    let addr: std::net::SocketAddr = match addr.parse() {
        Ok(addr) => addr,
        Err(error) => {
            eprintln!("circuit-breaker-guard: --http {addr}: {error} (write e.g. 127.0.0.1:8931)");
            return ExitCode::from(2);
        }
    };
    let mut options = HttpOptions::new().bind(addr);
    if let Some(http) = &config.http {
        options = options.path(http.path.clone());
        for origin in &http.allowed_origins {
            options = options.allow_origin(origin.clone());
        }
    }
    // A session each: what its client was told of the offer is its own.
    let server = match serve_http(move || proxy::Guard::new(Arc::clone(&shared)), options).await {
        Ok(server) => server,
        Err(error) => {
            eprintln!("circuit-breaker-guard: cannot serve on {addr}: {error}");
            return ExitCode::FAILURE;
        }
    };
    eprintln!(
        "circuit-breaker-guard: serving streamable HTTP at {}",
        server.url()
    );
    stopped().await;
    server.shutdown().await;
    ExitCode::SUCCESS
}

/// Until the process is asked to stop (Ctrl-C, SIGTERM).
async fn stopped() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
}

/// The state table to stderr on SIGUSR1.
fn spawn_state_on_signal(client: McpClient) {
    #[cfg(unix)]
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut usr1) = signal(SignalKind::user_defined1()) else {
            return;
        };
        while usr1.recv().await.is_some() {
            eprintln!("{}", state(&client));
        }
    });
    #[cfg(not(unix))]
    drop(client);
}
