//! The id a model gave the tool call being made on this thread (B18): OpenAI's
//! `tool_call.id` / `call_id`, Anthropic's `tool_use.id`, Gemini's `functionCall.id`, an MCP
//! request's id. Whoever knows it says so once, around the call; the `execute_tool` span, the
//! ledger line of a failure, the reply and the note for the model read it from here, so that
//! neither the generated code nor the ticket has to carry it.

use std::cell::Cell;
#[cfg(feature = "json")]
use std::future::Future;
#[cfg(feature = "json")]
use std::pin::Pin;
use std::sync::Arc;
#[cfg(feature = "json")]
use std::task::{Context, Poll};

/// The longest call id kept, in characters. Every model API's ids are far shorter (a few dozen
/// characters); a longer one is no provider's, and is cut rather than copied into every
/// ledger line and span.
pub const MAX_CALL_ID: usize = 256;

thread_local! {
    /// The id of the call being made on this thread, if its caller gave one.
    static CURRENT: Cell<Option<Arc<str>>> = const { Cell::new(None) };
    /// Whether `CURRENT` holds an id: a flag with no destructor, so that asking on a call
    /// made without an id (the usual case: every failure asks) is one thread-local load, not
    /// the destructor-registered `CURRENT`'s take, clone and put back.
    static SET: Cell<bool> = const { Cell::new(false) };
}

/// Sets this thread's id, keeping [`SET`] in step; returns the one it replaces.
fn replace_current(id: Option<Arc<str>>) -> Option<Arc<str>> {
    SET.with(|set| set.set(id.is_some()));
    CURRENT.with(|current| current.replace(id))
}

/// Runs `f` as the tool call with id `id` (B18): every guarded call made inside it records
/// the id as `gen_ai.tool.call.id` on its `execute_tool` span, on the ledger line of its
/// failure ([`LedgerEntry::call_id`](crate::report::LedgerEntry::call_id)), in the reply of
/// the JSON dispatcher (`dispatch::Reply::call_id`) and in the note for a refusal
/// ([`ModelNote::call_id`](crate::report::ModelNote::call_id)).
///
/// For a sync call: a typed method of the guarded handle, or the handle's
/// `call(name, arguments)`. An async call is given its id by `ToolDispatch::dispatch_call`
/// (feature `json`), which keeps it across the threads the future runs on. An empty id is no
/// id (Gemini's calls may come without one); an id longer than [`MAX_CALL_ID`] characters is
/// cut to that length.
///
/// ```
/// # use agent_circuit_breaker::toolbox;
/// # struct Tools;
/// # #[toolbox]
/// # impl Tools {
/// #     #[tool(provides = "greets", fallback = "say hello yourself")]
/// #     fn hello(&self) -> Result<String, std::io::Error> { Ok("hello".into()) }
/// # }
/// use agent_circuit_breaker::telemetry::with_call_id;
///
/// let tools = GuardedTools::new(Tools);
/// let answer = with_call_id("call_7", || tools.hello());
/// assert_eq!(answer.unwrap().value, "hello");
/// ```
pub fn with_call_id<R>(id: &str, f: impl FnOnce() -> R) -> R {
    in_call(call_id(id), f)
}

/// Runs `f` as the call with `id` (kept as [`call_id`] keeps it), or as a call without one.
pub(crate) fn in_call<R>(id: Option<Arc<str>>, f: impl FnOnce() -> R) -> R {
    let _scope = Scope::enter(id);
    f()
}

/// The id as kept: `None` for an empty one, cut to [`MAX_CALL_ID`] characters.
pub(crate) fn call_id(id: &str) -> Option<Arc<str>> {
    if id.is_empty() {
        return None;
    }
    match id.char_indices().nth(MAX_CALL_ID) {
        Some((end, _)) => Some(Arc::from(&id[..end])),
        None => Some(Arc::from(id)),
    }
}

/// The id of the call being made on this thread, if its caller gave one.
pub(crate) fn current_call_id() -> Option<Arc<str>> {
    if !SET.with(Cell::get) {
        return None;
    }
    CURRENT.with(|current| {
        let id = current.take();
        current.set(id.clone());
        id
    })
}

/// [`current_call_id`], as an owned string (what the records keep).
#[inline]
pub(crate) fn current_call_id_string() -> Option<String> {
    if !SET.with(Cell::get) {
        return None;
    }
    current_call_id().map(|id| id.to_string())
}

/// The id set for as long as the scope lives; the one before it (an outer call's) is put back
/// when it ends, also when `f` panics.
struct Scope {
    before: Option<Arc<str>>,
}

impl Scope {
    fn enter(id: Option<Arc<str>>) -> Scope {
        Scope {
            before: replace_current(id),
        }
    }

    /// Ends the scope, giving back the id it held.
    #[cfg(feature = "json")]
    fn leave(mut self) -> Option<Arc<str>> {
        let before = self.before.take();
        let id = replace_current(before);
        std::mem::forget(self);
        id
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        let before = self.before.take();
        drop(replace_current(before));
    }
}

/// A future polled as the call with an id: the id is this thread's while the future is
/// polled, and only then, so it follows the future from thread to thread and never leaks to
/// another task.
#[cfg(feature = "json")]
pub(crate) struct WithCallId<F> {
    id: Option<Arc<str>>,
    future: F,
}

#[cfg(feature = "json")]
impl<F> WithCallId<F> {
    pub(crate) fn new(id: Option<Arc<str>>, future: F) -> Self {
        WithCallId { id, future }
    }
}

#[cfg(feature = "json")]
impl<F: Future + Unpin> Future for WithCallId<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let scope = Scope::enter(this.id.take());
        let poll = Pin::new(&mut this.future).poll(cx);
        this.id = scope.leave();
        poll
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b18_a_call_id_is_set_inside_its_scope_only_and_nests() {
        assert_eq!(current_call_id(), None);
        with_call_id("outer", || {
            assert_eq!(current_call_id().as_deref(), Some("outer"));
            with_call_id("inner", || {
                assert_eq!(current_call_id().as_deref(), Some("inner"));
            });
            assert_eq!(current_call_id().as_deref(), Some("outer"));
            with_call_id("", || assert_eq!(current_call_id(), None));
        });
        assert_eq!(current_call_id(), None);
    }

    #[test]
    fn b18_a_call_id_is_put_back_after_a_panic_and_long_ids_are_cut() {
        let caught = std::panic::catch_unwind(|| with_call_id("x", || panic!("the tool")));
        assert!(caught.is_err());
        assert_eq!(current_call_id(), None);
        let long = "é".repeat(MAX_CALL_ID + 10);
        let kept = call_id(&long).unwrap();
        assert_eq!(kept.chars().count(), MAX_CALL_ID);
    }

    #[cfg(feature = "json")]
    #[test]
    fn b18_a_future_holds_its_call_id_only_while_it_is_polled() {
        let mut seen = None;
        let future = std::future::poll_fn(|_| {
            seen = current_call_id();
            Poll::Ready(())
        });
        let mut wrapped = WithCallId::new(call_id("call_9"), future);
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert!(Pin::new(&mut wrapped).poll(&mut cx).is_ready());
        assert_eq!(seen.as_deref(), Some("call_9"));
        assert_eq!(current_call_id(), None);
    }
}
