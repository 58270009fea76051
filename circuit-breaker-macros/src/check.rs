//! Check phase: the capability map's rules (R1.4, B1) and the toolbox's own, each a
//! spanned error at the offending token, every one of them reported in the same compile. What
//! passes is the checked model [`Checked`]: every name resolved (alternatives to tools,
//! adapters and prechecks to methods with their shapes), so that expansion looks nothing up.

use darling::Error;
use darling::error::Accumulator;
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::{GenericArgument, Ident, Path, PathArguments, Type};

use crate::ast::{Method, Receiver, Tool, Toolbox, unraw};
use crate::attr::Degradation;
use crate::suggest::suggest;

/// The toolbox once checked: everything expansion needs, resolved.
pub struct Checked<'a> {
    pub toolbox: &'a Toolbox,
    /// The runtime crate: `crate = path` or `::agent_circuit_breaker`.
    pub krate: Path,
    /// The self type's name, for the enum and the handle.
    pub base: Ident,
    pub policy: Policy,
    /// Per tool, in declaration (capability-map) order.
    pub tools: Vec<CheckedTool<'a>>,
    /// `#[toolbox(json)]`: every tool has its [`CheckedTool::json`].
    pub json: bool,
}

/// The toolbox-level policy as declared: a key not given is `None`, and the runtime's
/// `Policy` supplies its default (R2.2), so the defaults live in one place.
pub struct Policy {
    pub threshold: Option<u32>,
    pub budget: Option<u32>,
    pub probe_every: Option<u32>,
    /// `probe_unit = "steps"` (`Some(true)`) or `"attempts"` (`Some(false)`).
    pub steps: Option<bool>,
    /// `cool_down`, `cool_down_cap`, `budget_window`, in milliseconds (B13).
    pub cool_down: Option<u64>,
    pub cool_down_cap: Option<u64>,
    pub budget_window: Option<u64>,
    /// `mistake_limit` (B14).
    pub mistake_limit: Option<u32>,
}

impl Policy {
    /// Whether a key beyond the source document's four is given.
    pub fn has_more(&self) -> bool {
        self.cool_down.is_some()
            || self.cool_down_cap.is_some()
            || self.budget_window.is_some()
            || self.mistake_limit.is_some()
    }
}

/// One tool, checked.
pub struct CheckedTool<'a> {
    pub tool: &'a Tool,
    /// Its enum variant.
    pub variant: Ident,
    pub provides: String,
    pub fallback: String,
    /// Per-tool overrides of the policy; `None` takes the toolbox's.
    pub threshold: Option<u32>,
    pub probe_every: Option<u32>,
    /// The deadline of one call in milliseconds (B13): the tool's own `timeout`, else the
    /// toolbox's; `None`, the guarded method reads no clock.
    pub timeout: Option<u64>,
    /// `caches`, `freshness` (with its `source`), `serve_stale` (R6).
    pub caches: bool,
    pub freshness: bool,
    pub source: Option<String>,
    pub serve_stale: bool,
    /// Its alternatives, resolved to tools, in the declared order.
    pub alternatives: Vec<Resolved>,
    /// The pre-call checks its handle method runs (R10): its own first, then those of the
    /// alternatives its adapters go through; each one runnable from that method.
    pub prechecks: Vec<Precheck>,
    /// In a `json` toolbox: the owned argument of each parameter (B8).
    pub json: Vec<JsonParam>,
}

/// A parameter of a tool in a `json` toolbox: the owned type its argument is decoded into,
/// and how the guarded method is handed it.
pub struct JsonParam {
    pub owned: Type,
    pub pass: Pass,
}

/// How a decoded argument is handed to the guarded method.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Pass {
    /// `T` as it is.
    Value,
    /// `&owned` (`&String` coerces to `&str`, `&Vec<T>` to `&[T]`).
    Ref,
    /// `&mut owned`.
    RefMut,
    /// `owned.as_deref()`: `Option<String>` to `Option<&str>`.
    OptionDeref,
    /// `owned.as_ref()`: `Option<T>` to `Option<&T>`.
    OptionRef,
    /// `owned.as_mut()`.
    OptionMut,
}

/// One alternative, resolved.
pub struct Resolved {
    /// Index of the alternative tool in `Toolbox::tools`.
    pub target: usize,
    pub method: String,
    pub degradation: Option<Degradation>,
    /// The adapter, `via = f`, when the route is taken by the dispatcher.
    pub via: Option<MethodRef>,
}

/// A method of the impl, found and checked: what a call to it needs.
#[derive(Clone)]
pub struct MethodRef {
    /// The name as written at the use (`via = f`, `precheck = f`), spanned there.
    pub ident: Ident,
    pub receiver: Receiver,
    pub is_async: bool,
}

/// A pre-call check to run: the tool whose availability it reports, and the method.
pub struct Precheck {
    pub tool: usize,
    pub method: MethodRef,
}

impl CheckedTool<'_> {
    /// The adapters, with the index of the tool each goes through, in the declared order.
    pub fn adapters(&self) -> impl Iterator<Item = (&MethodRef, usize)> {
        self.alternatives
            .iter()
            .filter_map(|alt| alt.via.as_ref().map(|via| (via, alt.target)))
    }
}

/// The guarded handle's own methods: a tool method of the same name would clash with them.
const HANDLE_METHODS: [&str; 6] = [
    "new",
    "with_expeditor",
    "expeditor",
    "toolbox",
    "toolbox_mut",
    "into_parts",
];

/// Runs every check; mistakes go to `errors`. Returns the checked model only when this phase
/// found no mistake (the caller still expands only when `errors` holds none from parsing
/// either); `None` always comes with an error pushed.
pub fn check<'a>(toolbox: &'a Toolbox, errors: &mut Accumulator) -> Option<Checked<'a>> {
    // This phase's own mistakes, to know whether it found any.
    let mut found = Error::accumulator();
    if toolbox.tools.is_empty() && toolbox.item.trait_.is_none() {
        found.push(
            Error::custom(
                "this #[toolbox] has no #[tool(..)] methods: mark each tool function with `#[tool(provides = \"..\", fallback = \"..\")]`",
            )
            .with_span(&toolbox.item.self_ty),
        );
    }
    let policy = check_policy(toolbox, &mut found);
    let default_timeout = toolbox
        .args
        .timeout
        .as_ref()
        .and_then(|t| check_timeout(t, &mut found));
    let mut required = Vec::new();
    let mut timeouts = Vec::new();
    let mut own_prechecks = Vec::new();
    for tool in &toolbox.tools {
        required.push(check_tool(tool, &mut found));
        timeouts.push(match &tool.args().timeout {
            Some(own) => check_timeout(own, &mut found),
            None => default_timeout,
        });
        own_prechecks.push(check_precheck(toolbox, tool, &mut found));
    }
    check_names(&toolbox.tools, &mut found);
    let variants = variants(&toolbox.tools, &mut found);
    let alternatives: Vec<Vec<Resolved>> = toolbox
        .tools
        .iter()
        .enumerate()
        .map(|(index, tool)| resolve_alternatives(toolbox, index, tool, &mut found))
        .collect();
    let prechecks = routed_prechecks(toolbox, &alternatives, &own_prechecks, &mut found);
    let json = toolbox.args.json.is_present();
    let json_params: Vec<Vec<JsonParam>> = toolbox
        .tools
        .iter()
        .map(|tool| {
            if json {
                check_json(toolbox, tool, &mut found)
            } else {
                Vec::new()
            }
        })
        .collect();
    let found = found.into_inner();
    let clean = found.is_empty();
    errors.extend(found);
    // A self type without a name was reported by the parse phase.
    let base = toolbox.base.clone()?;
    if !clean {
        return None;
    }
    let mut tools = Vec::new();
    for ((((((tool, required), timeout), variant), alternatives), prechecks), json) in toolbox
        .tools
        .iter()
        .zip(required)
        .zip(timeouts)
        .zip(variants)
        .zip(alternatives)
        .zip(prechecks)
        .zip(json_params)
    {
        let (provides, fallback) = required?;
        let args = tool.args();
        tools.push(CheckedTool {
            tool,
            variant,
            provides,
            fallback,
            threshold: args.threshold.as_deref().copied(),
            probe_every: args.probe_every.as_deref().copied(),
            timeout,
            caches: args.caches.is_present(),
            freshness: args.freshness.on,
            source: args.freshness.source.as_deref().cloned(),
            serve_stale: args.serve_stale.is_present(),
            alternatives,
            prechecks,
            json,
        });
    }
    Some(Checked {
        toolbox,
        krate: toolbox
            .args
            .krate
            .clone()
            .unwrap_or_else(|| syn::parse_quote!(::agent_circuit_breaker)),
        base,
        policy,
        tools,
        json,
    })
}

/// The dispatcher's methods on the handle (its own `call`, and `ToolDispatch`'s): a tool
/// method of the same name would clash with or shadow them.
const DISPATCH_METHODS: [&str; 4] = ["call", "definitions", "dispatch", "offered"];

/// A tool of a `json` toolbox (B8): called through `&self` (the dispatcher shares the
/// handle), not generic over types, and every parameter with an owned form to decode.
fn check_json(toolbox: &Toolbox, tool: &Tool, errors: &mut Accumulator) -> Vec<JsonParam> {
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
    let generics = &tool.sig.generics;
    if let Some(param) = generics
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
                let shown = crate::ast::type_text(&param.ty);
                errors.push(
                    Error::custom(format!(
                        "parameter `{}` of tool `{name}`: a `#[toolbox(json)]` decodes each argument into an owned value, and {problem}; take an owned type, `&str`, `&[T]`, `&T` or `Option<&T>` (found `{shown}`)",
                        unraw(&param.name)
                    ))
                    .with_span(&span),
                );
                JsonParam {
                    owned: param.ty.clone(),
                    pass: Pass::Value,
                }
            }
        })
        .collect()
}

/// The owned form of a parameter type, or where and why it has none.
fn owned(ty: &Type, impl_params: &[String]) -> Result<JsonParam, (proc_macro2::Span, String)> {
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
            if let Some(inner) = option_of(&p.path)
                && let Type::Reference(r) = inner
            {
                let referent = owned_referent(&r.elem, impl_params)?;
                let pass = if r.mutability.is_some() {
                    Pass::OptionMut
                } else if derefs(&r.elem) {
                    Pass::OptionDeref
                } else {
                    Pass::OptionRef
                };
                let mut option = p.clone();
                if let Some(last) = option.path.segments.last_mut()
                    && let PathArguments::AngleBracketed(args) = &mut last.arguments
                    && let Some(GenericArgument::Type(t)) = args.args.first_mut()
                {
                    *t = referent;
                }
                return Ok(JsonParam {
                    owned: Type::Path(option),
                    pass,
                });
            }
            plain(ty, impl_params)?;
            Ok(JsonParam {
                owned: ty.clone(),
                pass: Pass::Value,
            })
        }
        _ => {
            plain(ty, impl_params)?;
            Ok(JsonParam {
                owned: ty.clone(),
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
fn owned_referent(
    referent: &Type,
    impl_params: &[String],
) -> Result<Type, (proc_macro2::Span, String)> {
    match referent {
        Type::Paren(p) => owned_referent(&p.elem, impl_params),
        Type::Group(g) => owned_referent(&g.elem, impl_params),
        Type::Path(p) if p.qself.is_none() && p.path.is_ident("str") => {
            Ok(syn::parse_quote!(_cb::__private::String))
        }
        Type::Path(p) if p.qself.is_none() && is_std_path(&p.path) => {
            Ok(syn::parse_quote!(_cb::__private::PathBuf))
        }
        Type::Slice(slice) => {
            plain(&slice.elem, impl_params)?;
            let elem = &slice.elem;
            Ok(syn::parse_quote!(_cb::__private::Vec<#elem>))
        }
        other => {
            plain(other, impl_params)?;
            Ok(other.clone())
        }
    }
}

/// A type that is its own owned form: no reference, lifetime, `impl`/`dyn` trait, `Self` or
/// type parameter of the impl anywhere in it.
fn plain(ty: &Type, impl_params: &[String]) -> Result<(), (proc_macro2::Span, String)> {
    fn walk(
        tokens: TokenStream,
        impl_params: &[String],
    ) -> Result<(), (proc_macro2::Span, String)> {
        for token in tokens {
            match token {
                proc_macro2::TokenTree::Punct(p) if p.as_char() == '&' => {
                    return Err((
                        p.span(),
                        "a reference inside a type has no owned form it can build".to_owned(),
                    ));
                }
                proc_macro2::TokenTree::Punct(p) if p.as_char() == '\'' => {
                    return Err((
                        p.span(),
                        "a type that borrows (it has a lifetime) has no owned form it can build"
                            .to_owned(),
                    ));
                }
                proc_macro2::TokenTree::Ident(i) if i == "impl" || i == "dyn" => {
                    let article = if i == "impl" { "an" } else { "a" };
                    return Err((
                        i.span(),
                        format!("{article} `{i} Trait` has no concrete type to decode into"),
                    ));
                }
                proc_macro2::TokenTree::Ident(i) if i == "Self" => {
                    return Err((
                        i.span(),
                        "`Self` does not name the toolbox where the argument type is declared"
                            .to_owned(),
                    ));
                }
                proc_macro2::TokenTree::Ident(i) if impl_params.contains(&i.to_string()) => {
                    return Err((
                        i.span(),
                        format!(
                            "the impl's type parameter `{i}` is not known where the argument type is declared"
                        ),
                    ));
                }
                proc_macro2::TokenTree::Group(g) => walk(g.stream(), impl_params)?,
                _ => {}
            }
        }
        Ok(())
    }
    walk(ty.to_token_stream(), impl_params)
}

fn check_policy(toolbox: &Toolbox, errors: &mut Accumulator) -> Policy {
    let mut policy = Policy {
        threshold: None,
        budget: None,
        probe_every: None,
        steps: None,
        cool_down: None,
        cool_down_cap: None,
        budget_window: None,
        mistake_limit: None,
    };
    let Some(args) = &toolbox.args.policy else {
        return policy;
    };
    for (value, slot, key) in [
        (&args.cool_down, &mut policy.cool_down, "cool_down"),
        (
            &args.cool_down_cap,
            &mut policy.cool_down_cap,
            "cool_down_cap",
        ),
        (
            &args.budget_window,
            &mut policy.budget_window,
            "budget_window",
        ),
    ] {
        if let Some(d) = value {
            *slot = check_policy_duration(key, d, errors);
        }
    }
    if let (Some(cool_down), Some(cap), Some(span)) =
        (policy.cool_down, policy.cool_down_cap, &args.cool_down_cap)
        && cap < cool_down
    {
        errors.push(
            Error::custom(format!(
                "`cool_down_cap` is shorter than `cool_down`: the cap is the longest a cool-down grows to after failed probes, so it must be at least `cool_down = \"{}\"`",
                humantime::format_duration(std::time::Duration::from_millis(cool_down))
            ))
            .with_span(&span.span()),
        );
    }
    for (value, slot, what) in [
        (&args.threshold, &mut policy.threshold, THRESHOLD),
        (&args.budget, &mut policy.budget, BUDGET),
        (&args.probe_every, &mut policy.probe_every, PROBE_EVERY),
        (
            &args.mistake_limit,
            &mut policy.mistake_limit,
            MISTAKE_LIMIT,
        ),
    ] {
        if let Some(v) = value {
            if **v == 0 {
                errors.push(Error::custom(what).with_span(&v.span()));
            } else {
                *slot = Some(**v);
            }
        }
    }
    if let Some(unit) = &args.probe_unit {
        match unit.as_str() {
            "attempts" => policy.steps = Some(false),
            "steps" => policy.steps = Some(true),
            other => errors.push(
                Error::custom(format!(
                    "unknown probe unit `{other}`: expected \"attempts\" or \"steps\"{}",
                    suggest(other, ["attempts", "steps"].into_iter())
                ))
                .with_span(&unit.span()),
            ),
        }
    }
    policy
}

/// The longest deadline, one day: the runtime's `capability::MAX_TIMEOUT` (the same bound
/// for maps built or loaded at run time; a proc-macro crate cannot read the runtime's).
const MAX_TIMEOUT_MS: u128 = 24 * 60 * 60 * 1000;

/// A declared `timeout`, in milliseconds, when it is a deadline a call can be given: at
/// least 1ms, whole milliseconds (the clocks count them), at most a day.
fn check_timeout(
    timeout: &darling::util::SpannedValue<std::time::Duration>,
    errors: &mut Accumulator,
) -> Option<u64> {
    let written = humantime::format_duration(**timeout);
    let problem = if timeout.is_zero() {
        format!(
            "`timeout = \"{written}\"` is no deadline: every call would time out at once; give the longest a call may take, e.g. `timeout = \"30s\"`, or leave `timeout` out"
        )
    } else if !timeout.subsec_nanos().is_multiple_of(1_000_000) {
        format!(
            "`timeout = \"{written}\"` is not a whole number of milliseconds, the clocks' unit: e.g. `timeout = \"500ms\"`"
        )
    } else if timeout.as_millis() > MAX_TIMEOUT_MS {
        format!(
            "`timeout = \"{written}\"` is longer than a day, the longest deadline a tool call may have: is the unit right?"
        )
    } else {
        return u64::try_from(timeout.as_millis()).ok();
    };
    errors.push(Error::custom(problem).with_span(&timeout.span()));
    None
}

const THRESHOLD: &str =
    "`threshold` must be at least 1: it is the number of consecutive failures that open a circuit";
const BUDGET: &str = "`budget` must be at least 1: it is the number of failures allowed per cycle before the agent pauses";
const PROBE_EVERY: &str = "`probe_every` must be at least 1: once a circuit is open, every N-th attempt is let through as a probe";
const MISTAKE_LIMIT: &str = "`mistake_limit` must be at least 1: it is the number of the model's mistakes allowed per cycle before every call pauses";

/// The longest duration of a policy key, a year: the runtime's `policy::MAX_DURATION`.
const MAX_POLICY_MS: u128 = 365 * 24 * 60 * 60 * 1000;

/// A policy duration (`cool_down`, `cool_down_cap`, `budget_window`), in milliseconds, when
/// it is one: at least a millisecond, whole milliseconds, at most a year.
fn check_policy_duration(
    key: &str,
    value: &darling::util::SpannedValue<std::time::Duration>,
    errors: &mut Accumulator,
) -> Option<u64> {
    let written = humantime::format_duration(**value);
    let problem = if value.as_millis() == 0 {
        format!(
            "`{key} = \"{written}\"` is too short: at least a millisecond, e.g. `{key} = \"10s\"`"
        )
    } else if !value.subsec_nanos().is_multiple_of(1_000_000) {
        format!("`{key} = \"{written}\"` is not a whole number of milliseconds, the clocks' unit")
    } else if value.as_millis() > MAX_POLICY_MS {
        format!("`{key} = \"{written}\"` is longer than a year: is the unit right?")
    } else {
        return u64::try_from(value.as_millis()).ok();
    };
    errors.push(Error::custom(problem).with_span(&value.span()));
    None
}

/// The tool's own arguments; its `provides` and `fallback` when both are usable.
fn check_tool(tool: &Tool, errors: &mut Accumulator) -> Option<(String, String)> {
    let name = &tool.name;
    let required = [
        (
            &tool.args().provides,
            "provides",
            format!(
                "tool `{name}` has no `provides`: say in one line what it gives the agent, e.g. `provides = \"content search across files\"`"
            ),
        ),
        (
            &tool.args().fallback,
            "fallback",
            format!(
                "tool `{name}` has no `fallback`: every tool needs a manual fallback for when it and its alternatives are unavailable, e.g. `fallback = \"ask the user which files to examine\"`"
            ),
        ),
    ];
    // `provides` and `fallback`, each when usable.
    let mut texts = Vec::new();
    for (value, key, missing) in required {
        match value {
            // A mistyped or malformed argument may have been meant as this one: reported already.
            None if tool.may_have_meant(key) => {}
            None => errors.push(Error::custom(missing).with_span(&tool.attr.span)),
            Some(v) if v.trim().is_empty() => errors.push(
                Error::custom(format!("`{key}` of tool `{name}` is empty: {}", if key == "provides" {
                    "say in one line what it gives the agent"
                } else {
                    "say what the agent does by hand when the tool and its alternatives are unavailable"
                }))
                .with_span(&v.span()),
            ),
            Some(v) => texts.push((key, (**v).clone())),
        }
    }
    let ident = unraw(&tool.ident);
    if HANDLE_METHODS.contains(&ident.as_str()) {
        errors.push(
            Error::custom(format!(
                "a tool method cannot be called `{ident}`: the guarded handle has a method `{ident}` of its own; rename the method and keep the tool's name with `name = \"{}\"`",
                tool.name
            ))
            .with_span(&tool.ident),
        );
    }
    if let Some(n) = &tool.args().name
        && n.trim().is_empty()
    {
        errors.push(Error::custom("a tool's `name` cannot be empty").with_span(&n.span()));
    }
    for (value, what) in [
        (&tool.args().threshold, THRESHOLD),
        (&tool.args().probe_every, PROBE_EVERY),
    ] {
        if let Some(v) = value
            && **v == 0
        {
            errors.push(Error::custom(what).with_span(&v.span()));
        }
    }
    match <[_; 2]>::try_from(texts) {
        Ok([("provides", provides), ("fallback", fallback)]) => Some((provides, fallback)),
        _ => None,
    }
}

fn check_names(tools: &[Tool], errors: &mut Accumulator) {
    // A tool with an argument that did not parse may have meant another `name`: left out.
    let known = |t: &&Tool| !t.may_have_meant("name");
    for (i, tool) in tools.iter().enumerate().filter(|(_, t)| known(t)) {
        if let Some(first) = tools[..i]
            .iter()
            .filter(known)
            .find(|t| t.name == tool.name)
        {
            errors.push(
                Error::custom(format!(
                    "duplicate tool name `{}`: the tool of `fn {}` already has it; give one of them another `name = \"..\"`",
                    tool.name,
                    first.ident
                ))
                .with_span(&tool.name_span),
            );
        }
    }
}

/// `web_search` → `WebSearch`.
fn camel(ident: &Ident) -> String {
    unraw(ident)
        .split('_')
        .filter(|p| !p.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
        })
        .collect()
}

fn variants(tools: &[Tool], errors: &mut Accumulator) -> Vec<Ident> {
    let mut variants: Vec<Ident> = Vec::new();
    for tool in tools {
        let mut text = camel(&tool.ident);
        if text.is_empty() || text.starts_with(|c: char| c.is_ascii_digit()) {
            text.insert(0, 'T');
        }
        let variant = Ident::new(&text, tool.ident.span());
        if let Some(i) = variants.iter().position(|v| *v == variant) {
            errors.push(
                Error::custom(format!(
                    "tools `{}` and `{}` would share the enum variant `{variant}`; rename one method",
                    tools[i].ident,
                    &tool.ident
                ))
                .with_span(&tool.ident),
            );
        }
        variants.push(variant);
    }
    variants
}

fn resolve_alternatives(
    toolbox: &Toolbox,
    index: usize,
    tool: &Tool,
    errors: &mut Accumulator,
) -> Vec<Resolved> {
    let tools = &toolbox.tools;
    let mut resolved: Vec<Resolved> = Vec::new();
    for alt in &tool.args().alternatives.list {
        let wanted = unraw(&alt.tool);
        let Some(target) = tools.iter().position(|t| unraw(&t.ident) == wanted) else {
            let plain = toolbox.methods.iter().any(|m| unraw(&m.ident) == wanted);
            let message = if plain {
                format!(
                    "alternative `{wanted}` of tool `{}` is a method of this impl but not a #[tool]; mark it #[tool(..)] so it has a breaker of its own",
                    tool.name
                )
            } else {
                let known: Vec<String> = tools.iter().map(|t| unraw(&t.ident)).collect();
                let hint = match suggest(&wanted, known.iter().map(String::as_str)) {
                    near if !near.is_empty() => near,
                    _ => format!(
                        "; an alternative is named by a #[tool] method of this impl ({}): declare `{wanted}` as a #[tool(..)] method or remove this alternative",
                        known
                            .iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                format!(
                    "alternative `{wanted}` of tool `{}` names no tool of this toolbox{hint}",
                    tool.name
                )
            };
            errors.push(Error::custom(message).with_span(&alt.tool));
            continue;
        };
        if target == index {
            errors.push(
                Error::custom(format!(
                    "tool `{}` cannot be its own alternative",
                    tool.name
                ))
                .with_span(&alt.tool),
            );
            continue;
        }
        if resolved.iter().any(|r| r.target == target) {
            errors.push(
                Error::custom(format!(
                    "alternative `{wanted}` is listed twice for tool `{}`: keep one route per alternative tool",
                    tool.name
                ))
                .with_span(&alt.tool),
            );
            continue;
        }
        if alt.method.trim().is_empty() {
            errors.push(Error::custom("`method` cannot be empty").with_span(&alt.method.span()));
        }
        let via = alt
            .via
            .as_ref()
            .and_then(|via| check_adapter(toolbox, tool, via, errors));
        resolved.push(Resolved {
            target,
            method: (*alt.method).clone(),
            degradation: alt.degradation.clone(),
            via,
        });
    }
    resolved
}

/// The method `ident` names, or an error at `ident` ("did you mean" where a name is near).
fn find_method<'t>(
    toolbox: &'t Toolbox,
    ident: &Ident,
    what: &str,
    errors: &mut Accumulator,
) -> Option<&'t Method> {
    let found = toolbox.methods.iter().find(|m| m.ident == *ident);
    if found.is_none() {
        let names: Vec<String> = toolbox
            .methods
            .iter()
            .map(|m| m.ident.to_string())
            .collect();
        errors.push(
            Error::custom(format!(
                "{what} `{ident}` is not a method of this impl block{}",
                suggest(&ident.to_string(), names.iter().map(String::as_str))
            ))
            .with_span(ident),
        );
    }
    found
}

/// The method's receiver when the guarded handle can give it one: `&self` (the handle holds
/// the toolbox, also for a tool without a receiver) or `&mut self`; `self` by value or a
/// typed `self: ..` is an error at its `self`.
fn usable_receiver(
    method: &Method,
    what: &str,
    used_at: &Ident,
    errors: &mut Accumulator,
) -> Option<Receiver> {
    if method.receiver.is_none() {
        let ident = &method.ident;
        let error = Error::custom(format!(
            "{what} `{ident}` cannot take `self` by value or as `self: ..`: the guarded handle keeps the toolbox and lends it to `{ident}`; take `&self` or `&mut self`"
        ));
        errors.push(match method.self_span {
            Some(span) => error.with_span(&span),
            None => error.with_span(used_at),
        });
    }
    method.receiver
}

/// `precheck = f`: a method of the impl taking no argument but the receiver, returning an
/// `Availability`; async only for an async tool, `&mut self` only for a `&mut self` tool
/// (R10).
fn check_precheck(toolbox: &Toolbox, tool: &Tool, errors: &mut Accumulator) -> Option<MethodRef> {
    let path = tool.args().precheck.as_ref()?;
    let Some(ident) = path.get_ident() else {
        errors.push(
            Error::custom(
                "`precheck` names a method of this impl block: `precheck = check_server`",
            )
            .with_span(path),
        );
        return None;
    };
    let check = find_method(toolbox, ident, "precheck", errors)?;
    let receiver = usable_receiver(check, "precheck", ident, errors);
    let mut problems = Vec::new();
    if check.arity != 0 {
        problems.push("it takes no arguments besides `&self`".to_owned());
    }
    if check.is_async && !tool.sig.is_async() {
        problems
            .push("an async precheck needs an async tool (a sync tool cannot await it)".to_owned());
    }
    if receiver == Some(Receiver::Mut) && tool.sig.receiver != Receiver::Mut {
        problems.push("it takes `&mut self` but the tool takes `&self`".to_owned());
    }
    if !problems.is_empty() {
        errors.push(
            Error::custom(format!(
                "precheck `{ident}` of tool `{}` cannot be used: {} (write `fn {ident}(&self) -> Availability`)",
                tool.name,
                problems.join("; ")
            ))
            .with_span(ident),
        );
        return None;
    }
    Some(MethodRef {
        ident: ident.clone(),
        receiver: receiver?,
        is_async: check.is_async,
    })
}

/// Per tool, the prechecks its handle method runs: its own, then those of the alternatives
/// its adapters go through (R10: an alternative is checked before a route through it is
/// taken). An alternative's precheck the handle method cannot run (async from a sync tool,
/// `&mut self` from a `&self` tool) is an error at the adapter, never left out.
fn routed_prechecks(
    toolbox: &Toolbox,
    alternatives: &[Vec<Resolved>],
    own: &[Option<MethodRef>],
    errors: &mut Accumulator,
) -> Vec<Vec<Precheck>> {
    let mut all = Vec::new();
    for (index, tool) in toolbox.tools.iter().enumerate() {
        let mut prechecks: Vec<Precheck> = own[index]
            .iter()
            .map(|method| Precheck {
                tool: index,
                method: method.clone(),
            })
            .collect();
        for alt in &alternatives[index] {
            let (Some(via), Some(check)) = (&alt.via, &own[alt.target]) else {
                continue;
            };
            let target = &toolbox.tools[alt.target];
            let (check_name, tool_ident) = (&check.ident, &tool.ident);
            let mut problems = Vec::new();
            let mut fixes = Vec::new();
            if check.is_async && !tool.sig.is_async() {
                problems.push(format!(
                    "`{check_name}` is async and `{tool_ident}` is a sync tool, which cannot await it"
                ));
                fixes.push(format!(
                    "make `{check_name}` a sync `fn` or `{tool_ident}` an `async fn`"
                ));
            }
            if check.receiver == Receiver::Mut && tool.sig.receiver != Receiver::Mut {
                problems.push(format!(
                    "`{check_name}` takes `&mut self` and `{tool_ident}` takes `&self`"
                ));
                fixes.push(format!(
                    "make `{check_name}` take `&self` or `{tool_ident}` take `&mut self`"
                ));
            }
            if problems.is_empty() {
                prechecks.push(Precheck {
                    tool: alt.target,
                    method: check.clone(),
                });
            } else {
                errors.push(
                    Error::custom(format!(
                        "adapter `{}` routes tool `{}` through `{}`, whose precheck `{check_name}` runs before that route is taken, but {}: {}, or drop `via`",
                        via.ident,
                        tool.name,
                        target.name,
                        problems.join(" and "),
                        fixes.join(", "),
                    ))
                    .with_span(&via.ident),
                );
            }
        }
        all.push(prechecks);
    }
    all
}

/// An adapter has the tool's signature: same asyncness, arguments, and a receiver the
/// handle can give it.
fn check_adapter(
    toolbox: &Toolbox,
    tool: &Tool,
    via: &Ident,
    errors: &mut Accumulator,
) -> Option<MethodRef> {
    let adapter = find_method(toolbox, via, "adapter", errors)?;
    let receiver = usable_receiver(adapter, "adapter", via, errors);
    let primary_async = tool.sig.is_async();
    let mut problems = Vec::new();
    if adapter.is_async != primary_async {
        problems.push(if primary_async {
            "the tool is async and the adapter is not".to_owned()
        } else {
            "the adapter is async and the tool is not".to_owned()
        });
    }
    let arity = tool.sig.params.len();
    if adapter.arity != arity {
        problems.push(format!(
            "the tool takes {arity} argument(s), the adapter {}",
            adapter.arity
        ));
    }
    if receiver == Some(Receiver::Mut) && tool.sig.receiver != Receiver::Mut {
        problems.push(
            "the adapter takes `&mut self` and the tool does not (the handle lends the toolbox as the tool takes it)"
                .to_owned(),
        );
    }
    if !problems.is_empty() {
        errors.push(
            Error::custom(format!(
                "adapter `{via}` must have the signature of tool `{}`: {}",
                tool.ident,
                problems.join("; ")
            ))
            .with_span(via),
        );
        return None;
    }
    Some(MethodRef {
        ident: via.clone(),
        receiver: receiver?,
        is_async: adapter.is_async,
    })
}
