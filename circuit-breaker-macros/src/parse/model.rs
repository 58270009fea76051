//! The toolbox as the later phases see it: the user's impl and the attributes' arguments, the
//! shape of each tool method, analysed once, and what the checks need of every other method
//! (name, receiver, asyncness, arity). A shape the handle cannot mirror was an error while it
//! was built; nothing is left for `expand` to skip.

use proc_macro2::{Span, TokenStream};
use syn::{Attribute, Generics, Ident, ItemImpl, Type};

use super::attr::{ToolArgs, ToolAttribute, ToolboxArgs};

/// The toolbox being built: the user's impl and the tools found in it.
pub struct Toolbox {
    /// The user's impl, with our `#[tool]` attributes removed.
    pub item: ItemImpl,
    pub args: ToolboxArgs,
    /// The last identifier of the self type (`Workspace` for `Workspace<T>`), which names the
    /// tool enum and the guarded handle; `None` (reported) for a type without one.
    pub base: Option<Ident>,
    pub tools: Vec<Tool>,
    /// Every method of the impl, for `via` adapters and `precheck`s.
    pub methods: Vec<Method>,
}

/// A method of the toolbox's impl: its name and shape, for adapter and precheck checks.
#[derive(Clone)]
pub struct Method {
    pub ident: Ident,
    pub is_async: bool,
    /// How it takes `self`; `None` for a receiver the handle cannot give (`self` by value, a
    /// typed `self: ..`).
    pub receiver: Option<Receiver>,
    /// The `self` token, where an error about the receiver points.
    pub self_span: Option<Span>,
    pub arity: usize,
    /// Its parameters' types (receiver left out) and its return type (`()` when it has
    /// none), when they can be written outside the impl as they are: no generics, no `Self`,
    /// no `impl Trait`. An adapter's are compared with its tool's at compile time.
    pub types: Option<MethodTypes>,
}

/// The types of a method's signature, as written.
#[derive(Clone)]
pub struct MethodTypes {
    pub params: Vec<Type>,
    pub output: Type,
}

/// How a method takes `self`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Receiver {
    Ref,
    Mut,
    None,
}

/// One `#[tool]` method.
pub struct Tool {
    /// The attribute: its arguments, its span and the keys that did not parse.
    pub attr: ToolAttribute,
    /// The method's name.
    pub ident: Ident,
    /// The tool's name: `name = ".."` or the method's name, unraw'd.
    pub name: String,
    pub name_span: Span,
    pub sig: ToolSig,
}

/// What the guarded handle's method copies of the tool method.
pub struct ToolSig {
    pub asyncness: Option<syn::token::Async>,
    pub generics: Generics,
    pub receiver: Receiver,
    /// The handle method's receiver: the tool's `&self` / `&'a mut self` as written, `&self`
    /// for a tool without one.
    pub handle_receiver: TokenStream,
    /// The parameters, each with the name the handle gives it.
    pub params: Vec<Param>,
    /// The return type (a `Result`, checked by the compiler through `ToolResult`).
    pub output: Type,
    /// The method's `///` docs, repeated on the handle's method.
    pub docs: Vec<Attribute>,
    /// The `self` token, where an error about the receiver points.
    pub self_span: Option<Span>,
}

/// One parameter of a tool: its name in the handle's signature and call, and its type.
pub struct Param {
    pub name: Ident,
    pub ty: Type,
    /// Its `///` docs (taken off the parameter, where rustc would reject them after
    /// expansion): the description of its property in a `json` toolbox's schema.
    pub docs: Vec<Attribute>,
}

impl ToolSig {
    pub fn is_async(&self) -> bool {
        self.asyncness.is_some()
    }
}

impl Tool {
    /// The arguments of `#[tool(..)]` that parsed.
    pub fn args(&self) -> &ToolArgs {
        &self.attr.args
    }

    /// The parameters' names, in order.
    pub fn arg_names(&self) -> impl Iterator<Item = &Ident> {
        self.sig.params.iter().map(|p| &p.name)
    }

    /// See [`ToolAttribute::may_have_meant`].
    pub fn may_have_meant(&self, key: &str) -> bool {
        self.attr.may_have_meant(key)
    }
}

/// Whether `ty` means the same written anywhere in the generated code: no `Self` (the
/// handle there), no `impl Trait`, no `_`.
pub fn nameable(ty: &Type) -> bool {
    fn walk(tokens: TokenStream) -> bool {
        tokens.into_iter().all(|t| match t {
            // One text per identifier: each comparison with a `&str` formats it anew.
            proc_macro2::TokenTree::Ident(i) => {
                !matches!(i.to_string().as_str(), "Self" | "impl" | "_")
            }
            proc_macro2::TokenTree::Group(g) => walk(g.stream()),
            proc_macro2::TokenTree::Punct(_) | proc_macro2::TokenTree::Literal(_) => true,
        })
    }
    !matches!(ty, Type::Infer(_)) && walk(quote::ToTokens::to_token_stream(ty))
}

/// `r#type` → `type`.
pub fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#")
        .map_or_else(|| s.clone(), str::to_owned)
}

/// `Store < T >` → `Store<T>`: a type as a user would write it, for messages.
pub fn type_text(ty: &Type) -> String {
    quote::ToTokens::to_token_stream(ty)
        .to_string()
        .replace(" :: ", "::")
        .replace(":: ", "::")
        .replace(" <", "<")
        .replace("< ", "<")
        .replace(" >", ">")
        .replace(" ,", ",")
        .replace("& ", "&")
}
