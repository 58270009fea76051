// A tool that returns no `Result` is one error at its return type, whatever else it declares:
// an adapter, a deadline, freshness, `serve_stale`, async, a `json` toolbox. Every part of the
// expansion that needs the `Result` is reported there, never at `#[toolbox]` nor at
// `__private`. rustc still raises the error twice, word for word and at the same span, for an
// async `serve_stale` tool (`read`) and an async tool of a `json` toolbox (`fetch`): cargo
// prints such repeats once; trybuild, reading rustc's JSON, shows both below.
use agent_circuit_breaker::toolbox;

struct Workspace;

#[toolbox]
impl Workspace {
    #[tool(
        provides = "content search across files",
        alternatives(read(method = "read suspected files directly", via = grep_by_reading)),
        fallback = "ask the user which files to examine",
        timeout = "2s",
        freshness,
    )]
    fn grep(&self, pattern: &str) -> Vec<String> {
        vec![pattern.to_owned()]
    }

    fn grep_by_reading(&self, pattern: &str) -> Vec<String> {
        vec![pattern.to_owned()]
    }

    #[tool(provides = "file content inspection", fallback = "ask the user to paste file contents", serve_stale, caches)]
    async fn read(&self, path: &str) -> String {
        path.to_owned()
    }
}

struct Web;

#[toolbox(json)]
impl Web {
    #[tool(provides = "external information retrieval", fallback = "ask the user to look it up")]
    fn search(&self, query: &str) -> Vec<String> {
        vec![query.to_owned()]
    }

    #[tool(provides = "web page retrieval", fallback = "ask the user to paste the page", timeout = "5s")]
    async fn fetch(&self, url: &str) -> Option<String> {
        Some(url.to_owned())
    }
}

fn main() {
    // The generated names stay resolvable: the mistakes above are the only errors. (A handle
    // whose `serve_stale` tool returns no `Result` is left unmade: its stale cache names the
    // `Result`'s value type, and making one reports that again where it is made.)
    let web = GuardedWeb::new(Web);
    println!("{:?} {:?} {}", WorkspaceTool::ALL, WebTool::ALL, web.expeditor().state_table());
}
