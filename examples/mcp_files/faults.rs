//! Faults injected on demand: which tools fail, and for how many more calls. Shared by the
//! `mcp_files` and `mcp_web` examples (`mcp_web` includes this file by path).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Tools made to fail: for each, how many more calls fail (`u32::MAX`: every one).
#[derive(Debug, Default)]
pub struct Faults {
    failing: Mutex<HashMap<String, u32>>,
}

impl Faults {
    /// Breaks `tool`: its next `calls` calls fail (`None`: every call).
    pub fn break_tool(&self, tool: &str, calls: Option<u32>) {
        self.lock()
            .insert(tool.to_owned(), calls.unwrap_or(u32::MAX));
    }

    /// Whether this call of `tool` fails (counting it).
    pub fn fails(&self, tool: &str) -> bool {
        let mut failing = self.lock();
        match failing.get_mut(tool) {
            Some(0) | None => false,
            Some(left) => {
                if *left != u32::MAX {
                    *left -= 1;
                }
                true
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, u32>> {
        self.failing.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The faults asked for on the command line: `--break TOOL` (repeatable), `--fail-calls N`.
#[derive(Debug, Default)]
pub struct Breaks {
    /// The tools to break, as named.
    pub tools: Vec<String>,
    /// How many calls each fails (`None`: every one).
    pub calls: Option<u32>,
}

/// Parses the arguments both servers share, `--break TOOL`, `--fail-calls N` and `--help`
/// (`None`). `other` is offered every other argument (with the rest, to take its value
/// from) and answers whether it took it.
pub fn parse_breaks<I, F>(args: I, mut other: F) -> Result<Option<Breaks>, String>
where
    I: Iterator<Item = String>,
    F: FnMut(&str, &mut I) -> Result<bool, String>,
{
    let mut breaks = Breaks::default();
    let mut args = args;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--break" => breaks
                .tools
                .push(args.next().ok_or("--break needs a tool name")?),
            "--fail-calls" => {
                let n = args.next().ok_or("--fail-calls needs a number")?;
                breaks.calls = Some(n.parse().map_err(|e| format!("--fail-calls {n}: {e}"))?);
            }
            "-h" | "--help" => return Ok(None),
            other_arg => {
                if !other(other_arg, &mut args)? {
                    return Err(format!("unknown argument {other_arg}"));
                }
            }
        }
    }
    Ok(Some(breaks))
}
