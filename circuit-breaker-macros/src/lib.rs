//! Attribute macros for [`circuit-breaker`](https://docs.rs/circuit-breaker).
//!
//! This crate is the compile-time half of the framework. Users depend on `circuit-breaker`
//! alone, which re-exports what this crate provides. The `#[toolbox]` and `#[tool]` macros
//! (parse → check → expand) are being built on top of the runtime's capability map and
//! expeditor; until they land this crate exports nothing.

#![forbid(unsafe_code)]
#![deny(missing_docs)]
