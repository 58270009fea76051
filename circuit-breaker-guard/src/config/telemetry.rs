//! The `telemetry:` section: the guard's own logs, and OpenTelemetry export over OTLP/HTTP.
//! `otlp:` is read on its own, so that its keys are checked like every section's.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use agent_circuit_breaker::capability::did_you_mean;
use serde::Deserialize;
use serde_yaml_ng::Value;

use super::Reader;
use super::duration_req;
use crate::locate::Seg;

/// The guard's own logs: always to stderr (stdout is the MCP channel on stdio).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Telemetry {
    /// `error`, `warn`, `info`, `debug` or `trace`.
    pub log: String,
    /// A file to append the logs to instead of stderr.
    pub log_file: Option<PathBuf>,
    /// Spans and metrics exported to an OpenTelemetry collector over OTLP/HTTP (read on
    /// its own, so that its keys are checked like every section's).
    #[serde(skip)]
    pub otlp: Option<Otlp>,
}

/// Where and how the guard exports its spans (one `execute_tool` span per call) and metrics
/// (call durations, circuit states, transitions, refusals, routes, the budget).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(
    not(feature = "otel"),
    expect(dead_code, reason = "read by the otel feature")
)]
pub struct Otlp {
    /// The collector's OTLP/HTTP address, e.g. `http://127.0.0.1:4318`: spans go to
    /// `/v1/traces` under it, metrics to `/v1/metrics`.
    pub endpoint: String,
    /// `http/protobuf` (the default) or `http/json`.
    #[serde(default)]
    pub protocol: OtlpProtocol,
    /// Sent with every export (an API key, say; `${VAR}` keeps it out of the file).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// How often metrics are exported.
    #[serde(default = "default_export_every", with = "duration_req")]
    pub export_every: Duration,
    /// `service.name` of what is exported (default: the guard's `name`).
    #[serde(default)]
    pub service_name: Option<String>,
}

/// OTLP's encodings over HTTP.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub enum OtlpProtocol {
    #[default]
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
    #[serde(rename = "http/json")]
    HttpJson,
}

fn default_export_every() -> Duration {
    Duration::from_secs(10)
}

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry {
            log: "info".to_owned(),
            log_file: None,
            otlp: None,
        }
    }
}

/// The section `value` (absent: the defaults), every problem reported to `reader`.
pub(super) fn read(reader: &mut Reader<'_>, value: Option<&Value>) -> Option<Telemetry> {
    let telemetry = match value {
        Some(v) => {
            let mut rest = v.clone();
            let otlp = match &mut rest {
                Value::Mapping(map) => map.remove("otlp"),
                _ => None,
            };
            let otlp_path = [Seg::Key("telemetry"), Seg::Key("otlp")];
            let otlp = otlp.map(|o| reader.typed::<Otlp>(&o, &otlp_path, "telemetry.otlp"));
            let telemetry = reader.typed::<Telemetry>(&rest, &[Seg::Key("telemetry")], "telemetry");
            match (telemetry, otlp) {
                (Some(telemetry), None) => Some(telemetry),
                (Some(telemetry), Some(Some(otlp))) => Some(Telemetry {
                    otlp: Some(otlp),
                    ..telemetry
                }),
                // Each `None` pushed its problem.
                _ => None,
            }
        }
        None => Some(Telemetry::default()),
    };
    if let Some(t) = &telemetry
        && !["error", "warn", "info", "debug", "trace"].contains(&t.log.as_str())
    {
        let levels = ["error", "warn", "info", "debug", "trace"];
        let mut message = format!("unknown log level `{}`", t.log);
        if let Some(s) = did_you_mean(&t.log, levels) {
            message.push_str(&format!("; did you mean `{s}`?"));
        } else {
            message.push_str("; one of error, warn, info, debug, trace");
        }
        let path = [Seg::Key("telemetry"), Seg::Key("log")];
        reader.problem(&path, "telemetry.log", &message);
    }
    if let Some(otlp) = telemetry.as_ref().and_then(|t| t.otlp.as_ref())
        && !(otlp.endpoint.starts_with("http://") || otlp.endpoint.starts_with("https://"))
    {
        let path = [
            Seg::Key("telemetry"),
            Seg::Key("otlp"),
            Seg::Key("endpoint"),
        ];
        let message = format!(
            "`{}` is no http:// or https:// address (OTLP over HTTP, e.g. http://127.0.0.1:4318)",
            otlp.endpoint
        );
        reader.problem(&path, "telemetry.otlp.endpoint", &message);
    }
    telemetry
}
