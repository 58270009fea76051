//! The guarded handle (`GuardedWorkspace` for `impl Workspace`): the toolbox with its
//! expeditor, the last good results of `serve_stale` tools, and the handle's own methods.
//! Its tool methods are `method`'s.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::Ident;

use super::Generated;
use super::outcome_fns::OutcomeFns;
use super::runtime::{PRIVATE, module};
use super::span::{kept, over};
use crate::check::{Checked, CheckedTool};
use crate::parse::unraw;

/// The handle's struct, beside the user's impl: its fields name the runtime from the crate,
/// outside the generated `const` block and its alias.
pub fn definition(checked: &Checked<'_>, generated: &Generated) -> TokenStream {
    let krate = &checked.krate;
    let module = module();
    let item = &checked.toolbox.item;
    let self_ty = &item.self_ty;
    let generics_decl = &item.generics.params;
    let where_clause = &item.generics.where_clause;
    let handle_ident = &generated.handle;
    let stale_fields = stale_tools(checked).map(|t| {
        let field = stale_field(t);
        let output = &t.tool.sig.output;
        let kept = kept(output);
        // Over the return type, as every use of `ToolResult` (see `method`): a tool that
        // returns no `Result` is one error there.
        let field = over(
            output,
            quote!(#field: #krate::#module::StaleCache<<#kept as #krate::#module::ToolResult>::Ok>),
        );
        quote!(#field,)
    });
    let handle_doc = format!(
        " [`{}`] with a circuit breaker on every tool: each method asks the expeditor \
         first, calls the tool (or an adapter through an alternative) only when allowed, and \
         records the outcome.",
        checked.base
    );
    quote! {
        #[doc = #handle_doc]
        #[allow(private_interfaces)]
        pub struct #handle_ident<#generics_decl> #where_clause {
            toolbox: #self_ty,
            expeditor: #krate::#module::Expeditor,
            #(#stale_fields)*
        }
    }
}

/// The handle's inherent impl: its constructors and accessors, then one method per tool.
pub fn inherent_impl(checked: &Checked<'_>, generated: &Generated) -> TokenStream {
    let item = &checked.toolbox.item;
    let self_ty = &item.self_ty;
    let (impl_generics, ty_generics, where_clause) = item.generics.split_for_impl();
    let (enum_ident, handle_ident) = (&generated.tool_enum, &generated.handle);
    let constructors = constructors(checked, enum_ident);
    let outcome_fns = OutcomeFns::new(checked);
    let methods = checked.tools.iter().enumerate().map(|(i, tool)| {
        super::method::handle_method(checked, tool, enum_ident, outcome_fns.of_tool(i))
    });
    let outcome_fns = outcome_fns.items();
    // Taking the handle apart drops its stale caches, whose types name `ToolResult`: spanned
    // over a `serve_stale` tool's return type, as the caches are (see `definition`).
    let by_value = match stale_tools(checked).next() {
        Some(tool) => over(&tool.tool.sig.output, quote!(self)),
        None => quote!(self),
    };
    quote! {
        #[allow(private_interfaces)]
        impl #impl_generics #handle_ident #ty_generics #where_clause {
            #constructors

            /// The expeditor: breakers, budget, reports.
            pub fn expeditor(&self) -> &#PRIVATE::Expeditor {
                &self.expeditor
            }

            /// The toolbox itself, unguarded.
            pub fn toolbox(&self) -> &#self_ty {
                &self.toolbox
            }

            /// The toolbox itself, unguarded and mutable.
            pub fn toolbox_mut(&mut self) -> &mut #self_ty {
                &mut self.toolbox
            }

            /// The toolbox and its expeditor, apart.
            pub fn into_parts(#by_value) -> (#self_ty, #PRIVATE::Expeditor) {
                (self.toolbox, self.expeditor)
            }

            #(#methods)*
        }

        #outcome_fns
    }
}

/// `new` and `with_expeditor`: the expeditor built from the tool enum's map and policy, each
/// `freshness(source = "..")` given to it, an empty cache per `serve_stale` tool.
fn constructors(checked: &Checked<'_>, enum_ident: &Ident) -> TokenStream {
    let self_ty = &checked.toolbox.item.self_ty;
    // `freshness(source = "..")`: what may change under the tool, for the CACHED label.
    let sources = checked.tools.iter().filter_map(|t| {
        let source = t.source.as_deref()?;
        let caches = t.caches;
        let variant = &t.variant;
        Some(quote! {
            expeditor.set_freshness_profile(
                #enum_ident::#variant,
                #PRIVATE::FreshnessProfile {
                    caches: #caches,
                    source: #PRIVATE::Some(#PRIVATE::String::from(#source)),
                },
            );
        })
    });
    // The handle by value holds its stale caches, whose types name `ToolResult`: over a
    // `serve_stale` tool's return type, as the caches are (see `definition`).
    let returned = match stale_tools(checked).next() {
        Some(tool) => over(&tool.tool.sig.output, quote!(Self)),
        None => quote!(Self),
    };
    let stale_inits = stale_tools(checked).map(|t| {
        let field = stale_field(t);
        // Over the return type, as the field's type (see `definition`).
        let init = over(
            &t.tool.sig.output,
            quote!(#field: #PRIVATE::core::default::Default::default()),
        );
        quote!(#init,)
    });
    quote! {
        /// Wraps the toolbox with a fresh expeditor: the declared policy, every tool
        /// CLOSED, the system clock.
        pub fn new(toolbox: #self_ty) -> #returned {
            Self::with_expeditor(toolbox, |builder| builder)
        }

        /// Wraps the toolbox with an expeditor configured by `configure`: a clock,
        /// observers, another policy.
        pub fn with_expeditor(
            toolbox: #self_ty,
            configure: impl #PRIVATE::core::ops::FnOnce(#PRIVATE::ExpeditorBuilder) -> #PRIVATE::ExpeditorBuilder,
        ) -> Self {
            let builder = <#enum_ident as #PRIVATE::ToolSet>::expeditor_builder();
            let expeditor = #PRIVATE::expeditor(configure(builder));
            #(#sources)*
            Self {
                toolbox,
                expeditor,
                #(#stale_inits)*
            }
        }
    }
}

/// The tools that keep their last good results.
fn stale_tools<'c, 'a>(checked: &'c Checked<'a>) -> impl Iterator<Item = &'c CheckedTool<'a>> {
    checked.tools.iter().filter(|t| t.serve_stale)
}

/// The field of the guarded handle keeping a `serve_stale` tool's last good results.
pub fn stale_field(tool: &CheckedTool<'_>) -> Ident {
    format_ident!("__cb_stale_{}", unraw(&tool.tool.ident))
}
