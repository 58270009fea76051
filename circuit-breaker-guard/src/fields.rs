//! The log lines' fields, written as `tracing-subscriber`'s `DefaultFields` writes them.
//!
//! The log layer formats a span's fields when the span opens, whether or not a line is ever
//! written inside it: every guarded call's `execute_tool` span (its tool, server, transport
//! and the like, plain strings) on the way of the call. `DefaultFields` writes each string
//! through `Debug` and the formatting machinery, character by character; a string that
//! `Debug` writes as it is, between quotes, is copied here instead. Everything else goes to
//! `DefaultVisitor` itself, so the text is the same.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing_subscriber::field::{MakeVisitor, VisitFmt, VisitOutput};
use tracing_subscriber::fmt::format::{DefaultFields, DefaultVisitor, Writer};

/// [`DefaultFields`]' text, plain strings copied (see the module's comment).
#[derive(Debug, Default, Clone, Copy)]
pub struct Fields;

impl<'a> MakeVisitor<Writer<'a>> for Fields {
    type Visitor = FieldsVisitor<'a>;

    fn make_visitor(&self, target: Writer<'a>) -> Self::Visitor {
        // The copy writes no colour: a writer that has them (or does not sanitize escapes)
        // is left to `DefaultFields` whole.
        if target.has_ansi_escapes() || !target.sanitizes_ansi_escapes() {
            FieldsVisitor::Default(DefaultFields::new().make_visitor(target))
        } else {
            FieldsVisitor::Plain {
                writer: target,
                is_empty: true,
                result: Ok(()),
            }
        }
    }
}

/// The visitor of [`Fields`].
#[derive(Debug)]
pub enum FieldsVisitor<'a> {
    /// A writer with colours: `DefaultFields`' own visitor.
    Default(DefaultVisitor<'a>),
    /// A plain writer, whose flags are those of [`Writer::new`].
    Plain {
        writer: Writer<'a>,
        is_empty: bool,
        result: fmt::Result,
    },
}

/// Whether `Debug` writes `value` as it is between quotes: printable ASCII, no quote or
/// backslash.
fn plain(value: &str) -> bool {
    value
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
}

/// Whether `DefaultVisitor` writes a field of this name as `name=value`, a string through
/// `Debug`: not the message, a raw identifier, or the `log` crate's metadata.
fn named_plainly(name: &str) -> bool {
    name != "message" && !name.starts_with("r#") && !name.starts_with("log.")
}

/// A writer that tells whether anything was written through it.
struct Noting<'w, 'a> {
    writer: &'w mut Writer<'a>,
    wrote: bool,
}

impl fmt::Write for Noting<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.wrote |= !s.is_empty();
        self.writer.write_str(s)
    }
}

impl FieldsVisitor<'_> {
    /// `DefaultVisitor`'s writing of one field, on the plain writer: `is_empty` is cleared
    /// when it wrote something (it writes nothing for the fields it skips).
    fn delegate(&mut self, record: impl FnOnce(&mut DefaultVisitor<'_>)) {
        match self {
            FieldsVisitor::Default(visitor) => record(visitor),
            FieldsVisitor::Plain {
                writer,
                is_empty,
                result,
            } => {
                if result.is_err() {
                    return;
                }
                let mut noting = Noting {
                    writer,
                    wrote: false,
                };
                // `Writer::new`'s flags (no colours, escapes sanitized) are this writer's.
                let mut visitor = DefaultVisitor::new(Writer::new(&mut noting), *is_empty);
                record(&mut visitor);
                *result = visitor.finish();
                if noting.wrote {
                    *is_empty = false;
                }
            }
        }
    }
}

impl Visit for FieldsVisitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if let FieldsVisitor::Plain {
            writer,
            is_empty,
            result,
        } = self
            && named_plainly(field.name())
            && plain(value)
        {
            if result.is_err() {
                return;
            }
            let separator = if *is_empty { "" } else { " " };
            *is_empty = false;
            *result = (|| {
                writer.write_str(separator)?;
                writer.write_str(field.name())?;
                writer.write_str("=\"")?;
                writer.write_str(value)?;
                writer.write_char('"')
            })();
            return;
        }
        self.delegate(|visitor| visitor.record_str(field, value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.delegate(|visitor| visitor.record_debug(field, value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.delegate(|visitor| visitor.record_f64(field, value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.delegate(|visitor| visitor.record_i64(field, value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.delegate(|visitor| visitor.record_u64(field, value));
    }

    fn record_i128(&mut self, field: &Field, value: i128) {
        self.delegate(|visitor| visitor.record_i128(field, value));
    }

    fn record_u128(&mut self, field: &Field, value: u128) {
        self.delegate(|visitor| visitor.record_u128(field, value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.delegate(|visitor| visitor.record_bool(field, value));
    }

    fn record_bytes(&mut self, field: &Field, value: &[u8]) {
        self.delegate(|visitor| visitor.record_bytes(field, value));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.delegate(|visitor| visitor.record_error(field, value));
    }
}

impl VisitOutput<fmt::Result> for FieldsVisitor<'_> {
    fn finish(self) -> fmt::Result {
        match self {
            FieldsVisitor::Default(visitor) => visitor.finish(),
            FieldsVisitor::Plain { result, .. } => result,
        }
    }
}

impl VisitFmt for FieldsVisitor<'_> {
    fn writer(&mut self) -> &mut dyn fmt::Write {
        match self {
            FieldsVisitor::Default(visitor) => visitor.writer(),
            FieldsVisitor::Plain { writer, .. } => writer,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    /// The lines of a log layer with `fields`, for the same events in the same spans.
    fn lines<N>(fields: N) -> String
    where
        N: for<'w> tracing_subscriber::fmt::FormatFields<'w> + Send + Sync + 'static,
    {
        let out = Arc::new(Mutex::new(Vec::<u8>::new()));
        let sink = Arc::clone(&out);
        let layer = tracing_subscriber::fmt::layer()
            .with_writer(move || Sink(Arc::clone(&sink)))
            .with_ansi(false)
            .with_target(false)
            .without_time()
            .fmt_fields(fields);
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!(
                "execute_tool",
                otel.name = tracing::field::display(format_args!("execute_tool {}", "search")),
                otel.kind = "internal",
                gen_ai.tool.name = "search",
                empty = tracing::field::Empty,
                quoted = "say \"hi\"\\ now",
                unicode = "café\u{301}\n",
                r#type = "raw",
                number = 7_u64,
                flag = true,
            );
            span.record("empty", "later");
            span.in_scope(|| {
                tracing::info!(
                    circuit_breaker.event = "refused",
                    error.type = "circuit_open",
                    log.target = "kept out",
                    count = -3_i64,
                    "refused {}",
                    "search"
                );
                let error = std::io::Error::other("gone \"away\"");
                tracing::warn!(error = &error as &dyn std::error::Error, "failed");
            });
            tracing::info!(first = "no span", "plain");
        });
        String::from_utf8(out.lock().unwrap().clone()).unwrap()
    }

    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_lines_are_default_fields_own() {
        let ours = lines(Fields);
        assert_eq!(ours, lines(DefaultFields::new()));
        assert!(ours.contains("gen_ai.tool.name=\"search\""), "{ours}");
    }

    #[test]
    fn only_printable_ascii_without_quotes_is_plain() {
        assert!(plain("tools/call"));
        assert!(plain(""));
        assert!(!plain("a\"b"));
        assert!(!plain("a\\b"));
        assert!(!plain("tab\t"));
        assert!(!plain("é"));
        assert!(!plain("\u{7f}"));
    }
}
