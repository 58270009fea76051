//! A watch on an expeditor's state: a future that resolves once a command changed something,
//! for views that follow the run without polling.

use super::Expeditor;
use super::signal::Signal;

/// A watch on an expeditor's state ([`Expeditor::watch`]).
#[derive(Debug, Clone)]
pub struct Watch<'a> {
    signal: &'a Signal,
    seen: u64,
}

impl Watch<'_> {
    /// Resolves once the state changed since this watch was made or last resolved; at once
    /// when it already has. Changes while no one waits are not lost: they are seen together.
    pub fn changed(&mut self) -> impl Future<Output = ()> + Send + '_ {
        std::future::poll_fn(move |cx| {
            self.signal.poll_changed(self.seen, cx).map(|now| {
                self.seen = now;
            })
        })
    }

    /// Whether the state changed since this watch was made or last resolved.
    pub fn has_changed(&self) -> bool {
        self.signal.version() != self.seen
    }
}

impl Expeditor {
    /// A watch on this expeditor's state: [`Watch::changed`] resolves once a command has
    /// changed something — a transition, a failure recorded, a precheck, a pause, a cycle —
    /// since the watch was made or last resolved. For a view that follows the run (the tools
    /// offered to a model, a live state table) without polling: look again when it resolves.
    ///
    /// Needs no async runtime: the future is woken by the thread that made the change. The
    /// healthy path (a success on a CLOSED tool) and `advance_step` change nothing a watch
    /// sees; they never touch it.
    pub fn watch(&self) -> Watch<'_> {
        Watch {
            signal: &self.inner.changed,
            seen: self.inner.changed.version(),
        }
    }

    /// How many times the state changed so far, as a [`Watch`] counts: equal counts mean
    /// nothing a watch sees changed in between.
    #[cfg(feature = "mcp")]
    pub(crate) fn change_count(&self) -> u64 {
        self.inner.changed.version()
    }
}
