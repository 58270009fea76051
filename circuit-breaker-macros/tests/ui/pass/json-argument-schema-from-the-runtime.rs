// A struct argument of a `#[toolbox(json)]` tool derives `JsonSchema` through the runtime's
// re-export, with no `schemars` dependency and no `#[schemars(crate = "..")]`: this crate (the
// trybuild copy of the workspace's root package) depends on `agent-circuit-breaker` and serde,
// never on schemars, so `schemars::` below resolves only through the `use`.
use agent_circuit_breaker::dispatch::ToolDispatch;
use agent_circuit_breaker::{schemars, toolbox};

/// What to look for.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Query {
    /// The words to search for.
    text: String,
    /// At most this many results.
    limit: Option<u32>,
}

/// How results are ordered.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Order {
    Newest,
    Relevance,
}

struct Web;

#[toolbox(json)]
impl Web {
    #[tool(provides = "external information retrieval", fallback = "ask the user to look it up")]
    fn search(&self, query: &Query, order: Option<Order>) -> std::io::Result<Vec<String>> {
        let order = match order {
            Some(Order::Newest) => "newest",
            Some(Order::Relevance) | None => "relevance",
        };
        Ok(vec![format!("{} by {order}", query.text); query.limit.unwrap_or(1) as usize])
    }
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

fn main() {
    let web = GuardedWeb::new(Web);
    let schema = serde_json::Value::Object(web.definitions()[0].input_schema.clone());
    assert_eq!(schema["properties"]["query"]["$ref"], "#/$defs/Query");
    assert_eq!(schema["$defs"]["Query"]["description"], "What to look for.");
    assert_eq!(schema["$defs"]["Query"]["required"], serde_json::json!(["text"]));
    assert_eq!(schema["$defs"]["Order"]["enum"], serde_json::json!(["newest", "relevance"]));
    let reply = block_on(web.dispatch(
        "search",
        serde_json::json!({"query": {"text": "rust", "limit": 2}, "order": "newest"}),
    ));
    assert_eq!(reply.value, Some(serde_json::json!(["rust by newest", "rust by newest"])));
}
