//! An adapter's types compared with its tool's (`via = f`). The handle calls an adapter in its
//! tool's place, with the tool's arguments, and answers what it returns as the tool's answer,
//! so the two signatures must be the same. Left to rustc, a mismatch is reported inside the
//! generated call, with guesses that make no sense there (`url.to_string()` at `via`). Here
//! the arguments and the answer go through a local trait implemented only when the adapter's
//! types are the tool's: a mismatch is one error at `via` whose message spells the signature
//! the adapter should have, and the call type-checks either way, so nothing else is reported.

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote, quote_spanned};
use syn::Ident;

use super::span::respan;
use crate::check::{AdapterTypes, Checked, CheckedTool, MethodRef};

/// What the call of one adapter goes through: `None` for an adapter whose types cannot be
/// written in the generated code (generic, `Self`, `impl Trait`) or are its tool's, called
/// as the tool would be.
pub struct Signature {
    /// The local traits, at the start of the block that calls the adapter.
    pub items: TokenStream,
    /// `<(adapter's types) as __CbSignatureOf..<(tool's types)>>`, spanned at `via`.
    path: TokenStream,
}

/// The signature check of `via`, an adapter of `tool`.
pub fn signature(tool: &CheckedTool<'_>, via: &MethodRef) -> Option<Signature> {
    let types = compared(tool, via)?;
    let span = via.ident.span();
    let trait_ident = trait_ident(via);
    let items = items(tool, via, types, &trait_ident);
    let sig = &tool.tool.sig;
    let tool_params = sig.params.iter().map(|p| &p.ty);
    let tool_output = &sig.output;
    let (params, output) = (&types.params, &types.output);
    // Everything at `via`: rustc reports the unmet bound at the type it is asked of.
    let adapter = respan(quote!(((#(#params,)*), #output)), span);
    let path = quote_spanned! {span=>
        <#adapter as #trait_ident<((#(#tool_params,)*), #tool_output)>>
    };
    Some(Signature { items, path })
}

/// The adapter's types when the generated call must compare them with its tool's: `None`
/// when they cannot be written, or are written as the tool's, token for token. Types spelled
/// alike in one impl are the same types, so the check could not fail, and the adapter is
/// called as the tool would be; rustc spends some 3 M instructions on each check's trait and
/// calls (BENCHMARKS.md, "Compile cost").
fn compared<'m>(tool: &CheckedTool<'_>, via: &'m MethodRef) -> Option<&'m AdapterTypes> {
    let types = via.types.as_ref()?;
    let sig = &tool.tool.sig;
    let same = |a: &syn::Type, b: &syn::Type| {
        a.to_token_stream().to_string() == b.to_token_stream().to_string()
    };
    let alike = types.params.len() == sig.params.len()
        && types
            .params
            .iter()
            .zip(&sig.params)
            .all(|(a, p)| same(a, &p.ty))
        && same(&types.output, &sig.output);
    (!alike).then_some(types)
}

impl Signature {
    /// The names the tool's arguments have once passed on as the adapter's.
    pub fn temporaries(&self, count: usize) -> Vec<Ident> {
        (0..count)
            .map(|i| format_ident!("__cb_adapter_arg{i}"))
            .collect()
    }

    /// `let (temporaries..) = <..>::arguments((args..));`
    pub fn arguments(&self, args: &[&Ident], temporaries: &[Ident]) -> TokenStream {
        let path = &self.path;
        quote!(let (#(#temporaries,)*) = #path::arguments((#(#args,)*));)
    }

    /// `<..>::output(answer)`: the adapter's answer as the tool's.
    pub fn output(&self, answer: &TokenStream) -> TokenStream {
        let path = &self.path;
        quote!(#path::output(#answer))
    }
}

/// `__CbSignatureOfGrepWithRg` for `via = grep_with_rg`: rustc names the trait in its help
/// line, by its name alone when no other trait of the crate has it.
fn trait_ident(via: &MethodRef) -> Ident {
    let name = via.ident.to_string();
    let camel: String = name
        .trim_start_matches("r#")
        .split('_')
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
        })
        .collect();
    format_ident!("__CbSignatureOf{camel}")
}

/// The adapter's local trait, `trait_ident`, with the message, implemented for a pair of
/// (arguments, answer) types by itself alone; the pair is taken apart by the toolbox's one
/// `__CbAdapterParts` ([`parts`]).
fn items(
    tool: &CheckedTool<'_>,
    via: &MethodRef,
    types: &AdapterTypes,
    trait_ident: &Ident,
) -> TokenStream {
    let message = escape(&format!(
        "adapter `{}` must have the signature of tool `{}`: `{}`",
        via.ident, tool.tool.name, types.expected
    ));
    let label = escape(&format!(
        "its argument or return types are not those of `{}`",
        tool.tool.ident
    ));
    let note = "the guarded handle calls an adapter in its tool's place, with the tool's arguments, and answers what it returns";
    quote! {
        #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
        trait #trait_ident<Tool: __CbAdapterParts>: __CbAdapterParts {
            fn arguments(arguments: Tool::Arguments) -> Self::Arguments;
            fn output(output: Self::Output) -> Tool::Output;
        }
        impl<T: __CbAdapterParts> #trait_ident<T> for T {
            #[inline]
            fn arguments(arguments: T::Arguments) -> T::Arguments {
                arguments
            }
            #[inline]
            fn output(output: T::Output) -> T::Output {
                output
            }
        }
    }
}

/// `__CbAdapterParts`, which takes a pair of (arguments, answer) types apart: once in the
/// generated `const` block when some adapter's signature is checked, rather than beside each
/// adapter's trait (a trait and an impl fewer for rustc to check per adapter).
pub fn parts(checked: &Checked<'_>) -> TokenStream {
    let checks = checked.tools.iter().any(|tool| {
        tool.adapters()
            .any(|(via, _)| compared(tool, via).is_some())
    });
    if !checks {
        return TokenStream::new();
    }
    quote! {
        trait __CbAdapterParts {
            type Arguments;
            type Output;
        }
        impl<A, R> __CbAdapterParts for (A, R) {
            type Arguments = A;
            type Output = R;
        }
    }
}

/// `{` and `}` doubled: `on_unimplemented` reads them as placeholders.
fn escape(text: &str) -> String {
    text.replace('{', "{{").replace('}', "}}")
}
