//! Expand phase: the tool enum, the capability map as a `static` string, and the guarded
//! handle whose methods mirror the tools (B2, R4). It works from the checked model alone: every name is
//! resolved there and every shape it cannot mirror was an error there, so nothing here looks a
//! method up or leaves a tool out. Generated code names everything through one alias (see
//! `runtime`). [`toolbox`] runs the phases in order; on a mistake, `fallback` is emitted.

mod adapter;
mod fallback;
mod handle;
mod json;
mod map;
mod method;
mod outcome_fns;
mod runtime;
mod span;
mod tool_enum;

use darling::Error;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use crate::check::{Checked, check};
use crate::parse::parse;
use runtime::{PRIVATE, RUNTIME};

pub use fallback::lone_tool;

/// `#[toolbox(args)]` on `input`: parsed, checked, and expanded when there is no mistake;
/// otherwise the user's item with every mistake found, all reported in one compile.
pub fn toolbox(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut errors = Error::accumulator();
    let Some(toolbox) = parse(args, input.clone(), &mut errors) else {
        return fallback::with_errors(&input, errors.finish());
    };
    let checked = check(&toolbox, &mut errors);
    match (errors.finish(), checked) {
        (Ok(()), Some(checked)) => expand(&checked),
        // `check` gives no model only with an error pushed.
        (found, _) => fallback::with_errors(&toolbox.item, found),
    }
}

/// The names of what is generated for `impl Workspace`: `WorkspaceTool`, `GuardedWorkspace`.
struct Generated {
    tool_enum: Ident,
    handle: Ident,
}

/// The full expansion: the user's impl, then everything generated.
pub fn expand(checked: &Checked<'_>) -> TokenStream {
    let item = &checked.toolbox.item;
    let krate = &checked.krate;
    let generated = Generated {
        tool_enum: format_ident!("{}Tool", checked.base),
        handle: format_ident!("Guarded{}", checked.base),
    };
    let enum_definition = tool_enum::definition(checked, &generated);
    let handle_definition = handle::definition(checked, &generated);
    let map = map::capability_map(checked);
    let adapter_parts = adapter::parts(checked);
    let enum_impls = tool_enum::impls(checked, &generated);
    let handle_impl = handle::inherent_impl(checked, &generated);
    let json = if checked.json {
        json::json_dispatch(checked, &generated)
    } else {
        json::json_hint(checked, &generated)
    };
    quote! {
        #item

        #enum_definition

        #handle_definition

        const _: () = {
            use #krate as #RUNTIME;
            #[allow(unused_imports)]
            use #PRIVATE::{NotDated as _, ViaClassify as _, ViaDated as _, ViaDisplay as _, ViaError as _};
            #map

            #adapter_parts

            #enum_impls

            #handle_impl

            #json
        };
    }
}
