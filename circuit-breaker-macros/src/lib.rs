//! Attribute macros for [`circuit-breaker`](https://docs.rs/circuit-breaker): `#[toolbox]` on
//! an impl block and `#[tool(..)]` on its methods generate, at compile time, the capability
//! map, the tool enum and a guarded handle that routes every call through the expeditor.
//!
//! Users depend on `circuit-breaker` alone, which re-exports these macros; the grammar and the
//! generated API are documented there. This crate is split in phases, one file each: `attr`
//! parses the attributes' arguments (darling), `ast` builds the model of the toolbox from them
//! and the methods' signatures, `check` applies the capability map's rules and resolves every
//! name, `expand` generates from the checked model alone. Every mistake is a spanned error of
//! `attr`, `ast` or `check`, all reported in one compile.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use darling::Error;
use proc_macro::TokenStream;
use quote::quote;

mod ast;
mod attr;
mod check;
mod expand;
mod suggest;

/// Makes an inherent impl block a toolbox: every method marked `#[tool(..)]` becomes a tool
/// with a circuit breaker. See the `circuit-breaker` crate for the grammar: its options are
/// `policy(..)`, `timeout = "30s"` (the deadline of every tool that gives none, B13), `json`
/// and `crate = path`.
///
/// Other attributes are passed through untouched, with one exception: nothing may route a
/// tool around its breaker. rmcp's `#[tool_router]` on the impl (above or below `#[toolbox]`:
/// it claims every attribute whose last segment is `tool`), rmcp's `#[tool]` stacked on a tool,
/// and a `ToolRouter` fn of the impl that routes a tool are compile errors. Serve the toolbox
/// with `agent_circuit_breaker::mcp::McpServer`, or keep rmcp's `#[tool]` methods in a
/// `#[tool_router]` impl of another type whose methods call the guarded handle
/// (`tests/ui/pass/rmcp-tool-router-beside-toolbox.rs`).
#[proc_macro_attribute]
pub fn toolbox(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = Error::accumulator();
    let Some(toolbox) = ast::parse(args.into(), input.clone().into(), &mut errors) else {
        let input = proc_macro2::TokenStream::from(input);
        let errors = errors.finish().err().map(Error::write_errors);
        return quote!(#input #errors).into();
    };
    let checked = check::check(&toolbox, &mut errors);
    match (errors.finish(), checked) {
        (Ok(()), Some(checked)) => expand::expand(&checked).into(),
        // The user's impl is still emitted, so one mistake gives one error, not a cascade.
        // (`check` gives no model only with an error pushed.)
        (result, _) => {
            let item = &toolbox.item;
            let errors = result.err().map(Error::write_errors);
            quote!(#item #errors).into()
        }
    }
}

/// Declares a tool inside a `#[toolbox]` impl block. Outside one it is a compile error: the
/// `#[toolbox]` attribute reads and removes every `#[tool]` of its block.
///
/// Among its keys (the grammar is in the `circuit-breaker` crate), `timeout = "2s"` gives
/// each call a deadline (B13, humantime syntax, 1ms to 1day): an async call still running
/// then is dropped and recorded as a timeout failure; a sync call, which cannot be stopped,
/// is recorded as one when it returns at or after its deadline, and its answer is dropped.
#[proc_macro_attribute]
pub fn tool(_args: TokenStream, input: TokenStream) -> TokenStream {
    let input = proc_macro2::TokenStream::from(input);
    // The call site is the `#[tool(..)]` attribute itself.
    let error = Error::custom(
        "#[tool] only works on a method of an impl block marked #[toolbox]: add #[toolbox] to the impl block, or move this function into one",
    )
    .with_span(&proc_macro2::Span::call_site())
    .write_errors();
    quote!(#input #error).into()
}

#[cfg(test)]
mod tests;
