//! Parse phase: from the token streams to a model of the toolbox. Every mistake found here is
//! collected into one `darling::Error`; the caller reports them all at once.

use darling::ast::NestedMeta;
use darling::util::SpannedValue;
use darling::error::Accumulator;
use darling::{Error, FromMeta};
use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, FnArg, Ident, ImplItem, ImplItemFn, ItemImpl, Lit, Pat, Path, ReceiverKind, ReturnType, Type};

/// `#[toolbox(policy(..), crate = path)]`.
#[derive(Debug, Default, FromMeta)]
pub struct ToolboxArgs {
    #[darling(default)]
    pub policy: Option<PolicyArgs>,
    #[darling(default, rename = "crate")]
    pub krate: Option<Path>,
}

/// `policy(threshold = 3, budget = 5, probe_every = 3, probe_unit = "attempts")`.
#[derive(Debug, Default, FromMeta)]
pub struct PolicyArgs {
    pub threshold: Option<SpannedValue<u32>>,
    pub budget: Option<SpannedValue<u32>>,
    pub probe_every: Option<SpannedValue<u32>>,
    pub probe_unit: Option<SpannedValue<String>>,
}

/// The arguments of one `#[tool(..)]`.
#[derive(Debug, FromMeta)]
pub struct ToolArgs {
    pub provides: Option<SpannedValue<String>>,
    pub fallback: Option<SpannedValue<String>>,
    #[darling(default)]
    pub alternatives: Alternatives,
    pub name: Option<SpannedValue<String>>,
    pub threshold: Option<SpannedValue<u32>>,
    pub probe_every: Option<SpannedValue<u32>>,
}

/// `alternatives(bash(method = .., degradation = .., via = ..), read(..))`.
#[derive(Debug, Default)]
pub struct Alternatives(pub Vec<Alternative>);

/// One alternative: the other tool's method name and how it stands in.
#[derive(Debug)]
pub struct Alternative {
    pub tool: Ident,
    pub method: SpannedValue<String>,
    pub degradation: Option<Degradation>,
    pub via: Option<Ident>,
}

/// The arguments inside `bash(..)`.
#[derive(Debug, FromMeta)]
struct AlternativeArgs {
    method: Option<SpannedValue<String>>,
    degradation: Option<Degradation>,
    via: Option<Path>,
}

/// `degradation = ".."` (low), `degradation = low("..")` or `degradation = high("..")`.
#[derive(Debug, Clone)]
pub struct Degradation {
    pub high: bool,
    pub text: String,
}

impl FromMeta for Degradation {
    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        let string = |expr: &Expr| match expr {
            Expr::Lit(lit) => match &lit.lit {
                Lit::Str(s) => Some(s.value()),
                _ => None,
            },
            _ => None,
        };
        if let Some(text) = string(expr) {
            return Ok(Degradation { high: false, text });
        }
        if let Expr::Call(call) = expr
            && let Expr::Path(func) = &*call.func
            && call.args.len() == 1
            && let Some(text) = string(&call.args[0])
        {
            if func.path.is_ident("high") {
                return Ok(Degradation { high: true, text });
            }
            if func.path.is_ident("low") {
                return Ok(Degradation { high: false, text });
            }
            let name = path_text(&func.path);
            return Err(Error::unknown_value_with_alts(&name, ["high", "low"].iter()).with_span(&call.func));
        }
        Err(Error::custom(
            "expected a degradation: \"what is lost\" (low), low(\"..\") or high(\"..\")",
        )
        .with_span(expr))
    }
}

impl FromMeta for Alternatives {
    fn from_list(items: &[NestedMeta]) -> darling::Result<Self> {
        let mut errors = Error::accumulator();
        let mut alternatives = Vec::new();
        for item in items {
            let parsed = errors.handle_in(|| {
                let NestedMeta::Meta(syn::Meta::List(list)) = item else {
                    return Err(Error::custom(
                        "expected an alternative tool with its route: `bash(method = \"..\", degradation = \"..\")`",
                    )
                    .with_span(item));
                };
                let tool = list
                    .path
                    .get_ident()
                    .cloned()
                    .ok_or_else(|| {
                        Error::custom("an alternative is named by the other tool's method name")
                            .with_span(&list.path)
                    })?;
                let args = AlternativeArgs::from_list(&NestedMeta::parse_meta_list(list.tokens.clone())?)?;
                let method = args.method.ok_or_else(|| {
                    Error::custom(format!(
                        "alternative `{tool}` needs `method = \"..\"`: how `{tool}` is used to reach the goal"
                    ))
                    .with_span(&tool)
                })?;
                let via = match args.via {
                    None => None,
                    Some(path) => Some(path.get_ident().cloned().ok_or_else(|| {
                        Error::custom("`via` names a method of this impl block (an adapter)").with_span(&path)
                    })?),
                };
                Ok(Alternative {
                    tool,
                    method,
                    degradation: args.degradation,
                    via,
                })
            });
            alternatives.extend(parsed);
        }
        errors.finish_with(Alternatives(alternatives))
    }
}

/// The toolbox being built: the user's impl and the tools found in it.
pub struct Toolbox {
    /// The user's impl, with our `#[tool]` attributes removed.
    pub item: ItemImpl,
    pub args: ToolboxArgs,
    pub tools: Vec<Tool>,
    /// Every method of the impl, for `via` adapters.
    pub methods: Vec<Method>,
}

/// A method of the toolbox's impl: its name and shape, for adapter checks.
#[derive(Clone)]
pub struct Method {
    pub ident: Ident,
    pub is_async: bool,
    pub receiver: Receiver,
    pub arity: usize,
}

/// How a tool method takes `self`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Receiver {
    Ref,
    Mut,
    None,
}

/// One `#[tool]` method.
pub struct Tool {
    /// The `#[tool(..)]` attribute, for spans.
    pub attr: Attribute,
    pub args: ToolArgs,
    pub method: ImplItemFn,
    pub receiver: Receiver,
    /// The tool's name: `name = ".."` or the method's name, unraw'd.
    pub name: String,
    pub name_span: Span,
    /// The return type (a `Result`, checked by the compiler through `ToolResult`).
    pub output: Type,
    /// Argument names for the handle's signature and the call.
    pub arg_names: Vec<Ident>,
}

impl Tool {
    pub fn ident(&self) -> &Ident {
        &self.method.sig.ident
    }
}

/// Whether `attr` is one of ours: `#[tool]`, `#[circuit_breaker::tool]`, or `#[<crate>::tool]`.
fn is_tool_attr(attr: &Attribute, krate: Option<&Path>) -> ToolAttr {
    let path = attr.path();
    if path.is_ident("tool") {
        return ToolAttr::Plain;
    }
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let ours = |prefix: &[String]| segments.len() == prefix.len() + 1 && segments[..prefix.len()] == *prefix;
    let default = ["circuit_breaker".to_owned()];
    let custom: Vec<String> = krate
        .map(|k| k.segments.iter().map(|s| s.ident.to_string()).collect())
        .unwrap_or_default();
    if segments.last().is_some_and(|l| l == "tool") && (ours(&default) || (!custom.is_empty() && ours(&custom))) {
        ToolAttr::Qualified
    } else {
        ToolAttr::Foreign
    }
}

#[derive(PartialEq, Eq)]
enum ToolAttr {
    Plain,
    Qualified,
    Foreign,
}

/// Parses `#[toolbox(args)] impl ..` into a model, pushing every mistake into `errors`.
/// Returns `None` when the item is not an impl block at all.
pub fn parse(args: TokenStream, input: TokenStream, errors: &mut Accumulator) -> Option<Toolbox> {
    let Ok(item) = syn::parse2::<ItemImpl>(input.clone()) else {
        let span = input.into_iter().next().map_or_else(Span::call_site, |t| t.span());
        errors.push(
            Error::custom(
                "#[toolbox] goes on an inherent impl block: `#[toolbox] impl MyTools { #[tool(..)] fn .. }`",
            )
            .with_span(&span),
        );
        return None;
    };
    let args = errors
        .handle_in(|| ToolboxArgs::from_list(&NestedMeta::parse_meta_list(args)?))
        .unwrap_or_default();
    let mut toolbox = Toolbox {
        item,
        args,
        tools: Vec::new(),
        methods: Vec::new(),
    };
    if let Some((path, _)) = &toolbox.item.trait_ {
        errors.push(
            Error::custom("#[toolbox] goes on an inherent impl block, not a trait impl").with_span(path),
        );
    }
    let krate = toolbox.args.krate.clone();
    let mut items = std::mem::take(&mut toolbox.item.items);
    for impl_item in &mut items {
        match impl_item {
            ImplItem::Fn(method) => {
                toolbox.methods.push(Method {
                    ident: method.sig.ident.clone(),
                    is_async: method.sig.asyncness.is_some(),
                    receiver: receiver_of(method).unwrap_or(Receiver::None),
                    arity: method.sig.inputs.iter().filter(|a| matches!(a, FnArg::Typed(_))).count(),
                });
                let attrs = take_tool_attrs(&mut method.attrs, krate.as_ref());
                let mut attrs = attrs.into_iter();
                if let Some(attr) = attrs.next() {
                    for extra in attrs {
                        errors.push(Error::custom("duplicate #[tool] attribute on one method").with_span(&extra));
                    }
                    toolbox.tools.extend(parse_tool(attr, method, errors));
                }
            }
            ImplItem::Const(c) => reject_tool_attrs(&mut c.attrs, krate.as_ref(), errors),
            ImplItem::Type(t) => reject_tool_attrs(&mut t.attrs, krate.as_ref(), errors),
            ImplItem::Macro(m) => reject_tool_attrs(&mut m.attrs, krate.as_ref(), errors),
            _ => {}
        }
    }
    toolbox.item.items = items;
    Some(toolbox)
}

/// Removes our `#[tool]` attributes from a method and returns them. A plain `#[tool]` next to
/// a qualified `#[circuit_breaker::tool]` belongs to another framework and is left in place.
fn take_tool_attrs(attrs: &mut Vec<Attribute>, krate: Option<&Path>) -> Vec<Attribute> {
    let qualified = attrs.iter().any(|a| is_tool_attr(a, krate) == ToolAttr::Qualified);
    let wanted = if qualified { ToolAttr::Qualified } else { ToolAttr::Plain };
    let (ours, rest): (Vec<_>, Vec<_>) = std::mem::take(attrs)
        .into_iter()
        .partition(|a| is_tool_attr(a, krate) == wanted);
    *attrs = rest;
    ours
}

fn reject_tool_attrs(attrs: &mut Vec<Attribute>, krate: Option<&Path>, errors: &mut Accumulator) {
    for attr in take_tool_attrs(attrs, krate) {
        errors.push(Error::custom("#[tool] goes on a method (`fn` or `async fn`) of the toolbox").with_span(&attr));
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

/// Parses one tool. Shape mistakes are pushed and the tool is still returned, so that the
/// checks of the next phase run on it too; `None` only when its arguments do not parse.
fn parse_tool(attr: Attribute, method: &ImplItemFn, errors: &mut Accumulator) -> Option<Tool> {
    let args = match &attr.meta {
        syn::Meta::List(list) => errors.handle_in(|| {
            ToolArgs::from_list(&NestedMeta::parse_meta_list(list.tokens.clone())?)
        }),
        _ => {
            errors.push(
                Error::custom("#[tool] needs its capability: #[tool(provides = \"..\", fallback = \"..\")]")
                    .with_span(&attr),
            );
            None
        }
    };
    let sig = &method.sig;
    let receiver = receiver_of(method).unwrap_or_else(|| {
        let span = sig.inputs.first().map_or_else(|| sig.ident.span(), Spanned::span);
        errors.push(
            Error::custom(format!(
                "a tool cannot take `self` by value or by a typed receiver; {SUPPORTED}"
            ))
            .with_span(&span),
        );
        Receiver::Ref
    });
    if let syn::Safety::Unsafe(token) = &sig.safety {
        errors.push(Error::custom(format!("a tool cannot be `unsafe fn`; {SUPPORTED}")).with_span(token));
    }
    if let Some(abi) = &sig.abi {
        errors.push(Error::custom(format!("a tool cannot have an `extern` ABI; {SUPPORTED}")).with_span(abi));
    }
    if let Some(variadic) = &sig.variadic {
        errors.push(Error::custom(format!("a tool cannot be variadic; {SUPPORTED}")).with_span(variadic));
    }
    let output = match &sig.output {
        ReturnType::Type(_, ty) => {
            if contains_impl_trait(ty) {
                errors.push(
                    Error::custom(format!(
                        "a tool cannot return `impl Trait` (the guarded handle names the value type); {SUPPORTED}"
                    ))
                    .with_span(ty),
                );
            }
            (**ty).clone()
        }
        ReturnType::Default => {
            errors.push(
                Error::custom(format!("a tool must return `Result<T, E>` so that failures can be recorded; {SUPPORTED}"))
                    .with_span(&sig.ident),
            );
            syn::parse_quote!(())
        }
    };
    let arg_names = sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(pat) => Some(pat),
            FnArg::Receiver(_) => None,
        })
        .enumerate()
        .map(|(i, pat)| match &*pat.pat {
            Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() && !p.ident.to_string().starts_with("__cb_") => {
                p.ident.clone()
            }
            _ => Ident::new(&format!("__cb_arg{i}"), pat.pat.span()),
        })
        .collect();
    let args = args?;
    let (name, name_span) = match &args.name {
        Some(name) => ((**name).clone(), name.span()),
        None => (unraw(&sig.ident), sig.ident.span()),
    };
    Some(Tool {
        attr,
        args,
        method: method.clone(),
        receiver,
        name,
        name_span,
        output,
        arg_names,
    })
}

fn contains_impl_trait(ty: &Type) -> bool {
    fn walk(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|t| match t {
            proc_macro2::TokenTree::Ident(i) => i == "impl",
            proc_macro2::TokenTree::Group(g) => walk(g.stream()),
            _ => false,
        })
    }
    walk(quote::ToTokens::to_token_stream(ty))
}

/// `r#type` → `type`.
pub fn unraw(ident: &Ident) -> String {
    let s = ident.to_string();
    s.strip_prefix("r#").map_or_else(|| s.clone(), str::to_owned)
}

pub fn path_text(path: &Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}
