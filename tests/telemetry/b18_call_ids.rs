//! B18: the model's id for a tool call, given with `telemetry::with_call_id` (a sync call)
//! or `ToolDispatch::dispatch_call` (any call), is recorded as `gen_ai.tool.call.id` on the
//! call's `execute_tool` span — checked with the OpenTelemetry SDK's in-memory exporter, as
//! `b12_otel.rs` does — and is carried by the reply, the ledger line of a failure and the note
//! of a refusal.

#![cfg(feature = "otel")]

#[path = "../common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_circuit_breaker::dispatch::{ToolCall, ToolDispatch};
use agent_circuit_breaker::telemetry::with_call_id;
use agent_circuit_breaker::{CallError, toolbox};
use common::{YieldOnce, block_on, clock};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::json;
use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt as _;

#[derive(Default)]
pub struct Shop {
    broken: AtomicBool,
}

#[toolbox(json, policy(threshold = 1, budget = 5))]
impl Shop {
    /// Looks a price up.
    #[tool(provides = "prices", fallback = "ask the user for the price")]
    fn price(&self, item: &str) -> Result<u32, io::Error> {
        if self.broken.load(Ordering::SeqCst) {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!("price service unreachable for {item}"),
            ));
        }
        Ok(12)
    }

    /// Checks the stock, over the network.
    #[tool(
        provides = "stock levels",
        fallback = "ask the user to check the shelf"
    )]
    async fn stock(&self, item: String) -> Result<u32, io::Error> {
        YieldOnce(false).await;
        let _ = item;
        Ok(3)
    }
}

fn shop() -> GuardedShop {
    let clock = clock();
    GuardedShop::with_expeditor(Shop::default(), |b| b.clock(clock))
}

/// The SDK's tracer with an in-memory exporter, behind `tracing-opentelemetry`.
struct Spans {
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
}

impl Spans {
    fn new() -> Self {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        Spans { exporter, provider }
    }

    fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        let tracer = self.provider.tracer("b18");
        let dispatch = Dispatch::new(
            tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer)),
        );
        tracing::dispatcher::with_default(&dispatch, f)
    }

    /// Each exported span's name and its `gen_ai.tool.call.id`, if any.
    fn call_ids(&self) -> Vec<(String, Option<String>)> {
        self.exporter
            .get_finished_spans()
            .unwrap()
            .into_iter()
            .map(|span| {
                let attributes: BTreeMap<String, String> = span
                    .attributes
                    .iter()
                    .map(|kv| (kv.key.as_str().to_owned(), kv.value.to_string()))
                    .collect();
                (
                    span.name.into_owned(),
                    attributes.get("gen_ai.tool.call.id").cloned(),
                )
            })
            .collect()
    }
}

#[test]
fn b18_a_sync_call_given_its_id_records_it_on_the_exported_span_and_a_call_without_none() {
    let spans = Spans::new();
    let shop = shop();
    spans.run(|| {
        let answer = with_call_id("call_7", || shop.price("tea")).unwrap();
        assert_eq!(answer.value, 12);
        // A toolbox with an async tool has an async `call`: polled inside the scope, it is
        // the call with that id.
        let reply = with_call_id("call_8", || {
            block_on(shop.call("price", json!({"item": "tea"})))
        });
        assert_eq!(reply.call_id.as_deref(), Some("call_8"));
        assert!(shop.price("tea").is_ok());
    });
    assert_eq!(
        spans.call_ids(),
        [
            ("execute_tool price".to_owned(), Some("call_7".to_owned())),
            ("execute_tool price".to_owned(), Some("call_8".to_owned())),
            ("execute_tool price".to_owned(), None),
        ]
    );
}

#[test]
fn b18_an_async_call_dispatched_with_its_id_records_it_on_the_exported_span_and_the_reply() {
    let spans = Spans::new();
    let shop = shop();
    let reply = spans.run(|| {
        block_on(shop.dispatch_call(ToolCall::new("toolu_01", "stock", json!({"item": "tea"}))))
    });
    assert_eq!(reply.value, Some(json!(3)));
    assert_eq!(reply.call_id.as_deref(), Some("toolu_01"));
    assert_eq!(
        spans.call_ids(),
        [("execute_tool stock".to_owned(), Some("toolu_01".to_owned()))]
    );
}

#[test]
fn b18_a_failure_s_ledger_line_and_the_next_refusal_s_note_name_their_calls() {
    let spans = Spans::new();
    let shop = shop();
    shop.toolbox().broken.store(true, Ordering::SeqCst);
    let (failed, refused) = spans.run(|| {
        let failed =
            block_on(shop.dispatch_call(ToolCall::new("call_1", "price", json!({"item": "tea"}))));
        // Threshold 1: the circuit is open, the next call is refused.
        let refused = with_call_id("call_2", || match shop.price("tea") {
            Err(CallError::Refused(refusal)) => refusal.note(),
            other => panic!("refused: {other:?}"),
        });
        (failed, refused)
    });
    assert!(failed.is_error());
    assert_eq!(failed.call_id.as_deref(), Some("call_1"));
    let budget = shop.expeditor().budget();
    let lines: Vec<Option<&str>> = budget
        .ledger()
        .iter()
        .map(|line| line.call_id.as_deref())
        .collect();
    assert_eq!(lines, [Some("call_1")], "the failure's line names its call");
    assert_eq!(refused.call_id.as_deref(), Some("call_2"));
    assert_eq!(refused.tool.as_deref(), Some("price"));
    // The text the model reads is the same with or without an id.
    let without = match shop.price("tea") {
        Err(CallError::Refused(refusal)) => refusal.note(),
        other => panic!("refused: {other:?}"),
    };
    assert_eq!(without.call_id, None);
    assert_eq!(without.to_string(), refused.to_string());
    // The ledger's serde form carries the id only where there is one (snapshots and
    // reports without ids are unchanged).
    let json = serde_json::to_value(&budget.ledger()[0]).unwrap();
    assert_eq!(json["call_id"], "call_1");
    assert_eq!(
        spans.call_ids(),
        [
            ("execute_tool price".to_owned(), Some("call_1".to_owned())),
            ("execute_tool price".to_owned(), Some("call_2".to_owned())),
        ]
    );
}
