//! Telemetry by the OpenTelemetry GenAI conventions (B12 in `docs/requirements.md`): a small agent-like run whose
//! spans and metrics go to the OpenTelemetry SDK's in-memory exporters, then a compact
//! excerpt of what was exported.
//!
//! ```sh
//! cargo run --example telemetry --features otel
//! ```
//!
//! The toolbox has three tools: `grep` (it breaks: it times out; its alternative is `bash`
//! through an adapter), `bash`, and `web_search` (it breaks: connection refused; no
//! alternative). The run: two healthy calls; `grep` fails twice and opens, the next search
//! goes through `bash`; `web_search` fails twice and opens, the next one is refused with its
//! fallback; a `bash` failure spends the failure budget (5), and the next call is paused.
//!
//! The output is deterministic (no times, no ids; durations as counts only):
//! `docs/transcripts.md` quotes it.

use std::collections::BTreeMap;
use std::io;
use std::sync::Mutex;

use agent_circuit_breaker::otel::{Telemetry, metric};
use agent_circuit_breaker::toolbox;
use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tracing_subscriber::layer::SubscriberExt as _;

/// A workspace whose tools can be broken, by name, with an `io::ErrorKind`.
#[derive(Default)]
pub struct Workspace {
    broken: Mutex<BTreeMap<&'static str, io::ErrorKind>>,
}

impl Workspace {
    fn break_with(&self, tool: &'static str, kind: io::ErrorKind) {
        self.broken
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(tool, kind);
    }

    fn check(&self, tool: &'static str) -> Result<(), io::Error> {
        let broken = self
            .broken
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match broken.get(tool) {
            Some(kind) => Err(io::Error::new(*kind, format!("{tool}: {kind}"))),
            None => Ok(()),
        }
    }
}

#[toolbox(policy(threshold = 2, budget = 5, probe_every = 3))]
impl Workspace {
    /// Searches file contents.
    #[tool(
        provides = "content search across files",
        alternatives(bash(
            method = "rg or grep command",
            degradation = "loses Grep's built-in output formatting",
            via = grep_with_rg
        )),
        fallback = "ask the user which files to examine"
    )]
    fn grep(&self, pattern: &str) -> Result<Vec<String>, io::Error> {
        self.check("grep")?;
        Ok(vec![format!("src/main.rs:7: {pattern}")])
    }

    fn grep_with_rg(&self, pattern: &str) -> Result<Vec<String>, io::Error> {
        Ok(vec![self.bash(&format!("rg {pattern}"))?])
    }

    /// Runs a shell command.
    #[tool(
        provides = "command execution",
        fallback = "report commands that need to be run manually"
    )]
    fn bash(&self, command: &str) -> Result<String, io::Error> {
        self.check("bash")?;
        Ok(format!("ran {command}"))
    }

    /// Searches the web.
    #[tool(provides = "web search", fallback = "ask the user to look it up")]
    fn web_search(&self, query: &str) -> Result<String, io::Error> {
        self.check("web_search")?;
        Ok(format!("results for {query}"))
    }
}

/// The agent's run: what each call came to, one line each.
fn run(agent: &GuardedWorkspace) -> Vec<String> {
    fn said<T, E: std::fmt::Display>(
        call: &str,
        result: &Result<agent_circuit_breaker::Routed<T>, agent_circuit_breaker::CallError<E>>,
    ) -> String {
        match result {
            Ok(routed) if routed.is_degraded() => format!("{call}: answered by a route"),
            Ok(_) => format!("{call}: answered"),
            Err(agent_circuit_breaker::CallError::Failed { .. }) => format!("{call}: failed"),
            Err(agent_circuit_breaker::CallError::Rejected { .. }) => format!("{call}: rejected"),
            Err(agent_circuit_breaker::CallError::TimedOut { .. }) => format!("{call}: timed out"),
            Err(agent_circuit_breaker::CallError::Refused(_)) => format!("{call}: refused"),
        }
    }
    let tools = agent.toolbox();
    let mut log = vec![
        said("grep fn main", &agent.grep("fn main")),
        said("bash cargo build", &agent.bash("cargo build")),
    ];
    tools.break_with("grep", io::ErrorKind::TimedOut);
    log.push(said("grep TODO", &agent.grep("TODO")));
    log.push(said("grep FIXME", &agent.grep("FIXME")));
    log.push(said("grep fn main", &agent.grep("fn main")));
    tools.break_with("web_search", io::ErrorKind::ConnectionRefused);
    log.push(said("web_search otel", &agent.web_search("otel")));
    log.push(said("web_search otel", &agent.web_search("otel")));
    log.push(said("web_search otel", &agent.web_search("otel")));
    tools.break_with("bash", io::ErrorKind::PermissionDenied);
    log.push(said("bash make", &agent.bash("make")));
    log.push(said("grep fn main", &agent.grep("fn main")));
    log
}

/// The attributes every `execute_tool` span has, said once in the output's header.
const EVERY_SPAN: [(&str, &str); 2] = [
    ("gen_ai.operation.name", "execute_tool"),
    ("gen_ai.tool.type", "function"),
];

/// `key=value` for the attributes of the conventions and ours, in export order (without
/// `tracing-opentelemetry`'s code locations, levels and targets).
fn shown(attributes: &[KeyValue], skip: &[(&str, &str)]) -> String {
    attributes
        .iter()
        .filter(|kv| {
            let key = kv.key.as_str();
            ["gen_ai.", "error.", "circuit_breaker."]
                .iter()
                .any(|prefix| key.starts_with(prefix))
                && !skip
                    .iter()
                    .any(|(k, v)| *k == key && kv.value.as_str() == *v)
        })
        .map(pair)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `key=value`, the value quoted when it has spaces.
fn pair(kv: &KeyValue) -> String {
    let value = kv.value.as_str();
    if value.contains(' ') {
        format!("{}={value:?}", kv.key)
    } else {
        format!("{}={value}", kv.key)
    }
}

fn print_spans(spans: &InMemorySpanExporter) {
    let spans = spans.get_finished_spans().unwrap_or_default();
    println!(
        "spans: {} (kind INTERNAL; every one has {})",
        spans.len(),
        EVERY_SPAN.map(|(k, v)| format!("{k}={v}")).join(" ")
    );
    for span in &spans {
        assert_eq!(span.span_kind, SpanKind::Internal, "{}", span.name);
        for (key, value) in EVERY_SPAN {
            assert!(
                span.attributes
                    .iter()
                    .any(|kv| kv.key.as_str() == key && kv.value.as_str() == value),
                "{}: {key}",
                span.name
            );
        }
        let status = match &span.status {
            Status::Error { description } => format!("status error: {description}"),
            Status::Ok => "status ok".to_owned(),
            Status::Unset => "status unset".to_owned(),
        };
        println!("{} [{status}]", span.name);
        println!("  {}", shown(&span.attributes, &EVERY_SPAN));
        for event in span.events.iter() {
            println!("  event {:?}", event.name);
            println!("    {}", shown(&event.attributes, &[]));
        }
    }
}

/// Every point of the collection, by metric: `attributes: value` lines (a histogram's value:
/// its count), sorted.
fn print_metrics(meter_provider: &SdkMeterProvider, metrics: &InMemoryMetricExporter) {
    if let Err(error) = meter_provider.force_flush() {
        println!("metrics: not collected ({error})");
        return;
    }
    let exported = metrics.get_finished_metrics().unwrap_or_default();
    let Some(last) = exported.last() else { return };
    let mut by_name: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    for m in last.scope_metrics().flat_map(|s| s.metrics()) {
        let (kind, points): (&str, Vec<(Vec<String>, u64)>) = match m.data() {
            AggregatedMetrics::F64(MetricData::Histogram(h)) => (
                "histogram; calls counted, every point has gen_ai.operation.name=execute_tool",
                h.data_points()
                    .map(|p| (labels(p.attributes()), p.count()))
                    .collect(),
            ),
            AggregatedMetrics::U64(MetricData::Sum(s)) => (
                "counter",
                s.data_points()
                    .map(|p| (labels(p.attributes()), p.value()))
                    .collect(),
            ),
            AggregatedMetrics::U64(MetricData::Gauge(g)) => (
                "gauge",
                g.data_points()
                    .map(|p| (labels(p.attributes()), p.value()))
                    .collect(),
            ),
            _ => ("other", Vec::new()),
        };
        let mut lines: Vec<String> = points
            .into_iter()
            .map(|(labels, value)| {
                if labels.is_empty() {
                    format!("{value}")
                } else {
                    format!("{}: {value}", labels.join(" "))
                }
            })
            .collect();
        lines.sort();
        by_name.insert(
            m.name().to_owned(),
            (format!("unit {}, {kind}", m.unit()), lines),
        );
    }
    println!("metrics:");
    for (name, (kind, lines)) in by_name {
        if name == metric::CIRCUIT_STATE {
            println!("{name} ({kind}; the points at 1, the others are 0)");
            for line in lines.iter().filter(|l| l.ends_with(": 1")) {
                println!("  {line}");
            }
            continue;
        }
        println!("{name} ({kind})");
        for line in lines {
            println!("  {line}");
        }
    }
}

/// A point's attributes as `key=value`: `gen_ai.tool.name` first, the others by key, without
/// `gen_ai.operation.name` (the same on every point of the duration histogram).
fn labels<'a>(attributes: impl Iterator<Item = &'a KeyValue>) -> Vec<String> {
    let mut attributes: Vec<&KeyValue> = attributes
        .filter(|kv| kv.key.as_str() != "gen_ai.operation.name")
        .collect();
    attributes.sort_by_key(|kv| (kv.key.as_str() != "gen_ai.tool.name", kv.key.as_str()));
    attributes.into_iter().map(pair).collect()
}

fn main() {
    // The SDK, in memory: what an OTLP exporter would send.
    let spans = InMemorySpanExporter::default();
    let tracer_provider = SdkTracerProvider::builder()
        .with_simple_exporter(spans.clone())
        .build();
    let metrics = InMemoryMetricExporter::default();
    let meter_provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(metrics.clone()).build())
        .build();

    // The wiring: spans through tracing-opentelemetry, metrics through `Telemetry`.
    let telemetry = Telemetry::new(&meter_provider.meter("telemetry-example"));
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(tracer_provider.tracer("agent")))
        .with(telemetry.layer());

    let agent = GuardedWorkspace::new(Workspace::default());
    telemetry.observe(agent.expeditor());

    let log = tracing::subscriber::with_default(subscriber, || run(&agent));
    println!("run:");
    for line in log {
        println!("  {line}");
    }
    print_spans(&spans);
    print_metrics(&meter_provider, &metrics);
    if let Err(error) = tracer_provider.shutdown() {
        eprintln!("tracer provider: {error}");
    }
    if let Err(error) = meter_provider.shutdown() {
        eprintln!("meter provider: {error}");
    }
}
