//! A capturing `tracing` layer for the B12 tests: every span with its fields and parent,
//! every event with the span it is in. Included by path:
//! `#[path = "common/spans.rs"] mod spans;`.

#![allow(
    dead_code,
    reason = "shared by the B12 tests; not every helper is used in each"
)]

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

#[derive(Debug, Clone, Default)]
pub struct SpanSeen {
    pub id: u64,
    pub name: &'static str,
    pub parent: Option<u64>,
    pub fields: BTreeMap<String, String>,
    pub closed: bool,
}

#[derive(Debug, Clone)]
pub struct EventSeen {
    pub span: Option<u64>,
    pub fields: BTreeMap<String, String>,
}

#[derive(Default)]
struct Seen {
    spans: Vec<SpanSeen>,
    events: Vec<EventSeen>,
}

#[derive(Clone, Default)]
pub struct Capture(Arc<Mutex<Seen>>);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().to_owned(), value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(
            field.name().to_owned(),
            format!("{value:?}").trim_matches('"').to_owned(),
        );
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut span = SpanSeen {
            id: id.into_u64(),
            name: attrs.metadata().name(),
            parent: ctx
                .span(id)
                .and_then(|s| s.parent())
                .map(|p| p.id().into_u64()),
            ..SpanSeen::default()
        };
        attrs.record(&mut Fields(&mut span.fields));
        self.0.lock().unwrap().spans.push(span);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut seen = self.0.lock().unwrap();
        if let Some(span) = seen.spans.iter_mut().rev().find(|s| s.id == id.into_u64()) {
            values.record(&mut Fields(&mut span.fields));
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        let span = ctx.event_span(event).map(|s| s.id().into_u64());
        self.0
            .lock()
            .unwrap()
            .events
            .push(EventSeen { span, fields });
    }

    fn on_close(&self, id: Id, _: Context<'_, S>) {
        let mut seen = self.0.lock().unwrap();
        if let Some(span) = seen.spans.iter_mut().rev().find(|s| s.id == id.into_u64()) {
            span.closed = true;
        }
    }
}

impl Capture {
    /// Runs `f` with this capture as the thread's subscriber.
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        let subscriber = tracing_subscriber::registry().with(self.clone());
        tracing::subscriber::with_default(subscriber, f)
    }

    pub fn calls(&self) -> Vec<SpanSeen> {
        let seen = self.0.lock().unwrap();
        seen.spans
            .iter()
            .filter(|s| s.name == "execute_tool")
            .cloned()
            .collect()
    }

    /// The `circuit_breaker.event` of every event inside `span`, in order.
    pub fn events_in(&self, span: &SpanSeen) -> Vec<String> {
        let seen = self.0.lock().unwrap();
        seen.events
            .iter()
            .filter(|e| e.span == Some(span.id))
            .filter_map(|e| e.fields.get("circuit_breaker.event").cloned())
            .collect()
    }

    pub fn event(&self, span: &SpanSeen, kind: &str) -> BTreeMap<String, String> {
        let seen = self.0.lock().unwrap();
        seen.events
            .iter()
            .find(|e| {
                e.span == Some(span.id)
                    && e.fields.get("circuit_breaker.event").map(String::as_str) == Some(kind)
            })
            .map(|e| e.fields.clone())
            .unwrap_or_else(|| panic!("no {kind} event in {span:?}"))
    }
}

pub fn field<'a>(span: &'a SpanSeen, name: &str) -> Option<&'a str> {
    span.fields.get(name).map(String::as_str)
}

impl Capture {
    /// Makes this capture the thread's subscriber until the guard is dropped (for async tests
    /// on a current-thread runtime, whose spawned tasks run on this thread).
    pub fn set_default(&self) -> tracing::subscriber::DefaultGuard {
        tracing::subscriber::set_default(tracing_subscriber::registry().with(self.clone()))
    }
}
