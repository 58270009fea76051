//! The agent on MCP (B10 in `docs/requirements.md`): its tools live in two MCP servers, `files` and `web`, each a
//! child process over stdio, and a model drives it the way a model-driven agent works — it
//! reads the tool definitions offered this turn, sends calls by name with JSON arguments,
//! and reads the replies and their notes. The model is a scripted policy (`model.rs`) that
//! stands where an LLM would.
//!
//! ```sh
//! cargo run --example mcp_agent --features mcp                          # healthy
//! cargo run --example mcp_agent --features mcp -- --break search_files  # a broken tool
//! cargo run --example mcp_agent --features mcp -- --kill files@4        # a server killed mid-run
//! cargo run --example mcp_agent --features mcp -- --model-url http://127.0.0.1:11434/v1 --model qwen3:8b
//! ```
//!
//! With `--model-url` and `--model`, a real model drives the agent instead (`llm.rs`): any
//! OpenAI-compatible chat-completions endpoint, the key from `OPENAI_API_KEY`.
//!
//! - `--break TOOL`: the server that has TOOL makes it fail every call (repeatable).
//! - `--kill SERVER@N`: before the model's Nth call, SERVER's process is killed (SIGKILL).
//!   The next call to one of its tools finds it gone: one event names the server, its tools
//!   leave the offer, the failure is charged once, and the model goes on with the other
//!   server. When its probe is due, the client starts the server again, and a health check
//!   that reaches it brings every tool back at once.
//!
//! The two servers are this same program, started with `--serve files|web`: the example
//! needs nothing else built. Both are guarded toolboxes served by `McpServer`
//! (`examples/mcp_files`, `examples/mcp_web`).

#[path = "../mcp_files/faults.rs"]
mod faults;
#[path = "../mcp_files/files.rs"]
#[allow(
    dead_code,
    reason = "the files toolbox, shared with examples/mcp_files"
)]
mod files;
mod llm;
mod model;
#[path = "../mcp_web/web.rs"]
#[allow(dead_code, reason = "the web toolbox, shared with examples/mcp_web")]
mod web;
mod workspace;

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use agent_circuit_breaker::dispatch::ToolDispatch;
use agent_circuit_breaker::event::Event;
use agent_circuit_breaker::mcp::{McpClient, McpServer};
use agent_circuit_breaker::policy::ProbeUnit;
use agent_circuit_breaker::{CapabilityMap, Policy, Task};

use model::{Model, Turn};

const USAGE: &str =
    "usage: mcp_agent [--break TOOL]... [--kill SERVER@N] [--model-url URL --model NAME]
  --break TOOL     make TOOL fail (search_files, read_file, list_dir, web_search, fetch_page)
  --kill SERVER@N  kill SERVER (files or web) before the model's Nth call
  --model-url URL  an OpenAI-compatible API (http://127.0.0.1:11434/v1 for Ollama) drives the
                   agent instead of the scripted model; the key, if any, from OPENAI_API_KEY
  --model NAME     the model to ask for (with --model-url)";

/// The map overlay: what the servers cannot say about their tools — routes across servers
/// and what they lose (B6's YAML shape).
const OVERLAY: &str = "\
capability_map:
  - tool: search_files
    provides: content search across the project's files
    alternatives:
      - tool: web_search
        method: search the published docs instead
        degradation: only what is published; the project's own notes are not searched
    fallback: ask the user where the text is
  - tool: read_file
    provides: file content inspection
    alternatives:
      - tool: fetch_page
        method: read the published copy of the doc
        degradation: the published copy may lag the repository
    fallback: ask the user to paste the file
  - tool: web_search
    provides: search of the published docs
    alternatives:
      - tool: search_files
        method: search the project's own copies of the docs
        degradation: only the copies in the repository; the rest of the site is not searched
    fallback: ask the user for the page's address
";

/// What the command line asks for.
struct Args {
    breaks: Vec<String>,
    kill: Option<(String, usize)>,
    model_url: Option<String>,
    model: Option<String>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut parsed = Args {
        breaks: Vec::new(),
        kill: None,
        model_url: None,
        model: None,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--break" => parsed
                .breaks
                .push(args.next().ok_or("--break needs a tool name")?.clone()),
            "--kill" => {
                let spec = args.next().ok_or("--kill needs SERVER@N")?;
                let (server, n) = spec
                    .split_once('@')
                    .ok_or_else(|| format!("--kill {spec}: write SERVER@N"))?;
                if server != "files" && server != "web" {
                    return Err(format!("--kill {spec}: no server {server} (files, web)"));
                }
                let n = n.parse().map_err(|e| format!("--kill {spec}: {e}"))?;
                parsed.kill = Some((server.to_owned(), n));
            }
            "--model-url" => {
                parsed.model_url = Some(args.next().ok_or("--model-url needs a URL")?.clone());
            }
            "--model" => parsed.model = Some(args.next().ok_or("--model needs a name")?.clone()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if parsed.model_url.is_some() != parsed.model.is_some() {
        return Err("--model-url and --model go together".into());
    }
    if parsed.model_url.is_some() && parsed.kill.is_some() {
        return Err("--kill counts the scripted model's calls: not with --model-url".into());
    }
    for tool in &parsed.breaks {
        if server_of(tool).is_none() {
            return Err(format!("--break {tool}: no such tool"));
        }
    }
    Ok(parsed)
}

/// The server that has `tool`.
fn server_of(tool: &str) -> Option<&'static str> {
    match tool {
        "read_file" | "list_dir" | "search_files" => Some("files"),
        "web_search" | "fetch_page" => Some("web"),
        _ => None,
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcp_agent: {e}");
            return ExitCode::FAILURE;
        }
    };
    if args.first().map(String::as_str) == Some("--serve") {
        return runtime.block_on(serve(&args[1..]));
    }
    let parsed = match parse(&args) {
        Ok(parsed) => parsed,
        Err(e) => {
            eprintln!("mcp_agent: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(agent(parsed)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp_agent: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `--serve files --root DIR [--break TOOL]...` or `--serve web [--break TOOL]...`: one of
/// the two servers, on this process's stdio.
async fn serve(args: &[String]) -> ExitCode {
    let served = match args.first().map(String::as_str) {
        Some("files") => {
            let mut root = None;
            let breaks = faults::parse_breaks(args[1..].iter().cloned(), |arg, rest| {
                if arg == "--root" {
                    root = rest.next();
                    Ok(true)
                } else {
                    Ok(false)
                }
            });
            let (Ok(Some(breaks)), Some(root)) = (breaks, root) else {
                eprintln!("mcp_agent --serve files: --root DIR [--break TOOL]...");
                return ExitCode::from(2);
            };
            let toolbox = match files::Files::new(root.as_ref()) {
                Ok(toolbox) => toolbox,
                Err(e) => {
                    eprintln!("mcp_agent --serve files: {e}");
                    return ExitCode::FAILURE;
                }
            };
            for tool in &breaks.tools {
                toolbox.faults.break_tool(tool, breaks.calls);
            }
            McpServer::new(files::GuardedFiles::new(toolbox))
                .name("files")
                .serve_stdio()
                .await
        }
        Some("web") => {
            let Ok(Some(breaks)) =
                faults::parse_breaks(args[1..].iter().cloned(), |_, _| Ok(false))
            else {
                eprintln!("mcp_agent --serve web: [--break TOOL]...");
                return ExitCode::from(2);
            };
            let toolbox = web::Web::default();
            for tool in &breaks.tools {
                toolbox.faults.break_tool(tool, breaks.calls);
            }
            McpServer::new(web::GuardedWeb::new(toolbox))
                .name("web")
                .serve_stdio()
                .await
        }
        _ => {
            eprintln!("mcp_agent --serve files|web");
            return ExitCode::from(2);
        }
    };
    match served {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp_agent --serve: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The command that starts one of the servers: this program with `--serve`.
fn server_command(
    server: &str,
    root: &std::path::Path,
    breaks: &[String],
) -> Result<tokio::process::Command, String> {
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let mut command = tokio::process::Command::new(exe);
    command.arg("--serve").arg(server);
    if server == "files" {
        command.arg("--root").arg(root);
    }
    for tool in breaks.iter().filter(|t| server_of(t) == Some(server)) {
        command.arg("--break").arg(tool);
    }
    // The server's standard error is the agent's: its log lines go to the terminal.
    Ok(command)
}

async fn agent(args: Args) -> Result<(), String> {
    let workspace = workspace::Workspace::create().map_err(|e| format!("workspace: {e}"))?;
    let driver = match (&args.model_url, &args.model) {
        (Some(url), Some(model)) => format!("the model {model} at {url}"),
        _ => "a scripted model".to_owned(),
    };
    println!("circuit-breaker example agent on MCP: two servers, {driver}\n");
    println!("Workspace: {}", workspace.root().display());
    println!("Servers:   files (this program --serve files), web (this program --serve web)");
    let faults: Vec<String> = args
        .breaks
        .iter()
        .map(|t| format!("--break {t}"))
        .chain(args.kill.iter().map(|(s, n)| format!("--kill {s}@{n}")))
        .collect();
    println!(
        "Faults:    {}\n",
        if faults.is_empty() {
            "none".to_owned()
        } else {
            faults.join(", ")
        }
    );

    let overlay: CapabilityMap =
        serde_yaml_ng::from_str(OVERLAY).map_err(|e| format!("the overlay: {e}"))?;
    let events: Arc<Mutex<Vec<Event>>> = Arc::default();
    let log = Arc::clone(&events);
    // A model turn is a step: a down server's probe is due three turns after it went down.
    let policy = Policy::builder()
        .probe_every(3)
        .probe_unit(ProbeUnit::Steps)
        .build()
        .map_err(|e| e.to_string())?;
    let tools = McpClient::builder()
        .child(
            "files",
            server_command("files", workspace.root(), &args.breaks)?,
        )
        .child(
            "web",
            server_command("web", workspace.root(), &args.breaks)?,
        )
        .overlay(overlay)
        .policy(policy)
        .expeditor(move |builder| {
            builder.observer(move |event: &Event| lock(&log).push(event.clone()))
        })
        .build()
        .await
        .map_err(|e| format!("connecting the servers: {e}"))?;

    if let (Some(url), Some(model)) = (&args.model_url, &args.model) {
        let endpoint = llm::Endpoint {
            url: url.clone(),
            model: model.clone(),
            key: std::env::var("OPENAI_API_KEY")
                .ok()
                .filter(|k| !k.is_empty()),
        };
        return model_loop(&endpoint, &tools).await;
    }
    let mut model = Model::new(model::task());
    let mut calls = 0;
    loop {
        let step = tools.expeditor().advance_step();
        tools.check().await;
        print_events(&events, &format!("[turn {step}] "));
        let offered = tools.offered();
        let turn = model.next(&offered);
        for remark in model.remarks() {
            println!("[turn {step}] model {remark}");
        }
        match turn {
            Turn::Answer(answer) => {
                println!("[turn {step}] model answers:\n\n{answer}\n");
                break;
            }
            Turn::Call {
                goal,
                tool,
                arguments,
            } => {
                calls += 1;
                if let Some((server, n)) = &args.kill
                    && *n == calls
                {
                    kill(&tools, server).await;
                }
                let names: Vec<&str> = offered.iter().map(|d| d.name.as_str()).collect();
                println!(
                    "[turn {step}] offered: {}\n  model → {tool} {arguments}   ({})",
                    names.join(", "),
                    model.title(goal)
                );
                let reply = tools.call(&tool, arguments).await;
                let outcome = if reply.is_error() { "✗" } else { "✓" };
                for (i, line) in clip_lines(&reply.text(), 4).lines().enumerate() {
                    let mark = if i == 0 { outcome } else { " " };
                    println!("  {mark} {line}");
                }
                print_events(&events, "  ");
                model.read(goal, &tool, &reply);
            }
        }
    }
    let expeditor = tools.expeditor();
    println!("{}\n", expeditor.state_table());
    println!("{}", expeditor.budget());
    Ok(())
}

/// The goals worked by a real model, then the report of what it reached: the pause report
/// when a pause ended the run, a status report otherwise (R7.3).
async fn model_loop(endpoint: &llm::Endpoint, tools: &McpClient) -> Result<(), String> {
    let goals = model::task();
    let titles: Vec<&str> = goals.iter().map(|g| g.title).collect();
    let (outcomes, tally) = llm::run(endpoint, tools, &titles).await?;
    // Each goal a sub-task, needing the tool the task names first for it.
    let mut task = Task::new();
    for goal in &goals {
        task = task.subtask(goal.title, goal.ways.first().map(|(tool, _)| *tool));
    }
    for (i, outcome) in outcomes.iter().enumerate() {
        let marked = match outcome {
            llm::GoalOutcome::Done(_) => task.done(i + 1),
            llm::GoalOutcome::NotAttempted(_) => Ok(()),
            other => task.failed(i + 1, llm::describe(other)),
        };
        marked.map_err(|e| e.to_string())?;
    }
    let expeditor = tools.expeditor();
    println!(
        "\nThe model's calls: {} — {} answered, {} failed, {} refused by the guard, {} its own mistakes",
        tally.calls, tally.answered, tally.failed, tally.refused, tally.mistakes
    );
    for (i, outcome) in outcomes.iter().enumerate() {
        println!("  Goal {}: {}", i + 1, llm::describe(outcome));
    }
    println!("\n{}\n", expeditor.state_table());
    // The pause report when a pause ended the run; the same report as a status report when
    // not (the work done and not done, each tool's health, what to do next).
    println!("{}", expeditor.pause_report(&task));
    Ok(())
}

/// Kills `server`'s process, as a crash would, and waits (up to 5 s) until the client's
/// connection has seen it close, so that the transcript is the same on every run: the next
/// call finds the transport closed (sent a moment earlier, it would find a broken pipe:
/// also an outage of the server, in other words).
async fn kill(tools: &McpClient, server: &str) {
    kill_process(tools, server);
    for _ in 0..500 {
        if tools.is_connected(server) != Some(true) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

fn kill_process(tools: &McpClient, server: &str) {
    match tools.process_id(server) {
        Some(pid) => {
            let killed = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            match killed {
                Ok(status) if status.success() => {
                    println!("  !! the {server} server's process is killed (SIGKILL)");
                }
                Ok(status) => println!("  !! kill {server}: {status}"),
                Err(e) => println!("  !! kill {server}: {e}"),
            }
        }
        None => println!("  !! {server}: no process to kill"),
    }
}

fn print_events(events: &Mutex<Vec<Event>>, prefix: &str) {
    for event in std::mem::take(&mut *lock(events)) {
        // The transitions an operator watches; the rest is in the state table.
        if matches!(
            event,
            Event::ServerDown { .. }
                | Event::ServerUp { .. }
                | Event::Opened { .. }
                | Event::Closed { .. }
                | Event::Systemic { .. }
                | Event::BudgetExhausted { .. }
        ) {
            println!("{prefix}event: {event}");
        }
    }
}

/// At most `n` lines, each at most 110 characters.
fn clip_lines(text: &str, n: usize) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    for line in lines.iter().take(n) {
        let clipped: String = line.chars().take(110).collect();
        let more = if clipped.len() < line.len() {
            " …"
        } else {
            ""
        };
        let _ = writeln!(out, "{clipped}{more}");
    }
    if lines.len() > n {
        let _ = writeln!(out, "… ({} more lines)", lines.len() - n);
    }
    out
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
