//! The cost of one `tools/call` through [`McpServer`] (B9, B17), in process: rmcp's client
//! and our server over `tokio::io::duplex`, on one current-thread runtime, with 3, 200 and
//! 1,000 tools. The call succeeds on a CLOSED tool, so the offer never changes; what grows
//! with the number of tools is the server's check, after every call, of whether to send
//! `list_changed`.
//!
//! - `tools_call/<N> tools`: a toolbox whose definitions say they never change
//!   ([`ToolDispatch::definitions_version`] `Some`, as `#[toolbox(json)]`'s and the MCP
//!   client's do): the check reads two counters (target: the three figures the same within
//!   noise).
//! - `tools_call, definitions may change/<N> tools`: the same toolbox answering `None`: every
//!   check reads the definitions and the offer again (linear in the number of tools, by hash
//!   lookups).
//!
//! `cargo bench -p agent-circuit-breaker --features mcp --bench mcp_server -- --quick`

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_circuit_breaker::dispatch::{Reply, ReplyFuture, ToolDefinition, ToolDispatch};
use agent_circuit_breaker::expeditor::Decision;
use agent_circuit_breaker::mcp::McpServer;
use agent_circuit_breaker::mcp::rmcp::model::CallToolRequestParams;
use agent_circuit_breaker::mcp::rmcp::{RoleClient, ServiceExt as _, service::RunningService};
use agent_circuit_breaker::{CapabilityMap, Expeditor, Routed, ToolSpec};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};

/// `n` tools, each with a schema of a realistic size; calling one echoes its arguments.
struct Many {
    expeditor: Expeditor,
    definitions: Vec<ToolDefinition>,
    versioned: bool,
}

impl Many {
    fn new(n: usize, versioned: bool) -> Self {
        let names: Vec<String> = (0..n).map(|i| format!("tool_{i:04}")).collect();
        let map = names.iter().fold(CapabilityMap::new(), |map, name| {
            map.tool(
                ToolSpec::new(name.clone())
                    .provides(format!("capability {name}"))
                    .fallback("do without it"),
            )
        });
        let expeditor = Expeditor::builder(map).build().expect("a valid map");
        let definitions = names
            .iter()
            .map(|name| ToolDefinition {
                name: name.clone(),
                description: format!("What {name} does, in a sentence or two for the model."),
                input_schema: schema(),
            })
            .collect();
        Many {
            expeditor,
            definitions,
            versioned,
        }
    }
}

fn schema() -> Map<String, Value> {
    let value = json!({
        "type": "object",
        "properties": {
            "path": { "type": "string", "description": "The file to read, relative to the root." },
            "limit": { "type": "integer", "minimum": 1, "maximum": 1000 },
            "mode": { "enum": ["text", "bytes", "lines"] }
        },
        "required": ["path"],
        "additionalProperties": false
    });
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

impl ToolDispatch for Many {
    fn definitions(&self) -> Vec<ToolDefinition> {
        self.definitions.clone()
    }

    fn definitions_version(&self) -> Option<u64> {
        self.versioned.then_some(0)
    }

    fn expeditor(&self) -> &Expeditor {
        &self.expeditor
    }

    fn dispatch<'a>(&'a self, name: &'a str, arguments: Value) -> ReplyFuture<'a> {
        Box::pin(async move {
            let Some(id) = self.expeditor.tool(name) else {
                return Reply::unknown_tool(&self.expeditor, name);
            };
            match self.expeditor.decide(id) {
                Decision::Call(ticket) | Decision::Probe(ticket) => {
                    ticket.success();
                    let routed = Routed::direct(arguments);
                    Reply::from_call::<Value, String>(&self.expeditor, name, Ok(routed))
                }
                _ => Reply::unknown_tool(&self.expeditor, name),
            }
        })
    }
}

type Client = RunningService<RoleClient, ()>;

/// A client connected to `McpServer` over `toolbox`, served on `runtime`.
fn connect(runtime: &tokio::runtime::Runtime, toolbox: Many) -> Client {
    runtime.block_on(async move {
        let server = McpServer::shared(Arc::new(toolbox));
        let (server_end, client_end) = tokio::io::duplex(1 << 20);
        tokio::spawn(async move {
            if let Ok(running) = server.serve(server_end).await {
                let _ = running.waiting().await;
            }
        });
        ().serve(client_end).await.expect("initialize")
    })
}

fn tools_call(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let arguments = json!({ "path": "README.md", "limit": 10 });
    for (group, versioned) in [
        ("tools_call", true),
        ("tools_call, definitions may change", false),
    ] {
        let mut g = c.benchmark_group(group);
        g.measurement_time(Duration::from_secs(3));
        for n in [3_usize, 200, 1_000] {
            let client = connect(&runtime, Many::new(n, versioned));
            let params = CallToolRequestParams::new("tool_0001".to_owned()).with_arguments(
                match &arguments {
                    Value::Object(map) => map.clone(),
                    _ => Map::new(),
                },
            );
            g.bench_with_input(
                BenchmarkId::from_parameter(format!("{n} tools")),
                &n,
                |b, _| {
                    b.iter_custom(|iters| {
                        runtime.block_on(async {
                            let start = Instant::now();
                            for _ in 0..iters {
                                let result = client.call_tool(params.clone()).await;
                                black_box(result.expect("a result"));
                            }
                            start.elapsed()
                        })
                    });
                },
            );
            runtime.block_on(async {
                let _ = client.cancel().await;
            });
        }
        g.finish();
    }
}

criterion_group!(benches, tools_call);
criterion_main!(benches);
