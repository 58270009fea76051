//! What is emitted instead of the expansion when there are mistakes: the user's item as it was
//! written, with the errors beside it. The item still compiles, so that each mistake is one
//! error at its own token, not a cascade of errors about what was not generated.

use darling::Error;
use proc_macro2::{Span, TokenStream};
use quote::{ToTokens, quote};

/// `item` and the errors found, if any.
pub fn with_errors(item: &impl ToTokens, found: darling::Result<()>) -> TokenStream {
    let errors = found.err().map(reworded);
    quote!(#item #errors)
}

/// Every error as a `compile_error!`, darling's own messages ("Unknown field: `x`. Did you
/// mean `y`?") reworded in the style of ours, so that all read alike: lowercase, "key" for
/// what the attributes call keys, and the list a key was in (`policy(..)`) named.
fn reworded(found: Error) -> TokenStream {
    found
        .flatten()
        .into_iter()
        .map(|error| {
            // With a span, darling's message leaves out the list the key was in; its
            // `Display` ends with it (` at policy`).
            let full = error.to_string();
            let error = syn::Error::from(error);
            let message = error.to_string();
            let within = full
                .strip_prefix(message.as_str())
                .and_then(|rest| rest.strip_prefix(" at "))
                .and_then(|path| path.rsplit('/').next())
                .filter(|list| !list.is_empty());
            syn::Error::new(error.span(), reword(&message, within)).into_compile_error()
        })
        .collect()
}

/// One of darling's messages in the style of ours; ours pass unchanged.
fn reword(message: &str, within: Option<&str>) -> String {
    let inside = within.map_or_else(String::new, |list| format!(" in `{list}(..)`"));
    let after = |rest: &str| {
        rest.replacen(". Did you mean ", "; did you mean ", 1)
            .replacen(". Available values: ", "; expected one of ", 1)
    };
    if let Some(rest) = message.strip_prefix("Unknown field: ") {
        let (key, rest) = split_quoted(rest);
        return format!("unknown key {key}{inside}{}", after(rest));
    }
    if let Some(rest) = message.strip_prefix("Unknown value: ") {
        let (value, rest) = split_quoted(rest);
        return format!("unknown value {value}{inside}{}", after(rest));
    }
    if let Some(key) = message.strip_prefix("Duplicate field ") {
        return format!("{key} is given twice{inside}; keep one");
    }
    if let Some(key) = message.strip_prefix("Missing field ") {
        return format!("missing key {key}{inside}");
    }
    let of = within.map_or_else(String::new, |key| format!(" for `{key}`"));
    if let Some(ty) = message.strip_prefix("Unexpected type ") {
        return format!("unexpected value of type {ty}{of}");
    }
    if let Some(form) = message.strip_prefix("Unexpected meta-item format ") {
        return format!("unexpected {form} form{of}");
    }
    lowercase_first(message)
}

/// `` `x`. Did you mean .. `` split after the quoted name.
fn split_quoted(text: &str) -> (&str, &str) {
    let end = text
        .char_indices()
        .filter(|&(_, c)| c == '`')
        .nth(1)
        .map_or(text.len(), |(i, _)| i + 1);
    text.split_at(end)
}

/// `Too many items` → `too many items`; a leading acronym (`JSON`) is kept.
fn lowercase_first(message: &str) -> String {
    let mut chars = message.chars();
    match (chars.next(), chars.next()) {
        (Some(first), Some(second))
            if first.is_ascii_uppercase() && !second.is_ascii_uppercase() =>
        {
            format!("{}{}", first.to_ascii_lowercase(), &message[1..])
        }
        _ => message.to_owned(),
    }
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
