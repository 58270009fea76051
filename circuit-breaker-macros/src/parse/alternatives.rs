//! `alternatives(bash(method = .., degradation = .., via = ..), ..)` of a `#[tool(..)]`: each
//! alternative parsed on its own, so that one malformed alternative leaves the tool and its
//! other alternatives to be checked.

use darling::ast::NestedMeta;
use darling::{Error, FromMeta};

use darling::util::SpannedValue;
use syn::{Expr, Ident, Lit, Path};

use super::meta::{path_text, without_duplicate_keys};
use crate::suggest::suggest;

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
            if let Some(problem) = severity_as_text(&text) {
                return Err(Error::custom(problem).with_span(expr));
            }
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
                suggest(&name, ["high", "low"].into_iter())
            ))
            .with_span(&call.func));
        }
        Err(Error::custom(
            "expected a degradation: \"what is lost\" (low), low(\"..\") or high(\"..\")",
        )
        .with_span(expr))
    }
}

/// A severity written as the text (`degradation = "high"`): it would compile as a low
/// degradation that reads "high", so a high one would be ranked low. `None` for a text that
/// says what is lost.
fn severity_as_text(text: &str) -> Option<String> {
    let fix = match text.trim().to_lowercase().as_str() {
        "high" => "write what the route loses inside `high(..)`: `degradation = high(\"..\")`",
        "low" => {
            "write what the route loses, as a plain string or inside `low(..)`: `degradation = low(\"..\")`"
        }
        "unknown" => {
            "for an unknown degradation (ranked high) leave `degradation` out, or write what the route loses: `degradation = high(\"..\")`"
        }
        _ => return None,
    };
    Some(format!(
        "`\"{text}\"` is a severity written as the degradation's text: it would compile as a low degradation that reads \"{text}\"; {fix}"
    ))
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
    let list = alternative_list(item)?;
    let tool = list.path.get_ident().cloned().ok_or_else(|| {
        Error::custom(format!(
            "an alternative is named by the other tool's method name alone: `{}(..)`",
            last_segment(&list.path)
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
            Error::custom(format!(
                "`via` takes the adapter's method name alone, a method of this impl block: `via = {}`",
                last_segment(&path)
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

/// The `bash(..)` of an alternative; any other shape is an error that shows that one.
fn alternative_list(item: &NestedMeta) -> darling::Result<&syn::MetaList> {
    match item {
        NestedMeta::Meta(syn::Meta::List(list)) => Ok(list),
        NestedMeta::Meta(syn::Meta::Path(path)) => {
            let name = path_text(path);
            Err(Error::custom(format!(
                "alternative `{name}` needs its route: `{name}(method = \"..\", degradation = \"..\")`"
            ))
            .with_span(path))
        }
        NestedMeta::Lit(Lit::Str(text)) => Err(Error::custom(format!(
            "an alternative is named by the other tool's method name, not a string: `{}(method = \"..\", degradation = \"..\")`",
            text.value()
        ))
        .with_span(text)),
        _ => Err(Error::custom(
            "expected an alternative tool with its route: `bash(method = \"..\", degradation = \"..\")`",
        )
        .with_span(item)),
    }
}

/// The last segment of `a::b`, what a method name alone would be.
fn last_segment(path: &Path) -> String {
    path.segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default()
}
