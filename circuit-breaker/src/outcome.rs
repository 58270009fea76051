//! What the guarded methods of a [`#[toolbox]`](macro@crate::toolbox) return.
//!
//! A guarded method takes its tool's arguments and answers with more than the tool's value:
//! the route taken, or why nothing was called. For a tool returning `R`, a `Result<T, E>`
//! through any alias (`io::Result<T>`), it returns [`Outcome<R>`](Outcome), which is
//! `Result<Routed<T>, CallError<E>>`.
//!
//! ```
//! use agent_circuit_breaker::{CallError, outcome::Outcome, toolbox};
//! use std::io;
//!
//! struct Files;
//!
//! #[toolbox]
//! impl Files {
//!     #[tool(provides = "file content", fallback = "ask the user to paste the file")]
//!     fn read(&self, path: &str) -> io::Result<String> {
//!         Ok(format!("the text of {path}"))
//!     }
//! }
//!
//! let files = GuardedFiles::new(Files);
//! let outcome: Outcome<io::Result<String>> = files.read("notes.txt");
//! match outcome {
//!     Ok(routed) => assert_eq!(routed.value, "the text of notes.txt"),
//!     Err(CallError::Refused(refusal)) => panic!("not called: {refusal}"),
//!     Err(error) => panic!("the tool failed: {error}"),
//! }
//! ```

use crate::executor::{CallError, Routed};

/// What the guarded method of a tool returning `R` returns: the tool's value with the route
/// taken ([`Routed`]), or the tool's own error untouched, or a refusal that says why nothing
/// was called ([`CallError`]). For `R = Result<T, E>`, it is `Result<Routed<T>, CallError<E>>`.
pub type Outcome<R> = Result<Routed<<R as ToolResult>::Ok>, CallError<<R as ToolResult>::Err>>;

/// The return type of a tool: a `Result`, however it is named. Sealed: the breaker records
/// `Ok` as a success and `Err` as a failure, and no other type says which it is.
#[diagnostic::on_unimplemented(
    message = "a #[tool] method must return a `Result<T, E>`, found `{Self}`",
    label = "this is not a `Result`",
    note = "the breaker records `Ok` as a success and `Err` as a failure"
)]
pub trait ToolResult: sealed::Sealed {
    /// The success type, `T`.
    type Ok;
    /// The error type, `E`.
    type Err;
    /// The `Result` itself.
    ///
    /// # Errors
    /// The tool's error, as it returned it.
    fn into_result(self) -> Result<Self::Ok, Self::Err>;
}

impl<T, E> ToolResult for Result<T, E> {
    type Ok = T;
    type Err = E;
    #[inline]
    fn into_result(self) -> Result<T, E> {
        self
    }
}

mod sealed {
    /// Implemented for `Result` alone, so that `ToolResult` is too.
    pub trait Sealed {}

    impl<T, E> Sealed for Result<T, E> {}
}
