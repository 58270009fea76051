//! The guard's one config file (YAML): upstreams, overlay, policy, health, serving, fleet,
//! telemetry, runtime. Every section is read on its own and every unknown key is reported with the
//! closest known one, so that one run names every problem of a file, each at its line.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use agent_circuit_breaker::capability::did_you_mean;
use agent_circuit_breaker::{CapabilityMap, Policy};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_yaml_ng::{Mapping, Value};

use crate::locate::{Seg, line_of};

mod runtime;
mod telemetry;
pub use runtime::{Runtime, check_threads};
#[cfg(feature = "otel")]
pub use telemetry::Otlp;
pub use telemetry::{OtlpProtocol, Telemetry};

/// The top-level keys, in the order the docs give them.
const SECTIONS: [&str; 10] = [
    "upstreams",
    "overlay",
    "policy",
    "health",
    "qualify_names",
    "serve",
    "fleet",
    "telemetry",
    "runtime",
    "name",
];

/// A config, read and checked.
#[derive(Debug)]
pub struct Config {
    /// The name the guard gives in `initialize`.
    pub name: String,
    pub upstreams: Vec<Upstream>,
    pub overlay: Option<CapabilityMap>,
    /// The policy as written; the guard runs it as a service (`Policy::for_service`).
    pub policy: Policy,
    pub health: Health,
    pub qualify_names: Option<String>,
    /// Where to serve: `None` is stdio.
    pub http: Option<Http>,
    pub fleet: Option<Fleet>,
    pub telemetry: Telemetry,
    pub runtime: Runtime,
}

/// One upstream MCP server.
#[derive(Debug, Clone)]
pub struct Upstream {
    pub name: String,
    pub transport: Transport,
    pub deadline: Option<Duration>,
    /// An upstream the guard must not start without: one that fails at startup is fatal.
    /// Any other is down until it answers.
    pub required: bool,
    /// Connections start with `initialize` (2025-11-25 and older), never with discovery.
    pub initialize_only: bool,
}

/// How connections to an upstream start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Lifecycle {
    /// `server/discover` (2026-07-28) first, `initialize` where the upstream does not know it.
    #[default]
    Auto,
    /// `initialize` only: for upstreams whose tools ask the client for sampling, elicitation
    /// or roots, which 2026-07-28 forbids.
    Initialize,
}

#[derive(Debug, Clone)]
pub enum Transport {
    /// A child process over its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// Streamable HTTP.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpstreamSpec {
    name: String,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default, with = "duration")]
    deadline: Option<Duration>,
    #[serde(default)]
    lifecycle: Lifecycle,
    #[serde(default)]
    required: bool,
}

/// Health checks of the upstreams.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Health {
    /// How often down upstreams are probed by `ping`, so that their tools come back to the
    /// offer without a call.
    #[serde(with = "duration_req")]
    pub check_every: Duration,
    /// How long a passed check is trusted.
    #[serde(with = "duration_req")]
    pub ttl: Duration,
    /// How long starting an upstream and its `initialize` may take.
    #[serde(with = "duration_req")]
    pub connect_timeout: Duration,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            check_every: Duration::from_secs(5),
            ttl: agent_circuit_breaker::mcp::DEFAULT_HEALTH_TTL,
            connect_timeout: agent_circuit_breaker::mcp::DEFAULT_CONNECT_TIMEOUT,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServeSpec {
    #[serde(default)]
    http: Option<Http>,
}

/// Streamable HTTP serving.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Http {
    /// The address to listen on: loopback unless said otherwise.
    #[serde(default = "default_bind")]
    pub bind: SocketAddr,
    /// `Origin` headers accepted besides the loopback ones (`scheme://host:port`).
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// The endpoint's path.
    #[serde(default = "default_path")]
    pub path: String,
}

fn default_path() -> String {
    "/mcp".to_owned()
}

fn default_bind() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8931))
}

/// A fleet of guards sharing tool health over Redis.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fleet {
    pub redis: String,
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// This guard's name in the fleet (default: `guard-` and the process id).
    #[serde(default)]
    #[cfg_attr(
        not(feature = "fleet"),
        expect(dead_code, reason = "read by the fleet feature")
    )]
    pub worker: Option<String>,
}

fn default_namespace() -> String {
    "guard".to_owned()
}

/// One problem of a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// 1-based, when it could be found.
    pub line: Option<usize>,
    /// Where in the file: `upstreams[1] (search).deadline`.
    pub at: String,
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(line) = self.line {
            write!(f, "line {line}: ")?;
        }
        if self.at.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.at, self.message)
        }
    }
}

/// Reads and checks a config's text; `env` gives the variables `${NAME}` expands to.
pub fn parse(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, Vec<Problem>> {
    let mut reader = Reader {
        text,
        problems: Vec::new(),
    };
    let root: Value = match serde_yaml_ng::from_str(text) {
        Ok(value) => value,
        Err(error) => {
            let line = error.location().map(|l| l.line());
            return Err(vec![Problem {
                line,
                at: String::new(),
                message: format!("not valid YAML: {}", strip_location(&error.to_string())),
            }]);
        }
    };
    let Value::Mapping(root) = root else {
        return Err(vec![Problem {
            line: Some(1),
            at: String::new(),
            message: "the config must be a mapping with `upstreams:` at least".to_owned(),
        }]);
    };
    for key in root.keys() {
        let name = key_text(key);
        if !SECTIONS.contains(&name.as_str()) {
            reader.unknown(&[], "", &name, &SECTIONS);
        }
    }
    let get = |k: &str| root.get(k).filter(|v| !v.is_null());
    let upstreams = reader.upstreams(get("upstreams"), env);
    let overlay = get("overlay").and_then(|v| reader.overlay(v));
    let policy = match get("policy") {
        Some(v) => reader.typed::<Policy>(v, &[Seg::Key("policy")], "policy"),
        None => Some(Policy::default()),
    };
    let health = match get("health") {
        Some(v) => reader.typed::<Health>(v, &[Seg::Key("health")], "health"),
        None => Some(Health::default()),
    };
    let qualify_names = match get("qualify_names") {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(_) => {
            reader.problem(
                &[Seg::Key("qualify_names")],
                "qualify_names",
                "must be a non-empty text, the separator of `server<sep>tool` (e.g. \"__\")",
            );
            None
        }
        None => None,
    };
    let serve = match get("serve") {
        Some(v) => reader.typed::<ServeSpec>(v, &[Seg::Key("serve")], "serve"),
        None => Some(ServeSpec { http: None }),
    };
    let fleet = get("fleet").map(|v| reader.typed::<Fleet>(v, &[Seg::Key("fleet")], "fleet"));
    let telemetry = telemetry::read(&mut reader, get("telemetry"));
    let runtime = runtime::read(&mut reader, get("runtime"));
    let name = match get("name") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(_) => {
            reader.problem(&[Seg::Key("name")], "name", "must be a non-empty text");
            String::new()
        }
        None => env!("CARGO_PKG_NAME").to_owned(),
    };
    if let Some(raw) = get("overlay") {
        // Named as written, so that an upstream with problems of its own still counts.
        let names: Vec<&str> = get("upstreams")
            .and_then(Value::as_sequence)
            .map(|items| {
                items
                    .iter()
                    .filter_map(|i| i.get("name")?.as_str().map(str::trim))
                    .collect()
            })
            .unwrap_or_default();
        reader.overlay_servers(raw, &names);
    }
    if !reader.problems.is_empty() {
        reader
            .problems
            .sort_by_key(|p| p.line.unwrap_or(usize::MAX));
        return Err(reader.problems);
    }
    match (policy, health, serve, fleet, telemetry, runtime) {
        (Some(policy), Some(health), Some(serve), fleet, Some(telemetry), Some(runtime)) => {
            Ok(Config {
                name,
                upstreams,
                overlay,
                policy,
                health,
                qualify_names,
                http: serve.http,
                fleet: fleet.flatten(),
                telemetry,
                runtime,
            })
        }
        // Each `None` above pushed its problem.
        _ => Err(vec![Problem {
            line: None,
            at: String::new(),
            message: "the config could not be read".to_owned(),
        }]),
    }
}

struct Reader<'t> {
    text: &'t str,
    problems: Vec<Problem>,
}

impl Reader<'_> {
    fn problem(&mut self, path: &[Seg<'_>], at: &str, message: &str) {
        self.problems.push(Problem {
            line: line_of(self.text, path),
            at: at.to_owned(),
            message: message.to_owned(),
        });
    }

    fn unknown(&mut self, parent: &[Seg<'_>], at: &str, key: &str, known: &[&str]) {
        let mut path = parent.to_vec();
        path.push(Seg::Key(key));
        let mut message = format!("unknown key `{key}`");
        match did_you_mean(key, known.iter().copied()) {
            Some(s) => message.push_str(&format!("; did you mean `{s}`?")),
            None => message.push_str(&format!("; known keys: {}", known.join(", "))),
        }
        let at = if at.is_empty() {
            key.to_owned()
        } else {
            format!("{at}.{key}")
        };
        self.problem(&path, &at, &message);
    }

    /// `value` as a `T`, every problem reported: an unknown key is taken out and the rest
    /// read again; so is a key whose value is the problem (found by reading the rest without
    /// it), so that one run names them all.
    fn typed<T: DeserializeOwned>(
        &mut self,
        value: &Value,
        path: &[Seg<'_>],
        at: &str,
    ) -> Option<T> {
        let mut value = value.clone();
        let mut clean = true;
        // Bounded: each round takes one key out.
        for _ in 0..64 {
            let message = match serde_yaml_ng::from_value::<T>(value.clone()) {
                Ok(t) => return clean.then_some(t),
                Err(error) => strip_location(&error.to_string()),
            };
            clean = false;
            let Value::Mapping(map) = &mut value else {
                self.problem(path, at, &message);
                return None;
            };
            if let Some((key, expected)) = unknown_field(&message)
                && map.remove(key.as_str()).is_some()
            {
                let known: Vec<&str> = expected.iter().map(String::as_str).collect();
                self.unknown(path, at, &key, &known);
                continue;
            }
            let Some(key) = culprit::<T>(map, &message) else {
                self.problem(path, at, &message);
                return None;
            };
            map.remove(key.as_str());
            let mut full = path.to_vec();
            full.push(Seg::Key(&key));
            self.problems.push(Problem {
                line: line_of(self.text, &full),
                at: format!("{at}.{key}"),
                message,
            });
        }
        None
    }

    fn upstreams(
        &mut self,
        value: Option<&Value>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Vec<Upstream> {
        let Some(value) = value else {
            self.problem(
                &[],
                "upstreams",
                "no upstream: give at least one under `upstreams:` (a `command:` or a `url:`)",
            );
            return Vec::new();
        };
        let Value::Sequence(items) = value else {
            self.problem(
                &[Seg::Key("upstreams")],
                "upstreams",
                "must be a list (`- name: ...`)",
            );
            return Vec::new();
        };
        let mut out: Vec<Upstream> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let label = match item.get("name").and_then(Value::as_str) {
                Some(name) => format!("upstreams[{i}] ({name})"),
                None => format!("upstreams[{i}]"),
            };
            let path = [Seg::Key("upstreams"), Seg::Index(i)];
            let Some(spec) = self.typed::<UpstreamSpec>(item, &path, &label) else {
                continue;
            };
            if let Some(upstream) = self.upstream(spec, &path, &label, env) {
                if out.iter().any(|u| u.name == upstream.name) {
                    let message = format!("the name `{}` is given twice", upstream.name);
                    self.problem(&path, &label, &message);
                }
                out.push(upstream);
            }
        }
        if items.is_empty() {
            self.problem(
                &[Seg::Key("upstreams")],
                "upstreams",
                "is empty: give at least one",
            );
        }
        out
    }

    fn upstream(
        &mut self,
        spec: UpstreamSpec,
        path: &[Seg<'_>],
        at: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<Upstream> {
        let mut ok = true;
        let name = spec.name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            self.problem(path, at, "`name` must be a non-empty word (no spaces)");
            ok = false;
        }
        let mut expand = |field: &str, text: &str| -> String {
            match expand(text, env) {
                Ok(text) => text,
                Err(message) => {
                    let mut full = path.to_vec();
                    full.push(Seg::Key(field));
                    self.problems.push(Problem {
                        line: line_of(self.text, &full),
                        at: format!("{at}.{field}"),
                        message,
                    });
                    ok = false;
                    String::new()
                }
            }
        };
        let transport = match (&spec.command, &spec.url) {
            (Some(command), None) => {
                let command = expand("command", command);
                let args = spec.args.iter().map(|a| expand("args", a)).collect();
                let env_vars = spec
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), expand("env", v)))
                    .collect();
                if !spec.headers.is_empty() {
                    self.problem(
                        path,
                        at,
                        "`headers` are for a `url:` upstream, not a `command:`",
                    );
                    ok = false;
                }
                Transport::Stdio {
                    command,
                    args,
                    env: env_vars,
                    cwd: spec.cwd,
                }
            }
            (None, Some(url)) => {
                let url = expand("url", url);
                let headers = spec
                    .headers
                    .iter()
                    .map(|(k, v)| (k.clone(), expand("headers", v)))
                    .collect();
                if !(url.starts_with("http://") || url.starts_with("https://") || url.is_empty()) {
                    let message = format!("`{url}` is no http:// or https:// URL");
                    let mut full = path.to_vec();
                    full.push(Seg::Key("url"));
                    self.problem(&full, &format!("{at}.url"), &message);
                    ok = false;
                }
                if !spec.args.is_empty() || !spec.env.is_empty() || spec.cwd.is_some() {
                    self.problem(
                        path,
                        at,
                        "`args`, `env` and `cwd` are for a `command:` upstream, not a `url:`",
                    );
                    ok = false;
                }
                Transport::Http { url, headers }
            }
            (Some(_), Some(_)) => {
                self.problem(path, at, "give either `command:` (a child process) or `url:` (streamable HTTP), not both");
                return None;
            }
            (None, None) => {
                self.problem(
                    path,
                    at,
                    "give `command:` (a child process) or `url:` (streamable HTTP)",
                );
                return None;
            }
        };
        if spec.deadline.is_some_and(|d| d.is_zero()) {
            let mut full = path.to_vec();
            full.push(Seg::Key("deadline"));
            self.problem(&full, &format!("{at}.deadline"), "a deadline of zero");
            ok = false;
        }
        ok.then(|| Upstream {
            name: name.to_owned(),
            transport,
            deadline: spec.deadline,
            initialize_only: spec.lifecycle == Lifecycle::Initialize,
            required: spec.required,
        })
    }

    /// The overlay, each entry read on its own so that every entry's problems are reported.
    fn overlay(&mut self, value: &Value) -> Option<CapabilityMap> {
        let base = [Seg::Key("overlay")];
        let Value::Mapping(map) = value else {
            self.problem(
                &base,
                "overlay",
                "must be a mapping (`capability_map:`, `servers:`)",
            );
            return None;
        };
        let known = ["capability_map", "servers"];
        let mut clean = true;
        let mut kept = Mapping::new();
        for (key, item) in map {
            let name = key_text(key);
            if !known.contains(&name.as_str()) {
                self.unknown(&base, "overlay", &name, &known);
                clean = false;
                continue;
            }
            kept.insert(key.clone(), item.clone());
            if let Value::Sequence(entries) = item {
                let key = if name == "servers" {
                    "servers"
                } else {
                    "capability_map"
                };
                for (i, entry) in entries.iter().enumerate() {
                    let path = [Seg::Key("overlay"), Seg::Key(key), Seg::Index(i)];
                    let label = match entry
                        .get("tool")
                        .or_else(|| entry.get("server"))
                        .and_then(Value::as_str)
                    {
                        Some(n) => format!("overlay.{key}[{i}] ({n})"),
                        None => format!("overlay.{key}[{i}]"),
                    };
                    let read = if key == "servers" {
                        self.typed::<agent_circuit_breaker::ServerSpec>(entry, &path, &label)
                            .map(drop)
                    } else {
                        self.typed::<agent_circuit_breaker::ToolSpec>(entry, &path, &label)
                            .map(drop)
                    };
                    clean &= read.is_some();
                }
            }
        }
        if !clean {
            return None;
        }
        self.typed::<CapabilityMap>(&Value::Mapping(kept), &base, "overlay")
    }

    /// Servers the overlay names (`servers:`, a tool's `server:`) that are no upstream.
    fn overlay_servers(&mut self, overlay: &Value, names: &[&str]) {
        let entries = |key: &str| {
            overlay
                .get(key)
                .and_then(Value::as_sequence)
                .map(|s| s.iter().enumerate().collect::<Vec<_>>())
                .unwrap_or_default()
        };
        for key in ["servers", "capability_map"] {
            for (i, entry) in entries(key) {
                let Some(server) = entry.get("server").and_then(Value::as_str) else {
                    continue;
                };
                if names.contains(&server) {
                    continue;
                }
                // With no upstream named (each one's missing name is a problem of its own),
                // the overlay's servers are still named: one run reports every problem.
                let mut message = format!("server `{server}` is no upstream");
                if names.is_empty() {
                    message.push_str(" (no upstream has a `name:`)");
                } else if let Some(s) = did_you_mean(server, names.iter().copied()) {
                    message.push_str(&format!("; did you mean `{s}`?"));
                }
                let path = [
                    Seg::Key("overlay"),
                    Seg::Key(key),
                    Seg::Index(i),
                    Seg::Key("server"),
                ];
                self.problem(&path, &format!("overlay.{key}[{i}].server"), &message);
            }
        }
    }
}

/// The key of `map` whose value `message` is about: the one without which the message goes
/// away (and is not replaced by that key missing).
fn culprit<T: DeserializeOwned>(map: &Mapping, message: &str) -> Option<String> {
    map.keys().map(key_text).find(|key| {
        let mut rest = map.clone();
        rest.remove(key.as_str());
        match serde_yaml_ng::from_value::<T>(Value::Mapping(rest)) {
            Ok(_) => true,
            Err(error) => {
                let other = strip_location(&error.to_string());
                other != message && !other.contains(&format!("missing field `{key}`"))
            }
        }
    })
}

/// `${NAME}` replaced by the variable's value (an unset one is an error); `$$` is a `$`.
pub fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(after) = after.strip_prefix('$') {
            out.push('$');
            rest = after;
        } else if let Some(body) = after.strip_prefix('{') {
            let Some(end) = body.find('}') else {
                return Err(format!("`${{` without its `}}` in `{text}`"));
            };
            let name = &body[..end];
            match env(name) {
                Some(value) => out.push_str(&value),
                None => {
                    return Err(format!(
                        "`${{{name}}}` is not set in the guard's environment"
                    ));
                }
            }
            rest = &body[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// serde's "unknown field `x`, expected one of `a`, `b`" (or "expected `a`"): the field and
/// the fields it expected.
fn unknown_field(message: &str) -> Option<(String, Vec<String>)> {
    let rest = message.split("unknown field `").nth(1)?;
    let (field, rest) = rest.split_once('`')?;
    let expected = rest
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    Some((field.to_owned(), expected))
}

/// A YAML error's text without its " at line L column C" (the line is given apart).
fn strip_location(message: &str) -> String {
    match message.find(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

fn key_text(key: &Value) -> String {
    match key {
        Value::String(s) => s.clone(),
        other => serde_yaml_ng::to_string(other)
            .map(|s| s.trim().to_owned())
            .unwrap_or_default(),
    }
}

/// Durations as people write them (`20s`, `5m`), optional.
mod duration {
    use std::time::Duration;

    use serde::Deserializer;

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        super::duration_req::deserialize(d).map(Some)
    }
}

mod duration_req {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_duration(&text).map_err(|e| {
            serde::de::Error::custom(format_args!(
                "`{text}` is not a duration ({e}); write e.g. \"20s\", \"5m\""
            ))
        })
    }
}
