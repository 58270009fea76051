//! A guarded toolbox served over MCP on stdio (B9 in `docs/requirements.md`).
//!
//! ```sh
//! cargo run --example mcp_server --features mcp                         # healthy
//! cargo run --example mcp_server --features mcp -- --break grep         # grep always fails
//! cargo run --example mcp_server --features mcp -- --break grep --fail-calls 3
//! MCP_SERVER_BREAK=grep,read cargo run --example mcp_server --features mcp
//! ```
//!
//! Point any MCP client at it (the MCP Inspector: `npx @modelcontextprotocol/inspector
//! target/debug/examples/mcp_server --break grep`). After three failures grep's circuit opens:
//! it leaves `tools/list`, the client is sent `notifications/tools/list_changed`, and a call
//! to grep anyway is answered through `read` with the degradation in the text and in `_meta`.
//! With `--fail-calls N` a broken tool mends after N failed calls; its probe then closes the
//! circuit and it comes back to the list.
//!
//! A server runs for as long as its client does, so it heals with time (B15): an OPEN tool is
//! offered again on probation after its cool-down (5 s, doubling after each failed probe up
//! to 30 s), and the client is told with `list_changed`, no call needed; failures leave the
//! budget after 60 s, and a budget pause lifts then. `--cool-down`, `--cool-down-cap` and
//! `--budget-window` shorten them (for tests) or lengthen them.
//!
//! Standard output is the protocol's: everything else goes to standard error.

mod notes;

use std::process::ExitCode;

use std::time::Duration;

use agent_circuit_breaker::Policy;
use agent_circuit_breaker::mcp::McpServer;

use notes::{GuardedNotebook, Notebook};

const USAGE: &str = "usage: mcp_server [--break TOOL]... [--fail-calls N] [--cool-down D] [--cool-down-cap D] [--budget-window D]
  --break TOOL          make TOOL fail (grep, read, count_words); also MCP_SERVER_BREAK=TOOL,TOOL
  --fail-calls N        each broken tool fails its next N calls only, then works again
  --cool-down D         an OPEN tool is offered again on probation after D (default 5s)
  --cool-down-cap D     the longest the cool-down grows to after failed probes (default 30s)
  --budget-window D     failures count against the budget for D (default 60s)
  durations: 500ms, 2s, 5m";

/// The server's settings from the command line.
struct Settings {
    notebook: Notebook,
    policy: Policy,
}

/// `500ms`, `2s`, `5m`.
fn duration(flag: &str, text: Option<String>) -> Result<Duration, String> {
    let text = text.ok_or_else(|| format!("{flag} needs a duration"))?;
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map_or((text.as_str(), ""), |i| text.split_at(i));
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{flag} {text}: not a duration (500ms, 2s, 5m)"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n.saturating_mul(60))),
        _ => Err(format!("{flag} {text}: not a duration (500ms, 2s, 5m)")),
    }
}

fn parse(args: impl Iterator<Item = String>) -> Result<Option<Settings>, String> {
    let mut broken: Vec<String> = std::env::var("MCP_SERVER_BREAK")
        .unwrap_or_default()
        .split(',')
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect();
    let mut calls = None;
    let mut policy = Policy::builder()
        .cool_down(Policy::SERVICE_COOL_DOWN)
        .budget_window(Policy::SERVICE_BUDGET_WINDOW);
    let mut args = args;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--break" => broken.push(args.next().ok_or("--break needs a tool name")?),
            "--fail-calls" => {
                let n = args.next().ok_or("--fail-calls needs a number")?;
                calls = Some(n.parse().map_err(|e| format!("--fail-calls {n}: {e}"))?);
            }
            "--cool-down" => policy = policy.cool_down(duration(&arg, args.next())?),
            "--cool-down-cap" => policy = policy.cool_down_cap(duration(&arg, args.next())?),
            "--budget-window" => policy = policy.budget_window(duration(&arg, args.next())?),
            "-h" | "--help" => return Ok(None),
            other => return Err(format!("unknown argument {other}\n{USAGE}")),
        }
    }
    let notebook = Notebook::default();
    for tool in &broken {
        if !["grep", "read", "count_words"].contains(&tool.as_str()) {
            return Err(format!("--break {tool}: no such tool\n{USAGE}"));
        }
        notebook.faults.break_tool(tool, calls);
    }
    let policy = policy.build().map_err(|e| e.to_string())?;
    Ok(Some(Settings { notebook, policy }))
}

#[tokio::main]
async fn main() -> ExitCode {
    let Settings { notebook, policy } = match parse(std::env::args().skip(1)) {
        Ok(Some(settings)) => settings,
        Ok(None) => {
            eprintln!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("mcp_server: {e}");
            return ExitCode::from(2);
        }
    };
    // The whole MCP glue: one line.
    let guarded = GuardedNotebook::with_expeditor(notebook, |b| b.policy(policy));
    let served = McpServer::new(guarded).name("notebook").serve_stdio().await;
    match served {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp_server: {e}");
            ExitCode::FAILURE
        }
    }
}
