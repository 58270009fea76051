//! Model phase: the toolbox as the later phases see it, built from the impl block and the
//! attributes `attr` parsed. The shape of each tool method is analysed here, once: what the
//! guarded handle's method copies (asyncness, generics, receiver, parameters, return type,
//! docs) and what the checks need of every other method (name, receiver, asyncness, arity).
//! A shape the handle cannot mirror is a spanned error here; nothing is left for `expand` to
//! skip.

use darling::Error;
use darling::error::Accumulator;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{
    Attribute, FnArg, Generics, Ident, ImplItem, ImplItemFn, ItemImpl, Pat, ReceiverKind,
    ReturnType, Type,
};

use crate::attr::{self, ToolArgs, ToolAttribute, ToolboxArgs};

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

/// Parses `#[toolbox(args)] impl ..` into a model, pushing every mistake into `errors`.
/// Returns `None` when the item is not an impl block at all.
pub fn parse(args: TokenStream, input: TokenStream, errors: &mut Accumulator) -> Option<Toolbox> {
    let Ok(item) = syn::parse2::<ItemImpl>(input.clone()) else {
        errors.push(not_an_impl(input));
        return None;
    };
    let args = attr::toolbox_args(args, errors);
    let base = self_ident(&item.self_ty);
    let mut toolbox = Toolbox {
        item,
        args,
        base,
        tools: Vec::new(),
        methods: Vec::new(),
    };
    if let Some((path, _)) = &toolbox.item.trait_ {
        let self_ty = type_text(&toolbox.item.self_ty);
        errors.push(
            Error::custom(format!(
                "#[toolbox] goes on an inherent impl block, not a trait impl: move the tools into `impl {self_ty} {{ .. }}` (the trait's methods can call them)"
            ))
            .with_span(path),
        );
    } else if toolbox.base.is_none() {
        let self_ty = type_text(&toolbox.item.self_ty);
        errors.push(
            Error::custom(format!(
                "#[toolbox] needs a named type: the tool enum and the guarded handle are named after it (`WorkspaceTool`, `GuardedWorkspace` for `impl Workspace`), and `{self_ty}` has no name; put the tools on a struct that holds it"
            ))
            .with_span(&toolbox.item.self_ty),
        );
    }
    let hint = rmcp_hint(toolbox.base.as_ref());
    // rmcp's `#[tool_router]` below `#[toolbox]` would build its router from the impl we emit:
    // from rmcp's `#[tool]`s left on our tools, calling the raw methods. Taken off here, so
    // that this is the one error.
    toolbox.item.attrs.retain(|a| {
        let router = attr::is_tool_router_attr(a);
        if router {
            errors.push(
                Error::custom(format!(
                    "rmcp's `#[tool_router]` cannot share an impl with `#[toolbox]`: the router it builds calls the methods directly, around their circuit breakers; instead, {hint}"
                ))
                .with_span(&attr::attr_name_span(a)),
            );
        }
        !router
    });
    let krate = toolbox.args.krate.clone();
    let mut items = std::mem::take(&mut toolbox.item.items);
    for impl_item in &mut items {
        match impl_item {
            ImplItem::Fn(method) => {
                toolbox.methods.push(method_of(method));
                let attrs = attr::take_tool_attrs(&mut method.attrs, krate.as_ref());
                let mut attrs = attrs.into_iter();
                if let Some(first) = attrs.next() {
                    if attrs.len() == 0
                        && let Some(key) = attr::rmcp_tool_key(&first)
                    {
                        // rmcp's `#[tool]`, imported and written plain: not one of ours.
                        errors.push(
                            Error::custom(format!(
                                "`{}` is a key of rmcp's `#[tool]`, but a plain `#[tool]` in a `#[toolbox]` impl is circuit-breaker's (`provides = \"..\", fallback = \"..\"`; the description is the doc comment); for an rmcp tool, {hint}",
                                attr::path_text(&key)
                            ))
                            .with_span(&key),
                        );
                        continue;
                    }
                    // Another framework's `tool` on one of ours (rmcp's `#[tool]`, stacked):
                    // rmcp's router would call the raw method.
                    method.attrs.retain(|a| {
                        let foreign = attr::is_foreign_tool_attr(a);
                        if foreign {
                            let message = if a.path().is_ident("tool") {
                                format!(
                                    "this plain `#[tool]` is another framework's, since the method's tool attribute is `#[agent_circuit_breaker::tool]`: rmcp's `#[tool]` on a tool of this toolbox registers the raw method, around its circuit breaker; instead, {hint}"
                                )
                            } else {
                                format!(
                                    "`#[{}]` on a tool of this toolbox registers the raw method, around its circuit breaker; instead, {hint}",
                                    attr::path_text(a.path())
                                )
                            };
                            errors.push(Error::custom(message).with_span(&attr::attr_name_span(a)));
                        }
                        !foreign
                    });
                    let mut duplicated = false;
                    for extra in attrs {
                        duplicated = true;
                        errors.push(
                            Error::custom("a second #[tool] on one method: put all of the tool's arguments in one #[tool(..)]")
                                .with_span(&attr::attr_name_span(&extra)),
                        );
                    }
                    let mut attribute = attr::tool_attribute(&first, errors);
                    if duplicated {
                        // The second attribute may hold what the first lacks.
                        attribute.failed_keys.push("*".to_owned());
                    }
                    toolbox.tools.push(parse_tool(attribute, method, errors));
                }
            }
            ImplItem::Const(c) => attr::reject_tool_attrs(&mut c.attrs, krate.as_ref(), errors),
            ImplItem::Type(t) => attr::reject_tool_attrs(&mut t.attrs, krate.as_ref(), errors),
            ImplItem::Macro(m) => attr::reject_tool_attrs(&mut m.attrs, krate.as_ref(), errors),
            _ => {}
        }
    }
    // rmcp's `#[tool_router]` above `#[toolbox]` has already run: its `ToolRouter` fn routes
    // our tools (it claims every attribute whose last segment is `tool`) to the raw methods.
    let tool_idents: Vec<Ident> = toolbox.tools.iter().map(|t| t.ident.clone()).collect();
    for impl_item in &mut items {
        let ImplItem::Fn(method) = impl_item else {
            continue;
        };
        if tool_idents.contains(&method.sig.ident) || !returns_tool_router(&method.sig.output) {
            continue;
        }
        let mut routed = Vec::new();
        self_paths_to(
            quote::ToTokens::to_token_stream(&method.block),
            &tool_idents,
            &mut routed,
        );
        if routed.is_empty() {
            continue;
        }
        let routed = routed
            .iter()
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ");
        errors.push(
            Error::custom(format!(
                "`{}()` routes {routed} to the raw method, around its circuit breaker (rmcp's `#[tool_router]` ran before `#[toolbox]` and took the tools' `#[tool]` for its own); instead, {hint}",
                method.sig.ident
            ))
            .with_span(&method.sig.ident),
        );
        // Only an error is emitted: the body goes, so that it is the one error.
        method.block = syn::parse_quote!({ ::core::unimplemented!() });
    }
    toolbox.item.items = items;
    Some(toolbox)
}

/// What to do instead of composing rmcp's `#[tool_router]` / `#[tool]` with our tools.
fn rmcp_hint(base: Option<&Ident>) -> String {
    let guarded = format!(
        "Guarded{}",
        base.map_or_else(|| "Toolbox".to_owned(), Ident::to_string)
    );
    format!(
        "serve the toolbox with `agent_circuit_breaker::mcp::McpServer::new({guarded}::new(..))` (`#[toolbox(json)]`, feature `mcp`), or keep rmcp's `#[tool]` methods in a `#[tool_router]` impl of another type that calls the guarded handle `{guarded}`"
    )
}

/// Whether a method returns rmcp's `ToolRouter<..>` (the fn `#[tool_router]` generates).
fn returns_tool_router(output: &ReturnType) -> bool {
    match output {
        ReturnType::Type(_, ty) => match &**ty {
            Type::Path(p) => p
                .path
                .segments
                .last()
                .is_some_and(|s| s.ident == "ToolRouter"),
            _ => false,
        },
        ReturnType::Default => false,
    }
}

/// The tools named as `Self::<tool>` in `tokens`, once each, in order.
fn self_paths_to(tokens: TokenStream, tools: &[Ident], found: &mut Vec<Ident>) {
    use proc_macro2::TokenTree;
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, token) in tokens.iter().enumerate() {
        match token {
            TokenTree::Group(g) => self_paths_to(g.stream(), tools, found),
            TokenTree::Ident(this) if this == "Self" => {
                if let [
                    TokenTree::Punct(a),
                    TokenTree::Punct(b),
                    TokenTree::Ident(name),
                    ..,
                ] = &tokens[i + 1..]
                    && a.as_char() == ':'
                    && b.as_char() == ':'
                    && tools.contains(name)
                    && !found.contains(name)
                {
                    found.push(name.clone());
                }
            }
            _ => {}
        }
    }
}

/// The last identifier of the impl's self type: `Workspace` for `Workspace<T>`.
fn self_ident(ty: &Type) -> Option<Ident> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.clone()),
        Type::Group(g) => self_ident(&g.elem),
        Type::Paren(p) => self_ident(&p.elem),
        _ => None,
    }
}

fn method_of(method: &ImplItemFn) -> Method {
    let self_span = match method.sig.inputs.first() {
        Some(FnArg::Receiver(r)) => Some(r.self_token.span),
        _ => None,
    };
    Method {
        ident: method.sig.ident.clone(),
        is_async: method.sig.asyncness.is_some(),
        receiver: receiver_of(method),
        self_span,
        arity: method
            .sig
            .inputs
            .iter()
            .filter(|a| matches!(a, FnArg::Typed(_)))
            .count(),
    }
}

fn receiver_of(method: &ImplItemFn) -> Option<Receiver> {
    match method.sig.inputs.first() {
        Some(FnArg::Receiver(r)) => match &r.kind {
            ReceiverKind::Reference(_, _, None) => Some(Receiver::Ref),
            ReceiverKind::Reference(_, _, Some(_)) => Some(Receiver::Mut),
            _ => None,
        },
        _ => Some(Receiver::None),
    }
}

const SUPPORTED: &str = "supported tool methods: `fn` or `async fn` taking `&self`, `&mut self` or no receiver, returning `Result<T, E>`";

/// Builds one tool from its parsed attribute and its method. Mistakes are pushed and the tool
/// is still returned, so that the checks of the next phase run on it too and other tools can
/// name it as an alternative.
fn parse_tool(attr: ToolAttribute, method: &mut ImplItemFn, errors: &mut Accumulator) -> Tool {
    // A parameter's `///` docs are read here and taken off: they describe the parameter in a
    // `json` toolbox's schema, and rustc rejects doc comments on parameters after expansion.
    let param_docs: Vec<Vec<Attribute>> = method
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
        .collect();
    let method = &*method;
    let sig = &method.sig;
    let receiver = receiver_of(method).unwrap_or_else(|| {
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
    });
    let handle_receiver = match sig.inputs.first() {
        Some(FnArg::Receiver(r)) => match &r.kind {
            ReceiverKind::Reference(and, lifetime, mutability) => {
                quote!(#and #lifetime #mutability self)
            }
            // Reported above; `&self` keeps the handle's other methods resolvable.
            _ => quote!(&self),
        },
        _ => quote!(&self),
    };
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
    let output = match &sig.output {
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
    };
    let params = sig
        .inputs
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
        .collect();
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
            handle_receiver,
            params,
            output,
            docs: method
                .attrs
                .iter()
                .filter(|a| a.path().is_ident("doc"))
                .cloned()
                .collect(),
            self_span: match sig.inputs.first() {
                Some(FnArg::Receiver(r)) => Some(r.self_token.span),
                _ => None,
            },
        },
    }
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

/// The error for `#[toolbox]` on something other than an impl block, at the item's keyword
/// (`struct`, `fn`, `trait`, ..) rather than at its first attribute.
fn not_an_impl(input: TokenStream) -> Error {
    let first = input
        .clone()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span());
    let (what, span, name) = match syn::parse2::<syn::Item>(input) {
        Ok(syn::Item::Struct(i)) => ("a struct", i.struct_token.span, Some(i.ident)),
        Ok(syn::Item::Enum(i)) => ("an enum", i.enum_token.span, Some(i.ident)),
        Ok(syn::Item::Union(i)) => ("a union", i.union_token.span, Some(i.ident)),
        Ok(syn::Item::Trait(i)) => ("a trait", i.trait_token.span, None),
        Ok(syn::Item::Fn(i)) => ("a function", i.sig.fn_token.span, None),
        Ok(syn::Item::Mod(i)) => ("a module", i.mod_token.span, None),
        _ => ("this item", first, None),
    };
    let example = match name {
        Some(name) => format!("`#[toolbox] impl {name} {{ #[tool(..)] fn .. }}`"),
        None => "`#[toolbox] impl MyTools { #[tool(..)] fn .. }`".to_owned(),
    };
    let hint = if what == "a trait" {
        "; a trait cannot be a toolbox, its implementor's inherent impl can"
    } else {
        ""
    };
    Error::custom(format!(
        "#[toolbox] goes on an inherent impl block, not on {what}: {example}{hint}"
    ))
    .with_span(&span)
}
