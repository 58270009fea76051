//! The functions a tool's answer is read with after the call: what its error says about the
//! failure (category, blame) and when its value says it is from (R6.3). Both are chosen by
//! autoref on the concrete type, so they are written where the type is known, in generated
//! code; the runtime takes them as function pointers.
//!
//! One pair per return type, shared by every tool (and adapter) answering it, rather than two
//! closures per call site: the autoref probe is the costliest thing rustc checks in a guarded
//! method, and a toolbox's tools mostly share a few return types (100 tools of one type:
//! rustc's instructions for the crate 1,706 M → 1,552 M, BENCHMARKS.md). A type that cannot be
//! written outside the method (generics, `Self`, a lifetime, a reference), or is not spelled
//! as a `Result`, keeps its closures.

use std::cell::RefCell;

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::Type;

use super::runtime::PRIVATE;
use super::span::{kept, over};
use crate::check::{Checked, CheckedTool};
use crate::parse::nameable;

/// The shared functions of one toolbox, made as its methods ask for them.
pub struct OutcomeFns {
    /// Whether any type can be shared: not when the impl has generics, which a function
    /// outside it could not name.
    enabled: bool,
    /// The return types that have their functions, by their tokens, in the order first asked.
    types: RefCell<Vec<(String, Type)>>,
}

impl OutcomeFns {
    pub fn new(checked: &Checked<'_>) -> Self {
        OutcomeFns {
            enabled: checked.toolbox.item.generics.params.is_empty(),
            types: RefCell::new(Vec::new()),
        }
    }

    /// The function reading a tool's error as a failure: the shared one of the tool's
    /// [`index`](Self::index), or a closure.
    pub fn failure(index: Option<usize>) -> TokenStream {
        match index {
            Some(i) => format_ident!("__cb_failure_{}", i).into_token_stream(),
            None => quote!(|__cb_error| (&&&#PRIVATE::Wrap(__cb_error)).__cb_failure()),
        }
    }

    /// The function reading when a tool's value says it is from: the shared one of the tool's
    /// [`index`](Self::index), or a closure.
    pub fn dated(index: Option<usize>) -> TokenStream {
        match index {
            Some(i) => format_ident!("__cb_dated_{}", i).into_token_stream(),
            None => quote!(|__cb_value| (&&#PRIVATE::DateOf(__cb_value)).__cb_data_time()),
        }
    }

    /// The shared functions asked for, as items of the generated `const` block.
    pub fn items(&self) -> TokenStream {
        let types = self.types.borrow();
        let items = types.iter().enumerate().map(|(i, (_, ty))| {
            let (failure, dated) = (
                format_ident!("__cb_failure_{}", i),
                format_ident!("__cb_dated_{}", i),
            );
            let output = kept(ty);
            // The projections name `ToolResult`: over the return type, as all its uses. (Only
            // they: the rest spanned at the user's type would read as the user's code to
            // lints such as `unused_qualifications`.)
            let error = over(ty, quote!(<#output as #PRIVATE::ToolResult>::Err));
            let value = over(ty, quote!(<#output as #PRIVATE::ToolResult>::Ok));
            quote! {
                #[inline]
                fn #failure(__cb_error: &#error) -> #PRIVATE::Failure {
                    (&&&#PRIVATE::Wrap(__cb_error)).__cb_failure()
                }
                #[inline]
                fn #dated(
                    __cb_value: &#value,
                ) -> #PRIVATE::core::option::Option<#PRIVATE::Timestamp> {
                    (&&#PRIVATE::DateOf(__cb_value)).__cb_data_time()
                }
            }
        });
        quote!(#(#items)*)
    }

    /// The index of `tool`'s return type among the shared ones, added when first asked;
    /// `None` when the type cannot be shared.
    pub fn index(&self, tool: &CheckedTool<'_>) -> Option<usize> {
        let sig = &tool.tool.sig;
        if !self.enabled || !sig.generics.params.is_empty() || !shareable(&sig.output) {
            return None;
        }
        let key = sig.output.to_token_stream().to_string();
        let mut types = self.types.borrow_mut();
        if let Some(i) = types.iter().position(|(k, _)| *k == key) {
            return Some(i);
        }
        types.push((key, sig.output.clone()));
        Some(types.len() - 1)
    }
}

/// Whether `ty` means the same in a function beside the handle: nameable there, and with no
/// lifetime or reference, whose lifetime would be the method's.
fn shareable(ty: &Type) -> bool {
    fn walk(tokens: TokenStream) -> bool {
        tokens.into_iter().all(|t| match t {
            proc_macro2::TokenTree::Punct(p) => p.as_char() != '\'' && p.as_char() != '&',
            proc_macro2::TokenTree::Group(g) => walk(g.stream()),
            proc_macro2::TokenTree::Ident(_) | proc_macro2::TokenTree::Literal(_) => true,
        })
    }
    nameable(ty) && walk(ty.to_token_stream()) && names_a_result(ty)
}

/// Whether `ty` is written as a `Result` (`Result<T, E>`, `io::Result<T>`): a tool returning
/// anything else is an error, reported at its return type by the uses inside the method, and
/// a function of its own beside them would report it again at the macro.
pub fn names_a_result(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.qself.is_none()
        && path.path.segments.last().is_some_and(|s| s.ident == "Result"))
}
