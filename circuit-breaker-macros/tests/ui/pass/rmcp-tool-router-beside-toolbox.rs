// The composition with rmcp's own `#[tool_router]` that works: rmcp's `#[tool]` methods live
// in a `#[tool_router]` impl of another type, and call the guarded handle. Every call through
// rmcp's router is a guarded call: a failure is recorded, an open circuit refuses.
use agent_circuit_breaker::{CallError, toolbox};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{ServerHandler, tool, tool_handler, tool_router};

struct Notes;

#[toolbox(policy(threshold = 2))]
impl Notes {
    // Ours qualified, in a file where a plain `#[tool]` reads as rmcp's.
    #[agent_circuit_breaker::tool(provides = "word counting", fallback = "count the words by hand")]
    fn count_words(&self, text: &str) -> Result<usize, String> {
        if text.is_empty() {
            return Err("nothing to count".to_owned());
        }
        Ok(text.split_whitespace().count())
    }
}

#[derive(serde::Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct Text {
    /// The text to count the words of.
    text: String,
}

struct NotesServer {
    notes: GuardedNotes,
}

#[tool_router]
impl NotesServer {
    /// Counts the words of a text.
    #[tool]
    fn count_words(&self, Parameters(Text { text }): Parameters<Text>) -> Result<String, String> {
        self.notes
            .count_words(&text)
            .map(|routed| routed.value.to_string())
            .map_err(|error| error.to_string())
    }
}

#[tool_handler]
impl ServerHandler for NotesServer {}

fn main() {
    let server = NotesServer {
        notes: GuardedNotes::new(Notes),
    };
    let listed: Vec<String> = NotesServer::tool_router()
        .list_all()
        .into_iter()
        .map(|tool| tool.name.into_owned())
        .collect();
    assert_eq!(listed, ["count_words"]);
    let text = |text: &str| Parameters(Text { text: text.to_owned() });
    assert_eq!(server.count_words(text("two words")).as_deref(), Ok("2"));
    assert!(server.count_words(text("")).is_err());
    assert!(server.count_words(text("")).is_err());
    // The two failures went through the breaker: its circuit is open now.
    assert!(matches!(
        server.notes.count_words("two words"),
        Err(CallError::Refused(_))
    ));
}
