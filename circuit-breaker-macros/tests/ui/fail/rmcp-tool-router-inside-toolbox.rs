// rmcp's `#[tool_router]` below `#[toolbox]`, as it reaches `#[toolbox]`: its router would be
// built from the impl `#[toolbox]` emits and call the methods directly. One error, at it
// (before: rmcp's "found no `#[tool]` fn" and a missing `count_words`).
use agent_circuit_breaker::toolbox;

struct Notes;

#[toolbox]
#[rmcp::tool_router]
impl Notes {
    #[tool(provides = "word counting", fallback = "count the words by hand")]
    fn count_words(&self, text: &str) -> Result<String, String> {
        Ok(text.split_whitespace().count().to_string())
    }
}

fn main() {
    let notes = GuardedNotes::new(Notes);
    println!("{:?} {}", NotesTool::ALL, notes.expeditor().state_table());
}
