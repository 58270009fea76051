//! Attribute phase: the raw arguments of `#[toolbox(..)]` and `#[tool(..)]`, parsed with
//! darling. Nothing here knows about methods or other tools: a value that does not parse is
//! a spanned error, and the keys that failed are remembered so that the later phases do not
//! report them a second time.

use darling::ast::NestedMeta;
use darling::error::Accumulator;
use darling::util::{Flag, SpannedValue};
use darling::{Error, FromMeta};
use std::time::Duration;

use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, Ident, Lit, Path};

/// `#[toolbox(policy(..), timeout = "30s", json, crate = path)]`.
#[derive(Debug, Default, FromMeta)]
pub struct ToolboxArgs {
    #[darling(default)]
    pub policy: Option<PolicyArgs>,
    /// `timeout = "30s"`: the deadline of every tool's calls that declares none (B13). Beside
    /// `policy`, not in it: the policy is a run-time value an expeditor can be given anew,
    /// while a deadline is compiled into each guarded method (a tool without one reads no
    /// clock), so it is fixed with the toolbox, like a tool's own `timeout`.
    #[darling(default, with = duration)]
    pub timeout: Option<SpannedValue<Duration>>,
    /// `json`: the dispatcher by name and JSON arguments (B8): an argument type per tool
    /// and `ToolDispatch` on the guarded handle.
    #[darling(default)]
    pub json: JsonFlag,
    #[darling(default, rename = "crate")]
    pub krate: Option<Path>,
}

/// `json`, a bare word: `json = ..` is an error that says so.
#[derive(Debug, Default, Clone, Copy)]
pub struct JsonFlag(bool);

impl JsonFlag {
    pub fn is_present(self) -> bool {
        self.0
    }
}

impl FromMeta for JsonFlag {
    fn from_word() -> darling::Result<Self> {
        Ok(JsonFlag(true))
    }

    fn from_meta(item: &syn::Meta) -> darling::Result<Self> {
        match item {
            syn::Meta::Path(_) => Self::from_word(),
            _ => Err(Error::custom(
                "`json` takes no value: write `#[toolbox(json)]` to generate the dispatcher by name and JSON arguments, or leave it out",
            )
            .with_span(item)),
        }
    }
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
    /// `cool_down = "10s"`: an OPEN circuit is due for its probe after this long (B13).
    #[darling(default, with = duration)]
    pub cool_down: Option<SpannedValue<Duration>>,
    /// `cool_down_cap = "5m"`: the longest the cool-down grows to.
    #[darling(default, with = duration)]
    pub cool_down_cap: Option<SpannedValue<Duration>>,
    /// `budget_window = "60s"`: the budget renews in a rolling window (B13).
    #[darling(default, with = duration)]
    pub budget_window: Option<SpannedValue<Duration>>,
    /// `mistake_limit = 20`: the model's mistakes per cycle before every call pauses (B14).
    #[darling(default, with = count)]
    pub mistake_limit: Option<SpannedValue<u32>>,
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
    /// `timeout = "30s"`: the deadline of one call (B13), instead of the toolbox's.
    #[darling(default, with = duration)]
    pub timeout: Option<SpannedValue<Duration>>,
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
const TOOL_KEYS: [&str; 11] = [
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
    "timeout",
];

/// `timeout = "30s"`: a duration in humantime's syntax (`"500ms"`, `"2m"`, `"1h 30m"`),
/// spanned at the string. Zero and out-of-range durations parse; the check phase says why
/// they are no deadline.
fn duration(meta: &syn::Meta) -> darling::Result<Option<SpannedValue<Duration>>> {
    let key = path_text(meta.path());
    let expected = || {
        format!(
            "`{key}` takes a duration in a string, with its unit: e.g. `{key} = \"30s\"` (also \"500ms\", \"2m\", \"1m 30s\")"
        )
    };
    let syn::Meta::NameValue(nv) = meta else {
        return Err(Error::custom(expected()).with_span(meta));
    };
    let Expr::Lit(syn::ExprLit {
        lit: Lit::Str(text),
        ..
    }) = &nv.value
    else {
        return Err(Error::custom(expected()).with_span(&nv.value));
    };
    match humantime::parse_duration(text.value().trim()) {
        Ok(duration) => Ok(Some(SpannedValue::new(duration, text.span()))),
        Err(error) => Err(Error::custom(format!(
            "`{}` is not a duration ({error}): write one with its unit, e.g. `{key} = \"30s\"` (also \"500ms\", \"2m\", \"1m 30s\")",
            text.value()
        ))
        .with_span(text)),
    }
}

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
                crate::suggest::suggest(&name, ["high", "low"].into_iter())
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

/// `tool` in `#[tool(..)]` or `#[agent_circuit_breaker::tool(..)]`.
pub fn attr_name_span(attr: &Attribute) -> Span {
    attr.path()
        .segments
        .last()
        .map_or_else(|| attr.span(), |s| s.ident.span())
}

/// Whether `attr` is one of ours: `#[tool]`, `#[agent_circuit_breaker::tool]`, or `#[<crate>::tool]`.
fn is_tool_attr(attr: &Attribute, krate: Option<&Path>) -> ToolAttr {
    let path = attr.path();
    if path.is_ident("tool") {
        return ToolAttr::Plain;
    }
    let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    let ours = |prefix: &[String]| {
        segments.len() == prefix.len() + 1 && segments[..prefix.len()] == *prefix
    };
    let default = ["agent_circuit_breaker".to_owned()];
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

/// Removes our `#[tool]` attributes from a method and returns them. A plain `#[tool]` next to
/// a qualified `#[agent_circuit_breaker::tool]` belongs to another framework and is left in place.
pub fn take_tool_attrs(attrs: &mut Vec<Attribute>, krate: Option<&Path>) -> Vec<Attribute> {
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

/// Whether `attr` names a `tool` of another framework: `#[rmcp::tool]`, or a plain `#[tool]`
/// left on a method by [`take_tool_attrs`] because its `#[agent_circuit_breaker::tool]` is ours. rmcp's
/// `#[tool_router]` claims every attribute whose last segment is `tool`.
pub fn is_foreign_tool_attr(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|s| s.ident == "tool")
}

/// Whether `attr` is rmcp's `#[tool_router]` (`#[tool_router]`, `#[rmcp::tool_router(..)]`).
pub fn is_tool_router_attr(attr: &Attribute) -> bool {
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
pub fn rmcp_tool_key(attr: &Attribute) -> Option<Path> {
    let syn::Meta::List(list) = &attr.meta else {
        return None;
    };
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

/// Removes and reports `#[tool]` on an item that is not a method.
pub fn reject_tool_attrs(
    attrs: &mut Vec<Attribute>,
    krate: Option<&Path>,
    errors: &mut Accumulator,
) {
    for attr in take_tool_attrs(attrs, krate) {
        errors.push(
            Error::custom("#[tool] goes on a method (`fn` or `async fn`) of the toolbox")
                .with_span(&attr_name_span(&attr)),
        );
    }
}

/// `#[toolbox(..)]`'s arguments; on a mistake it is pushed and the defaults are used.
pub fn toolbox_args(args: TokenStream, errors: &mut Accumulator) -> ToolboxArgs {
    errors
        .handle_in(|| ToolboxArgs::from_list(&NestedMeta::parse_meta_list(args)?))
        .unwrap_or_default()
}

/// One `#[tool(..)]`, parsed as far as it goes.
pub struct ToolAttribute {
    /// Where an error about the attribute as a whole points: `tool` in `#[tool(..)]`.
    pub span: Span,
    /// The arguments that parsed (see `failed_keys`).
    pub args: ToolArgs,
    /// The keys of the arguments that did not parse, already reported; `*` when the whole
    /// attribute did not. A tool with mistakes in its arguments is kept, so that other tools
    /// may still name it as an alternative and its other arguments are still checked.
    pub failed_keys: Vec<String>,
}

impl ToolAttribute {
    /// Whether an argument that did not parse may have been meant as `key`: `key` with a bad
    /// value, or a misspelt key. Then a missing `key` is not reported again.
    pub fn may_have_meant(&self, key: &str) -> bool {
        self.failed_keys
            .iter()
            .any(|k| k == key || !TOOL_KEYS.contains(&k.as_str()))
    }
}

/// Parses one `#[tool(..)]`; every mistake is pushed, including those of single alternatives.
pub fn tool_attribute(attr: &Attribute, errors: &mut Accumulator) -> ToolAttribute {
    let span = attr_name_span(attr);
    let (mut args, failed_keys) = match &attr.meta {
        syn::Meta::List(list) => tool_args(list.tokens.clone(), errors),
        _ => {
            errors.push(
                Error::custom(
                    "#[tool] needs its capability: `#[tool(provides = \"..\", fallback = \"..\")]`",
                )
                .with_span(&span),
            );
            (ToolArgs::default(), vec!["*".to_owned()])
        }
    };
    errors.extend(std::mem::take(&mut args.alternatives.problems));
    ToolAttribute {
        span,
        args,
        failed_keys,
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

/// `a::b::c`, for messages.
pub fn path_text(path: &Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}
