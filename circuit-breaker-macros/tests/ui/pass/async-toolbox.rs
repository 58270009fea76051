// An async toolbox: the guarded handle's methods are `async fn` too, and no runtime is forced.
use std::future::Future;
use std::io;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use agent_circuit_breaker::toolbox;

struct Web {
    base: String,
}

#[toolbox(policy(threshold = 2, budget = 4, probe_every = 2, probe_unit = "steps"))]
impl Web {
    #[tool(
        provides = "external information retrieval",
        alternatives(fetch(method = "fetch a known page", degradation = high("only pages we already know"), via = search_by_fetching)),
        fallback = "state what information is needed; ask user to provide it",
    )]
    async fn web_search(&self, query: &str) -> io::Result<Vec<String>> {
        Ok(vec![format!("{}/search?q={query}", self.base)])
    }

    async fn search_by_fetching(&self, query: &str) -> io::Result<Vec<String>> {
        self.fetch(query).await.map(|page| vec![page])
    }

    #[tool(provides = "page retrieval", fallback = "ask the user to paste the page", threshold = 1)]
    async fn fetch(&self, url: &str) -> io::Result<String> {
        Ok(format!("{}/{url}", self.base))
    }
}

/// A minimal executor: these futures never wait.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

fn main() {
    assert_eq!(WebTool::ALL, [WebTool::WebSearch, WebTool::Fetch]);
    assert_eq!(WebTool::WebSearch.to_string(), "web_search");
    assert_eq!("fetch".parse::<WebTool>().ok(), Some(WebTool::Fetch));

    let agent = GuardedWeb::new(Web { base: "https://example.invalid".to_owned() });
    let found = block_on(agent.web_search("circuit breaker")).map(|r| r.value).ok();
    assert_eq!(found, Some(vec!["https://example.invalid/search?q=circuit breaker".to_owned()]));
    let page = block_on(agent.fetch("about")).map(|r| r.value).ok();
    assert_eq!(page.as_deref(), Some("https://example.invalid/about"));
}
