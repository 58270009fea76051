//! The run-time map (R2.4, B6): every listed tool gets a default spec (what it provides from
//! its description, a fallback naming its server), then the overlay adds or overrides what
//! the listings do not say, by tool name; tool names listed by two servers, and overlay
//! entries naming no listed tool, are errors.

use std::collections::HashMap;
use std::sync::Arc;

use super::connect::Server;
use super::tools::Listed;
use super::{DuplicateTool, McpClientError, OverlayProblem};
use crate::capability::{CapabilityMap, ToolSpec, did_you_mean};

/// The first line of a description, at most 160 characters.
fn first_line(description: &str) -> Option<String> {
    let line = description.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut out: String = line.chars().take(160).collect();
    if line.chars().count() > 160 {
        out.push('…');
    }
    Some(out)
}

/// The spec a listed tool gets when the overlay says nothing of it (R2.4, B6).
pub(super) fn default_spec(name: &str, server: &str, description: &str) -> ToolSpec {
    ToolSpec::new(name.to_owned())
        .provides(first_line(description).unwrap_or_else(|| format!("capability of server {server}")))
        .fallback(format!(
            "tell the user that {name} of the MCP server {server} could not be used, and what it was needed for"
        ))
        .server(server.to_owned())
        .build()
}

/// `base` with what the overlay gives: provides, alternatives, fallback, threshold,
/// probe interval, caches, caller errors, timeout. An empty text or list of alternatives in
/// the overlay keeps the base's; an empty list of caller errors is kept (everything is the
/// tool's).
pub(super) fn merge(base: &ToolSpec, overlay: &ToolSpec) -> ToolSpec {
    let text = |o: &str, b: &str| {
        if o.trim().is_empty() {
            b.to_owned()
        } else {
            o.to_owned()
        }
    };
    let alternatives = if overlay.alternatives().is_empty() {
        base.alternatives()
    } else {
        overlay.alternatives()
    };
    let mut spec = ToolSpec::new(base.name().to_owned())
        .provides(text(overlay.provides(), base.provides()))
        .fallback(text(overlay.fallback(), base.fallback()))
        .alternatives(alternatives.iter().cloned())
        .caches(overlay.is_caching() || base.is_caching());
    if let Some(server) = base.server() {
        spec = spec.server(server.to_owned());
    }
    if let Some(threshold) = overlay.threshold().or(base.threshold()) {
        spec = spec.threshold(threshold);
    }
    if let Some(every) = overlay.probe_every().or(base.probe_every()) {
        spec = spec.probe_every(every);
    }
    if let Some(categories) = overlay.caller_errors().or(base.caller_errors()) {
        spec = spec.caller_errors(categories.iter().copied());
    }
    // A timeout the overlay could not read is kept as written, so that the map's validation
    // reports it by the tool's name instead of dropping it.
    let timed = if overlay.declares_timeout() {
        overlay
    } else {
        base
    };
    spec = spec.timeout_of(timed);
    spec.build()
}

/// The specs of the run-time map, each with its server's index and its listing.
pub(super) type Specs = Vec<(usize, Listed, ToolSpec)>;

/// The run-time map (B6): every listed tool with its default spec, then the overlay. With
/// `deferring` (a server is not connected yet), an overlay entry naming no listed tool is
/// no error but returned apart, to be applied when a server lists it.
pub(super) fn run_time_map(
    servers: &[Arc<Server>],
    listings: Vec<Vec<Listed>>,
    overlay: Option<&CapabilityMap>,
    deferring: bool,
) -> Result<(Specs, Vec<ToolSpec>), McpClientError> {
    let mut owners: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut order = Vec::new();
    for (index, listing) in listings.iter().enumerate() {
        for tool in listing {
            let owners = owners.entry(tool.name.as_str()).or_default();
            if owners.is_empty() {
                order.push(tool.name.as_str());
            }
            owners.push(index);
        }
    }
    let duplicates: Vec<DuplicateTool> = order
        .iter()
        .filter(|name| owners[**name].len() > 1)
        .map(|name| DuplicateTool {
            tool: (*name).to_owned(),
            servers: owners[*name]
                .iter()
                .map(|&i| servers[i].name.clone())
                .collect(),
        })
        .collect();
    if !duplicates.is_empty() {
        return Err(McpClientError::DuplicateTools(duplicates));
    }
    let names: Vec<String> = order.iter().map(|n| (*n).to_owned()).collect();
    let mut specs: Vec<(usize, Listed, ToolSpec)> = listings
        .into_iter()
        .enumerate()
        .flat_map(|(index, listing)| {
            let server = servers[index].name.clone();
            listing.into_iter().map(move |tool| {
                let spec = default_spec(&tool.name, &server, &tool.definition.description);
                (index, tool, spec)
            })
        })
        .collect();
    let Some(overlay) = overlay else {
        return Ok((specs, Vec::new()));
    };
    let mut problems = Vec::new();
    let mut deferred = Vec::new();
    for wanted in overlay.tools() {
        let Some((index, _, spec)) = specs.iter_mut().find(|(_, t, _)| t.name == wanted.name())
        else {
            if deferring {
                deferred.push(wanted.clone());
                continue;
            }
            problems.push(OverlayProblem::UnknownTool {
                tool: wanted.name().to_owned(),
                suggestion: did_you_mean(wanted.name(), names.iter().map(String::as_str))
                    .map(str::to_owned),
            });
            continue;
        };
        let listed_by = &servers[*index].name;
        if let Some(overlay_server) = wanted.server()
            && overlay_server != listed_by
        {
            problems.push(OverlayProblem::WrongServer {
                tool: wanted.name().to_owned(),
                listed_by: listed_by.clone(),
                overlay: overlay_server.to_owned(),
            });
            continue;
        }
        *spec = merge(spec, wanted);
    }
    if problems.is_empty() {
        Ok((specs, deferred))
    } else {
        Err(McpClientError::Overlay(problems))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// B13: the overlay's `timeout` reaches the run-time map (the call then uses it instead
    /// of the server's deadline); one it could not read is kept, for validation to report.
    #[test]
    fn b13_the_overlays_timeout_wins_and_a_bad_one_is_reported() {
        let base = default_spec("search", "docs", "Searches the docs.");
        let overlay_with = |timeout: &str| -> CapabilityMap {
            serde_json::from_str(&format!(
                r#"{{"capability_map": [{{"tool": "search", "timeout": "{timeout}"}}]}}"#
            ))
            .unwrap()
        };
        let overlay = overlay_with("2s");
        let merged = merge(&base, &overlay.tools()[0]);
        assert_eq!(merged.timeout(), Some(Duration::from_secs(2)));
        assert_eq!(merged.server(), Some("docs"));
        assert_eq!(
            merge(&base, &ToolSpec::new("search").build()).timeout(),
            None
        );

        let overlay = overlay_with("soon");
        let merged = merge(&base, &overlay.tools()[0]);
        let errors = CapabilityMap::new().tool(merged).validate().unwrap_err();
        assert!(errors.to_string().contains("timeout `soon`"), "{errors}");
    }
}
