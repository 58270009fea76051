//! An MCP server named `web` on stdio: search and fetch the pages of a small built-in site
//! about a fictional service, `inventory-api` (deployment, rate limits, on-call, API keys,
//! changelog), guarded by the circuit breaker.
//!
//! ```sh
//! cargo run --example mcp_web --features mcp                          # healthy
//! cargo run --example mcp_web --features mcp -- --break web_search    # search always fails
//! cargo run --example mcp_web --features mcp -- --break fetch_page --fail-calls 3
//! ```
//!
//! Tools: `web_search(query)`, `fetch_page(url)`. A broken tool fails every call with a
//! refused connection (`--fail-calls N`: its next N calls only). After three failures its
//! circuit opens: it leaves `tools/list`, the client is sent
//! `notifications/tools/list_changed`, and web_search called anyway is answered through
//! fetch_page, the degradation in the text and in `_meta`.
//!
//! Standard output is the protocol's: everything else goes to standard error.

#[path = "../mcp_files/faults.rs"]
mod faults;
mod web;

use std::process::ExitCode;

use agent_circuit_breaker::mcp::McpServer;

use web::{GuardedWeb, Web, WebTool};

const USAGE: &str = "usage: mcp_web [--break TOOL]... [--fail-calls N]
  --break TOOL     make TOOL fail with a refused connection (web_search, fetch_page)
  --fail-calls N   each broken tool fails its next N calls only, then works again";

fn parse(args: impl Iterator<Item = String>) -> Result<Option<Web>, String> {
    let Some(breaks) = faults::parse_breaks(args, |_, _| Ok(false))? else {
        return Ok(None);
    };
    let web = Web::default();
    for tool in &breaks.tools {
        if tool.parse::<WebTool>().is_err() {
            return Err(format!("--break {tool}: no such tool"));
        }
        web.faults.break_tool(tool, breaks.calls);
    }
    Ok(Some(web))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let web = match parse(std::env::args().skip(1)) {
        Ok(Some(web)) => web,
        Ok(None) => {
            eprintln!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("mcp_web: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let served = McpServer::new(GuardedWeb::new(web))
        .name("web")
        .serve_stdio()
        .await;
    match served {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp_web: {e}");
            ExitCode::FAILURE
        }
    }
}
