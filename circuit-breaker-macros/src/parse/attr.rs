//! The arguments of `#[toolbox(..)]` and `#[tool(..)]`, parsed with darling, and which
//! attributes of a method are ours. Nothing here knows about methods or other tools: a value
//! that does not parse is a spanned error, and the keys that failed are remembered so that
//! the later phases do not report them a second time.

use darling::ast::NestedMeta;
use darling::error::Accumulator;
use darling::util::{Flag, SpannedValue};
use darling::{Error, FromMeta};
use std::time::Duration;

use proc_macro2::{Spacing, Span, TokenStream, TokenTree};
use syn::spanned::Spanned;
use syn::{Attribute, Path};

use super::alternatives::Alternatives;
use super::meta::{FreshnessArg, JsonFlag, count, duration, path_text, without_duplicate_keys};

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

/// The keys of `#[tool(..)]`, in the order the grammar documents them.
pub const TOOL_KEYS: [&str; 11] = [
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
    if let Some(args) = plain_texts(&tokens) {
        return (args, Vec::new());
    }
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

/// The commonest `#[tool(..)]`, only `provides`, `fallback` and `name`, each given once as a
/// plain string: read here as darling would read it, each value spanned at its string.
/// darling parses the whole list into `syn`'s metas first, the costliest part of reading a
/// tool in a debug build (a sixth of the macro for 100 tools); any other shape, mistakes
/// included, is `None` and left to darling, so every message stays its own.
fn plain_texts(tokens: &TokenStream) -> Option<ToolArgs> {
    let mut args = ToolArgs::default();
    let mut trees = tokens.clone().into_iter();
    loop {
        let key = match trees.next() {
            None => return Some(args),
            Some(TokenTree::Ident(key)) => key,
            Some(_) => return None,
        };
        match trees.next() {
            Some(TokenTree::Punct(p)) if p.as_char() == '=' && p.spacing() == Spacing::Alone => {}
            _ => return None,
        }
        let Some(TokenTree::Literal(literal)) = trees.next() else {
            return None;
        };
        let text = string_value(&literal)?;
        let key = key.to_string();
        let slot = match key.as_str() {
            "provides" => &mut args.provides,
            "fallback" => &mut args.fallback,
            "name" => &mut args.name,
            _ => return None,
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(SpannedValue::new(text, literal.span()));
        match trees.next() {
            None => return Some(args),
            Some(TokenTree::Punct(p)) if p.as_char() == ',' => {}
            Some(_) => return None,
        }
    }
}

/// The value of a string literal, as `syn`'s `LitStr::value`; read from its text directly
/// when it has no escape and no carriage return (the text is formatted once, not again to
/// unescape it).
fn string_value(literal: &proc_macro2::Literal) -> Option<String> {
    let text = literal.to_string();
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"'))
        && !inner.contains(['\\', '"', '\r'])
        && !inner.is_empty()
    {
        return Some(inner.to_owned());
    }
    match syn::Lit::new(literal.clone()) {
        syn::Lit::Str(text) => Some(text.value()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{ToolArgs, plain_texts};
    use darling::FromMeta;
    use darling::ast::NestedMeta;

    /// The plain-strings reading gives what darling gives, escapes and raw strings included;
    /// anything else is left to darling.
    #[test]
    fn plain_strings_read_as_darling_reads_them() {
        for tokens in [
            quote::quote!(provides = "a", fallback = "b"),
            quote::quote!(provides = "a \" b\\", fallback = r"c\d", name = "n",),
            quote::quote!(fallback = "", provides = "x\ny"),
        ] {
            let fast = plain_texts(&tokens).expect("plain strings");
            let items = NestedMeta::parse_meta_list(tokens).expect("a meta list");
            let slow = ToolArgs::from_list(&items).expect("darling reads it");
            let text = |args: &ToolArgs| {
                [&args.provides, &args.fallback, &args.name]
                    .map(|v| v.as_ref().map(|v| (**v).clone()))
            };
            assert_eq!(text(&fast), text(&slow));
        }
        for tokens in [
            quote::quote!(provides = "a", provides = "b"),
            quote::quote!(provides = "a", fallback = "b", caches),
            quote::quote!(provides = 3),
            quote::quote!(provide = "a"),
            quote::quote!(provides = "a" fallback = "b"),
        ] {
            assert!(plain_texts(&tokens).is_none(), "{tokens}");
        }
    }
}
