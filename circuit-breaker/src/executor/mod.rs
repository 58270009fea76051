//! The executor's side of the line (R8): what a caller gets back when a tool is called
//! through the expeditor — the value with the route taken (R4.2), the tool's own error
//! untouched (R3.5), or a refusal that says why (B7).
//!
//! [`plan`] turns the expeditor's decisions into the one call to make — the tool, or an
//! adapter through an alternative — without calling anything: the dispatcher `#[toolbox]`
//! generates makes that call, then finishes it (records the outcome through the ticket,
//! labels the value's freshness), within its deadline when the tool has one. The trait of
//! the tool enum `#[toolbox]` generates is in [`toolbox`], the dispatcher by name and JSON
//! arguments in `dispatch`.

mod deadline;
#[cfg(feature = "json")]
pub mod dispatch;
mod finish;
#[cfg(feature = "json")]
mod model_api;
pub mod outcome;
mod plan;
mod refusal;
mod stale;
pub mod toolbox;

pub use deadline::{Deadline, timed_out};
#[cfg(feature = "mcp")]
pub(crate) use finish::failed;
pub use finish::{Freshen, finish_dated, finish_fresh, trace_refusal};
#[cfg(feature = "json")]
pub(crate) use outcome::timed_out_message;
pub use outcome::{CallError, Routed};
pub use plan::{Plan, plan, plan_direct, refuse};
pub use refusal::Refusal;
pub use stale::{keep_last_good, serve_stale};
