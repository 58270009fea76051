//! A `#[toolbox(json)]`: every tool can be called through a shared handle with arguments
//! decoded from JSON, so each tool takes `&self`, is not generic over types, does not take a
//! name the dispatcher's methods have, and each parameter has an owned form to decode into.

use darling::Error;
use darling::error::Accumulator;
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::{GenericArgument, Path, PathArguments, Type};

use super::model::{JsonParam, Owned, Pass};
use crate::parse::{Receiver, Tool, Toolbox, type_text, unraw};

/// The dispatcher's methods on the handle (its own `call`, and `ToolDispatch`'s): a tool
/// method of the same name would clash with or shadow them.
const DISPATCH_METHODS: [&str; 4] = ["call", "definitions", "dispatch", "offered"];

/// Where a type has no owned form, and why.
type NoOwnedForm = (Span, String);

/// A tool of a `json` toolbox (B8): called through `&self` (the dispatcher shares the
/// handle), not generic over types, and every parameter with an owned form to decode.
pub fn check_json(toolbox: &Toolbox, tool: &Tool, errors: &mut Accumulator) -> Vec<JsonParam> {
    check_shape(tool, errors);
    let impl_params: Vec<String> = toolbox
        .item
        .generics
        .type_params()
        .map(|p| p.ident.to_string())
        .chain(
            toolbox
                .item
                .generics
                .const_params()
                .map(|p| p.ident.to_string()),
        )
        .collect();
    tool.sig
        .params
        .iter()
        .map(|param| match owned(&param.ty, &impl_params) {
            Ok(json) => json,
            Err((span, problem)) => {
                let shown = type_text(&param.ty);
                errors.push(
                    Error::custom(format!(
                        "parameter `{}` of tool `{}`: a `#[toolbox(json)]` decodes each argument into an owned value, and {problem}; take an owned type, `&str`, `&[T]`, `&T` or `Option<&T>` (found `{shown}`)",
                        unraw(&param.name),
                        tool.name
                    ))
                    .with_span(&span),
                );
                JsonParam {
                    owned: Owned::Same(param.ty.clone()),
                    pass: Pass::Value,
                }
            }
        })
        .collect()
}

/// The tool's receiver, generics and method name, as the dispatcher calls it.
fn check_shape(tool: &Tool, errors: &mut Accumulator) {
    let name = &tool.name;
    if tool.sig.receiver == Receiver::Mut {
        let error = Error::custom(format!(
            "tool `{name}` takes `&mut self`, but a `#[toolbox(json)]` is dispatched through a shared handle (`ToolDispatch::dispatch(&self, ..)`): take `&self` and keep the state that changes behind a `Mutex`, `RwLock` or atomic"
        ));
        errors.push(match tool.sig.self_span {
            Some(span) => error.with_span(&span),
            None => error.with_span(&tool.ident),
        });
    }
    if let Some(param) = tool
        .sig
        .generics
        .params
        .iter()
        .find(|p| !matches!(p, syn::GenericParam::Lifetime(_)))
    {
        errors.push(
            Error::custom(format!(
                "tool `{name}` is generic, but a `#[toolbox(json)]` decodes each tool's arguments into one concrete type: name the types, or keep the generic method private and make the tool a concrete method that calls it"
            ))
            .with_span(param),
        );
    }
    let ident = unraw(&tool.ident);
    if DISPATCH_METHODS.contains(&ident.as_str()) {
        errors.push(
            Error::custom(format!(
                "a tool method of a `#[toolbox(json)]` cannot be called `{ident}`: {}; rename the method and keep the tool's name with `name = \"{}\"`",
                if ident == "call" {
                    "the guarded handle has a method `call(name, arguments)` of its own".to_owned()
                } else {
                    format!("the guarded handle's `{ident}` would hide `ToolDispatch::{ident}`")
                },
                tool.name
            ))
            .with_span(&tool.ident),
        );
    }
}

/// The owned form of a parameter type, or where and why it has none.
fn owned(ty: &Type, impl_params: &[String]) -> Result<JsonParam, NoOwnedForm> {
    match ty {
        Type::Paren(p) => owned(&p.elem, impl_params),
        Type::Group(g) => owned(&g.elem, impl_params),
        Type::Reference(r) => Ok(JsonParam {
            owned: owned_referent(&r.elem, impl_params)?,
            pass: if r.mutability.is_some() {
                Pass::RefMut
            } else {
                Pass::Ref
            },
        }),
        Type::Path(p) if p.qself.is_none() => {
            if let Some(Type::Reference(r)) = option_of(&p.path) {
                let referent = owned_referent(&r.elem, impl_params)?;
                let pass = if r.mutability.is_some() {
                    Pass::OptionMut
                } else if derefs(&r.elem) {
                    Pass::OptionDeref
                } else {
                    Pass::OptionRef
                };
                return Ok(JsonParam {
                    owned: Owned::Option(p.clone(), Box::new(referent)),
                    pass,
                });
            }
            plain(ty, impl_params)?;
            Ok(JsonParam {
                owned: Owned::Same(ty.clone()),
                pass: Pass::Value,
            })
        }
        _ => {
            plain(ty, impl_params)?;
            Ok(JsonParam {
                owned: Owned::Same(ty.clone()),
                pass: Pass::Value,
            })
        }
    }
}

/// `T` in `Option<T>` (also `std::option::Option<T>`).
fn option_of(path: &Path) -> Option<&Type> {
    let last = path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    match &last.arguments {
        PathArguments::AngleBracketed(args) if args.args.len() == 1 => match &args.args[0] {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `&T` is reached from the owned form by `as_deref` (`str`, `[T]`, `Path`).
fn derefs(referent: &Type) -> bool {
    match referent {
        Type::Slice(_) => true,
        Type::Path(p) => p.qself.is_none() && (p.path.is_ident("str") || is_std_path(&p.path)),
        Type::Paren(p) => derefs(&p.elem),
        Type::Group(g) => derefs(&g.elem),
        _ => false,
    }
}

/// `Path` or `std::path::Path`.
fn is_std_path(path: &Path) -> bool {
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    path.segments.last().is_some_and(|s| s.arguments.is_none())
        && matches!(
            segments
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .as_slice(),
            ["Path"] | ["std", "path", "Path"]
        )
}

/// The owned form of what a `&` points at: `str` → `String`, `[T]` → `Vec<T>`, `Path` →
/// `PathBuf`, any other plain `T` → `T`.
fn owned_referent(referent: &Type, impl_params: &[String]) -> Result<Owned, NoOwnedForm> {
    match referent {
        Type::Paren(p) => owned_referent(&p.elem, impl_params),
        Type::Group(g) => owned_referent(&g.elem, impl_params),
        Type::Path(p) if p.qself.is_none() && p.path.is_ident("str") => Ok(Owned::String),
        Type::Path(p) if p.qself.is_none() && is_std_path(&p.path) => Ok(Owned::PathBuf),
        Type::Slice(slice) => {
            plain(&slice.elem, impl_params)?;
            Ok(Owned::Vec((*slice.elem).clone()))
        }
        other => {
            plain(other, impl_params)?;
            Ok(Owned::Same(other.clone()))
        }
    }
}

/// A type that is its own owned form: no reference, lifetime, `impl`/`dyn` trait, `Self` or
/// type parameter of the impl anywhere in it.
fn plain(ty: &Type, impl_params: &[String]) -> Result<(), NoOwnedForm> {
    fn walk(tokens: TokenStream, impl_params: &[String]) -> Result<(), NoOwnedForm> {
        for token in tokens {
            if let proc_macro2::TokenTree::Group(g) = &token {
                walk(g.stream(), impl_params)?;
            } else if let Some(problem) = not_owned(&token, impl_params) {
                return Err(problem);
            }
        }
        Ok(())
    }
    walk(ty.to_token_stream(), impl_params)
}

/// Why a token of a type keeps the type from owning its data, if it does.
fn not_owned(token: &proc_macro2::TokenTree, impl_params: &[String]) -> Option<NoOwnedForm> {
    use proc_macro2::TokenTree;
    let problem = match token {
        TokenTree::Punct(p) if p.as_char() == '&' => {
            "a reference inside a type has no owned form it can build".to_owned()
        }
        TokenTree::Punct(p) if p.as_char() == '\'' => {
            "a type that borrows (it has a lifetime) has no owned form it can build".to_owned()
        }
        TokenTree::Ident(i) if i == "impl" || i == "dyn" => {
            let article = if i == "impl" { "an" } else { "a" };
            format!("{article} `{i} Trait` has no concrete type to decode into")
        }
        TokenTree::Ident(i) if i == "Self" => {
            "`Self` does not name the toolbox where the argument type is declared".to_owned()
        }
        TokenTree::Ident(i) if impl_params.contains(&i.to_string()) => format!(
            "the impl's type parameter `{i}` is not known where the argument type is declared"
        ),
        _ => return None,
    };
    Some((token.span(), problem))
}
