//! The calls of sync generated methods whose spans are open on this thread, kept here rather
//! than in the registry's extensions of their spans: such a span is entered once when it
//! opens and left on the same thread when the call returns or unwinds, so a short per-thread
//! list holds it without the extensions' allocation, map and span look-ups.

use std::cell::{Cell, RefCell};

use super::layer::Call;

/// How many open calls a thread keeps here (nested guarded calls); a call opened while it is
/// full goes to its span's extensions, as any other.
const KEPT: usize = 16;

/// One open call: the layer that keeps it (two layers, of two subscribers, may see spans of
/// the same id), its span, how many times the span is entered, what the layer knows so far.
struct Open {
    layer: u64,
    span: u64,
    entered: u32,
    call: Call,
}

thread_local! {
    static OPEN: RefCell<Vec<Open>> = const { RefCell::new(Vec::new()) };
    /// The span (and its layer) whose call was measured when it was left, until the next
    /// callback on this thread: its close, which comes next, then has nothing to look up.
    static LEFT: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
}

/// Where `span` of `layer` is in this thread's open calls: the latest, as nested calls are
/// pushed after their callers'.
fn position(open: &[Open], layer: u64, span: u64) -> Option<usize> {
    open.iter()
        .rposition(|o| o.layer == layer && o.span == span)
}

/// Forgets [`LEFT`]: any callback but the close that follows the leaving (a new span may
/// take the id of one that closed elsewhere).
pub(super) fn forget_left() {
    let _ = LEFT.try_with(|left| left.set(None));
}

/// Keeps `call` for `span` of `layer`; gives it back when this thread keeps as many as it may
/// (or is being torn down).
pub(super) fn keep(layer: u64, span: u64, call: Call) -> Result<(), Call> {
    let mut call = Some(call);
    let kept = OPEN.try_with(|open| {
        let Ok(mut open) = open.try_borrow_mut() else {
            return false;
        };
        // A span id is reused only once its span has closed: an entry of the same id is
        // stale, its span closed without this thread seeing it left.
        open.retain(|o| !(o.layer == layer && o.span == span));
        if open.len() >= KEPT {
            return false;
        }
        if open.capacity() == 0 {
            open.reserve_exact(KEPT);
        }
        if let Some(call) = call.take() {
            open.push(Open {
                layer,
                span,
                entered: 0,
                call,
            });
        }
        true
    });
    match (kept, call) {
        (Ok(true), _) | (_, None) => Ok(()),
        (_, Some(call)) => Err(call),
    }
}

/// Runs `f` on the call kept for `span` of `layer`, if this thread keeps it.
pub(super) fn with<R>(layer: u64, span: u64, f: impl FnOnce(&mut Call) -> R) -> Option<R> {
    forget_left();
    OPEN.try_with(|open| {
        let mut open = open.try_borrow_mut().ok()?;
        let at = position(&open, layer, span)?;
        Some(f(&mut open[at].call))
    })
    .ok()
    .flatten()
}

/// The span was entered on this thread.
pub(super) fn enter(layer: u64, span: u64) {
    forget_left();
    let _ = OPEN.try_with(|open| {
        if let Ok(mut open) = open.try_borrow_mut()
            && let Some(at) = position(&open, layer, span)
        {
            open[at].entered += 1;
        }
    });
}

/// The span was left on this thread: its call, taken out, when it is no longer entered (the
/// call returned).
pub(super) fn exit(layer: u64, span: u64) -> Option<Call> {
    forget_left();
    let call = OPEN
        .try_with(|open| {
            let mut open = open.try_borrow_mut().ok()?;
            let at = position(&open, layer, span)?;
            let one = &mut open[at];
            one.entered = one.entered.saturating_sub(1);
            (one.entered == 0).then(|| open.remove(at).call)
        })
        .ok()
        .flatten();
    if call.is_some() {
        let _ = LEFT.try_with(|left| left.set(Some((layer, span))));
    }
    call
}

/// What this thread knows of a span that closed.
pub(super) enum Closed {
    /// Its call, still kept (a span closed without being left).
    Kept(Call),
    /// Its call was measured when it was left, just before.
    Measured,
    /// Nothing: its call, if any, is in its extensions.
    Unknown,
}

/// The span closed: its call taken out, if this thread still keeps it.
pub(super) fn close(layer: u64, span: u64) -> Closed {
    if LEFT
        .try_with(|left| left.take() == Some((layer, span)))
        .unwrap_or(false)
    {
        return Closed::Measured;
    }
    OPEN.try_with(|open| {
        let mut open = open.try_borrow_mut().ok()?;
        let at = position(&open, layer, span)?;
        Some(open.remove(at).call)
    })
    .ok()
    .flatten()
    .map_or(Closed::Unknown, Closed::Kept)
}
