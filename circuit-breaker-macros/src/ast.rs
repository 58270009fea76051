//! Parse phase: from the token streams to a model of the toolbox. Every mistake found here is
//! collected into one `darling::Error`; the caller reports them all at once.

use darling::ast::NestedMeta;
use darling::error::Accumulator;
use darling::util::{Flag, SpannedValue};
use darling::{Error, FromMeta};
use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{
    Attribute, Expr, FnArg, Ident, ImplItem, ImplItemFn, ItemImpl, Lit, Pat, Path, ReceiverKind,
    ReturnType, Type,
};

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
    #[darling(default, with = count)]
    pub threshold: Option<SpannedValue<u32>>,
    #[darling(default, with = count)]
    pub budget: Option<SpannedValue<u32>>,
    #[darling(default, with = count)]
    pub probe_every: Option<SpannedValue<u32>>,
    pub probe_unit: Option<SpannedValue<String>>,
}

/// The arguments of one `#[tool(..)]`.
#[derive(Debug, Default, FromMeta)]
pub struct ToolArgs {
    pub provides: Option<SpannedValue<String>>,
    pub fallback: Option<SpannedValue<String>>,
    #[darling(default)]
    pub alternatives: Alternatives,
    pub name: Option<SpannedValue<String>>,
    #[darling(default, with = count)]
    pub threshold: Option<SpannedValue<u32>>,
    #[darling(default, with = count)]
    pub probe_every: Option<SpannedValue<u32>>,
    /// `caches`: the tool's documentation says it caches; results are UNVERIFIED (R6.2).
    pub caches: Flag,
    /// `freshness` or `freshness(source = "filesystem")`: outputs are compared with the last
    /// one for the same arguments (R6.2); `source` names what may change under the tool, for
    /// the CACHED RESULT label.
    #[darling(default)]
    pub freshness: FreshnessArg,
    /// `serve_stale`: while OPEN, answer with the last good result, labelled STALE DATA.
    pub serve_stale: Flag,
    /// `precheck = method`: a pre-call check returning `Availability` (R10).
    pub precheck: Option<Path>,
}

/// `freshness`, alone or with `(source = "..")`.
#[derive(Debug, Default)]
pub struct FreshnessArg {
    pub on: bool,
    pub source: Option<SpannedValue<String>>,
}

/// The arguments inside `freshness(..)`.
#[derive(Debug, FromMeta)]
struct FreshnessOptions {
    source: Option<SpannedValue<String>>,
}

impl FromMeta for FreshnessArg {
    fn from_word() -> darling::Result<Self> {
        Ok(FreshnessArg {
            on: true,
            source: None,
        })
    }

    fn from_list(items: &[NestedMeta]) -> darling::Result<Self> {
        let options = FreshnessOptions::from_list(items)?;
        Ok(FreshnessArg {
            on: true,
            source: options.source,
        })
    }
}

/// The keys of `#[tool(..)]`, in the order the grammar documents them.
const TOOL_KEYS: [&str; 10] = [
    "provides",
    "alternatives",
    "fallback",
    "name",
    "threshold",
    "probe_every",
    "caches",
    "freshness",
    "serve_stale",
    "precheck",
];

/// `threshold = 3`: a whole number, spanned at the value. Zero parses; the check phase says
/// why it is out of range. A string holding a number (`"3"`) is accepted too.
fn count(meta: &syn::Meta) -> darling::Result<Option<SpannedValue<u32>>> {
    let key = path_text(meta.path());
    let expected = || format!("`{key}` takes a whole number of at least 1, e.g. `{key} = 3`");
    let syn::Meta::NameValue(nv) = meta else {
        return Err(Error::custom(expected()).with_span(meta));
    };
    let number = match &nv.value {
        Expr::Lit(lit) => match &lit.lit {
            Lit::Int(int) => int.base10_parse::<u32>().ok(),
            Lit::Str(text) => text.value().trim().parse::<u32>().ok(),
            _ => None,
        },
        _ => None,
    };
    match number {
        Some(n) => Ok(Some(SpannedValue::new(n, nv.value.span()))),
        None => Err(Error::custom(expected()).with_span(&nv.value)),
    }
}

/// `alternatives(bash(method = .., degradation = .., via = ..), read(..))`.
///
/// A malformed alternative does not fail the whole `#[tool(..)]`: it is left out and its
/// error kept in `problems`, so that the tool and its other alternatives are still checked.
#[derive(Debug, Default)]
pub struct Alternatives {
    pub list: Vec<Alternative>,
    pub problems: Vec<Error>,
}

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
            return Err(Error::custom(format!(
                "unknown degradation severity `{name}`: write `low(\"..\")` or `high(\"..\")`, or a plain string for low{}",
                crate::check::suggest(&name, ["high", "low"].into_iter())
            ))
            .with_span(&call.func));
        }
        Err(Error::custom(
            "expected a degradation: \"what is lost\" (low), low(\"..\") or high(\"..\")",
        )
        .with_span(expr))
    }
}

impl FromMeta for Alternatives {
    fn from_list(items: &[NestedMeta]) -> darling::Result<Self> {
        let mut alternatives = Alternatives::default();
        for item in items {
            match parse_alternative(item, &mut alternatives.problems) {
                Ok(alternative) => alternatives.list.push(alternative),
                Err(error) => alternatives.problems.push(error),
            }
        }
        Ok(alternatives)
    }
}

/// One `bash(method = .., ..)`; a duplicate key is pushed to `problems` and the first kept.
fn parse_alternative(item: &NestedMeta, problems: &mut Vec<Error>) -> darling::Result<Alternative> {
    let list = match item {
        NestedMeta::Meta(syn::Meta::List(list)) => list,
        NestedMeta::Meta(syn::Meta::Path(path)) => {
            let name = path_text(path);
            return Err(Error::custom(format!(
                "alternative `{name}` needs its route: `{name}(method = \"..\", degradation = \"..\")`"
            ))
            .with_span(path));
        }
        NestedMeta::Lit(Lit::Str(text)) => {
            return Err(Error::custom(format!(
                "an alternative is named by the other tool's method name, not a string: `{}(method = \"..\", degradation = \"..\")`",
                text.value()
            ))
            .with_span(text));
        }
        _ => {
            return Err(Error::custom(
                "expected an alternative tool with its route: `bash(method = \"..\", degradation = \"..\")`",
            )
            .with_span(item));
        }
    };
    let tool = list.path.get_ident().cloned().ok_or_else(|| {
        let last = list
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        Error::custom(format!(
            "an alternative is named by the other tool's method name alone: `{last}(..)`"
        ))
        .with_span(&list.path)
    })?;
    let items = NestedMeta::parse_meta_list(list.tokens.clone())?;
    let mut duplicates = Error::accumulator();
    let items = without_duplicate_keys(items, &format!("alternative `{tool}`"), &mut duplicates);
    if let Err(duplicates) = duplicates.finish() {
        problems.extend(duplicates);
    }
    let args = AlternativeArgs::from_list(&items)?;
    let method = args.method.ok_or_else(|| {
        Error::custom(format!(
            "alternative `{tool}` needs `method = \"..\"`: how `{tool}` is used to reach the goal, e.g. `method = \"rg or grep command\"`"
        ))
        .with_span(&tool)
    })?;
    let via = match args.via {
        None => None,
        Some(path) => Some(path.get_ident().cloned().ok_or_else(|| {
            let last = path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
            Error::custom(format!(
                "`via` takes the adapter's method name alone, a method of this impl block: `via = {last}`"
            ))
            .with_span(&path)
        })?),
    };
    Ok(Alternative {
        tool,
        method,
        degradation: args.degradation,
        via,
    })
}

/// Drops a key given a second time (`provides = .., provides = ..`), with an error at the
/// second one; the first is kept, so the rest is still checked.
fn without_duplicate_keys(
    items: Vec<NestedMeta>,
    within: &str,
    errors: &mut Accumulator,
) -> Vec<NestedMeta> {
    let mut seen: Vec<String> = Vec::new();
    items
        .into_iter()
        .filter(|item| {
            let NestedMeta::Meta(meta) = item else {
                return true;
            };
            let key = path_text(meta.path());
            if seen.contains(&key) {
                errors.push(
                    Error::custom(format!("`{key}` is given twice in {within}; keep one"))
                        .with_span(meta.path()),
                );
                false
            } else {
                seen.push(key);
                true
            }
        })
        .collect()
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
    /// The arguments that parsed (see `failed_keys`).
    pub args: ToolArgs,
    /// The keys of the arguments that did not parse, already reported; `*` when the whole
    /// attribute did not. A tool with mistakes in its arguments is kept, so that other tools
    /// may still name it as an alternative and its other arguments are still checked.
    pub failed_keys: Vec<String>,
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

    /// The span of the attribute's name, `tool` in `#[tool(..)]` or `#[circuit_breaker::tool(..)]`:
    /// where an error about the attribute as a whole points.
    pub fn attr_span(&self) -> Span {
        attr_name_span(&self.attr)
    }

    /// Whether an argument that did not parse may have been meant as `key`: `key` with a bad
    /// value, or a misspelt key. Then a missing `key` is not reported again.
    pub fn may_have_meant(&self, key: &str) -> bool {
        self.failed_keys
            .iter()
            .any(|k| k == key || !TOOL_KEYS.contains(&k.as_str()))
    }
}

/// `tool` in `#[tool(..)]` or `#[circuit_breaker::tool(..)]`.
fn attr_name_span(attr: &Attribute) -> Span {
    attr.path()
        .segments
        .last()
        .map_or_else(|| attr.span(), |s| s.ident.span())
}

/// Whether `attr` is one of ours: `#[tool]`, `#[circuit_breaker::tool]`, or `#[<crate>::tool]`.
fn is_tool_attr(attr: &Attribute, krate: Option<&Path>) -> ToolAttr {
    let path = attr.path();
    if path.is_ident("tool") {
        return ToolAttr::Plain;
    }
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let ours = |prefix: &[String]| {
        segments.len() == prefix.len() + 1 && segments[..prefix.len()] == *prefix
    };
    let default = ["circuit_breaker".to_owned()];
    let custom: Vec<String> = krate
        .map(|k| k.segments.iter().map(|s| s.ident.to_string()).collect())
        .unwrap_or_default();
    if segments.last().is_some_and(|l| l == "tool")
        && (ours(&default) || (!custom.is_empty() && ours(&custom)))
    {
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
        errors.push(not_an_impl(input));
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
        let self_ty = type_text(&toolbox.item.self_ty);
        errors.push(
            Error::custom(format!(
                "#[toolbox] goes on an inherent impl block, not a trait impl: move the tools into `impl {self_ty} {{ .. }}` (the trait's methods can call them)"
            ))
            .with_span(path),
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
                    arity: method
                        .sig
                        .inputs
                        .iter()
                        .filter(|a| matches!(a, FnArg::Typed(_)))
                        .count(),
                });
                let attrs = take_tool_attrs(&mut method.attrs, krate.as_ref());
                let mut attrs = attrs.into_iter();
                if let Some(attr) = attrs.next() {
                    let mut duplicated = false;
                    for extra in attrs {
                        duplicated = true;
                        errors.push(
                            Error::custom("a second #[tool] on one method: put all of the tool's arguments in one #[tool(..)]")
                                .with_span(&attr_name_span(&extra)),
                        );
                    }
                    let mut tool = parse_tool(attr, method, errors);
                    if duplicated {
                        // The second attribute may hold what the first lacks.
                        tool.failed_keys.push("*".to_owned());
                    }
                    toolbox.tools.push(tool);
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
    let qualified = attrs
        .iter()
        .any(|a| is_tool_attr(a, krate) == ToolAttr::Qualified);
    let wanted = if qualified {
        ToolAttr::Qualified
    } else {
        ToolAttr::Plain
    };
    let (ours, rest): (Vec<_>, Vec<_>) = std::mem::take(attrs)
        .into_iter()
        .partition(|a| is_tool_attr(a, krate) == wanted);
    *attrs = rest;
    ours
}

fn reject_tool_attrs(attrs: &mut Vec<Attribute>, krate: Option<&Path>, errors: &mut Accumulator) {
    for attr in take_tool_attrs(attrs, krate) {
        errors.push(
            Error::custom("#[tool] goes on a method (`fn` or `async fn`) of the toolbox")
                .with_span(&attr_name_span(&attr)),
        );
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

/// Parses one tool. Mistakes are pushed and the tool is still returned, so that the checks of
/// the next phase run on it too and other tools can name it as an alternative.
fn parse_tool(attr: Attribute, method: &ImplItemFn, errors: &mut Accumulator) -> Tool {
    let (mut args, failed_keys) = match &attr.meta {
        syn::Meta::List(list) => tool_args(list.tokens.clone(), errors),
        _ => {
            errors.push(
                Error::custom(
                    "#[tool] needs its capability: `#[tool(provides = \"..\", fallback = \"..\")]`",
                )
                .with_span(&attr_name_span(&attr)),
            );
            (ToolArgs::default(), vec!["*".to_owned()])
        }
    };
    errors.extend(std::mem::take(&mut args.alternatives.problems));
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
    let arg_names = sig
        .inputs
        .iter()
        .filter_map(|arg| match arg {
            FnArg::Typed(pat) => Some(pat),
            FnArg::Receiver(_) => None,
        })
        .enumerate()
        .map(|(i, pat)| match &*pat.pat {
            Pat::Ident(p)
                if p.by_ref.is_none()
                    && p.subpat.is_none()
                    && !p.ident.to_string().starts_with("__cb_") =>
            {
                p.ident.clone()
            }
            _ => Ident::new(&format!("__cb_arg{i}"), pat.pat.span()),
        })
        .collect();
    let (name, name_span) = match &args.name {
        Some(name) => ((**name).clone(), name.span()),
        None => (unraw(&sig.ident), sig.ident.span()),
    };
    Tool {
        attr,
        args,
        failed_keys,
        method: method.clone(),
        receiver,
        name,
        name_span,
        output,
        arg_names,
    }
}

/// The arguments of one `#[tool(..)]`: all of them when they parse; otherwise the mistakes
/// are pushed and the arguments that parse on their own are kept, with the keys of the others.
fn tool_args(tokens: TokenStream, errors: &mut Accumulator) -> (ToolArgs, Vec<String>) {
    let items = match NestedMeta::parse_meta_list(tokens) {
        Ok(items) => items,
        Err(error) => {
            errors.push(error.into());
            return (ToolArgs::default(), vec!["*".to_owned()]);
        }
    };
    let items = without_duplicate_keys(items, "this #[tool(..)]", errors);
    match ToolArgs::from_list(&items) {
        Ok(args) => (args, Vec::new()),
        Err(error) => {
            errors.push(error);
            let (good, bad): (Vec<NestedMeta>, Vec<NestedMeta>) = items
                .into_iter()
                .partition(|item| ToolArgs::from_list(std::slice::from_ref(item)).is_ok());
            let failed = bad
                .iter()
                .map(|item| match item {
                    NestedMeta::Meta(meta) => path_text(meta.path()),
                    NestedMeta::NameValueInvalidExpr(nv) => path_text(&nv.path),
                    NestedMeta::Lit(_) => "*".to_owned(),
                })
                .collect();
            (ToolArgs::from_list(&good).unwrap_or_default(), failed)
        }
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

pub fn path_text(path: &Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
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
