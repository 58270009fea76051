//! Check phase: the capability map's rules (R1.4, B1) and the toolbox's own, each a
//! spanned error at the offending token, every one of them reported in the same compile. What
//! passes is the checked model [`Checked`]: every name resolved (alternatives to tools,
//! adapters and prechecks to methods with their shapes), so that expansion looks nothing up.

mod json;
mod model;
mod policy;
mod routes;
mod tools;

use darling::Error;
use darling::error::Accumulator;
use syn::Ident;

use crate::parse::Toolbox;

pub use model::{
    AdapterTypes, Checked, CheckedTool, JsonParam, MethodRef, Owned, Pass, Policy, Precheck,
    Resolved,
};

/// Runs every check; mistakes go to `errors`. Returns the checked model only when this phase
/// found no mistake (the caller still expands only when `errors` holds none from parsing
/// either); `None` always comes with an error pushed.
pub fn check<'a>(toolbox: &'a Toolbox, errors: &mut Accumulator) -> Option<Checked<'a>> {
    // This phase's own mistakes, to know whether it found any.
    let mut found = Error::accumulator();
    let findings = find(toolbox, &mut found);
    let found = found.into_inner();
    let clean = found.is_empty();
    errors.extend(found);
    // A self type without a name was reported by the parse phase.
    let base = toolbox.base.clone()?;
    if !clean {
        return None;
    }
    let policy = findings.policy;
    let json = findings.json;
    let tools = findings.tools.into_checked(toolbox)?;
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

/// What the checks found, before it is known whether the toolbox is clean.
struct Findings {
    policy: Policy,
    json: bool,
    tools: ToolFindings,
}

/// What the checks found of each tool, in declaration (capability-map) order.
struct ToolFindings {
    required: Vec<Option<(String, String)>>,
    timeouts: Vec<Option<u64>>,
    variants: Vec<Ident>,
    alternatives: Vec<Vec<Resolved>>,
    prechecks: Vec<Vec<Precheck>>,
    json: Vec<Vec<JsonParam>>,
}

/// Runs the checks in the order their errors are reported: the toolbox's own, each tool's
/// own, then those across tools.
fn find(toolbox: &Toolbox, found: &mut Accumulator) -> Findings {
    if toolbox.tools.is_empty() && toolbox.item.trait_.is_none() {
        found.push(
            Error::custom(
                "this #[toolbox] has no #[tool(..)] methods: mark each tool function with `#[tool(provides = \"..\", fallback = \"..\")]`",
            )
            .with_span(&toolbox.item.self_ty),
        );
    }
    let policy = policy::check_policy(toolbox, found);
    let default_timeout = toolbox
        .args
        .timeout
        .as_ref()
        .and_then(|t| policy::check_timeout(t, found));
    let mut required = Vec::new();
    let mut timeouts = Vec::new();
    let mut own_prechecks = Vec::new();
    for tool in &toolbox.tools {
        required.push(tools::check_tool(tool, found));
        timeouts.push(match &tool.args().timeout {
            Some(own) => policy::check_timeout(own, found),
            None => default_timeout,
        });
        own_prechecks.push(routes::check_precheck(toolbox, tool, found));
    }
    tools::check_names(&toolbox.tools, found);
    let variants = tools::variants(&toolbox.tools, found);
    let alternatives: Vec<Vec<Resolved>> = toolbox
        .tools
        .iter()
        .enumerate()
        .map(|(index, tool)| routes::resolve_alternatives(toolbox, index, tool, found))
        .collect();
    let prechecks = routes::routed_prechecks(toolbox, &alternatives, &own_prechecks, found);
    let json = toolbox.args.json.is_present();
    let json_params = toolbox
        .tools
        .iter()
        .map(|tool| {
            if json {
                json::check_json(toolbox, tool, found)
            } else {
                Vec::new()
            }
        })
        .collect();
    Findings {
        policy,
        json,
        tools: ToolFindings {
            required,
            timeouts,
            variants,
            alternatives,
            prechecks,
            json: json_params,
        },
    }
}

impl ToolFindings {
    /// The checked tools; `None` when a tool's `provides` or `fallback` is missing, which was
    /// reported.
    fn into_checked(self, toolbox: &Toolbox) -> Option<Vec<CheckedTool<'_>>> {
        let per_tool = self
            .required
            .into_iter()
            .zip(self.timeouts)
            .zip(self.variants)
            .zip(self.alternatives)
            .zip(self.prechecks)
            .zip(self.json);
        let mut tools = Vec::new();
        for (tool, (((((required, timeout), variant), alternatives), prechecks), json)) in
            toolbox.tools.iter().zip(per_tool)
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
        Some(tools)
    }
}
