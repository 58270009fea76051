// A pre-call check takes nothing but the receiver: the handle has nothing to pass it.
use std::io;

use agent_circuit_breaker::{Availability, toolbox};

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

    fn server_up(&self, host: &str) -> Availability {
        let _ = host;
        Availability::Available
    }
}

fn main() {
    let agent = GuardedIndex::new(Index);
    let _ = agent.search("rust");
}
