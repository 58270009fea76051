//! The main job: an agent on real tools that survives broken tools and says so.
//!
//! ```sh
//! cargo run --example agent                                   # healthy
//! cargo run --example agent -- --break bash                   # the shell is broken
//! cargo run --example agent -- --outage network               # the search server is down
//! cargo run --example agent -- --read-only --outage network   # a systemic failure
//! cargo run --example agent -- --flaky grep=0.5 --seed 7      # Grep fails half the time
//! cargo run --example agent -- --break bash --json            # the final report as JSON
//! ```
//!
//! The agent creates a temporary workspace (a small project), starts a search server on
//! 127.0.0.1, injects the faults asked for, and works the seed's task through a `#[toolbox]`
//! of real tools guarded by the circuit breaker. See `agent.rs` for what it prints.

mod agent;
mod faults;
mod search_server;
mod workspace;

use std::process::ExitCode;

fn main() -> ExitCode {
    let options = match faults::Options::parse(std::env::args().skip(1)) {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{}", faults::USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("agent: {e}");
            return ExitCode::from(2);
        }
    };
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match agent::run(&options, &mut out) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agent: {e}");
            ExitCode::FAILURE
        }
    }
}
