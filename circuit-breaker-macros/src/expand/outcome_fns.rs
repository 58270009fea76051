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

use proc_macro2::TokenStream;
use quote::{ToTokens, format_ident, quote};
use syn::Type;

use super::runtime::PRIVATE;
use super::span::{kept, over};
use crate::check::Checked;

/// The shared functions of one toolbox: a return type's pair for each type some tool can
/// share, and each tool's index into them.
pub struct OutcomeFns {
    /// The return types that have their functions, by their tokens, in the order of the tools.
    types: Vec<(String, Type)>,
    /// Each tool's index into `types`, in the order of `checked.tools`; `None` for a tool whose
    /// type cannot be shared.
    of_tool: Vec<Option<usize>>,
}

impl OutcomeFns {
    /// Every tool's type, shared where it can be: not at all when the impl has generics, which
    /// a function outside it could not name. Every tool reads both its failures and its dates,
    /// so each pair made is used.
    pub fn new(checked: &Checked<'_>) -> Self {
        let mut types: Vec<(String, Type)> = Vec::new();
        let enabled = checked.toolbox.item.generics.params.is_empty();
        let of_tool = checked
            .tools
            .iter()
            .map(|tool| {
                let sig = &tool.tool.sig;
                if !enabled || !sig.generics.params.is_empty() {
                    return None;
                }
                let key = shareable(&sig.output)?;
                Some(match types.iter().position(|(k, _)| *k == key) {
                    Some(i) => i,
                    None => {
                        types.push((key, sig.output.clone()));
                        types.len() - 1
                    }
                })
            })
            .collect();
        OutcomeFns { types, of_tool }
    }

    /// The index of tool number `tool` (of `checked.tools`) among the shared types.
    pub fn of_tool(&self, tool: usize) -> Option<usize> {
        self.of_tool.get(tool).copied().flatten()
    }

    /// The function reading a tool's error as a failure: the shared one of the tool's
    /// [`of_tool`](Self::of_tool), or a closure.
    pub fn failure(index: Option<usize>) -> TokenStream {
        match index {
            Some(i) => format_ident!("__cb_failure_{}", i).into_token_stream(),
            None => quote!(|__cb_error| (&&&#PRIVATE::Wrap(__cb_error)).__cb_failure()),
        }
    }

    /// The function reading when a tool's value says it is from: the shared one of the tool's
    /// [`of_tool`](Self::of_tool), or a closure.
    pub fn dated(index: Option<usize>) -> TokenStream {
        match index {
            Some(i) => format_ident!("__cb_dated_{}", i).into_token_stream(),
            None => quote!(|__cb_value| (&&#PRIVATE::DateOf(__cb_value)).__cb_data_time()),
        }
    }

    /// The shared functions, as items of the generated `const` block.
    pub fn items(&self) -> TokenStream {
        let items = self.types.iter().enumerate().map(|(i, (_, ty))| {
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
}

/// Whether `ty` means the same in a function beside the handle: nameable there (as
/// [`nameable`](crate::parse::nameable) says), and with no lifetime or reference, whose lifetime would be the
/// method's. Its tokens as text when it does, the key the tools of one type share: the type
/// is turned into tokens once and walked once, each identifier formatted once.
fn shareable(ty: &Type) -> Option<String> {
    fn walk(tokens: TokenStream) -> bool {
        tokens.into_iter().all(|t| match t {
            proc_macro2::TokenTree::Punct(p) => p.as_char() != '\'' && p.as_char() != '&',
            proc_macro2::TokenTree::Group(g) => walk(g.stream()),
            proc_macro2::TokenTree::Ident(i) => {
                !matches!(i.to_string().as_str(), "Self" | "impl" | "_")
            }
            proc_macro2::TokenTree::Literal(_) => true,
        })
    }
    if matches!(ty, Type::Infer(_)) || !names_a_result(ty) {
        return None;
    }
    let tokens = ty.to_token_stream();
    walk(tokens.clone()).then(|| tokens.to_string())
}

/// Whether `ty` is written as a `Result` (`Result<T, E>`, `io::Result<T>`): a tool returning
/// anything else is an error, reported at its return type by the uses inside the method, and
/// a function of its own beside them would report it again at the macro.
pub fn names_a_result(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.qself.is_none()
        && path.path.segments.last().is_some_and(|s| s.ident == "Result"))
}
