//! The OpenTelemetry subscribers of the `telemetry` rows, shared by `breakers.rs` (timed) and
//! `paths.rs` (counted under callgrind), so that both measure the same setups.

use std::hint::black_box;
use std::time::Duration;

use agent_circuit_breaker::Expeditor;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::layer::SubscriberExt as _;

/// Which OpenTelemetry layers a subscriber has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OtelSetup {
    /// `tracing_opentelemetry::layer()` with an SDK tracer whose simple processor exports
    /// each span, when it closes, into an exporter that drops it.
    Spans,
    /// [`OtelSetup::Spans`] with the bridge's optional work off: no code location, thread,
    /// busy/idle time or context activation.
    LeanSpans,
    /// `otel::Telemetry::layer()` alone (metrics from our spans), the SDK meter provider's
    /// periodic reader set to an hour (never collected while measured).
    Metrics,
    /// [`OtelSetup::Spans`] and [`OtelSetup::Metrics`] together: telemetry fully on.
    SpansMetrics,
}

/// The SDK providers behind a subscriber, to keep alive while it is installed (a meter
/// provider that is dropped shuts its instruments down).
pub type Providers = (SdkTracerProvider, SdkMeterProvider);

/// A span exporter that keeps nothing: the SDK builds each span's data and hands it over;
/// it is dropped at once.
#[derive(Debug)]
struct Discard;

impl opentelemetry_sdk::trace::SpanExporter for Discard {
    fn export(
        &self,
        batch: Vec<opentelemetry_sdk::trace::SpanData>,
    ) -> impl Future<Output = opentelemetry_sdk::error::OTelSdkResult> + Send {
        drop(black_box(batch));
        std::future::ready(Ok(()))
    }
}

/// The subscriber of `setup` on a registry; the metrics observe `expeditors`.
pub fn otel_dispatch(
    setup: OtelSetup,
    expeditors: &[&Expeditor],
) -> (tracing::Dispatch, Providers) {
    let tracer_provider = SdkTracerProvider::builder()
        .with_simple_exporter(Discard)
        .build();
    let reader = PeriodicReader::builder(InMemoryMetricExporter::default())
        .with_interval(Duration::from_secs(3_600))
        .build();
    let meter_provider = SdkMeterProvider::builder().with_reader(reader).build();
    let telemetry = agent_circuit_breaker::otel::Telemetry::new(&meter_provider.meter("bench"));
    for expeditor in expeditors {
        telemetry.observe(expeditor);
    }
    let spans = || tracing_opentelemetry::layer().with_tracer(tracer_provider.tracer("bench"));
    let registry = tracing_subscriber::registry;
    let dispatch = match setup {
        OtelSetup::Spans => tracing::Dispatch::new(registry().with(spans())),
        OtelSetup::LeanSpans => tracing::Dispatch::new(
            registry().with(
                spans()
                    .with_location(false)
                    .with_threads(false)
                    .with_tracked_inactivity(false)
                    .with_context_activation(false),
            ),
        ),
        OtelSetup::Metrics => tracing::Dispatch::new(registry().with(telemetry.layer())),
        OtelSetup::SpansMetrics => {
            tracing::Dispatch::new(registry().with(spans()).with(telemetry.layer()))
        }
    };
    (dispatch, (tracer_provider, meter_provider))
}
