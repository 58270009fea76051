//! One `#[tool]` method read into the model: what the guarded handle's method copies of it
//! (asyncness, generics, receiver, parameters, return type, docs), and every shape the handle
//! cannot mirror as a spanned error. Also the shape of every other method of the impl, which
//! the checks of adapters and prechecks need.

use darling::Error;
use darling::error::Accumulator;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, Ident, ImplItemFn, Pat, ReceiverKind, ReturnType, Signature, Type};

use super::attr::ToolAttribute;
use super::model::{Method, MethodTypes, Param, Receiver, Tool, ToolSig, nameable, unraw};

const SUPPORTED: &str = "supported tool methods: `fn` or `async fn` taking `&self`, `&mut self` or no receiver, returning `Result<T, E>`";

/// A method of the impl, as the checks of adapters and prechecks see it.
pub fn method_of(method: &ImplItemFn) -> Method {
    Method {
        ident: method.sig.ident.clone(),
        is_async: method.sig.asyncness.is_some(),
        receiver: receiver_of(&method.sig),
        self_span: self_span(&method.sig),
        arity: method
            .sig
            .inputs
            .iter()
            .filter(|a| matches!(a, FnArg::Typed(_)))
            .count(),
        types: method_types(&method.sig),
    }
}

/// The types of `sig`, when each can be written outside the impl (see [`Method::types`]).
fn method_types(sig: &Signature) -> Option<MethodTypes> {
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        return None;
    }
    let params: Vec<Type> = sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(pat) => Some((*pat.ty).clone()),
            FnArg::Receiver(_) => None,
        })
        .collect();
    let output = match &sig.output {
        ReturnType::Type(_, ty) => (**ty).clone(),
        ReturnType::Default => syn::parse_quote!(()),
    };
    let all = params.iter().chain(std::iter::once(&output));
    (sig.variadic.is_none() && all.into_iter().all(nameable))
        .then_some(MethodTypes { params, output })
}

/// How `sig` takes `self`; `None` for a receiver the handle cannot give.
fn receiver_of(sig: &Signature) -> Option<Receiver> {
    match sig.inputs.first() {
        Some(FnArg::Receiver(r)) => match &r.kind {
            ReceiverKind::Reference(_, _, None) => Some(Receiver::Ref),
            ReceiverKind::Reference(_, _, Some(_)) => Some(Receiver::Mut),
            _ => None,
        },
        _ => Some(Receiver::None),
    }
}

/// The `self` token of `sig`, where an error about the receiver points.
fn self_span(sig: &Signature) -> Option<Span> {
    match sig.inputs.first() {
        Some(FnArg::Receiver(r)) => Some(r.self_token.span),
        _ => None,
    }
}

/// Builds one tool from its parsed attribute and its method. Mistakes are pushed and the tool
/// is still returned, so that the checks of the next phase run on it too and other tools can
/// name it as an alternative.
pub fn parse_tool(attr: ToolAttribute, method: &mut ImplItemFn, errors: &mut Accumulator) -> Tool {
    let param_docs = take_param_docs(method);
    let method = &*method;
    let sig = &method.sig;
    let receiver = tool_receiver(sig, errors);
    reject_unsupported(method, errors);
    let output = tool_output(sig, errors);
    let (name, name_span) = match &attr.args.name {
        Some(name) => ((**name).clone(), name.span()),
        None => (unraw(&sig.ident), sig.ident.span()),
    };
    Tool {
        attr,
        ident: sig.ident.clone(),
        name,
        name_span,
        sig: ToolSig {
            asyncness: sig.asyncness,
            generics: sig.generics.clone(),
            receiver,
            handle_receiver: handle_receiver(sig),
            params: tool_params(sig, param_docs),
            output,
            docs: method
                .attrs
                .iter()
                .filter(|a| a.path().is_ident("doc"))
                .cloned()
                .collect(),
            self_span: self_span(sig),
        },
    }
}

/// Each parameter's `///` docs, taken off: they describe the parameter in a `json` toolbox's
/// schema, and rustc rejects doc comments on parameters after expansion.
fn take_param_docs(method: &mut ImplItemFn) -> Vec<Vec<Attribute>> {
    method
        .sig
        .inputs
        .iter_mut()
        .filter_map(|arg| match arg {
            FnArg::Typed(pat) => {
                let (docs, rest) = std::mem::take(&mut pat.attrs)
                    .into_iter()
                    .partition(|a| a.path().is_ident("doc"));
                pat.attrs = rest;
                Some(docs)
            }
            FnArg::Receiver(_) => None,
        })
        .collect()
}

/// The tool's receiver; `self` by value or a typed `self: ..` is an error at its `self`, and
/// reads as `&self` so that the rest is still checked.
fn tool_receiver(sig: &Signature, errors: &mut Accumulator) -> Receiver {
    receiver_of(sig).unwrap_or_else(|| {
        if let Some(FnArg::Receiver(r)) = sig.inputs.first() {
            let message = match &r.kind {
                ReceiverKind::Typed(..) => {
                    "a tool cannot take a typed receiver (`self: ..`): take `&self`, `&mut self` or no receiver"
                }
                _ => {
                    "a tool cannot take `self` by value: the guarded handle keeps the toolbox and calls it again; take `&self` or `&mut self`"
                }
            };
            errors.push(Error::custom(message).with_span(&r.self_token));
        }
        Receiver::Ref
    })
}

/// The handle method's receiver: the tool's `&self` / `&'a mut self` as written, `&self` for a
/// tool without one.
fn handle_receiver(sig: &Signature) -> TokenStream {
    match sig.inputs.first() {
        Some(FnArg::Receiver(r)) => match &r.kind {
            ReceiverKind::Reference(and, lifetime, mutability) => {
                quote!(#and #lifetime #mutability self)
            }
            // Reported by `tool_receiver`; `&self` keeps the handle's other methods resolvable.
            _ => quote!(&self),
        },
        _ => quote!(&self),
    }
}

/// What the handle cannot mirror of a method, besides its receiver and return type: `#[cfg]`,
/// `unsafe`, an `extern` ABI, variadics.
fn reject_unsupported(method: &ImplItemFn, errors: &mut Accumulator) {
    let sig = &method.sig;
    for cfg in method.attrs.iter().filter(|a| a.path().is_ident("cfg")) {
        errors.push(
            Error::custom(
                "a tool cannot be compiled conditionally: the tool enum, the capability map and the guarded handle list it either way; put the `#[cfg(..)]` on the whole impl block, or give the tool a body that reports the feature missing as an error",
            )
            .with_span(cfg.path()),
        );
    }
    if let syn::Safety::Unsafe(token) = &sig.safety {
        errors.push(
            Error::custom(
                "a tool cannot be `unsafe fn`: the guarded handle calls it from safe code; make it a safe `fn` with an `unsafe` block inside",
            )
            .with_span(token),
        );
    }
    if let Some(abi) = &sig.abi {
        errors.push(
            Error::custom(format!("a tool cannot have an `extern` ABI; {SUPPORTED}"))
                .with_span(abi),
        );
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(
            Error::custom(format!("a tool cannot be variadic; {SUPPORTED}")).with_span(variadic),
        );
    }
}

/// The return type; none at all, or `impl Trait` anywhere in it, is an error. Whether it is a
/// `Result` is the compiler's to say (through `ToolResult`): an alias may name one.
fn tool_output(sig: &Signature, errors: &mut Accumulator) -> Type {
    match &sig.output {
        ReturnType::Type(_, ty) => {
            if let Some(span) = impl_trait_span(ty) {
                errors.push(
                    Error::custom(
                        "a tool cannot return `impl Trait`: the guarded handle's method names the value type; name the type, or return a `Box<dyn ..>`",
                    )
                    .with_span(&span),
                );
            }
            (**ty).clone()
        }
        ReturnType::Default => {
            errors.push(
                Error::custom("a tool must return `Result<T, E>` so that its failures can be recorded: add `-> Result<.., ..>`")
                    .with_span(&sig.ident),
            );
            syn::parse_quote!(())
        }
    }
}

/// The parameters with the names the handle gives them: the tool's own where it is a plain
/// binding, `__cb_arg<i>` for a pattern (or a name of the generated code's own).
fn tool_params(sig: &Signature, param_docs: Vec<Vec<Attribute>>) -> Vec<Param> {
    sig.inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(pat) => Some(pat),
            FnArg::Receiver(_) => None,
        })
        .zip(param_docs)
        .enumerate()
        .map(|(i, (pat, docs))| {
            let name = match &*pat.pat {
                Pat::Ident(p)
                    if p.by_ref.is_none()
                        && p.subpat.is_none()
                        && !p.ident.to_string().starts_with("__cb_") =>
                {
                    p.ident.clone()
                }
                _ => Ident::new(&format!("__cb_arg{i}"), pat.pat.span()),
            };
            Param {
                name,
                ty: (*pat.ty).clone(),
                docs,
            }
        })
        .collect()
}

/// The span of the first `impl` keyword in `ty` (`impl Trait` anywhere in it).
fn impl_trait_span(ty: &Type) -> Option<Span> {
    fn walk(tokens: TokenStream) -> Option<Span> {
        tokens.into_iter().find_map(|t| match t {
            proc_macro2::TokenTree::Ident(i) if i == "impl" => Some(i.span()),
            proc_macro2::TokenTree::Group(g) => walk(g.stream()),
            _ => None,
        })
    }
    walk(quote::ToTokens::to_token_stream(ty))
}
