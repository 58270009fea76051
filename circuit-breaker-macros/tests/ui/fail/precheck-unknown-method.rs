// `precheck` names a method of the impl block; a misspelt name gets a suggestion.
use std::io;

use agent_circuit_breaker::{Availability, toolbox};

struct Index;

#[toolbox]
impl Index {
    #[tool(
        provides = "document search",
        fallback = "ask the user for the documents",
        precheck = server_upp
    )]
    fn search(&self, query: &str) -> io::Result<Vec<String>> {
        Ok(vec![query.to_owned()])
    }

    fn server_up(&self) -> Availability {
        Availability::Available
    }
}

fn main() {
    let agent = GuardedIndex::new(Index);
    let _ = agent.search("rust");
}
