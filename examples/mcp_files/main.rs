//! An MCP server named `files` on stdio: read, list and search the files under a directory,
//! guarded by the circuit breaker.
//!
//! ```sh
//! cargo run --example mcp_files --features mcp -- --root .                      # healthy
//! cargo run --example mcp_files --features mcp -- --root . --break search_files
//! cargo run --example mcp_files --features mcp -- --root . --break read_file --fail-calls 3
//! ```
//!
//! Tools: `read_file(path)`, `list_dir(path)`, `search_files(pattern)`; every path is
//! relative to `--root` and may not leave it. A broken tool fails every call with a
//! permission error (`--fail-calls N`: its next N calls only). After three failures its
//! circuit opens: it leaves `tools/list`, the client is sent
//! `notifications/tools/list_changed`, and search_files called anyway is answered through
//! read_file, the degradation in the text and in `_meta`.
//!
//! Standard output is the protocol's: everything else goes to standard error.

mod faults;
mod files;

use std::path::PathBuf;
use std::process::ExitCode;

use agent_circuit_breaker::mcp::McpServer;

use files::{Files, FilesTool, GuardedFiles};

const USAGE: &str = "usage: mcp_files --root DIR [--break TOOL]... [--fail-calls N]
  --root DIR       the directory the tools serve (required); no path may leave it
  --break TOOL     make TOOL fail with a permission error (read_file, list_dir, search_files)
  --fail-calls N   each broken tool fails its next N calls only, then works again";

fn parse(args: impl Iterator<Item = String>) -> Result<Option<Files>, String> {
    let mut root: Option<PathBuf> = None;
    let parsed = faults::parse_breaks(args, |arg, rest| match arg {
        "--root" => {
            root = Some(rest.next().ok_or("--root needs a directory")?.into());
            Ok(true)
        }
        _ => Ok(false),
    })?;
    let Some(breaks) = parsed else {
        return Ok(None);
    };
    let root = root.ok_or("--root DIR is required")?;
    let files = Files::new(&root).map_err(|e| format!("--root {}: {e}", root.display()))?;
    for tool in &breaks.tools {
        if tool.parse::<FilesTool>().is_err() {
            return Err(format!("--break {tool}: no such tool"));
        }
        files.faults.break_tool(tool, breaks.calls);
    }
    Ok(Some(files))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let files = match parse(std::env::args().skip(1)) {
        Ok(Some(files)) => files,
        Ok(None) => {
            eprintln!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("mcp_files: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let served = McpServer::new(GuardedFiles::new(files))
        .name("files")
        .serve_stdio()
        .await;
    match served {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp_files: {e}");
            ExitCode::FAILURE
        }
    }
}
