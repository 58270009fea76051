// An adapter whose argument types are not its tool's is one error at `via`, with the signature
// it should have: not rustc's errors inside the generated call (`url.to_string()` at `via`).
use std::io;

use agent_circuit_breaker::toolbox;

struct Web;

#[toolbox]
impl Web {
    #[tool(
        provides = "web page retrieval",
        alternatives(bash(method = "curl the page", via = fetch_with_curl)),
        fallback = "ask the user to paste the page",
    )]
    fn fetch(&self, url: &str, max_bytes: usize) -> io::Result<String> {
        Ok(format!("{url} {max_bytes}"))
    }

    fn fetch_with_curl(&self, url: String, max_bytes: u32) -> io::Result<String> {
        self.bash(&format!("curl {url} | head -c {max_bytes}"))
    }

    #[tool(provides = "command execution", fallback = "report commands that need to be run manually")]
    fn bash(&self, command: &str) -> io::Result<String> {
        Ok(command.to_owned())
    }

    #[tool(
        provides = "external information retrieval",
        alternatives(browse(method = "open a search engine", via = search_by_browsing)),
        fallback = "ask the user to look it up",
    )]
    async fn search(&self, query: &str) -> io::Result<Vec<String>> {
        Ok(vec![query.to_owned()])
    }

    async fn search_by_browsing(&self, query: &[String]) -> io::Result<String> {
        self.browse(&query.join(" ")).await
    }

    #[tool(provides = "web browsing", fallback = "ask the user to open the page")]
    async fn browse(&self, page: &str) -> io::Result<String> {
        Ok(page.to_owned())
    }
}

fn main() {
    let agent = GuardedWeb::new(Web);
    let _ = agent.fetch("https://example.com", 100);
    let _ = agent.search("rust");
}
