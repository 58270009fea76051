//! Attribute macros for [`agent-circuit-breaker`](https://docs.rs/agent-circuit-breaker):
//! `#[toolbox]` on an impl block and `#[tool(..)]` on its methods generate, at compile time,
//! the capability map, the tool enum and a guarded handle that routes every call through the
//! expeditor.
//!
//! Users depend on `agent-circuit-breaker` alone, which re-exports these macros; the grammar
//! and the generated API are documented there. This crate is split in phases, one folder
//! each, and this file only dispatches to them: `parse` reads the attributes' arguments
//! (darling) and the methods' signatures into the model of the toolbox, `check` applies the
//! capability map's rules and resolves every name, `expand` generates from the checked model
//! alone and runs the phases in order. Every mistake is a spanned error of `parse` or
//! `check`, all reported in one compile; `suggest` gives both their "did you mean".

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use proc_macro::TokenStream;

mod check;
mod expand;
mod parse;
mod suggest;

/// Makes an inherent impl block a toolbox: every method marked `#[tool(..)]` becomes a tool
/// with a circuit breaker. See the `agent-circuit-breaker` crate for the grammar: its options
/// are `policy(..)`, `timeout = "30s"` (the deadline of every tool that gives none, B13),
/// `json` and `crate = path`.
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
    expand::toolbox(args.into(), input.into()).into()
}

/// Declares a tool inside a `#[toolbox]` impl block. Outside one it is a compile error: the
/// `#[toolbox]` attribute reads and removes every `#[tool]` of its block.
///
/// Among its keys (the grammar is in the `agent-circuit-breaker` crate), `timeout = "2s"`
/// gives each call a deadline (B13, humantime syntax, 1ms to 1day): an async call still
/// running then is dropped and recorded as a timeout failure; a sync call, which cannot be
/// stopped, is recorded as one when it returns at or after its deadline, and its answer is
/// dropped.
#[proc_macro_attribute]
pub fn tool(_args: TokenStream, input: TokenStream) -> TokenStream {
    expand::lone_tool(input.into()).into()
}

#[cfg(test)]
mod tests;
