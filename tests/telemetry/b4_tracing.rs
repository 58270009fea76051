//! B4: every event also goes to `tracing` (target `circuit_breaker`). A minimal subscriber
//! captures them. This file holds a single test so that no other test thread touches
//! `tracing`'s global callsite cache while the subscriber is installed.

#[path = "../common/mod.rs"]
mod common;

use std::fmt;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Level, Metadata, Subscriber};

use common::{fail, open3, seed_expeditor};

#[derive(Debug, Clone, PartialEq)]
struct Captured {
    level: Level,
    target: String,
    message: String,
    event: String,
    tool: String,
}

/// Records every event with its level, target and the fields the crate sets.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Captured>>>);

#[derive(Default)]
struct Fields {
    message: String,
    event: String,
    tool: String,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "circuit_breaker.event" => self.event = value.to_owned(),
            "circuit_breaker.tool" => self.tool = value.to_owned(),
            "message" => self.message = value.to_owned(),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let text = format!("{value:?}");
        match field.name() {
            "message" => self.message = text,
            "circuit_breaker.event" => self.event = text.trim_matches('"').to_owned(),
            "circuit_breaker.tool" => self.tool = text.trim_matches('"').to_owned(),
            _ => {}
        }
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        self.0.lock().unwrap().push(Captured {
            level: *event.metadata().level(),
            target: event.metadata().target().to_owned(),
            message: fields.message,
            event: fields.event,
            tool: fields.tool,
        });
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

#[test]
fn b4_events_go_to_tracing() {
    let capture = Capture::default();
    tracing::subscriber::with_default(capture.clone(), || {
        let (expeditor, _clock) = seed_expeditor();
        open3(&expeditor, "Bash");
        let bash = expeditor.tool("Bash").unwrap();
        let kinds: Vec<&str> = (0..3).map(|_| expeditor.decide(bash).kind()).collect();
        assert_eq!(
            kinds,
            ["SKIP", "SKIP", "PROBE"],
            "the probe is dropped unrecorded"
        );
        fail(&expeditor, "Grep", "a");
        fail(&expeditor, "Grep", "b");
    });
    let captured = capture.0.lock().unwrap().clone();
    let ours: Vec<&Captured> = captured
        .iter()
        .filter(|c| c.target == "circuit_breaker")
        .collect();
    let summary: Vec<(Level, &str, &str)> = ours
        .iter()
        .map(|c| (c.level, c.event.as_str(), c.tool.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            (Level::WARN, "opened", "Bash"),
            (Level::INFO, "half_opened", "Bash"),
            (Level::INFO, "probe_released", "Bash"),
            (Level::WARN, "budget_exhausted", ""),
        ],
        "{captured:#?}"
    );
    assert_eq!(
        *ours[0],
        Captured {
            level: Level::WARN,
            target: "circuit_breaker".into(),
            message: "Circuit OPENED for Bash: 3 consecutive failures".into(),
            event: "opened".into(),
            tool: "Bash".into(),
        }
    );
    assert_eq!(
        ours[3].message,
        "FAILURE BUDGET EXHAUSTED — PAUSING (5 / 5 consumed)"
    );
}
