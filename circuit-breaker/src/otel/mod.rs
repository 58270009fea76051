//! OpenTelemetry metrics (B12), feature `otel`: the generative-AI conventions' tool-call duration
//! and the breakers' own counters and gauges, read from what the crate already says through
//! `tracing`.
//!
//! Every guarded call runs in one `execute_tool` span (target `circuit_breaker`, see
//! [`telemetry`](crate::telemetry)); the engine's transitions are `tracing` events of the same
//! target. Spans go to OpenTelemetry through `tracing-opentelemetry`, the application's
//! choice. [`Telemetry`] adds the metrics:
//!
//! - [`Telemetry::layer`], a `tracing_subscriber` layer filtered to target `circuit_breaker`
//!   by its own per-layer filter (the application's other layers and filters see what they
//!   saw before), turns each `execute_tool` span, when it closes, into one
//!   `gen_ai.execute_tool.duration` measurement (and a rejection or a route counted when the
//!   span says so), and the engine's events into transitions and systemic events counted;
//! - [`Telemetry::observe`] registers an expeditor whose circuit states and budget the
//!   observable gauges read at each collection, from its public API.
//!
//! | metric | kind | unit | attributes |
//! |---|---|---|---|
//! | `gen_ai.execute_tool.duration` | histogram (f64) | `s` | `gen_ai.operation.name`, `gen_ai.tool.name` (not for `unknown_tool`: a name the model made up), `error.type` (when set) |
//! | `circuit_breaker.circuit.state` | gauge (u64) | `{state}` | `gen_ai.tool.name`, `circuit_breaker.state`: 1 for the current state, 0 for the two others |
//! | `circuit_breaker.transitions` | counter | `{transition}` | `gen_ai.tool.name`, `circuit_breaker.event`, `circuit_breaker.state` (after) |
//! | `circuit_breaker.rejections` | counter | `{call}` | `gen_ai.tool.name`, `error.type` (a refusal) |
//! | `circuit_breaker.routes` | counter | `{call}` | `gen_ai.tool.name`, `circuit_breaker.route`, `circuit_breaker.route.tool` (when an alternative) |
//! | `circuit_breaker.systemic_events` | counter | `{event}` | `circuit_breaker.systemic.cause` |
//! | `circuit_breaker.cancellations` | counter | `{call}` | `gen_ai.tool.name`: calls dropped by their caller before they answered (B13), not charged |
//! | `circuit_breaker.budget.consumed`, `.remaining`, `.limit` | gauges (u64) | `{failure}` | none (or those given to [`Telemetry::observe_with`]) |
//!
//! `error.type` keeps the crate's vocabulary (the failure categories, the refusals, the
//! model's mistakes, [`telemetry`](crate::telemetry)); a value outside it is counted as
//! `_OTHER`, as the conventions ask, so a metric's cardinality stays bounded.
//!
//! # Wiring
//!
//! The SDK and the exporters are the application's: here the SDK's in-memory exporters,
//! as a test would use them.
//!
//! ```
//! use agent_circuit_breaker::otel::{Telemetry, metric};
//! use agent_circuit_breaker::{CapabilityMap, Decision, Expeditor, ToolSpec};
//! use opentelemetry::metrics::MeterProvider as _;
//! use opentelemetry::trace::TracerProvider as _;
//! use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
//! use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
//! use tracing_subscriber::layer::SubscriberExt as _;
//!
//! // The SDK: spans and metrics kept in memory.
//! let spans = InMemorySpanExporter::default();
//! let tracer_provider = SdkTracerProvider::builder()
//!     .with_simple_exporter(spans.clone())
//!     .build();
//! let metrics = InMemoryMetricExporter::default();
//! let meter_provider = SdkMeterProvider::builder()
//!     .with_reader(PeriodicReader::builder(metrics.clone()).build())
//!     .build();
//!
//! // The wiring: spans through tracing-opentelemetry, metrics through `Telemetry`.
//! let telemetry = Telemetry::new(&meter_provider.meter("agent"));
//! let subscriber = tracing_subscriber::registry()
//!     .with(tracing_opentelemetry::layer().with_tracer(tracer_provider.tracer("agent")))
//!     .with(telemetry.layer());
//!
//! let map = CapabilityMap::new().tool(
//!     ToolSpec::new("bash")
//!         .provides("command execution")
//!         .fallback("report commands that need to be run manually"),
//! );
//! let expeditor = Expeditor::new(map)?;
//! telemetry.observe(&expeditor); // the gauges read it at each collection
//!
//! tracing::subscriber::with_default(subscriber, || {
//!     // What a guarded call does (the code `#[toolbox]` generates does it for you).
//!     let span = agent_circuit_breaker::telemetry::execute_tool("bash");
//!     let _entered = span.enter();
//!     if let Decision::Call(ticket) = expeditor.decide(expeditor.tool("bash").unwrap()) {
//!         ticket.success();
//!     }
//! });
//!
//! meter_provider.force_flush().unwrap();
//! let exported = metrics.get_finished_metrics().unwrap();
//! let names: Vec<&str> = exported
//!     .iter()
//!     .flat_map(|r| r.scope_metrics())
//!     .flat_map(|s| s.metrics())
//!     .map(|m| m.name())
//!     .collect();
//! assert!(names.contains(&metric::DURATION), "{names:?}");
//! assert!(names.contains(&metric::CIRCUIT_STATE), "{names:?}");
//! assert_eq!(spans.get_finished_spans().unwrap()[0].name, "execute_tool bash");
//! # Ok::<(), agent_circuit_breaker::capability::MapErrors>(())
//! ```
//!
//! # Cost
//!
//! Per guarded call the layer keeps one small record of the call: the tool, the clock at the
//! start, what the span says later (`error.type`, a route, a cancellation). A generated
//! method hands it its tool as it opens the span (the span's fields are not visited for it);
//! a sync method's record is kept on the calling thread, where the span is entered and left,
//! and measured when the call leaves it; any other call's (an async method, the JSON
//! dispatcher, an MCP client's tool, a span an outer layer opened) is kept in the span's
//! extensions (the registry's per-span slot, which boxes it) and measured when the span
//! closes. Then one histogram measurement (and a counter for a refusal, a route or a
//! cancellation): a call that answered hands the SDK a slice of attributes built once per
//! thread and tool, any other builds its few on the stack. The layer takes no lock of its
//! own; the SDK aggregates behind its own (a read lock and a mutex per measurement), after
//! hashing the attributes, which is the most of what the layer costs (BENCHMARKS.md).
//!
//! Measured on a 2-core VM (a healthy call of a one-tool toolbox, release build): the layer
//! and the registry's span add about 0.5 to 0.9 µs to a call, 3,800 instructions, of which the
//! SDK's `Histogram::record` is 1,200 and the span's registry and dispatch some 1,800;
//! `tracing-opentelemetry` exporting the span adds about 1.5 to 2 µs (9,200 instructions) and
//! 15 allocations. Without a subscriber the call pays none of it.
//!
//! The gauges read an expeditor only when the SDK collects: one lock-free state read per tool
//! and one copy of the budget per budget gauge.

use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter, ObservableGauge};
use tracing::Subscriber;
use tracing_subscriber::layer::Layer;
use tracing_subscriber::registry::LookupSpan;

use crate::Expeditor;
use crate::expeditor::WeakExpeditor;

mod gauges;
mod layer;
mod open;

use gauges::{observe_budget, observe_states};
use layer::{CallMetrics, OurTarget};

/// The metrics' names and the histogram's buckets, as exported.
pub mod metric {
    /// Histogram of a tool call's duration, span open to close, in seconds (the generative-AI
    /// conventions' metric).
    pub const DURATION: &str = "gen_ai.execute_tool.duration";
    /// Gauge per tool and state: 1 for the circuit's current state, 0 for the two others.
    pub const CIRCUIT_STATE: &str = "circuit_breaker.circuit.state";
    /// Counter of circuit transitions, by tool, event kind and state after.
    pub const TRANSITIONS: &str = "circuit_breaker.transitions";
    /// Counter of calls refused (not made), by tool and refusal `error.type`.
    pub const REJECTIONS: &str = "circuit_breaker.rejections";
    /// Counter of calls whose value did not come from the tool itself, by tool and route.
    pub const ROUTES: &str = "circuit_breaker.routes";
    /// Counter of systemic events, by suspected cause.
    pub const SYSTEMIC_EVENTS: &str = "circuit_breaker.systemic_events";
    /// Counter of calls dropped by their caller before they answered (B13), by tool.
    pub const CANCELLATIONS: &str = "circuit_breaker.cancellations";
    /// Gauge: failures charged to the budget this cycle.
    pub const BUDGET_CONSUMED: &str = "circuit_breaker.budget.consumed";
    /// Gauge: failures left before the mandatory pause.
    pub const BUDGET_REMAINING: &str = "circuit_breaker.budget.remaining";
    /// Gauge: failures allowed per cycle.
    pub const BUDGET_LIMIT: &str = "circuit_breaker.budget.limit";
    /// The generative-AI conventions' bucket boundaries for [`DURATION`], in seconds.
    pub const DURATION_BOUNDARIES: [f64; 14] = [
        0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
    ];
}

const TOOL_NAME: &str = "gen_ai.tool.name";
const OPERATION_NAME: &str = "gen_ai.operation.name";
const ERROR_TYPE: &str = "error.type";
const EVENT: &str = "circuit_breaker.event";
const STATE: &str = "circuit_breaker.state";
const ROUTE: &str = "circuit_breaker.route";
const ROUTE_TOOL: &str = "circuit_breaker.route.tool";
const TOOL: &str = "circuit_breaker.tool";
const TOOLS: &str = "circuit_breaker.tools";
const CAUSE: &str = "circuit_breaker.systemic.cause";
const CANCELLED: &str = "circuit_breaker.cancelled";

/// The conventions' `error.type` for a value outside the vocabulary.
const OTHER: &str = "_OTHER";

/// The metrics of the breakers and of the generative-AI conventions, made from one
/// [`Meter`]. A clone is the same telemetry (its instruments and observed expeditors are
/// shared): cheap, one reference count.
///
/// See the [module](self) for the metrics and the wiring.
#[derive(Clone)]
pub struct Telemetry {
    shared: Arc<Shared>,
}

struct Shared {
    duration: Histogram<f64>,
    transitions: Counter<u64>,
    rejections: Counter<u64>,
    routes: Counter<u64>,
    systemic: Counter<u64>,
    cancellations: Counter<u64>,
    observed: Arc<RwLock<Vec<Observed>>>,
    /// Kept for as long as the telemetry lives (the SDK keeps their callbacks).
    _gauges: [ObservableGauge<u64>; 4],
}

/// An expeditor the gauges read, with the attributes that tell it from the others.
struct Observed {
    /// Held weakly: an expeditor dropped by its agent leaves the gauges.
    expeditor: WeakExpeditor,
    attributes: Box<[KeyValue]>,
}

impl fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Telemetry")
            .field("observed", &read(&self.shared.observed).len())
            .finish_non_exhaustive()
    }
}

fn read(observed: &RwLock<Vec<Observed>>) -> std::sync::RwLockReadGuard<'_, Vec<Observed>> {
    observed.read().unwrap_or_else(PoisonError::into_inner)
}

impl Telemetry {
    /// Creates the instruments on `meter` (nothing is measured until [`layer`](Self::layer)
    /// is installed or an expeditor is [observed](Self::observe)).
    pub fn new(meter: &Meter) -> Self {
        let observed: Arc<RwLock<Vec<Observed>>> = Arc::default();
        let duration = meter
            .f64_histogram(metric::DURATION)
            .with_unit("s")
            .with_description("Duration of a tool call, as the agent's guarded call saw it.")
            .with_boundaries(metric::DURATION_BOUNDARIES.to_vec())
            .build();
        let transitions = meter
            .u64_counter(metric::TRANSITIONS)
            .with_unit("{transition}")
            .with_description("Circuit transitions, by tool, event and state after.")
            .build();
        let rejections = meter
            .u64_counter(metric::REJECTIONS)
            .with_unit("{call}")
            .with_description("Tool calls refused by the circuit breakers (not made).")
            .build();
        let routes = meter
            .u64_counter(metric::ROUTES)
            .with_unit("{call}")
            .with_description("Tool calls answered by a route (an alternative, stale data).")
            .build();
        let systemic = meter
            .u64_counter(metric::SYSTEMIC_EVENTS)
            .with_unit("{event}")
            .with_description("Systemic failures: correlated circuits opened, calls paused.")
            .build();
        let cancellations = meter
            .u64_counter(metric::CANCELLATIONS)
            .with_unit("{call}")
            .with_description(
                "Tool calls dropped by their caller before they answered (not charged).",
            )
            .build();

        let list = Arc::clone(&observed);
        let state = meter
            .u64_observable_gauge(metric::CIRCUIT_STATE)
            .with_unit("{state}")
            .with_description("Circuit state per tool: 1 for the current state, 0 otherwise.")
            .with_callback(move |gauge| observe_states(&list, gauge))
            .build();
        let budget = |name: &'static str, description: &'static str, read: fn(u32, u32) -> u32| {
            let list = Arc::clone(&observed);
            meter
                .u64_observable_gauge(name)
                .with_unit("{failure}")
                .with_description(description)
                .with_callback(move |gauge| observe_budget(&list, gauge, read))
                .build()
        };
        let gauges = [
            state,
            budget(
                metric::BUDGET_CONSUMED,
                "Failures charged to the budget this cycle.",
                |consumed, _| consumed,
            ),
            budget(
                metric::BUDGET_REMAINING,
                "Failures left before the mandatory pause.",
                |consumed, limit| limit.saturating_sub(consumed),
            ),
            budget(
                metric::BUDGET_LIMIT,
                "Failures allowed per cycle.",
                |_, limit| limit,
            ),
        ];
        Telemetry {
            shared: Arc::new(Shared {
                duration,
                transitions,
                rejections,
                routes,
                systemic,
                cancellations,
                observed,
                _gauges: gauges,
            }),
        }
    }

    /// The `tracing_subscriber` layer that turns the crate's spans and events into the call
    /// metrics. It has its own per-layer filter (target `circuit_breaker`, INFO and above):
    /// what the subscriber's other layers see is unchanged. It sees what the subscriber's
    /// global filters let through, so a global level filter stricter than INFO (WARN, ERROR)
    /// silences it: filter your own layers per layer instead. Install one per subscriber
    /// (two layers of the same telemetry count every call twice).
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: Subscriber + for<'span> LookupSpan<'span>,
    {
        CallMetrics::new(Arc::clone(&self.shared)).with_filter(OurTarget)
    }

    /// Registers `expeditor` for the gauges (circuit state per tool, budget), read at each
    /// collection from its public API.
    ///
    /// The telemetry holds it weakly ([`Expeditor::downgrade`]): it does not keep the
    /// expeditor alive, and once the agent drops its last handle the expeditor's points leave
    /// the gauges (and its entry is forgotten at the next `observe`). Observe each expeditor once; to observe several, give each its own attributes with
    /// [`observe_with`](Self::observe_with), or their points (the budget's, and those of the
    /// tools they share) have the same attributes and overwrite one another.
    pub fn observe(&self, expeditor: &Expeditor) {
        self.observe_with(expeditor, []);
    }

    /// [`observe`](Self::observe), every point of this expeditor's gauges carrying
    /// `attributes` too (`KeyValue::new("agent", "worker-1")`): several expeditors observed
    /// by one telemetry stay apart.
    pub fn observe_with(
        &self,
        expeditor: &Expeditor,
        attributes: impl IntoIterator<Item = KeyValue>,
    ) {
        let observed = Observed {
            expeditor: expeditor.downgrade(),
            attributes: attributes.into_iter().collect(),
        };
        let mut list = self
            .shared
            .observed
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        list.retain(|one| one.expeditor.upgrade().is_some());
        list.push(observed);
    }
}
