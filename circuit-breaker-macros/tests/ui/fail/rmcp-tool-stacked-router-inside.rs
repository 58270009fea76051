// The obvious way, which compiled before into an rmcp router calling the raw method: rmcp's
// `#[tool]` stacked on one of our tools, rmcp's `#[tool_router]` on the impl below
// `#[toolbox]`. Now an error at each.
use agent_circuit_breaker::toolbox;

struct Notes;

#[toolbox]
#[rmcp::tool_router]
impl Notes {
    #[rmcp::tool(description = "Counts the words of a text.")]
    #[tool(provides = "word counting", fallback = "count the words by hand")]
    fn count_words(&self) -> Result<String, String> {
        Ok("0".to_owned())
    }
}

fn main() {
    let notes = GuardedNotes::new(Notes);
    println!("{:?} {}", NotesTool::ALL, notes.expeditor().state_table());
}
