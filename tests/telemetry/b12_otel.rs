//! B12: telemetry by the OpenTelemetry generative-AI conventions, checked with the SDK's own
//! in-memory exporters. Spans go through `tracing-opentelemetry`, metrics through
//! `agent_circuit_breaker::otel::Telemetry`; each test installs its own subscriber on its own
//! thread (`with_default`, never a global one), so the tests run in parallel.
//!
//! Every scenario asserts the exported span (its name `execute_tool {tool}`, kind INTERNAL,
//! its attributes, status and span events) and the metric points it leaves.

#![cfg(feature = "otel")]

#[path = "../common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::io;
use std::sync::Mutex;

use agent_circuit_breaker::otel::{Telemetry, metric};
use agent_circuit_breaker::{CircuitState, Decision, Policy, toolbox};
use common::{block_on, clock};
use opentelemetry::KeyValue;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::{SpanKind, Status, TracerProvider as _};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::json;
use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt as _;

// ----- the toolbox -------------------------------------------------------------------------

/// Tools that fail, by name, with the `io::ErrorKind` they are given.
#[derive(Default)]
pub struct Workspace {
    broken: Mutex<BTreeMap<&'static str, io::ErrorKind>>,
}

impl Workspace {
    fn break_with(&self, tool: &'static str, kind: io::ErrorKind) {
        self.broken.lock().unwrap().insert(tool, kind);
    }

    fn repair(&self, tool: &'static str) {
        self.broken.lock().unwrap().remove(tool);
    }

    fn check(&self, tool: &'static str) -> Result<(), io::Error> {
        match self.broken.lock().unwrap().get(tool) {
            Some(kind) => Err(io::Error::new(*kind, format!("{tool}: {kind}"))),
            None => Ok(()),
        }
    }
}

#[toolbox(json, policy(threshold = 2, budget = 10, probe_every = 2))]
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

    /// Fetches a page.
    #[tool(
        provides = "page fetching",
        fallback = "ask the user to paste the page",
        serve_stale
    )]
    async fn web_fetch(&self, url: &str) -> Result<String, io::Error> {
        common::YieldOnce(false).await;
        self.check("web_fetch")?;
        Ok(format!("page {url}"))
    }
}

/// The toolbox with its declared policy (threshold 2, budget 10, probe every 2nd attempt).
fn agent() -> GuardedWorkspace {
    let clock = clock();
    GuardedWorkspace::with_expeditor(Workspace::default(), |b| b.clock(clock))
}

fn agent_with(policy: Policy) -> GuardedWorkspace {
    let clock = clock();
    GuardedWorkspace::with_expeditor(Workspace::default(), |b| b.clock(clock).policy(policy))
}

// ----- the SDK, in memory ------------------------------------------------------------------

/// The OpenTelemetry SDK with in-memory exporters, and our telemetry on its meter.
struct Otel {
    spans: InMemorySpanExporter,
    tracer_provider: SdkTracerProvider,
    metrics: InMemoryMetricExporter,
    meter_provider: SdkMeterProvider,
    telemetry: Telemetry,
}

/// An exported span, reduced to what the conventions and this crate set.
#[derive(Debug, Clone, PartialEq)]
struct Exported {
    name: String,
    kind: SpanKind,
    status: Status,
    attributes: Attributes,
    events: Vec<(String, Attributes)>,
}

type Attributes = BTreeMap<String, String>;

/// Keeps the attributes of the conventions and ours (`tracing-opentelemetry` adds code
/// locations, levels and targets, not under test).
fn ours(attributes: &[KeyValue]) -> Attributes {
    attributes
        .iter()
        .map(|kv| (kv.key.as_str().to_owned(), kv.value.to_string()))
        .filter(|(key, _)| {
            [
                "gen_ai.",
                "error.",
                "circuit_breaker.",
                "mcp.",
                "jsonrpc.",
                "network.",
                "otel.",
            ]
            .iter()
            .any(|prefix| key.starts_with(prefix))
        })
        .collect()
}

fn attrs<const N: usize>(pairs: [(&str, &str); N]) -> Attributes {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// The attributes every `execute_tool` span of a toolbox's tool has.
fn call_attrs(tool: &str) -> Attributes {
    attrs([
        ("gen_ai.operation.name", "execute_tool"),
        ("gen_ai.tool.name", tool),
        ("gen_ai.tool.type", "function"),
    ])
}

fn with(mut base: Attributes, more: &[(&str, &str)]) -> Attributes {
    for (k, v) in more {
        base.insert((*k).to_owned(), (*v).to_owned());
    }
    base
}

/// A metric point: its attributes and its value (a histogram's: its count).
type Points = Vec<(Attributes, u64)>;

impl Otel {
    fn new() -> Self {
        let spans = InMemorySpanExporter::default();
        let tracer_provider = SdkTracerProvider::builder()
            .with_simple_exporter(spans.clone())
            .build();
        let metrics = InMemoryMetricExporter::default();
        let meter_provider = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics.clone()).build())
            .build();
        let telemetry = Telemetry::new(&meter_provider.meter("b12"));
        Otel {
            spans,
            tracer_provider,
            metrics,
            meter_provider,
            telemetry,
        }
    }

    fn dispatch(&self) -> Dispatch {
        let tracer = self.tracer_provider.tracer("b12");
        Dispatch::new(
            tracing_subscriber::registry()
                .with(tracing_opentelemetry::layer().with_tracer(tracer))
                .with(self.telemetry.layer()),
        )
    }

    /// Runs `f` with this SDK as the thread's subscriber.
    fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        tracing::dispatcher::with_default(&self.dispatch(), f)
    }

    fn spans(&self) -> Vec<Exported> {
        self.spans
            .get_finished_spans()
            .unwrap()
            .into_iter()
            .map(|span| Exported {
                name: span.name.into_owned(),
                kind: span.span_kind,
                status: span.status,
                attributes: ours(&span.attributes),
                events: span
                    .events
                    .events
                    .iter()
                    .map(|e| (e.name.to_string(), ours(&e.attributes)))
                    .collect(),
            })
            .collect()
    }

    /// The one span exported.
    fn span(&self) -> Exported {
        let spans = self.spans();
        assert_eq!(spans.len(), 1, "{spans:#?}");
        spans.into_iter().next().unwrap()
    }

    /// The points of metric `name` at a collection now, sorted by their attributes (empty when
    /// the metric has none).
    fn points(&self, name: &str) -> Points {
        self.meter_provider.force_flush().unwrap();
        let exported = self.metrics.get_finished_metrics().unwrap();
        self.metrics.reset();
        let Some(last) = exported.last() else {
            return Vec::new();
        };
        let mut points = Points::new();
        for metric in last
            .scope_metrics()
            .flat_map(|s| s.metrics())
            .filter(|m| m.name() == name)
        {
            match metric.data() {
                AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                    assert_eq!(metric.unit(), "s", "{name}");
                    for p in h.data_points() {
                        let bounds: Vec<f64> = p.bounds().collect();
                        assert_eq!(bounds, metric::DURATION_BOUNDARIES, "{name}");
                        points.push((ours_all(p.attributes()), p.count()));
                    }
                }
                AggregatedMetrics::U64(MetricData::Sum(s)) => {
                    assert!(s.is_monotonic(), "{name} is a counter");
                    points.extend(
                        s.data_points()
                            .map(|p| (ours_all(p.attributes()), p.value())),
                    );
                }
                AggregatedMetrics::U64(MetricData::Gauge(g)) => {
                    points.extend(
                        g.data_points()
                            .map(|p| (ours_all(p.attributes()), p.value())),
                    );
                }
                other => panic!("{name}: unexpected data {other:?}"),
            }
        }
        points.sort();
        points
    }
}

/// Every attribute of a metric point (they are all ours).
fn ours_all<'a>(attributes: impl Iterator<Item = &'a KeyValue>) -> Attributes {
    attributes
        .map(|kv| (kv.key.as_str().to_owned(), kv.value.to_string()))
        .collect()
}

fn point<const N: usize>(pairs: [(&str, &str); N], value: u64) -> (Attributes, u64) {
    (attrs(pairs), value)
}

fn error(description: &str) -> Status {
    Status::error(description.to_owned())
}

// ----- the scenarios -----------------------------------------------------------------------

#[test]
fn b12_a_healthy_call_is_one_execute_tool_span_and_one_duration_point() {
    let otel = Otel::new();
    let agent = agent();
    let hits = otel.run(|| agent.grep("fn main")).unwrap();
    assert_eq!(hits.value, ["src/main.rs:7: fn main"]);

    assert_eq!(
        otel.span(),
        Exported {
            name: "execute_tool grep".into(),
            kind: SpanKind::Internal,
            status: Status::Unset,
            attributes: call_attrs("grep"),
            events: vec![],
        }
    );
    assert_eq!(
        otel.points(metric::DURATION),
        [point(
            [
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "grep")
            ],
            1
        )]
    );
    for name in [
        metric::REJECTIONS,
        metric::ROUTES,
        metric::TRANSITIONS,
        metric::SYSTEMIC_EVENTS,
    ] {
        assert_eq!(otel.points(name), [], "{name}: nothing happened");
    }
}

#[test]
fn b12_a_failure_sets_error_type_status_state_and_budget_left() {
    let otel = Otel::new();
    let agent = agent();
    agent
        .toolbox()
        .break_with("bash", io::ErrorKind::PermissionDenied);
    let failed = otel.run(|| agent.bash("make"));
    assert!(failed.is_err());

    assert_eq!(
        otel.span(),
        Exported {
            name: "execute_tool bash".into(),
            kind: SpanKind::Internal,
            status: error("bash: permission denied"),
            attributes: with(
                call_attrs("bash"),
                &[
                    ("error.type", "permission"),
                    ("circuit_breaker.state", "closed"),
                    ("circuit_breaker.budget.remaining", "9"),
                ]
            ),
            events: vec![],
        }
    );
    assert_eq!(
        otel.points(metric::DURATION),
        [point(
            [
                ("error.type", "permission"),
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "bash"),
            ],
            1
        )]
    );
    assert_eq!(
        otel.points(metric::REJECTIONS),
        [],
        "a failure is no refusal"
    );
}

#[test]
fn b12_an_opening_is_a_span_event_and_a_transition_then_the_probe_closes_it() {
    let otel = Otel::new();
    let agent = agent();
    agent.toolbox().break_with("bash", io::ErrorKind::TimedOut);
    otel.run(|| {
        assert!(agent.bash("one").is_err());
        assert!(agent.bash("two").is_err(), "the threshold (2) is reached");
    });
    let spans = otel.spans();
    assert_eq!(spans.len(), 2, "{spans:#?}");
    assert_eq!(spans[0].events, [], "the first failure opens nothing");
    assert_eq!(
        spans[1].attributes,
        with(
            call_attrs("bash"),
            &[
                ("error.type", "timeout"),
                ("circuit_breaker.state", "open"),
                ("circuit_breaker.budget.remaining", "8"),
            ]
        )
    );
    assert_eq!(
        spans[1].events,
        [(
            "Circuit OPENED for bash: 2 consecutive failures".to_owned(),
            attrs([
                ("circuit_breaker.event", "opened"),
                ("circuit_breaker.tool", "bash"),
                ("circuit_breaker.state", "open"),
            ])
        )]
    );
    assert_eq!(
        otel.points(metric::TRANSITIONS),
        [point(
            [
                ("circuit_breaker.event", "opened"),
                ("circuit_breaker.state", "open"),
                ("gen_ai.tool.name", "bash"),
            ],
            1
        )]
    );

    // Refused once (1st attempt since it opened), probed at the 2nd: it answers, it closes.
    agent.toolbox().repair("bash");
    otel.spans.reset();
    otel.run(|| {
        assert!(agent.bash("three").is_err(), "refused");
        assert_eq!(agent.bash("four").unwrap().value, "ran four", "the probe");
    });
    let spans = otel.spans();
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let probe = &spans[1];
    assert_eq!(probe.attributes, call_attrs("bash"), "the probe answered");
    let events: Vec<(&str, Option<&str>)> = probe
        .events
        .iter()
        .map(|(name, a)| {
            (
                a.get("circuit_breaker.event")
                    .map_or(name.as_str(), |e| e.as_str()),
                a.get("circuit_breaker.state").map(String::as_str),
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            ("half_opened", Some("half_open")),
            ("closed", Some("closed"))
        ]
    );
    assert_eq!(
        otel.points(metric::TRANSITIONS),
        [
            point(
                [
                    ("circuit_breaker.event", "closed"),
                    ("circuit_breaker.state", "closed"),
                    ("gen_ai.tool.name", "bash"),
                ],
                1
            ),
            point(
                [
                    ("circuit_breaker.event", "half_opened"),
                    ("circuit_breaker.state", "half_open"),
                    ("gen_ai.tool.name", "bash"),
                ],
                1
            ),
            point(
                [
                    ("circuit_breaker.event", "opened"),
                    ("circuit_breaker.state", "open"),
                    ("gen_ai.tool.name", "bash"),
                ],
                1
            ),
        ]
    );
}

#[test]
fn b12_a_refusal_is_circuit_open_with_the_advised_route_and_counts_as_a_rejection() {
    let otel = Otel::new();
    let agent = agent();
    agent
        .toolbox()
        .break_with("bash", io::ErrorKind::PermissionDenied);
    otel.run(|| {
        assert!(agent.bash("one").is_err());
        assert!(agent.bash("two").is_err());
        let refused = agent.bash("three").unwrap_err();
        assert!(refused.refusal().is_some(), "{refused}");
    });
    let spans = otel.spans();
    assert_eq!(spans.len(), 3, "{spans:#?}");
    assert_eq!(
        spans[2],
        Exported {
            name: "execute_tool bash".into(),
            kind: SpanKind::Internal,
            status: error("circuit OPEN: not called"),
            attributes: with(
                call_attrs("bash"),
                &[
                    ("error.type", "circuit_open"),
                    ("circuit_breaker.state", "open"),
                ]
            ),
            events: vec![(
                "refused".to_owned(),
                attrs([
                    ("circuit_breaker.event", "refused"),
                    ("error.type", "circuit_open"),
                    ("circuit_breaker.state", "open"),
                    ("circuit_breaker.route", "fallback"),
                    (
                        "circuit_breaker.fallback",
                        "report commands that need to be run manually"
                    ),
                ])
            )],
        }
    );
    assert_eq!(
        otel.points(metric::REJECTIONS),
        [point(
            [("error.type", "circuit_open"), ("gen_ai.tool.name", "bash")],
            1
        )]
    );
    assert_eq!(
        otel.points(metric::DURATION),
        [
            point(
                [
                    ("error.type", "circuit_open"),
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "bash"),
                ],
                1
            ),
            point(
                [
                    ("error.type", "permission"),
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "bash"),
                ],
                2
            ),
        ]
    );
}

#[test]
fn b12_a_routed_call_keeps_the_tool_asked_for_and_names_the_alternative() {
    let otel = Otel::new();
    let agent = agent();
    agent.toolbox().break_with("grep", io::ErrorKind::TimedOut);
    let routed = otel.run(|| {
        assert!(agent.grep("a").is_err());
        assert!(agent.grep("b").is_err(), "grep is OPEN");
        agent.grep("fn main").unwrap()
    });
    assert_eq!(routed.value, ["ran rg fn main"]);
    assert!(routed.is_degraded());

    let spans = otel.spans();
    assert_eq!(
        spans.len(),
        3,
        "one span per call, none for the adapter: {spans:#?}"
    );
    let route = &spans[2];
    assert_eq!(route.name, "execute_tool grep", "the tool asked for");
    assert_eq!(route.status, Status::Unset, "an alternative answered");
    assert_eq!(
        route.attributes,
        with(
            call_attrs("grep"),
            &[
                ("circuit_breaker.route", "alternative"),
                ("circuit_breaker.route.tool", "bash"),
                (
                    "circuit_breaker.degradation",
                    "loses Grep's built-in output formatting"
                ),
            ]
        )
    );
    assert_eq!(
        route.events,
        [(
            "routed".to_owned(),
            attrs([
                ("circuit_breaker.event", "routed"),
                ("circuit_breaker.route", "alternative"),
                ("circuit_breaker.route.tool", "bash"),
                (
                    "circuit_breaker.degradation",
                    "loses Grep's built-in output formatting"
                ),
                ("circuit_breaker.severity", "low"),
            ])
        )]
    );
    assert_eq!(
        otel.points(metric::ROUTES),
        [point(
            [
                ("circuit_breaker.route", "alternative"),
                ("circuit_breaker.route.tool", "bash"),
                ("gen_ai.tool.name", "grep"),
            ],
            1
        )]
    );
    assert_eq!(otel.points(metric::REJECTIONS), [], "routed, not refused");
}

#[test]
fn b12_a_stale_answer_is_a_route_with_its_freshness_label() {
    let otel = Otel::new();
    let agent = agent();
    let url = "https://example.org";
    let good = block_on(agent.web_fetch(url)).unwrap().value;
    agent
        .toolbox()
        .break_with("web_fetch", io::ErrorKind::ConnectionRefused);
    assert!(block_on(agent.web_fetch(url)).is_err());
    assert!(block_on(agent.web_fetch(url)).is_err(), "web_fetch is OPEN");
    let stale = otel.run(|| block_on(agent.web_fetch(url))).unwrap();
    assert_eq!(stale.value, good, "its last good result");

    let span = otel.span();
    assert_eq!(
        (span.name.as_str(), &span.status),
        ("execute_tool web_fetch", &Status::Unset)
    );
    let label = "[STALE DATA — retrieved at 2026-11-30T07:35:03Z, may not reflect current state]";
    assert_eq!(
        (
            span.attributes
                .get("circuit_breaker.route")
                .map(String::as_str),
            span.attributes.get("circuit_breaker.route.tool"),
            span.attributes
                .get("circuit_breaker.freshness")
                .map(String::as_str),
            span.attributes.get("error.type"),
        ),
        (Some("stale"), None, Some(label), None)
    );
    let routed: Vec<(&str, Option<&str>)> = span
        .events
        .iter()
        .map(|(name, a)| {
            (
                name.as_str(),
                a.get("circuit_breaker.route").map(String::as_str),
            )
        })
        .collect();
    assert_eq!(routed, [("routed", Some("stale"))]);
    assert_eq!(
        otel.points(metric::ROUTES),
        [point(
            [
                ("circuit_breaker.route", "stale"),
                ("gen_ai.tool.name", "web_fetch")
            ],
            1
        )]
    );
    assert_eq!(otel.points(metric::REJECTIONS), [], "answered, if stale");
}

#[test]
fn b12_a_budget_pause_is_budget_exhausted_with_the_budget_in_its_event() {
    let otel = Otel::new();
    let policy = Policy::builder().threshold(5).budget(2).build().unwrap();
    let agent = agent_with(policy);
    otel.telemetry.observe(agent.expeditor());
    agent.toolbox().break_with("bash", io::ErrorKind::NotFound);
    otel.run(|| {
        assert!(agent.bash("one").is_err());
        assert!(agent.bash("two").is_err(), "the budget (2) is spent");
        assert!(agent.grep("x").unwrap_err().refusal().is_some(), "paused");
    });
    let spans = otel.spans();
    assert_eq!(spans.len(), 3, "{spans:#?}");
    let exhausted: Vec<&Attributes> = spans[1].events.iter().map(|(_, a)| a).collect();
    assert_eq!(
        exhausted,
        [&attrs([
            ("circuit_breaker.event", "budget_exhausted"),
            ("circuit_breaker.budget.consumed", "2"),
            ("circuit_breaker.budget.limit", "2"),
        ])],
        "the engine's event, in the failure that spent it"
    );
    assert_eq!(
        spans[2],
        Exported {
            name: "execute_tool grep".into(),
            kind: SpanKind::Internal,
            status: error("failure budget exhausted: every call paused"),
            attributes: with(
                call_attrs("grep"),
                &[
                    ("error.type", "budget_exhausted"),
                    ("circuit_breaker.state", "closed"),
                ]
            ),
            events: vec![(
                "budget_pause".to_owned(),
                attrs([
                    ("circuit_breaker.event", "budget_pause"),
                    ("error.type", "budget_exhausted"),
                    ("circuit_breaker.budget.consumed", "2"),
                    ("circuit_breaker.budget.limit", "2"),
                    ("circuit_breaker.budget.remaining", "0"),
                ])
            )],
        }
    );
    assert_eq!(
        otel.points(metric::REJECTIONS),
        [point(
            [
                ("error.type", "budget_exhausted"),
                ("gen_ai.tool.name", "grep")
            ],
            1
        )]
    );
    assert_eq!(otel.points(metric::BUDGET_CONSUMED), [(attrs([]), 2)]);
    assert_eq!(otel.points(metric::BUDGET_REMAINING), [(attrs([]), 0)]);
    assert_eq!(otel.points(metric::BUDGET_LIMIT), [(attrs([]), 2)]);
}

#[test]
fn b12_a_systemic_pause_names_its_cause_and_counts_the_event_once() {
    let otel = Otel::new();
    let policy = Policy::builder().threshold(1).budget(10).build().unwrap();
    let agent = agent_with(policy);
    for tool in ["web_search", "web_fetch"] {
        agent
            .toolbox()
            .break_with(tool, io::ErrorKind::ConnectionRefused);
    }
    otel.run(|| {
        assert!(agent.web_search("rust").is_err());
        assert!(block_on(agent.web_fetch("https://example.org")).is_err());
        assert!(agent.bash("ls").unwrap_err().refusal().is_some(), "paused");
    });
    let spans = otel.spans();
    assert_eq!(spans.len(), 3, "{spans:#?}");
    // The async tool's span: the failure that made the cascade.
    assert_eq!(spans[1].name, "execute_tool web_fetch");
    assert_eq!(
        spans[1].attributes.get("error.type").map(String::as_str),
        Some("network")
    );
    let kinds: Vec<&str> = spans[1]
        .events
        .iter()
        .filter_map(|(_, a)| a.get("circuit_breaker.event").map(String::as_str))
        .collect();
    assert_eq!(kinds, ["opened", "systemic"], "{:#?}", spans[1].events);
    let systemic = &spans[1].events[1].1;
    assert_eq!(
        (
            systemic
                .get("circuit_breaker.systemic.cause")
                .map(String::as_str),
            systemic.get("circuit_breaker.tools").map(String::as_str),
        ),
        (Some("network"), Some("web_search,web_fetch"))
    );

    assert_eq!(
        spans[2],
        Exported {
            name: "execute_tool bash".into(),
            kind: SpanKind::Internal,
            status: error("systemic failure: every call paused"),
            attributes: with(
                call_attrs("bash"),
                &[
                    ("error.type", "systemic_pause"),
                    ("circuit_breaker.state", "closed"),
                ]
            ),
            events: vec![(
                "systemic_pause".to_owned(),
                attrs([
                    ("circuit_breaker.event", "systemic_pause"),
                    ("error.type", "systemic_pause"),
                    ("circuit_breaker.systemic.cause", "network"),
                ])
            )],
        }
    );
    assert_eq!(
        otel.points(metric::SYSTEMIC_EVENTS),
        [point([("circuit_breaker.systemic.cause", "network")], 1)]
    );
    assert_eq!(
        otel.points(metric::REJECTIONS),
        [point(
            [
                ("error.type", "systemic_pause"),
                ("gen_ai.tool.name", "bash")
            ],
            1
        )]
    );
    let opened: Points = ["web_fetch", "web_search"]
        .map(|tool| {
            point(
                [
                    ("circuit_breaker.event", "opened"),
                    ("circuit_breaker.state", "open"),
                    ("gen_ai.tool.name", tool),
                ],
                1,
            )
        })
        .into();
    assert_eq!(otel.points(metric::TRANSITIONS), opened);
}

#[test]
fn b12_the_json_dispatcher_runs_in_the_same_span_and_names_the_models_mistakes() {
    let otel = Otel::new();
    let agent = agent();
    otel.run(|| {
        let ok = block_on(agent.call("grep", json!({ "pattern": "fn main" })));
        assert!(!ok.is_error(), "{}", ok.text());
        assert!(block_on(agent.call("nosuch", json!({}))).is_error());
        assert!(block_on(agent.call("grep", json!({ "pattern": 7 }))).is_error());
    });
    let spans = otel.spans();
    assert_eq!(spans.len(), 3, "{spans:#?}");
    assert_eq!(
        (&spans[0].name, &spans[0].attributes, &spans[0].status),
        (
            &"execute_tool grep".to_owned(),
            &call_attrs("grep"),
            &Status::Unset
        ),
        "the same span as the typed call"
    );
    assert_eq!(spans[1].name, "execute_tool nosuch");
    assert_eq!(
        spans[1].attributes.get("error.type").map(String::as_str),
        Some("unknown_tool")
    );
    assert!(matches!(spans[1].status, Status::Error { .. }));
    assert_eq!(spans[2].name, "execute_tool grep");
    assert_eq!(
        spans[2].attributes.get("error.type").map(String::as_str),
        Some("invalid_arguments")
    );

    assert_eq!(
        otel.points(metric::DURATION),
        [
            point(
                [
                    ("error.type", "invalid_arguments"),
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "grep"),
                ],
                1
            ),
            // The name the model made up is no attribute: it would be unbounded.
            point(
                [
                    ("error.type", "unknown_tool"),
                    ("gen_ai.operation.name", "execute_tool"),
                ],
                1
            ),
            point(
                [
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "grep")
                ],
                1
            ),
        ]
    );
    assert_eq!(
        otel.points(metric::REJECTIONS),
        [],
        "mistakes are no refusals"
    );
}

#[test]
fn b12_an_outer_span_is_used_by_the_call_inside_it() {
    let otel = Otel::new();
    let agent = agent();
    otel.run(|| {
        let span = agent_circuit_breaker::telemetry::execute_tool("grep");
        span.record("gen_ai.tool.call.id", "call_7");
        span.in_scope(|| agent.grep("x")).unwrap();
    });
    assert_eq!(
        otel.span().attributes,
        with(call_attrs("grep"), &[("gen_ai.tool.call.id", "call_7")])
    );
    let points = otel.points(metric::DURATION);
    assert_eq!(points.len(), 1, "one call, one point: {points:?}");
    assert_eq!(points[0].1, 1);
}

/// The state gauge's points of one tool: (state, value) for closed, open, half-open.
fn states(points: &Points, tool: &str, agent: Option<&str>) -> Vec<(String, u64)> {
    let mut states: Vec<(String, u64)> = points
        .iter()
        .filter(|(a, _)| {
            a.get("gen_ai.tool.name").map(String::as_str) == Some(tool)
                && a.get("agent").map(String::as_str) == agent
        })
        .map(|(a, v)| (a["circuit_breaker.state"].clone(), *v))
        .collect();
    states.sort();
    states
}

fn one_hot(state: CircuitState) -> Vec<(String, u64)> {
    vec![
        ("closed".into(), u64::from(state == CircuitState::Closed)),
        (
            "half_open".into(),
            u64::from(state == CircuitState::HalfOpen),
        ),
        ("open".into(), u64::from(state == CircuitState::Open)),
    ]
}

#[test]
fn b12_the_gauges_read_each_observed_expeditor_at_collection() {
    let otel = Otel::new();
    let a = agent();
    let b = agent();
    otel.telemetry
        .observe_with(a.expeditor(), [KeyValue::new("agent", "a")]);
    otel.telemetry
        .observe_with(b.expeditor(), [KeyValue::new("agent", "b")]);

    let points = otel.points(metric::CIRCUIT_STATE);
    assert_eq!(
        points.len(),
        2 * 4 * 3,
        "two expeditors, four tools, three states"
    );
    for tool in ["grep", "bash", "web_search", "web_fetch"] {
        for agent in ["a", "b"] {
            assert_eq!(
                states(&points, tool, Some(agent)),
                one_hot(CircuitState::Closed)
            );
        }
    }

    // No subscriber needed: the gauges read the expeditors, not the spans.
    a.toolbox()
        .break_with("bash", io::ErrorKind::PermissionDenied);
    assert!(a.bash("one").is_err());
    assert!(a.bash("two").is_err());
    let points = otel.points(metric::CIRCUIT_STATE);
    assert_eq!(
        states(&points, "bash", Some("a")),
        one_hot(CircuitState::Open)
    );
    assert_eq!(
        states(&points, "bash", Some("b")),
        one_hot(CircuitState::Closed)
    );
    assert_eq!(
        otel.points(metric::BUDGET_CONSUMED),
        [point([("agent", "a")], 2), point([("agent", "b")], 0)]
    );
    assert_eq!(
        otel.points(metric::BUDGET_REMAINING),
        [point([("agent", "a")], 8), point([("agent", "b")], 10)]
    );
    assert_eq!(
        otel.points(metric::BUDGET_LIMIT),
        [point([("agent", "a")], 10), point([("agent", "b")], 10)]
    );

    // Refused at the 1st attempt since it opened; the 2nd is the probe: HALF-OPEN while its
    // ticket is held, CLOSED once it answers.
    assert!(a.bash("three").unwrap_err().refusal().is_some());
    let bash = a.expeditor().tool("bash").unwrap();
    let Decision::Probe(probe) = a.expeditor().decide(bash) else {
        panic!("the 2nd attempt probes")
    };
    let points = otel.points(metric::CIRCUIT_STATE);
    assert_eq!(
        states(&points, "bash", Some("a")),
        one_hot(CircuitState::HalfOpen)
    );
    probe.success();
    let points = otel.points(metric::CIRCUIT_STATE);
    assert_eq!(
        states(&points, "bash", Some("a")),
        one_hot(CircuitState::Closed)
    );
}

#[test]
fn b12_one_observed_expeditor_has_gauges_without_extra_attributes() {
    let otel = Otel::new();
    let agent = agent();
    otel.telemetry.observe(agent.expeditor());
    let points = otel.points(metric::CIRCUIT_STATE);
    assert_eq!(points.len(), 4 * 3);
    assert_eq!(states(&points, "grep", None), one_hot(CircuitState::Closed));
    assert_eq!(otel.points(metric::BUDGET_LIMIT), [(attrs([]), 10)]);
}

#[test]
fn b12_an_expeditor_dropped_by_its_agent_leaves_the_gauges() {
    let otel = Otel::new();
    let kept = agent();
    let dropped = agent();
    otel.telemetry
        .observe_with(kept.expeditor(), [KeyValue::new("agent", "kept")]);
    otel.telemetry
        .observe_with(dropped.expeditor(), [KeyValue::new("agent", "dropped")]);
    assert_eq!(otel.points(metric::BUDGET_LIMIT).len(), 2);
    drop(dropped);
    // The telemetry holds it weakly: nothing keeps it alive, its points are gone.
    assert_eq!(
        otel.points(metric::BUDGET_LIMIT),
        [point([("agent", "kept")], 10)]
    );
    assert_eq!(otel.points(metric::CIRCUIT_STATE).len(), 4 * 3);
}

#[test]
fn b12_calls_from_many_threads_are_all_counted() {
    const THREADS: u64 = 4;
    const CALLS: u64 = 250;
    let otel = Otel::new();
    let agent = agent();
    let dispatch = otel.dispatch();
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                tracing::dispatcher::with_default(&dispatch, || {
                    for _ in 0..CALLS {
                        agent.grep("x").unwrap();
                    }
                });
            });
        }
    });
    assert_eq!(
        otel.points(metric::DURATION),
        [point(
            [
                ("gen_ai.operation.name", "execute_tool"),
                ("gen_ai.tool.name", "grep")
            ],
            THREADS * CALLS
        )]
    );
    assert_eq!(
        otel.spans().len(),
        usize::try_from(THREADS * CALLS).unwrap()
    );
}

#[test]
fn b12_the_layer_takes_any_field_shape_without_panicking() {
    let otel = Otel::new();
    otel.run(|| {
        // Spans of ours by name, with fields of every type or none.
        drop(tracing::info_span!(target: "circuit_breaker", "execute_tool"));
        drop(tracing::info_span!(
            target: "circuit_breaker",
            "execute_tool",
            gen_ai.tool.name = 42,
            error.type = ?"circuit_open",
            circuit_breaker.route = true,
            circuit_breaker.route.tool = 1.5,
        ));
        let span = tracing::info_span!(
            target: "circuit_breaker",
            "execute_tool",
            gen_ai.tool.name = "grep",
            error.type = tracing::field::Empty,
        );
        span.record("error.type", "a user's own words");
        span.in_scope(|| {
            tracing::event!(target: "circuit_breaker", tracing::Level::INFO, circuit_breaker.event = 7, "seven");
            tracing::event!(target: "circuit_breaker", tracing::Level::INFO, circuit_breaker.event = "opened", "no tool");
            tracing::event!(target: "circuit_breaker", tracing::Level::WARN, circuit_breaker.event = "server_down",
                circuit_breaker.tools = ",, ,",
                "no tools"
            );
            tracing::event!(target: "circuit_breaker", tracing::Level::WARN, circuit_breaker.event = "systemic", "no cause");
        });
        drop(span);
        // Other spans and events of ours, and of others, are not calls.
        drop(tracing::info_span!(target: "circuit_breaker", "something_else", gen_ai.tool.name = "x"));
        drop(tracing::info_span!(target: "app", "execute_tool", gen_ai.tool.name = "y"));
        tracing::event!(target: "app", tracing::Level::INFO, circuit_breaker.event = "opened", circuit_breaker.tool = "z", "not ours");
    });
    assert_eq!(
        otel.points(metric::DURATION),
        [
            point(
                [
                    ("error.type", "_OTHER"),
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "grep"),
                ],
                1
            ),
            point(
                [
                    ("error.type", "circuit_open"),
                    ("gen_ai.operation.name", "execute_tool"),
                    ("gen_ai.tool.name", "42"),
                ],
                1
            ),
            point([("gen_ai.operation.name", "execute_tool")], 1),
        ]
    );
    assert_eq!(
        otel.points(metric::SYSTEMIC_EVENTS),
        [point([("circuit_breaker.systemic.cause", "_OTHER")], 1)]
    );
    assert_eq!(
        otel.points(metric::TRANSITIONS),
        [],
        "no tool, no transition"
    );
}

/// Counts what reaches it: the application's own layer.
#[derive(Clone, Default)]
struct Seen(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Seen {
    fn on_event(&self, _: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn b12_the_layer_leaves_the_applications_other_layers_alone() {
    let otel = Otel::new();
    let seen = Seen::default();
    let subscriber = tracing_subscriber::registry()
        .with(seen.clone())
        .with(otel.telemetry.layer());
    tracing::subscriber::with_default(subscriber, || {
        tracing::trace!(target: "app", "a trace event of the application's");
        tracing::debug!(target: "app", "a debug event");
        tracing::info!(target: "circuit_breaker", "one of ours");
        let agent = agent();
        agent.grep("x").unwrap();
    });
    assert_eq!(
        seen.0.load(std::sync::atomic::Ordering::SeqCst),
        3,
        "every event, whatever its level or target"
    );
    assert_eq!(otel.points(metric::DURATION).len(), 1);
}
