// The new keys of `#[tool(..)]`: `caches`, `freshness` and `serve_stale` are flags; a
// misspelt one gets a suggestion; `precheck` names one method of the impl.
use std::io;

use agent_circuit_breaker::{Availability, toolbox};

struct Index;

#[toolbox]
impl Index {
    #[tool(
        provides = "document search",
        fallback = "ask the user for the documents",
        cache,
        serve_stale = true,
        precheck = self::server_up
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
