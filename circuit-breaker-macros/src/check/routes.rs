//! The routes between tools: each alternative resolved to a tool of the toolbox, each adapter
//! (`via = f`) and precheck (`precheck = f`) resolved to a method of the impl whose shape the
//! guarded handle can call, and the prechecks each handle method runs before a route.

use darling::Error;
use darling::error::Accumulator;
use syn::Ident;

use super::model::{AdapterTypes, MethodRef, Precheck, Resolved};
use crate::parse::{Method, Receiver, Tool, Toolbox, nameable, type_text, unraw};
use crate::suggest::suggest;

/// The alternatives of the tool at `index`, resolved to tools in the declared order; one that
/// names no tool, the tool itself or a tool named before is an error and left out.
pub fn resolve_alternatives(
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
            let message = unknown_alternative(toolbox, tool, &wanted);
            errors.push(Error::custom(message).with_span(&alt.tool));
            continue;
        };
        let problem = if target == index {
            Some(format!(
                "tool `{}` cannot be its own alternative",
                tool.name
            ))
        } else if resolved.iter().any(|r| r.target == target) {
            Some(format!(
                "alternative `{wanted}` is listed twice for tool `{}`: keep one route per alternative tool",
                tool.name
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            errors.push(Error::custom(problem).with_span(&alt.tool));
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

/// Why the alternative `wanted` of `tool` names no tool: a method that is not one, a name
/// near a tool's, or the tools there are.
fn unknown_alternative(toolbox: &Toolbox, tool: &Tool, wanted: &str) -> String {
    if toolbox.methods.iter().any(|m| unraw(&m.ident) == wanted) {
        return format!(
            "alternative `{wanted}` of tool `{}` is a method of this impl but not a #[tool]; mark it #[tool(..)] so it has a breaker of its own",
            tool.name
        );
    }
    let known: Vec<String> = toolbox.tools.iter().map(|t| unraw(&t.ident)).collect();
    let hint = match suggest(wanted, known.iter().map(String::as_str)) {
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
pub fn check_precheck(
    toolbox: &Toolbox,
    tool: &Tool,
    errors: &mut Accumulator,
) -> Option<MethodRef> {
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
        types: None,
    })
}

/// Per tool, the prechecks its handle method runs: its own, then those of the alternatives
/// its adapters go through (R10: an alternative is checked before a route through it is
/// taken). An alternative's precheck the handle method cannot run (async from a sync tool,
/// `&mut self` from a `&self` tool) is an error at the adapter, never left out.
pub fn routed_prechecks(
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
            match routed_precheck_error(tool, target, via, check) {
                None => prechecks.push(Precheck {
                    tool: alt.target,
                    method: check.clone(),
                }),
                Some(error) => errors.push(error),
            }
        }
        all.push(prechecks);
    }
    all
}

/// Why `tool`'s handle method cannot run `check`, the precheck of `target` that adapter `via`
/// routes through; `None` when it can.
fn routed_precheck_error(
    tool: &Tool,
    target: &Tool,
    via: &MethodRef,
    check: &MethodRef,
) -> Option<Error> {
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
        return None;
    }
    Some(
        Error::custom(format!(
            "adapter `{}` routes tool `{}` through `{}`, whose precheck `{check_name}` runs before that route is taken, but {}: {}, or drop `via`",
            via.ident,
            tool.name,
            target.name,
            problems.join(" and "),
            fixes.join(", "),
        ))
        .with_span(&via.ident),
    )
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
    let receiver = receiver?;
    Some(MethodRef {
        ident: via.clone(),
        receiver,
        is_async: adapter.is_async,
        types: adapter_types(tool, adapter, receiver),
    })
}

/// The adapter's types, to be compared with its tool's by the generated call, when both can
/// be written there; with the signature the adapter should have, in the user's spelling.
fn adapter_types(tool: &Tool, adapter: &Method, receiver: Receiver) -> Option<AdapterTypes> {
    let types = adapter.types.as_ref()?;
    let sig = &tool.sig;
    if !sig.params.iter().all(|p| nameable(&p.ty)) || !nameable(&sig.output) {
        return None;
    }
    let receiver = match receiver {
        Receiver::Ref => Some("&self".to_owned()),
        Receiver::Mut => Some("&mut self".to_owned()),
        Receiver::None => None,
    };
    let params = sig.params.iter().map(|p| {
        let name = unraw(&p.name);
        let name = if name.starts_with("__cb_arg") {
            "_".to_owned()
        } else {
            name
        };
        format!("{name}: {}", type_text(&p.ty))
    });
    let asyncness = if adapter.is_async { "async " } else { "" };
    Some(AdapterTypes {
        params: types.params.clone(),
        output: types.output.clone(),
        expected: format!(
            "{asyncness}fn {}({}) -> {}",
            adapter.ident,
            receiver
                .into_iter()
                .chain(params)
                .collect::<Vec<_>>()
                .join(", "),
            type_text(&sig.output)
        ),
    })
}
