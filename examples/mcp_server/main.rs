//! A guarded toolbox served over MCP on stdio (SPEC B9).
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
//! Standard output is the protocol's: everything else goes to standard error.

mod notes;

use std::process::ExitCode;

use circuit_breaker::mcp::McpServer;

use notes::{GuardedNotebook, Notebook};

const USAGE: &str = "usage: mcp_server [--break TOOL]... [--fail-calls N]
  --break TOOL     make TOOL fail (grep, read, count_words); also MCP_SERVER_BREAK=TOOL,TOOL
  --fail-calls N   each broken tool fails its next N calls only, then works again";

fn parse(args: impl Iterator<Item = String>) -> Result<Option<Notebook>, String> {
    let mut broken: Vec<String> = std::env::var("MCP_SERVER_BREAK")
        .unwrap_or_default()
        .split(',')
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect();
    let mut calls = None;
    let mut args = args;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--break" => broken.push(args.next().ok_or("--break needs a tool name")?),
            "--fail-calls" => {
                let n = args.next().ok_or("--fail-calls needs a number")?;
                calls = Some(n.parse().map_err(|e| format!("--fail-calls {n}: {e}"))?);
            }
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
    Ok(Some(notebook))
}

#[tokio::main]
async fn main() -> ExitCode {
    let notebook = match parse(std::env::args().skip(1)) {
        Ok(Some(notebook)) => notebook,
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
    let served = McpServer::new(GuardedNotebook::new(notebook))
        .name("notebook")
        .serve_stdio()
        .await;
    match served {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp_server: {e}");
            ExitCode::FAILURE
        }
    }
}
