//! The capability map as one `static` string, read into the map when first asked for, and the
//! declared policy as an expression: what `ToolSet` hands the expeditor.

use std::fmt::Write as _;

use proc_macro2::TokenStream;
use quote::quote;

use super::runtime::PRIVATE;
use crate::check::{Checked, CheckedTool, Resolved};

/// The capability map: one string the runtime's `EncodedMap` reads on first use.
///
/// A `static` array of specs cost rustc some 1.2 M instructions a tool to check, promote,
/// evaluate and intern (BENCHMARKS.md, "Compile cost"); a string literal costs it next to
/// nothing, and reading it once at run time takes microseconds.
pub fn capability_map(checked: &Checked<'_>) -> TokenStream {
    let encoded = encode(checked);
    quote! {
        static __CB_MAP: #PRIVATE::EncodedMap = #PRIVATE::EncodedMap::new(#encoded);
    }
}

/// The map in the encoding `EncodedMap` reads (its module's doc has it): each field its
/// length in bytes, `:`, and its text.
fn encode(checked: &Checked<'_>) -> String {
    let mut out = String::new();
    for tool in &checked.tools {
        encode_tool(&mut out, checked, tool);
    }
    out
}

fn encode_tool(out: &mut String, checked: &Checked<'_>, tool: &CheckedTool<'_>) {
    field(out, tool.tool.name.as_str());
    field(out, &tool.provides);
    field(out, &tool.fallback);
    field(out, if tool.caches { "1" } else { "" });
    field(out, &number(tool.threshold));
    field(out, &number(tool.probe_every));
    field(out, &number(tool.timeout));
    field(out, &tool.alternatives.len().to_string());
    for alt in &tool.alternatives {
        encode_alternative(out, checked, alt);
    }
}

fn encode_alternative(out: &mut String, checked: &Checked<'_>, alt: &Resolved) {
    field(out, checked.tools[alt.target].tool.name.as_str());
    field(out, &alt.method);
    match &alt.degradation {
        None => {
            field(out, "u");
            field(out, "");
        }
        Some(d) => {
            field(out, if d.high { "h" } else { "l" });
            field(out, &d.text);
        }
    }
}

fn field(out: &mut String, text: &str) {
    // Writing to a `String` does not fail.
    let _ = write!(out, "{}:{text}", text.len());
}

fn number(value: Option<impl ToString>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
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
