// rmcp's `#[tool]` stacked on one of our tools (both qualified), rmcp's `#[tool_router]` above
// `#[toolbox]`: compiled before into an rmcp router calling the raw method. Now an error at
// the stacked `#[rmcp::tool]` and one at the router that routes the tool.
use agent_circuit_breaker::toolbox;

struct Notes;

#[rmcp::tool_router]
#[toolbox]
impl Notes {
    #[rmcp::tool(description = "Counts the words of a text.")]
    #[agent_circuit_breaker::tool(provides = "word counting", fallback = "count the words by hand")]
    fn count_words(&self) -> Result<String, String> {
        Ok("0".to_owned())
    }
}

fn main() {
    let notes = GuardedNotes::new(Notes);
    println!("{:?} {}", NotesTool::ALL, notes.expeditor().state_table());
}
