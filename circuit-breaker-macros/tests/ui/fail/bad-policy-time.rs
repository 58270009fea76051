use std::io;

use agent_circuit_breaker::toolbox;

// B13, B14: the policy's durations are humantime strings from 1ms to a year, the cap at least
// the cool-down; the mistake limit at least 1; a misspelt key gets a suggestion.

struct Workspace;

#[toolbox(policy(
    cool_down = "1m",
    cool_down_cap = "30s",
    budget_window = "20 years",
    mistake_limit = 0
))]
impl Workspace {
    #[tool(provides = "content search across files", fallback = "ask the user")]
    fn grep(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }
}

struct Notes;

#[toolbox(policy(cool_down = "0s", budget_window = "1500us"))]
impl Notes {
    #[tool(provides = "note search", fallback = "ask the user")]
    fn search(&self, pattern: &str) -> io::Result<Vec<String>> {
        Ok(vec![pattern.to_owned()])
    }
}

struct Web;

#[toolbox(policy(cool_dwn = "5s"))]
impl Web {
    #[tool(provides = "web search", fallback = "ask the user")]
    fn search(&self, query: &str) -> io::Result<Vec<String>> {
        Ok(vec![query.to_owned()])
    }
}

struct Shell;

#[toolbox(policy(budget_window = 60))]
impl Shell {
    #[tool(provides = "command execution", fallback = "report the commands")]
    fn bash(&self, command: &str) -> io::Result<String> {
        Ok(command.to_owned())
    }
}

fn main() {
    // The generated names stay resolvable: the mistakes above are the only errors.
    let a = GuardedWorkspace::new(Workspace);
    let b = GuardedNotes::new(Notes);
    let c = GuardedWeb::new(Web);
    let d = GuardedShell::new(Shell);
    println!(
        "{} {} {} {}",
        a.expeditor().state_table(),
        b.expeditor().state_table(),
        c.expeditor().state_table(),
        d.expeditor().state_table()
    );
}
