//! B12: the duration of a sync guarded call is measured once, whatever its tool does with the
//! call's span: enter it again, or hand a clone of it to another thread that drops it later;
//! and two subscribers' telemetries on one thread each count their own calls. Checked with the
//! SDK's in-memory metric exporter, as `b12_otel.rs`.

#![cfg(feature = "otel")]

use std::io;
use std::sync::mpsc;

use agent_circuit_breaker::otel::{Telemetry, metric};
use agent_circuit_breaker::toolbox;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt as _;

/// Tools that do something with the span they run in.
pub struct Spans {
    /// Where `handed` sends a clone of its span.
    to: mpsc::Sender<tracing::Span>,
}

#[toolbox(policy(threshold = 3, budget = 10))]
impl Spans {
    /// Enters its call's span again.
    #[tool(provides = "re-entering", fallback = "none")]
    fn nested(&self) -> Result<u32, io::Error> {
        Ok(tracing::Span::current().in_scope(|| 1))
    }

    /// Hands a clone of its call's span to another thread.
    #[tool(provides = "handing over", fallback = "none")]
    fn handed(&self) -> Result<u32, io::Error> {
        self.to
            .send(tracing::Span::current())
            .map_err(io::Error::other)?;
        Ok(2)
    }
}

struct Metrics {
    exporter: InMemoryMetricExporter,
    provider: SdkMeterProvider,
    telemetry: Telemetry,
}

impl Metrics {
    fn new() -> Self {
        let exporter = InMemoryMetricExporter::default();
        let provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(exporter.clone()).build())
            .build();
        let telemetry = Telemetry::new(&provider.meter("b12-sync"));
        Metrics {
            exporter,
            provider,
            telemetry,
        }
    }

    fn dispatch(&self) -> Dispatch {
        Dispatch::new(tracing_subscriber::registry().with(self.telemetry.layer()))
    }

    /// The duration histogram's points: tool and count.
    fn durations(&self) -> Vec<(String, u64)> {
        self.provider.force_flush().unwrap();
        let exported = self.exporter.get_finished_metrics().unwrap();
        let mut points = Vec::new();
        for metric in exported
            .last()
            .into_iter()
            .flat_map(|r| r.scope_metrics())
            .flat_map(|s| s.metrics())
            .filter(|m| m.name() == metric::DURATION)
        {
            let AggregatedMetrics::F64(MetricData::Histogram(h)) = metric.data() else {
                panic!("{}: a histogram", metric.name());
            };
            for p in h.data_points() {
                let tool = p
                    .attributes()
                    .find(|kv| kv.key.as_str() == "gen_ai.tool.name")
                    .map(|kv| kv.value.to_string())
                    .unwrap_or_default();
                points.push((tool, p.count()));
            }
        }
        points.sort();
        points
    }
}

fn spans() -> (GuardedSpans, mpsc::Receiver<tracing::Span>) {
    let (to, from) = mpsc::channel();
    (GuardedSpans::new(Spans { to }), from)
}

#[test]
fn b12_a_sync_call_whose_tool_enters_its_span_again_is_measured_once() {
    let metrics = Metrics::new();
    let (agent, _) = spans();
    tracing::dispatcher::with_default(&metrics.dispatch(), || {
        assert_eq!(agent.nested().unwrap().value, 1);
        assert_eq!(agent.nested().unwrap().value, 1);
    });
    assert_eq!(metrics.durations(), [("nested".to_owned(), 2)]);
}

#[test]
fn b12_a_sync_call_whose_span_closes_on_another_thread_is_measured_once() {
    let metrics = Metrics::new();
    let (agent, handed) = spans();
    let dispatch = metrics.dispatch();
    let held = std::thread::spawn(move || {
        // Holds each clone until the call it came from has returned, then drops it here.
        let clones: Vec<tracing::Span> = handed.iter().take(2).collect();
        drop(clones);
    });
    tracing::dispatcher::with_default(&dispatch, || {
        assert_eq!(agent.handed().unwrap().value, 2);
        assert_eq!(agent.handed().unwrap().value, 2);
    });
    held.join().unwrap();
    // And a call after them, on this thread, once more.
    tracing::dispatcher::with_default(&dispatch, || {
        assert_eq!(agent.nested().unwrap().value, 1);
    });
    assert_eq!(
        metrics.durations(),
        [("handed".to_owned(), 2), ("nested".to_owned(), 1)]
    );
}

#[test]
fn b12_two_subscribers_on_one_thread_count_their_own_calls() {
    let (outer, inner) = (Metrics::new(), Metrics::new());
    let (agent, _) = spans();
    tracing::dispatcher::with_default(&outer.dispatch(), || {
        agent.nested().unwrap();
        tracing::dispatcher::with_default(&inner.dispatch(), || {
            agent.nested().unwrap();
            agent.nested().unwrap();
        });
        agent.nested().unwrap();
    });
    assert_eq!(outer.durations(), [("nested".to_owned(), 2)]);
    assert_eq!(inner.durations(), [("nested".to_owned(), 2)]);
}
