//! Spans and metrics to an OpenTelemetry collector over OTLP/HTTP (`telemetry.otlp` in the
//! config, feature `otel`): the runtime's `execute_tool` spans through
//! `tracing-opentelemetry`, its metrics through `agent_circuit_breaker::otel::Telemetry`.
//!
//! The exporters use a blocking HTTP client on the SDK's own threads, so they are built
//! before the async runtime starts and shut down after it has stopped: a blocking client
//! made or dropped on an async worker would stall it.

use std::collections::HashMap;

use agent_circuit_breaker::otel::Telemetry;
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::SdkTracerProvider;

use crate::config::{Otlp, OtlpProtocol};

/// The guard's exporters, alive as long as it runs.
pub struct Exporters {
    tracer: SdkTracerProvider,
    meter: SdkMeterProvider,
    endpoint: String,
    /// The metrics' recorder: its layer goes on the subscriber.
    pub telemetry: Telemetry,
}

impl Exporters {
    /// Builds the span and metric exporters for `otlp`, naming the service `service` unless
    /// the config names it.
    pub fn start(otlp: &Otlp, service: &str) -> Result<Exporters, String> {
        let base = otlp.endpoint.trim_end_matches('/');
        let protocol = match otlp.protocol {
            OtlpProtocol::HttpProtobuf => Protocol::HttpBinary,
            OtlpProtocol::HttpJson => Protocol::HttpJson,
        };
        let headers: HashMap<String, String> = otlp
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let resource = Resource::builder()
            .with_service_name(
                otlp.service_name
                    .clone()
                    .unwrap_or_else(|| service.to_owned()),
            )
            .build();
        let spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(protocol)
            .with_endpoint(format!("{base}/v1/traces"))
            .with_headers(headers.clone())
            .build()
            .map_err(|e| format!("telemetry.otlp: the span exporter: {e}"))?;
        let metrics = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(protocol)
            .with_endpoint(format!("{base}/v1/metrics"))
            .with_headers(headers)
            .build()
            .map_err(|e| format!("telemetry.otlp: the metric exporter: {e}"))?;
        let tracer = SdkTracerProvider::builder()
            .with_batch_exporter(spans)
            .with_resource(resource.clone())
            .build();
        let meter = SdkMeterProvider::builder()
            .with_reader(
                PeriodicReader::builder(metrics)
                    .with_interval(otlp.export_every)
                    .build(),
            )
            .with_resource(resource)
            .build();
        let telemetry = Telemetry::new(&meter.meter(env!("CARGO_PKG_NAME")));
        Ok(Exporters {
            tracer,
            meter,
            endpoint: base.to_owned(),
            telemetry,
        })
    }

    /// The gauges read `expeditor` (circuit states, the budget) at each export.
    pub fn observe(&self, expeditor: &agent_circuit_breaker::Expeditor) {
        self.telemetry.observe(expeditor);
    }

    /// The tracer the `tracing-opentelemetry` layer sends spans to.
    pub fn tracer(&self) -> opentelemetry_sdk::trace::Tracer {
        self.tracer.tracer(env!("CARGO_PKG_NAME"))
    }

    /// Exports what is left and stops: spans still batched and the last metrics are not
    /// lost when the guard exits. A collector that is gone is a line on stderr.
    pub fn shutdown(self) {
        let endpoint = &self.endpoint;
        if let Err(error) = self.tracer.shutdown() {
            eprintln!(
                "circuit-breaker-guard: telemetry.otlp: the last spans could not be exported to {endpoint}: {error}"
            );
        }
        if let Err(error) = self.meter.shutdown() {
            eprintln!(
                "circuit-breaker-guard: telemetry.otlp: the last metrics could not be exported to {endpoint}: {error}"
            );
        }
    }
}
