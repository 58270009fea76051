//! Each tool's own arguments (`provides`, `fallback`, `name`, the counts), the names the tools
//! share (tool names, enum variants), and the names of the guarded handle's own methods, which
//! no tool method may take.

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use darling::Error;
use darling::error::Accumulator;
use syn::Ident;

use super::policy::{PROBE_EVERY, THRESHOLD};
use crate::parse::{Tool, unraw};

/// The guarded handle's own methods: a tool method of the same name would clash with them.
const HANDLE_METHODS: [&str; 6] = [
    "new",
    "with_expeditor",
    "expeditor",
    "toolbox",
    "toolbox_mut",
    "into_parts",
];

/// The tool's own arguments; its `provides` and `fallback` when both are usable.
pub fn check_tool(tool: &Tool, errors: &mut Accumulator) -> Option<(String, String)> {
    let required = required_texts(tool, errors);
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
    required
}

/// `provides` and `fallback`, when both are given and not empty.
fn required_texts(tool: &Tool, errors: &mut Accumulator) -> Option<(String, String)> {
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
                "tool `{name}` has no `fallback`: every tool needs a manual fallback for when it and its alternatives are unavailable, e.g. `fallback = \"{}\"`",
                fallback_example(tool)
            ),
        ),
    ];
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
    match <[_; 2]>::try_from(texts) {
        Ok([("provides", provides), ("fallback", fallback)]) => Some((provides, fallback)),
        _ => None,
    }
}

/// An example of a fallback for `tool`, from what it provides (or its name): the same example
/// for every tool would read as the answer to copy.
fn fallback_example(tool: &Tool) -> String {
    match tool.args().provides.as_deref().map(|p| p.trim()) {
        Some(provides) if !provides.is_empty() => {
            format!(
                "ask the user to do the {} by hand",
                provides.replace('"', "'")
            )
        }
        _ => format!("ask the user to do what {} does by hand", tool.name),
    }
}

/// No two tools share a name: the capability map and the model find a tool by it.
pub fn check_names(tools: &[Tool], errors: &mut Accumulator) {
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

/// Each tool's variant of the tool enum, its method's name in camel case; two tools whose
/// names give the same variant are an error.
pub fn variants(tools: &[Tool], errors: &mut Accumulator) -> Vec<Ident> {
    let mut variants: Vec<Ident> = Vec::new();
    // By text, not by `Ident` (whose comparison formats both): a toolbox of a hundred tools
    // made this check quadratic in formatted idents.
    let mut seen: HashMap<String, usize> = HashMap::new();
    for tool in tools {
        let mut text = camel(&tool.ident);
        if text.is_empty() || text.starts_with(|c: char| c.is_ascii_digit()) {
            text.insert(0, 'T');
        }
        let variant = Ident::new(&text, tool.ident.span());
        match seen.entry(text) {
            Entry::Occupied(first) => errors.push(
                Error::custom(format!(
                    "tools `{}` and `{}` would share the enum variant `{variant}`; rename one method",
                    tools[*first.get()].ident,
                    &tool.ident
                ))
                .with_span(&tool.ident),
            ),
            Entry::Vacant(free) => {
                free.insert(variants.len());
            }
        }
        variants.push(variant);
    }
    variants
}
