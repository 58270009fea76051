//! The workers' toolbox: search, fetch (its upstream broken until it mends), a cache, and a
//! summary; and one task worked through it.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};

use agent_circuit_breaker::{CallError, toolbox};

use crate::{Summary, now_ms};

/// The research tools of one worker.
pub struct Research {
    /// When fetch's upstream works again (ms since the epoch), if ever.
    heal_at: Option<u64>,
    fetch_calls: AtomicU32,
}

impl Research {
    pub fn new(heal_at: Option<u64>) -> Self {
        Research {
            heal_at,
            fetch_calls: AtomicU32::new(0),
        }
    }

    /// How many calls reached fetch's upstream.
    pub fn fetch_calls(&self) -> u32 {
        self.fetch_calls.load(Ordering::Relaxed)
    }
}

// A budget for a long run of tasks; a probe every fourth attempt on an OPEN tool.
#[toolbox(policy(budget = 20, probe_every = 4))]
impl Research {
    #[tool(provides = "web search", fallback = "ask the user for sources")]
    fn search(&self, query: &str) -> io::Result<String> {
        Ok(format!("https://docs.example/{query}"))
    }

    #[tool(
        provides = "page fetching from the upstream site",
        alternatives(cache(
            method = "read the cached copy of the page",
            degradation = "the cached copy may be up to a day old",
            via = fetch_cached,
        )),
        fallback = "skip the page and say so"
    )]
    fn fetch(&self, url: &str) -> io::Result<String> {
        self.fetch_calls.fetch_add(1, Ordering::Relaxed);
        if self.heal_at.is_none_or(|at| now_ms() < at) {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "upstream refused the connection",
            ));
        }
        Ok(format!("the page at {url}"))
    }

    /// fetch's goal reached through the cache.
    fn fetch_cached(&self, url: &str) -> io::Result<String> {
        self.cache(url)
    }

    #[tool(provides = "cached pages", fallback = "skip the page and say so")]
    fn cache(&self, url: &str) -> io::Result<String> {
        Ok(format!("the cached page at {url}"))
    }

    #[tool(provides = "summaries", fallback = "summarize by hand")]
    fn summarize(&self, text: &str) -> io::Result<String> {
        Ok(format!("{} words", text.split_whitespace().count()))
    }
}

/// One task: search, fetch (or the cache), summarize. The line to print.
pub fn work(guarded: &GuardedResearch, task: &str, summary: &mut Summary) -> String {
    let url = match guarded.search(task) {
        Ok(found) => found.value,
        Err(e) => return format!("search: {e}"),
    };
    let (page, how) = match guarded.fetch(&url) {
        Ok(page) if page.route().is_some() => {
            summary.routed += 1;
            if summary.opened_by.is_none() {
                summary.opened_by = opened_by(guarded);
            }
            let who = opened_by(guarded).map_or(String::new(), |w| format!(", opened by {w}"));
            (
                page.value,
                format!("fetch OPEN{who} → read through the cache"),
            )
        }
        Ok(page) => (page.value, "fetched".to_owned()),
        Err(CallError::Failed {
            error, recorded, ..
        }) => {
            summary.fetch_failures += 1;
            let opened = match (recorded.opened, recorded.consecutive_failures > 3) {
                (true, false) => " — fetch circuit OPEN, shared with the fleet",
                (true, true) => " — its probe failed: OPEN again, shared with the fleet",
                (false, _) => "",
            };
            return format!("fetch failed ({error}){opened}");
        }
        Err(CallError::Rejected { error, .. }) => {
            return format!("fetch rejected the call ({error})");
        }
        Err(timed_out @ CallError::TimedOut { .. }) => return timed_out.to_string(),
        Err(CallError::Refused(refusal)) => return format!("fetch refused: {refusal}"),
    };
    match guarded.summarize(&page) {
        Ok(s) => format!("{how}; summary: {}", s.value),
        Err(e) => format!("{how}; summarize: {e}"),
    }
}

/// The worker that opened fetch, as the fleet says.
fn opened_by(guarded: &GuardedResearch) -> Option<String> {
    guarded
        .expeditor()
        .fleet_status()?
        .opened_elsewhere
        .into_iter()
        .find(|(tool, _)| tool == "fetch")
        .map(|(_, worker)| worker)
}
