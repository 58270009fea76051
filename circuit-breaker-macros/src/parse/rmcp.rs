//! rmcp's `#[tool_router]` and `#[tool]` composed with a toolbox: each composition would call
//! a tool's raw method, around its circuit breaker, so each is an error here that says how to
//! serve the toolbox instead. rmcp's router claims every attribute whose last segment is
//! `tool`, ours included, whichever of the two macros runs first.

use darling::Error;
use darling::ast::NestedMeta;
use darling::error::Accumulator;
use proc_macro2::{TokenStream, TokenTree};
use syn::{Attribute, Ident, ImplItem, ImplItemFn, Path, ReturnType, Type};

use super::attr::{TOOL_KEYS, attr_name_span};
use super::meta::path_text;

/// What to do instead of composing rmcp's `#[tool_router]` / `#[tool]` with our tools.
pub fn hint(base: Option<&Ident>) -> String {
    let guarded = format!(
        "Guarded{}",
        base.map_or_else(|| "Toolbox".to_owned(), Ident::to_string)
    );
    format!(
        "serve the toolbox with `agent_circuit_breaker::mcp::McpServer::new({guarded}::new(..))` (`#[toolbox(json)]`, feature `mcp`), or keep rmcp's `#[tool]` methods in a `#[tool_router]` impl of another type that calls the guarded handle `{guarded}`"
    )
}

/// Takes rmcp's `#[tool_router]` off the impl, each an error. Below `#[toolbox]`, it would
/// build its router from the impl we emit: from rmcp's `#[tool]`s left on our tools, calling
/// the raw methods. Taken off, so that this is the one error.
pub fn take_tool_routers(attrs: &mut Vec<Attribute>, hint: &str, errors: &mut Accumulator) {
    attrs.retain(|a| {
        let router = is_tool_router_attr(a);
        if router {
            errors.push(
                Error::custom(format!(
                    "rmcp's `#[tool_router]` cannot share an impl with `#[toolbox]`: the router it builds calls the methods directly, around their circuit breakers; instead, {hint}"
                ))
                .with_span(&attr_name_span(a)),
            );
        }
        !router
    });
}

/// The error for a plain `#[tool(..)]` that was meant as rmcp's (it has one of rmcp's keys and
/// none of ours), at that key; `None` for one of ours.
pub fn plain_rmcp_tool(attr: &Attribute, hint: &str) -> Option<Error> {
    let key = rmcp_tool_key(attr)?;
    Some(
        Error::custom(format!(
            "`{}` is a key of rmcp's `#[tool]`, but a plain `#[tool]` in a `#[toolbox]` impl is circuit-breaker's (`provides = \"..\", fallback = \"..\"`; the description is the doc comment); for an rmcp tool, {hint}",
            path_text(&key)
        ))
        .with_span(&key),
    )
}

/// Takes another framework's `tool` attributes off one of our tools (rmcp's `#[tool]`,
/// stacked), each an error: rmcp's router would call the raw method.
pub fn take_stacked_tools(attrs: &mut Vec<Attribute>, hint: &str, errors: &mut Accumulator) {
    attrs.retain(|a| {
        let foreign = is_foreign_tool_attr(a);
        if foreign {
            let message = if a.path().is_ident("tool") {
                format!(
                    "this plain `#[tool]` is another framework's, since the method's tool attribute is `#[agent_circuit_breaker::tool]`: rmcp's `#[tool]` on a tool of this toolbox registers the raw method, around its circuit breaker; instead, {hint}"
                )
            } else {
                format!(
                    "`#[{}]` on a tool of this toolbox registers the raw method, around its circuit breaker; instead, {hint}",
                    path_text(a.path())
                )
            };
            errors.push(Error::custom(message).with_span(&attr_name_span(a)));
        }
        !foreign
    });
}

/// rmcp's `#[tool_router]` above `#[toolbox]` has already run: its `ToolRouter` fn routes our
/// tools (it claims every attribute whose last segment is `tool`) to the raw methods. Each
/// such fn is an error, and its body goes, so that it is the one error.
pub fn disarm_routers(
    items: &mut [ImplItem],
    tools: &[Ident],
    hint: &str,
    errors: &mut Accumulator,
) {
    for impl_item in items {
        let ImplItem::Fn(method) = impl_item else {
            continue;
        };
        // The return type first: a cheap test most methods fail, before the names.
        if !returns_tool_router(&method.sig.output) || tools.contains(&method.sig.ident) {
            continue;
        }
        let mut routed = Vec::new();
        self_paths_to(
            quote::ToTokens::to_token_stream(&method.block),
            tools,
            &mut routed,
        );
        if !routed.is_empty() {
            errors.push(router_error(method, &routed, hint));
            method.block = syn::parse_quote!({ ::core::unimplemented!() });
        }
    }
}

/// The error for a `ToolRouter` fn that routes the tools `routed`.
fn router_error(method: &ImplItemFn, routed: &[Ident], hint: &str) -> Error {
    let routed = routed
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ");
    Error::custom(format!(
        "`{}()` routes {routed} to the raw method, around its circuit breaker (rmcp's `#[tool_router]` ran before `#[toolbox]` and took the tools' `#[tool]` for its own); instead, {hint}",
        method.sig.ident
    ))
    .with_span(&method.sig.ident)
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

/// Whether `attr` names a `tool` of another framework: `#[rmcp::tool]`, or a plain `#[tool]`
/// left on a method by `attr::take_tool_attrs` because its `#[agent_circuit_breaker::tool]` is
/// ours.
fn is_foreign_tool_attr(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "tool")
}

/// Whether `attr` is rmcp's `#[tool_router]` (`#[tool_router]`, `#[rmcp::tool_router(..)]`).
fn is_tool_router_attr(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "tool_router")
}

/// The keys of rmcp's `#[tool(..)]` that are none of ours: a plain `#[tool]` with one of them
/// and none of ours was meant as rmcp's.
const RMCP_TOOL_KEYS: &[&str] = &[
    "description",
    "title",
    "input_schema",
    "output_schema",
    "annotations",
    "icons",
    "meta",
    "local",
];

/// The first key of rmcp's `#[tool(..)]` in a plain `#[tool(..)]` that has none of our keys
/// (`name` is both frameworks'): the attribute was meant as rmcp's.
fn rmcp_tool_key(attr: &Attribute) -> Option<Path> {
    let syn::Meta::List(list) = &attr.meta else {
        return None;
    };
    // Most attributes start with one of our keys: answered without parsing the list, which
    // costs more than the rest of the attribute's reading.
    if starts_with_our_key(&list.tokens) {
        return None;
    }
    let items = NestedMeta::parse_meta_list(list.tokens.clone()).ok()?;
    let paths: Vec<&Path> = items
        .iter()
        .filter_map(|item| match item {
            NestedMeta::Meta(meta) => Some(meta.path()),
            NestedMeta::NameValueInvalidExpr(nv) => Some(&nv.path),
            NestedMeta::Lit(_) => None,
        })
        .collect();
    let ours = paths.iter().any(|p| {
        p.get_ident()
            .is_some_and(|i| TOOL_KEYS.contains(&i.to_string().as_str()) && i != "name")
    });
    if ours {
        return None;
    }
    paths
        .into_iter()
        .find(|p| {
            p.get_ident()
                .is_some_and(|i| RMCP_TOOL_KEYS.contains(&i.to_string().as_str()))
        })
        .cloned()
}

/// Whether the list's first item is one of our keys other than `name`: a lone identifier,
/// then `=`, `(`, `,` or nothing (not a path `a::b`).
fn starts_with_our_key(tokens: &TokenStream) -> bool {
    let mut tokens = tokens.clone().into_iter();
    let Some(TokenTree::Ident(first)) = tokens.next() else {
        return false;
    };
    let lone = match tokens.next() {
        None => true,
        Some(TokenTree::Punct(p)) => matches!(p.as_char(), '=' | ','),
        Some(TokenTree::Group(g)) => g.delimiter() == proc_macro2::Delimiter::Parenthesis,
        Some(_) => false,
    };
    lone && first != "name" && TOOL_KEYS.contains(&first.to_string().as_str())
}
