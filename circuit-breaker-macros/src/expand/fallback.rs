//! What is emitted instead of the expansion when there are mistakes: the user's item as it was
//! written, with the errors beside it. The item still compiles, so that each mistake is one
//! error at its own token, not a cascade of errors about what was not generated.

use darling::Error;
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};

/// `item` and the errors found, if any.
pub fn with_errors(item: &impl ToTokens, found: darling::Result<()>) -> TokenStream {
    let errors = found.err().map(Error::write_errors);
    quote!(#item #errors)
}

/// A `#[tool]` outside a `#[toolbox]` impl: the item, and the error at the attribute (the
/// macro's call site). Inside one, `#[toolbox]` reads and removes every `#[tool]` first.
pub fn lone_tool(item: TokenStream) -> TokenStream {
    let error = Error::custom(
        "#[tool] only works on a method of an impl block marked #[toolbox]: add #[toolbox] to the impl block, or move this function into one",
    )
    .with_span(&Span::call_site());
    with_errors(&item, Err(error))
}
