//! Check phase: the capability map's rules (SPEC R1.4, B1) and the toolbox's own, each a
//! spanned error at the offending token, every one of them reported in the same compile.

use darling::Error;
use darling::error::Accumulator;
use syn::Ident;

use crate::ast::{Degradation, Receiver, Tool, Toolbox, unraw};

/// The toolbox once checked: what expansion needs beyond the parsed model.
pub struct Checked {
    pub policy: Policy,
    /// Per tool, its alternatives resolved to tool indices.
    pub alternatives: Vec<Vec<Resolved>>,
    /// Per tool, its enum variant.
    pub variants: Vec<Ident>,
}

/// The toolbox-level policy (seed defaults where not given).
pub struct Policy {
    pub threshold: u32,
    pub budget: u32,
    pub probe_every: u32,
    pub steps: bool,
}

/// One alternative, resolved.
pub struct Resolved {
    /// Index of the alternative tool in `Toolbox::tools`.
    pub target: usize,
    pub method: String,
    pub degradation: Option<Degradation>,
    pub via: Option<Ident>,
}

/// Runs every check; mistakes go to `errors`, the result is usable for expansion only when
/// `errors` stays empty.
pub fn check(toolbox: &Toolbox, errors: &mut Accumulator) -> Checked {
    if toolbox.tools.is_empty() && toolbox.item.trait_.is_none() {
        errors.push(
            Error::custom(
                "this #[toolbox] has no #[tool(..)] methods: mark each tool function with `#[tool(provides = \"..\", fallback = \"..\")]`",
            )
            .with_span(&toolbox.item.self_ty),
        );
    }
    let policy = check_policy(toolbox, errors);
    for tool in &toolbox.tools {
        check_tool(tool, errors);
        check_precheck(toolbox, tool, errors);
    }
    check_names(&toolbox.tools, errors);
    let variants = variants(&toolbox.tools, errors);
    let alternatives = toolbox
        .tools
        .iter()
        .enumerate()
        .map(|(index, tool)| resolve_alternatives(toolbox, index, tool, errors))
        .collect();
    Checked {
        policy,
        alternatives,
        variants,
    }
}

fn check_policy(toolbox: &Toolbox, errors: &mut Accumulator) -> Policy {
    let mut policy = Policy {
        threshold: 3,
        budget: 5,
        probe_every: 3,
        steps: false,
    };
    let Some(args) = &toolbox.args.policy else {
        return policy;
    };
    for (value, slot, what) in [
        (&args.threshold, &mut policy.threshold, THRESHOLD),
        (&args.budget, &mut policy.budget, BUDGET),
        (&args.probe_every, &mut policy.probe_every, PROBE_EVERY),
    ] {
        if let Some(v) = value {
            if **v == 0 {
                errors.push(Error::custom(what).with_span(&v.span()));
            } else {
                *slot = **v;
            }
        }
    }
    if let Some(unit) = &args.probe_unit {
        match unit.as_str() {
            "attempts" => {}
            "steps" => policy.steps = true,
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

const THRESHOLD: &str =
    "`threshold` must be at least 1: it is the number of consecutive failures that open a circuit";
const BUDGET: &str = "`budget` must be at least 1: it is the number of failures allowed per cycle before the agent pauses";
const PROBE_EVERY: &str = "`probe_every` must be at least 1: once a circuit is open, every N-th attempt is let through as a probe";

fn check_tool(tool: &Tool, errors: &mut Accumulator) {
    let name = &tool.name;
    let required = [
        (
            &tool.args.provides,
            "provides",
            format!(
                "tool `{name}` has no `provides`: say in one line what it gives the agent, e.g. `provides = \"content search across files\"`"
            ),
        ),
        (
            &tool.args.fallback,
            "fallback",
            format!(
                "tool `{name}` has no `fallback`: every tool needs a manual fallback for when it and its alternatives are unavailable, e.g. `fallback = \"ask the user which files to examine\"`"
            ),
        ),
    ];
    for (value, key, missing) in required {
        match value {
            // A mistyped or malformed argument may have been meant as this one: reported already.
            None if tool.may_have_meant(key) => {}
            None => errors.push(Error::custom(missing).with_span(&tool.attr_span())),
            Some(v) if v.trim().is_empty() => errors.push(
                Error::custom(format!("`{key}` of tool `{name}` is empty: {}", if key == "provides" {
                    "say in one line what it gives the agent"
                } else {
                    "say what the agent does by hand when the tool and its alternatives are unavailable"
                }))
                .with_span(&v.span()),
            ),
            Some(_) => {}
        }
    }
    if let Some(n) = &tool.args.name
        && n.trim().is_empty()
    {
        errors.push(Error::custom("a tool's `name` cannot be empty").with_span(&n.span()));
    }
    for (value, what) in [
        (&tool.args.threshold, THRESHOLD),
        (&tool.args.probe_every, PROBE_EVERY),
    ] {
        if let Some(v) = value
            && **v == 0
        {
            errors.push(Error::custom(what).with_span(&v.span()));
        }
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
                    first.ident()
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
        let mut text = camel(tool.ident());
        if text.is_empty() || text.starts_with(|c: char| c.is_ascii_digit()) {
            text.insert(0, 'T');
        }
        let variant = Ident::new(&text, tool.ident().span());
        if let Some(i) = variants.iter().position(|v| *v == variant) {
            errors.push(
                Error::custom(format!(
                    "tools `{}` and `{}` would share the enum variant `{variant}`; rename one method",
                    tools[i].ident(),
                    tool.ident()
                ))
                .with_span(tool.ident()),
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
    for alt in &tool.args.alternatives.list {
        let wanted = unraw(&alt.tool);
        let Some(target) = tools.iter().position(|t| unraw(t.ident()) == wanted) else {
            let plain = toolbox.methods.iter().any(|m| unraw(&m.ident) == wanted);
            let message = if plain {
                format!(
                    "alternative `{wanted}` of tool `{}` is a method of this impl but not a #[tool]; mark it #[tool(..)] so it has a breaker of its own",
                    tool.name
                )
            } else {
                let known: Vec<String> = tools.iter().map(|t| unraw(t.ident())).collect();
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
        if let Some(via) = &alt.via {
            check_adapter(toolbox, tool, via, errors);
        }
        resolved.push(Resolved {
            target,
            method: (*alt.method).clone(),
            degradation: alt.degradation.clone(),
            via: alt.via.clone(),
        });
    }
    resolved
}

/// `precheck = f`: a method of the impl taking no argument but the receiver, returning an
/// `Availability`; async only for an async tool (R10).
fn check_precheck(toolbox: &Toolbox, tool: &Tool, errors: &mut Accumulator) {
    let Some(path) = &tool.args.precheck else {
        return;
    };
    let Some(ident) = path.get_ident() else {
        errors.push(
            Error::custom(
                "`precheck` names a method of this impl block: `precheck = check_server`",
            )
            .with_span(path),
        );
        return;
    };
    let Some(check) = toolbox.methods.iter().find(|m| m.ident == *ident) else {
        let names: Vec<String> = toolbox
            .methods
            .iter()
            .map(|m| m.ident.to_string())
            .collect();
        errors.push(
            Error::custom(format!(
                "precheck `{ident}` is not a method of this impl block{}",
                suggest(&ident.to_string(), names.iter().map(String::as_str))
            ))
            .with_span(ident),
        );
        return;
    };
    let mut problems = Vec::new();
    if check.arity != 0 {
        problems.push("it takes no arguments besides `&self`".to_owned());
    }
    if check.is_async && tool.method.sig.asyncness.is_none() {
        problems
            .push("an async precheck needs an async tool (a sync tool cannot await it)".to_owned());
    }
    if check.receiver == Receiver::Mut && tool.receiver != Receiver::Mut {
        problems.push("it takes `&mut self` but the tool takes `&self`".to_owned());
    }
    if check.receiver != Receiver::None && tool.receiver == Receiver::None {
        problems.push("it takes `self` but the tool has no receiver".to_owned());
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
    }
}

/// An adapter has the tool's signature: same asyncness, arguments, and a receiver the
/// handle can give it.
fn check_adapter(toolbox: &Toolbox, tool: &Tool, via: &Ident, errors: &mut Accumulator) {
    let Some(adapter) = toolbox.methods.iter().find(|m| m.ident == *via) else {
        errors.push(
            Error::custom(format!(
                "adapter `{via}` is not a method of this impl block{}",
                suggest(
                    &via.to_string(),
                    toolbox
                        .methods
                        .iter()
                        .map(|m| m.ident.to_string())
                        .collect::<Vec<_>>()
                        .iter()
                        .map(String::as_str)
                )
            ))
            .with_span(via),
        );
        return;
    };
    let primary_async = tool.method.sig.asyncness.is_some();
    let mut problems = Vec::new();
    if adapter.is_async != primary_async {
        problems.push(if primary_async {
            "the tool is async and the adapter is not".to_owned()
        } else {
            "the adapter is async and the tool is not".to_owned()
        });
    }
    let arity = tool.arg_names.len();
    if adapter.arity != arity {
        problems.push(format!(
            "the tool takes {arity} argument(s), the adapter {}",
            adapter.arity
        ));
    }
    let receiver_ok = matches!(
        (tool.receiver, adapter.receiver),
        (_, Receiver::None)
            | (Receiver::Ref | Receiver::Mut, Receiver::Ref)
            | (Receiver::Mut, Receiver::Mut)
    );
    if !receiver_ok {
        problems.push("the adapter needs a receiver the tool does not have (`&mut self` for a `&self` tool, or `self` for a tool without one)".to_owned());
    }
    if !problems.is_empty() {
        errors.push(
            Error::custom(format!(
                "adapter `{via}` must have the signature of tool `{}`: {}",
                tool.ident(),
                problems.join("; ")
            ))
            .with_span(via),
        );
    }
}

/// `; did you mean `x`?` when a candidate is close to `name`.
pub fn suggest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    let wanted = name.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        let distance = strsim::osa_distance(&wanted, &candidate.to_lowercase());
        let longest = wanted.chars().count().max(candidate.chars().count());
        let limit = (longest / 3).clamp(1, 3);
        if distance <= limit && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map_or_else(String::new, |(_, c)| format!("; did you mean `{c}`?"))
}
