//! The capability map as `static`s (one array of alternatives per tool, the tools, the map),
//! and the declared policy as an expression: what `ToolSet` hands the expeditor.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use super::runtime::PRIVATE;
use crate::check::{Checked, CheckedTool, Resolved};

/// The capability map as statics: one array of alternatives per tool, the tools, the map.
pub fn capability_map(checked: &Checked<'_>) -> TokenStream {
    let mut statics = TokenStream::new();
    let mut specs = Vec::new();
    for (i, tool) in checked.tools.iter().enumerate() {
        let n = tool.alternatives.len();
        // A tool without alternatives points at one shared empty slice: no static of its own.
        let alts_ref = if n == 0 {
            quote!(&[])
        } else {
            let alts_ident = format_ident!("__CB_ALTERNATIVES_{}", i);
            let alts = tool
                .alternatives
                .iter()
                .map(|alt| alternative(checked, alt));
            statics.extend(quote! {
                static #alts_ident: [#PRIVATE::AlternativeSpec; #n] = [#(#alts),*];
            });
            quote!(&#alts_ident)
        };
        specs.push(tool_spec(tool, &alts_ref));
    }
    let count = specs.len();
    quote! {
        #statics
        static __CB_TOOLS: [#PRIVATE::ToolSpec; #count] = [#(#specs),*];
        static __CB_MAP: #PRIVATE::CapabilityMap = #PRIVATE::static_map(&__CB_TOOLS);
    }
}

/// One alternative of the map, built in a `const` context.
fn alternative(checked: &Checked<'_>, alt: &Resolved) -> TokenStream {
    let target = checked.tools[alt.target].tool.name.as_str();
    let method = alt.method.as_str();
    let degradation = match &alt.degradation {
        None => quote!(#PRIVATE::StaticDegradation::Unknown),
        Some(d) if d.high => {
            let text = d.text.as_str();
            quote!(#PRIVATE::StaticDegradation::High(#text))
        }
        Some(d) => {
            let text = d.text.as_str();
            quote!(#PRIVATE::StaticDegradation::Low(#text))
        }
    };
    quote! {
        #PRIVATE::StaticAlternative {
            tool: #target,
            method: #method,
            degradation: #degradation,
        }
        .spec()
    }
}

/// One tool of the map, its alternatives at `alts_ref`, built in a `const` context.
fn tool_spec(tool: &CheckedTool<'_>, alts_ref: &TokenStream) -> TokenStream {
    let name = tool.tool.name.as_str();
    let provides = tool.provides.as_str();
    let fallback = tool.fallback.as_str();
    let threshold = option(tool.threshold.map(|v| quote!(#v)));
    let probe_every = option(tool.probe_every.map(|v| quote!(#v)));
    let caches = tool.caches;
    // A tool with a deadline says so in its spec (`timed`); one without is built by `spec`.
    let spec = match tool.timeout {
        Some(millis) => quote!(timed(#millis)),
        None => quote!(spec()),
    };
    quote! {
        #PRIVATE::StaticTool {
            name: #name,
            provides: #provides,
            alternatives: #alts_ref,
            fallback: #fallback,
            threshold: #threshold,
            probe_every: #probe_every,
            caches: #caches,
        }
        .#spec
    }
}

/// The declared policy. A key not given is `None`: the runtime's `Policy` has the defaults
/// (R2.2), so they live in one place.
pub fn policy(checked: &Checked<'_>) -> TokenStream {
    let p = &checked.policy;
    let threshold = option(p.threshold.map(|v| quote!(#v)));
    let budget = option(p.budget.map(|v| quote!(#v)));
    let probe_every = option(p.probe_every.map(|v| quote!(#v)));
    let unit = option(p.steps.map(|steps| {
        if steps {
            quote!(#PRIVATE::ProbeUnit::Steps)
        } else {
            quote!(#PRIVATE::ProbeUnit::Attempts)
        }
    }));
    let declared = quote!(#PRIVATE::declared_policy(#threshold, #budget, #probe_every, #unit));
    if p.has_more() {
        let cool_down = option(p.cool_down.map(|v| quote!(#v)));
        let cap = option(p.cool_down_cap.map(|v| quote!(#v)));
        let window = option(p.budget_window.map(|v| quote!(#v)));
        let limit = option(p.mistake_limit.map(|v| quote!(#v)));
        quote!(#PRIVATE::declared_policy_with(#declared, #cool_down, #cap, #window, #limit))
    } else {
        declared
    }
}

/// `Some(v)` or `None`, through the hidden module (the user may shadow either).
fn option(value: Option<TokenStream>) -> TokenStream {
    match value {
        Some(v) => quote!(#PRIVATE::Some(#v)),
        None => quote!(#PRIVATE::None),
    }
}
