// A pre-call check returns `agent_circuit_breaker::Availability`, not a bool.
use std::io;

use agent_circuit_breaker::toolbox;

struct Index;

#[toolbox]
impl Index {
    #[tool(
        provides = "document search",
        fallback = "ask the user for the documents",
        precheck = server_up
    )]
    fn search(&self, query: &str) -> io::Result<Vec<String>> {
        Ok(vec![query.to_owned()])
    }

    fn server_up(&self) -> bool {
        true
    }
}

fn main() {
    let agent = GuardedIndex::new(Index);
    let _ = agent.search("rust");
}
