//! The values of single keys (`timeout = "30s"`, `threshold = 3`, `json`, `freshness(..)`)
//! and what every list of keys needs (one key given once, paths as text), for the darling
//! structs of `attr` and `alternatives`.

use darling::ast::NestedMeta;
use darling::error::Accumulator;
use darling::util::SpannedValue;
use darling::{Error, FromMeta};
use std::time::Duration;

use syn::spanned::Spanned;
use syn::{Expr, Lit, Path};

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

/// `timeout = "30s"`: a duration in humantime's syntax (`"500ms"`, `"2m"`, `"1h 30m"`),
/// spanned at the string. Zero and out-of-range durations parse; the check phase says why
/// they are no deadline.
pub fn duration(meta: &syn::Meta) -> darling::Result<Option<SpannedValue<Duration>>> {
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
pub fn count(meta: &syn::Meta) -> darling::Result<Option<SpannedValue<u32>>> {
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

/// Drops a key given a second time (`provides = .., provides = ..`), with an error at the
/// second one; the first is kept, so the rest is still checked.
pub fn without_duplicate_keys(
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

/// `a::b::c`, for messages.
pub fn path_text(path: &Path) -> String {
    path.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}
