// `json` is a flag of `#[toolbox(..)]`: a misspelling gets "did you mean", and a value is
// not taken.
use std::io;

use agent_circuit_breaker::toolbox;

struct Web;

#[toolbox(jsno)]
impl Web {
    #[tool(provides = "external information retrieval", fallback = "ask the user")]
    fn search(&self, query: &str) -> io::Result<String> {
        Ok(query.to_owned())
    }
}

struct Fs;

#[toolbox(json = "yes")]
impl Fs {
    #[tool(provides = "file content inspection", fallback = "ask the user")]
    fn read(&self, path: &str) -> io::Result<String> {
        Ok(path.to_owned())
    }
}

fn main() {}
