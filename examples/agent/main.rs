//! The main job: an agent on real tools that survives broken tools and says so.
//!
//! ```sh
//! cargo run --example agent                                   # healthy
//! cargo run --example agent -- --break bash                   # the shell is broken
//! cargo run --example agent -- --outage network               # the search server is down
//! cargo run --example agent -- --read-only --outage network   # a systemic failure
//! cargo run --example agent -- --flaky grep=0.5 --seed 7      # Grep fails half the time
//! cargo run --example agent -- --break bash --json            # the final report as JSON
//! cargo run --example agent -- --break bash --watch           # a live panel of the circuits
//! ```
//!
//! The agent creates a temporary workspace (a small project), starts a search server on
//! 127.0.0.1, injects the faults asked for, and works the source document's example task
//! through a `#[toolbox]` of real tools guarded by the circuit breaker. See `agent.rs` for
//! what it prints.
//!
//! `--watch` adds a live view for a person (`watch.rs`): every tool's circuit state and
//! consecutive failures, the failure budget (`Failure budget: N / M consumed`) and the step,
//! changing as the run goes, without garbling the log. When stderr is a terminal, the panel is
//! drawn there, below the log, and redrawn in place (ANSI cursor moves) when the state changes
//! or a step begins; each log line is written above it (erase the panel, write the line, redraw
//! it), so the scrollback keeps the whole log; colour unless `NO_COLOR` is set; the panel is
//! erased at the end, before which the final reports show the same state in full. Otherwise
//! (a pipe, a file, CI, `TERM=dumb`) each frame whose state changed is written as a plain block
//! from `╭─ watch · …` to `╰─` (the rows in between start with `│`) between two log lines, in
//! order, never inside one; with `--json` those frames go to stderr, so stdout stays JSON. The
//! log itself is byte for byte what a run without `--watch` prints:
//! `cargo run --example agent -- --break bash --watch | grep -v '^[╭│╰]'` is the plain run.

mod agent;
mod faults;
mod search_server;
mod watch;
mod workspace;

use std::process::ExitCode;
use std::sync::Arc;

use agent_circuit_breaker::{Expeditor, event::Event};

impl agent::Watcher for watch::Console {
    fn attach(&self, expeditor: &Expeditor) {
        watch::Console::attach(self, expeditor);
    }

    fn event(&self, _event: &Event) {
        watch::Console::event(self);
    }

    fn stage(&self, stage: String) {
        watch::Console::stage(self, stage);
    }

    fn refresh(&self) {
        watch::Console::refresh(self);
    }

    fn close(&self) {
        watch::Console::close(self);
    }
}

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
    let result = if options.watch {
        // The log and the panel share the console's lock: the log goes through its writer.
        let console = watch::Console::stdio(options.json);
        let mut out = console.writer();
        agent::run_with(&options, &mut out, Some(Arc::new(console)))
    } else {
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        agent::run(&options, &mut out)
    };
    match result {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agent: {e}");
            ExitCode::FAILURE
        }
    }
}
