//! How generated code names the runtime. Everything it calls is reached by an absolute path
//! through one alias, `_cb` (`use ::agent_circuit_breaker as _cb;`, or the `crate = path` of
//! the toolbox), so that nothing in the user's scope can shadow it.
//!
//! What only generated code calls lives in the runtime's hidden module, free to change in any
//! release. Its name carries the runtime's release line, as thiserror's `__private17` does:
//! the runtime pins this crate to its own version, and should generated code still meet a
//! runtime of another line, it fails at the module's name, not with errors deep inside the
//! expansion.

use proc_macro2::{Ident, Punct, Spacing, Span, TokenStream};
use quote::{ToTokens, TokenStreamExt};

/// The runtime's hidden module. Renamed with each release line (`__private_v0_2` for 0.2), in
/// step with its `mod` line in the runtime's `lib.rs`.
pub const PRIVATE_MODULE: &str = "__private_v0_1";

/// The alias of the runtime crate inside the generated `const _: () = { .. };` block.
const ALIAS: &str = "_cb";

/// The runtime crate through the alias, `_cb`, for its public items.
pub const RUNTIME: RuntimePath = RuntimePath {
    private: false,
    span: None,
};

/// The hidden module through the alias, `_cb::__private_v0_1`.
pub const PRIVATE: RuntimePath = RuntimePath {
    private: true,
    span: None,
};

/// Tokens of `_cb` or `_cb::__private_v0_1`, at the macro's call site, or at a span of the
/// user's input ([`RuntimePath::at`]) where an error about what the path names is to point.
#[derive(Clone, Copy)]
pub struct RuntimePath {
    private: bool,
    span: Option<Span>,
}

impl RuntimePath {
    /// The same path, spanned at `span`.
    pub fn at(self, span: Span) -> Self {
        RuntimePath {
            span: Some(span),
            ..self
        }
    }
}

impl ToTokens for RuntimePath {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let span = self.span.unwrap_or_else(Span::call_site);
        tokens.append(Ident::new(ALIAS, span));
        if self.private {
            path_separator(tokens, span);
            tokens.append(Ident::new(PRIVATE_MODULE, span));
        }
    }
}

/// The hidden module's name, for a path from the runtime crate outside the `const` block.
pub fn module() -> Ident {
    Ident::new(PRIVATE_MODULE, Span::call_site())
}

/// `_cb::__private_v0_1::<item>` as text, for attributes that take a path in a string
/// (`#[serde(crate = "..")]`).
pub fn private_path(item: &str) -> String {
    format!("{ALIAS}::{PRIVATE_MODULE}::{item}")
}

fn path_separator(tokens: &mut TokenStream, span: Span) {
    let mut first = Punct::new(':', Spacing::Joint);
    first.set_span(span);
    let mut second = Punct::new(':', Spacing::Alone);
    second.set_span(span);
    tokens.append(first);
    tokens.append(second);
}
