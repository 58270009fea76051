//! Expand phase: the tool enum, the capability map as a `static`, and the guarded handle whose
//! methods mirror the tools (B2, R4). It works from the checked model alone: every name is
//! resolved there and every shape it cannot mirror was an error there, so nothing here looks a
//! method up or leaves a tool out. Generated code names everything through one alias, `_cb`
//! (the runtime crate, or `crate = path`), as `_cb::__private::…`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::Ident;

use crate::ast::{Receiver, unraw};
use crate::check::{Checked, CheckedTool, MethodRef, Pass};

/// The full expansion: the user's impl, then everything generated.
pub fn expand(checked: &Checked<'_>) -> TokenStream {
    let toolbox = checked.toolbox;
    let item = &toolbox.item;
    let krate = &checked.krate;
    let base = &checked.base;
    let enum_ident = format_ident!("{}Tool", base);
    let handle_ident = format_ident!("Guarded{}", base);
    let self_ty = &toolbox.item.self_ty;
    let (impl_generics, ty_generics, where_clause) = toolbox.item.generics.split_for_impl();
    let generics_decl = &toolbox.item.generics.params;
    let self_doc = base.to_string();

    let variants: Vec<&Ident> = checked.tools.iter().map(|t| &t.variant).collect();
    let names: Vec<&str> = checked.tools.iter().map(|t| t.tool.name.as_str()).collect();
    let count = checked.tools.len();
    let variant_docs = checked
        .tools
        .iter()
        .map(|t| format!(" `{}`: {}", t.tool.name, t.provides));
    let variant_names: Vec<String> = variants.iter().map(ToString::to_string).collect();

    let map = capability_map(checked);
    let stale_tools: Vec<&CheckedTool<'_>> =
        checked.tools.iter().filter(|t| t.serve_stale).collect();
    let stale_fields = stale_tools.iter().map(|t| {
        let field = stale_field(t);
        let output = &t.tool.sig.output;
        quote!(#field: #krate::__private::StaleCache<<#output as #krate::__private::ToolResult>::Ok>,)
    });
    // `freshness(source = "..")`: what may change under the tool, for the CACHED label.
    let sources = checked.tools.iter().filter_map(|t| {
        let source = t.source.as_deref()?;
        let caches = t.caches;
        let variant = &t.variant;
        Some(quote! {
            expeditor.set_freshness_profile(
                #enum_ident::#variant,
                _cb::__private::FreshnessProfile {
                    caches: #caches,
                    source: _cb::__private::Some(_cb::__private::String::from(#source)),
                },
            );
        })
    });
    let stale_inits = stale_tools.iter().map(|t| {
        let field = stale_field(t);
        quote!(#field: _cb::__private::core::default::Default::default(),)
    });
    // A key not given is `None`: the runtime's `Policy` has the defaults (R2.2).
    let policy = {
        let p = &checked.policy;
        let option = |v: Option<TokenStream>| match v {
            Some(v) => quote!(_cb::__private::Some(#v)),
            None => quote!(_cb::__private::None),
        };
        let threshold = option(p.threshold.map(|v| quote!(#v)));
        let budget = option(p.budget.map(|v| quote!(#v)));
        let probe_every = option(p.probe_every.map(|v| quote!(#v)));
        let unit = option(p.steps.map(|steps| {
            if steps {
                quote!(_cb::__private::ProbeUnit::Steps)
            } else {
                quote!(_cb::__private::ProbeUnit::Attempts)
            }
        }));
        let declared =
            quote!(_cb::__private::declared_policy(#threshold, #budget, #probe_every, #unit));
        if p.has_more() {
            let cool_down = option(p.cool_down.map(|v| quote!(#v)));
            let cap = option(p.cool_down_cap.map(|v| quote!(#v)));
            let window = option(p.budget_window.map(|v| quote!(#v)));
            let limit = option(p.mistake_limit.map(|v| quote!(#v)));
            quote!(_cb::__private::declared_policy_with(#declared, #cool_down, #cap, #window, #limit))
        } else {
            declared
        }
    };
    let methods = checked
        .tools
        .iter()
        .map(|tool| handle_method(checked, tool, &enum_ident));
    let json = if checked.json {
        json_dispatch(checked, &handle_ident, &enum_ident)
    } else {
        TokenStream::new()
    };

    let enum_doc = format!(" The tools of [`{self_doc}`]'s `#[toolbox]`, in capability-map order.");
    let handle_doc = format!(
        " [`{self_doc}`] with a circuit breaker on every tool: each method asks the expeditor \
         first, calls the tool (or an adapter through an alternative) only when allowed, and \
         records the outcome."
    );

    quote! {
        #item

        #[doc = #enum_doc]
        // Equality, order, hashing and `Debug` go through the variant's index (below): code of
        // constant size however many tools the toolbox has.
        #[derive(Clone, Copy)]
        pub enum #enum_ident {
            #(
                #[doc = #variant_docs]
                #variants,
            )*
        }

        #[doc = #handle_doc]
        #[allow(private_interfaces)]
        pub struct #handle_ident<#generics_decl> #where_clause {
            toolbox: #self_ty,
            expeditor: #krate::__private::Expeditor,
            #(#stale_fields)*
        }

        const _: () = {
            use #krate as _cb;
            #[allow(unused_imports)]
            use _cb::__private::{NotDated as _, ViaClassify as _, ViaDated as _, ViaDisplay as _, ViaError as _};
            #map

            static __CB_ALL: [#enum_ident; #count] = [#(#enum_ident::#variants),*];
            const __CB_NAMES: [&str; #count] = [#(#names),*];
            const __CB_VARIANTS: [&str; #count] = [#(#variant_names),*];

            impl _cb::__private::core::cmp::PartialEq for #enum_ident {
                fn eq(&self, other: &Self) -> bool {
                    (*self as u32) == (*other as u32)
                }
            }

            impl _cb::__private::core::cmp::Eq for #enum_ident {}

            impl _cb::__private::core::cmp::PartialOrd for #enum_ident {
                fn partial_cmp(&self, other: &Self) -> _cb::__private::core::option::Option<_cb::__private::core::cmp::Ordering> {
                    _cb::__private::Some(_cb::__private::core::cmp::Ord::cmp(self, other))
                }
            }

            impl _cb::__private::core::cmp::Ord for #enum_ident {
                fn cmp(&self, other: &Self) -> _cb::__private::core::cmp::Ordering {
                    _cb::__private::core::cmp::Ord::cmp(&(*self as u32), &(*other as u32))
                }
            }

            impl _cb::__private::core::hash::Hash for #enum_ident {
                fn hash<__H: _cb::__private::core::hash::Hasher>(&self, state: &mut __H) {
                    _cb::__private::core::hash::Hash::hash(&(*self as u32), state);
                }
            }

            impl _cb::__private::core::fmt::Debug for #enum_ident {
                fn fmt(&self, f: &mut _cb::__private::core::fmt::Formatter<'_>) -> _cb::__private::core::fmt::Result {
                    f.write_str(__CB_VARIANTS[*self as usize])
                }
            }

            impl #enum_ident {
                /// Every tool, in capability-map order.
                pub const ALL: [Self; #count] = [#(Self::#variants),*];

                /// The tool's name in the capability map.
                pub const fn name(self) -> &'static str {
                    __CB_NAMES[self as usize]
                }

                /// The toolbox's capability map, checked at compile time.
                pub fn capability_map() -> &'static _cb::__private::CapabilityMap {
                    &__CB_MAP
                }
            }

            impl _cb::__private::ToolSet for #enum_ident {
                const ALL: &'static [Self] = &__CB_ALL;

                fn name(self) -> &'static str {
                    #enum_ident::name(self)
                }

                fn capability_map() -> &'static _cb::__private::CapabilityMap {
                    &__CB_MAP
                }

                fn policy() -> _cb::__private::Policy {
                    #policy
                }
            }

            impl _cb::__private::core::convert::From<#enum_ident> for _cb::__private::ToolId {
                fn from(tool: #enum_ident) -> Self {
                    _cb::__private::ToolId::from_index(tool as u32)
                }
            }

            impl _cb::__private::core::convert::From<#enum_ident> for _cb::__private::String {
                fn from(tool: #enum_ident) -> Self {
                    _cb::__private::String::from(#enum_ident::name(tool))
                }
            }

            impl _cb::__private::core::fmt::Display for #enum_ident {
                fn fmt(&self, f: &mut _cb::__private::core::fmt::Formatter<'_>) -> _cb::__private::core::fmt::Result {
                    f.pad(#enum_ident::name(*self))
                }
            }

            impl _cb::__private::core::str::FromStr for #enum_ident {
                type Err = _cb::__private::UnknownTool;

                fn from_str(name: &str) -> _cb::__private::core::result::Result<Self, _cb::__private::UnknownTool> {
                    <Self as _cb::__private::ToolSet>::from_name(name)
                }
            }

            impl _cb::__private::serde::Serialize for #enum_ident {
                fn serialize<__S: _cb::__private::serde::Serializer>(
                    &self,
                    serializer: __S,
                ) -> _cb::__private::core::result::Result<__S::Ok, __S::Error> {
                    _cb::__private::serialize_tool(#enum_ident::name(*self), serializer)
                }
            }

            impl<'de> _cb::__private::serde::Deserialize<'de> for #enum_ident {
                fn deserialize<__D: _cb::__private::serde::Deserializer<'de>>(
                    deserializer: __D,
                ) -> _cb::__private::core::result::Result<Self, __D::Error> {
                    _cb::__private::deserialize_tool(deserializer)
                }
            }

            #[allow(private_interfaces)]
            impl #impl_generics #handle_ident #ty_generics #where_clause {
                /// Wraps the toolbox with a fresh expeditor: the declared policy, every tool
                /// CLOSED, the system clock.
                pub fn new(toolbox: #self_ty) -> Self {
                    Self::with_expeditor(toolbox, |builder| builder)
                }

                /// Wraps the toolbox with an expeditor configured by `configure`: a clock,
                /// observers, another policy.
                pub fn with_expeditor(
                    toolbox: #self_ty,
                    configure: impl _cb::__private::core::ops::FnOnce(_cb::__private::ExpeditorBuilder) -> _cb::__private::ExpeditorBuilder,
                ) -> Self {
                    let builder = <#enum_ident as _cb::__private::ToolSet>::expeditor_builder();
                    let expeditor = _cb::__private::expeditor(configure(builder));
                    #(#sources)*
                    Self {
                        toolbox,
                        expeditor,
                        #(#stale_inits)*
                    }
                }

                /// The expeditor: breakers, budget, reports.
                pub fn expeditor(&self) -> &_cb::__private::Expeditor {
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
                pub fn into_parts(self) -> (#self_ty, _cb::__private::Expeditor) {
                    (self.toolbox, self.expeditor)
                }

                #(#methods)*
            }

            #json
        };
    }
}

/// `#[toolbox(json)]` (B8): an argument struct per tool (serde, JSON Schema, the parameters'
/// docs as descriptions) and `ToolDispatch` on the guarded handle, whose `dispatch` decodes
/// the arguments and calls the same guarded method as a typed call.
fn json_dispatch(checked: &Checked<'_>, handle_ident: &Ident, enum_ident: &Ident) -> TokenStream {
    let toolbox = checked.toolbox;
    let self_ty = &toolbox.item.self_ty;
    let generics = &toolbox.item.generics;
    let (impl_generics, ty_generics, _) = generics.split_for_impl();
    let mut structs = TokenStream::new();
    let mut definitions = Vec::new();
    let mut arms = Vec::new();
    // All tools sync: `call` answers at once, and `dispatch` is `call` in a ready future.
    // Any async: every arm is a future, and `call` awaits `dispatch`.
    let asynchronous = checked.tools.iter().any(|t| t.tool.sig.is_async());
    let wrap = if asynchronous {
        quote!(_cb::__private::ready)
    } else {
        quote!()
    };
    for tool in &checked.tools {
        let args_ident = format_ident!("__CbArgs{}", tool.variant);
        let fields = tool
            .tool
            .sig
            .params
            .iter()
            .zip(&tool.json)
            .map(|(param, json)| {
                let (name, owned, docs) = (&param.name, &json.owned, &param.docs);
                quote!(#(#docs)* #name: #owned,)
            });
        structs.extend(quote! {
            #[derive(_cb::__private::serde::Deserialize, _cb::__private::schemars::JsonSchema)]
            #[serde(crate = "_cb::__private::serde", deny_unknown_fields)]
            #[schemars(crate = "_cb::__private::schemars")]
            struct #args_ident {
                #(#fields)*
            }
        });
        let name = tool.tool.name.as_str();
        let description = description(tool);
        definitions.push(quote!(_cb::__private::definition::<#args_ident>(#name, #description)));

        let ident = &tool.tool.ident;
        let args = tool
            .tool
            .sig
            .params
            .iter()
            .zip(&tool.json)
            .map(|(param, json)| {
                let field = &param.name;
                match json.pass {
                    Pass::Value => quote!(__cb_args.#field),
                    Pass::Ref => quote!(&__cb_args.#field),
                    Pass::RefMut => quote!(&mut __cb_args.#field),
                    Pass::OptionDeref => quote!(__cb_args.#field.as_deref()),
                    Pass::OptionRef => quote!(__cb_args.#field.as_ref()),
                    Pass::OptionMut => quote!(__cb_args.#field.as_mut()),
                }
            });
        let mutable = tool
            .json
            .iter()
            .any(|j| matches!(j.pass, Pass::RefMut | Pass::OptionMut));
        let binding = if mutable {
            quote!(mut __cb_args)
        } else {
            quote!(__cb_args)
        };
        let output_span = syn::spanned::Spanned::span(&tool.tool.sig.output);
        // Said at the tool's return type: a value that does not serialize (an error that
        // does not display).
        let variant = &tool.variant;
        let reply = quote_spanned!(output_span=> _cb::__private::json_reply(&self.expeditor, #enum_ident::#variant, name, __cb_result));
        let call = quote!(Self::#ident(self, #(#args),*));
        let answer = if tool.tool.sig.is_async() {
            // A future that is not `Send` is reported at the tool's name.
            let span = ident.span();
            quote_spanned!(span=> _cb::__private::boxed(async move {
                let __cb_result = #call.await;
                #reply
            }))
        } else {
            quote! {{
                let __cb_result = #call;
                #wrap(#reply)
            }}
        };
        arms.push(quote! {
            #name => {
                let #binding: #args_ident = match _cb::__private::arguments(arguments) {
                    _cb::__private::Ok(__cb_args) => __cb_args,
                    _cb::__private::Err(__cb_error) => {
                        return #wrap(_cb::__private::Reply::bad_arguments(&self.expeditor, name, &__cb_error));
                    }
                };
                #answer
            }
        });
    }
    let count = definitions.len();
    // `ToolDispatch: Send + Sync`: a generic toolbox gets the impl where it is; for a
    // concrete one that is not, rustc says which field is not, at the impl's type.
    let where_clause = if generics.params.is_empty() {
        quote!()
    } else {
        let predicates = generics.where_clause.as_ref().map(|w| &w.predicates);
        let comma = predicates
            .filter(|p| !p.empty_or_trailing())
            .map(|_| quote!(,));
        quote!(where #predicates #comma #self_ty: _cb::__private::core::marker::Send + _cb::__private::core::marker::Sync)
    };
    let arms = quote! {
        match name {
            #(#arms)*
            _ => #wrap(_cb::__private::Reply::unknown_tool(&self.expeditor, name)),
        }
    };
    let (dispatch_body, call) = if asynchronous {
        let call = quote! {
            /// Calls the tool `name` with JSON `arguments` through the guarded path, as the
            /// typed method does: decide, call or route, record (B8). A name that is no tool,
            /// or arguments that do not parse, are the model's mistakes: answered, counted,
            /// never charged.
            pub async fn call(&self, name: &str, arguments: _cb::__private::Value) -> _cb::__private::Reply {
                _cb::__private::ToolDispatch::dispatch(self, name, arguments).await
            }
        };
        (arms, call)
    } else {
        let call = quote! {
            /// Calls the tool `name` with JSON `arguments` through the guarded path, as the
            /// typed method does: decide, call or route, record (B8). A name that is no tool,
            /// or arguments that do not parse, are the model's mistakes: answered, counted,
            /// never charged. Every tool is sync, so the reply comes back at once.
            pub fn call(&self, name: &str, arguments: _cb::__private::Value) -> _cb::__private::Reply {
                #arms
            }
        };
        (
            quote!(_cb::__private::ready(Self::call(self, name, arguments))),
            call,
        )
    };
    // Through the runtime's `json_dispatch!`: one clear error when its `json` feature is off.
    quote! { _cb::__private::json_dispatch! {
        #structs

        static __CB_DEFINITIONS: _cb::__private::Definitions = _cb::__private::Definitions::new();

        impl #impl_generics _cb::__private::ToolDispatch for #handle_ident #ty_generics #where_clause {
            fn definitions(&self) -> _cb::__private::Vec<_cb::__private::ToolDefinition> {
                fn build() -> [_cb::__private::ToolDefinition; #count] {
                    [#(#definitions),*]
                }
                __CB_DEFINITIONS.get(build)
            }

            fn expeditor(&self) -> &_cb::__private::Expeditor {
                &self.expeditor
            }

            fn dispatch<'__cb>(
                &'__cb self,
                name: &'__cb str,
                arguments: _cb::__private::Value,
            ) -> _cb::__private::ReplyFuture<'__cb> {
                #dispatch_body
            }
        }

        impl #impl_generics #handle_ident #ty_generics #where_clause {
            #call
        }
    } }
}

/// A tool's description for the model: its `provides` line, then its doc comment.
fn description(tool: &CheckedTool<'_>) -> String {
    let docs = doc_text(&tool.tool.sig.docs);
    if docs.is_empty() {
        tool.provides.clone()
    } else {
        format!("{}\n\n{docs}", tool.provides)
    }
}

/// The text of `///` docs: one line per attribute, the leading space of each taken off.
fn doc_text(docs: &[syn::Attribute]) -> String {
    let lines: Vec<String> = docs
        .iter()
        .filter_map(|attr| match &attr.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
        .flat_map(|text| {
            text.split('\n')
                .map(|l| l.strip_prefix(' ').unwrap_or(l).trim_end().to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    lines.join("\n").trim().to_owned()
}

/// The capability map as statics: one array of alternatives per tool, the tools, the map.
fn capability_map(checked: &Checked<'_>) -> TokenStream {
    let mut statics = TokenStream::new();
    let mut specs = Vec::new();
    for (i, tool) in checked.tools.iter().enumerate() {
        let alts_ident = format_ident!("__CB_ALTERNATIVES_{}", i);
        let n = tool.alternatives.len();
        let alts = tool.alternatives.iter().map(|alt| {
            let target = checked.tools[alt.target].tool.name.as_str();
            let method = alt.method.as_str();
            let degradation = match &alt.degradation {
                None => quote!(_cb::__private::StaticDegradation::Unknown),
                Some(d) if d.high => {
                    let text = d.text.as_str();
                    quote!(_cb::__private::StaticDegradation::High(#text))
                }
                Some(d) => {
                    let text = d.text.as_str();
                    quote!(_cb::__private::StaticDegradation::Low(#text))
                }
            };
            quote! {
                _cb::__private::StaticAlternative {
                    tool: #target,
                    method: #method,
                    degradation: #degradation,
                }
                .spec()
            }
        });
        // A tool without alternatives points at one shared empty slice: no static of its own.
        let alts_ref = if n == 0 {
            quote!(&[])
        } else {
            statics.extend(quote! {
                static #alts_ident: [_cb::__private::AlternativeSpec; #n] = [#(#alts),*];
            });
            quote!(&#alts_ident)
        };
        let name = tool.tool.name.as_str();
        let provides = tool.provides.as_str();
        let fallback = tool.fallback.as_str();
        let option = |v: Option<u32>| match v {
            Some(v) => quote!(_cb::__private::Some(#v)),
            None => quote!(_cb::__private::None),
        };
        let threshold = option(tool.threshold);
        let probe_every = option(tool.probe_every);
        let caches = tool.caches;
        // A tool with a deadline says so in its spec; one without is written as it always was.
        let spec = match tool.timeout {
            Some(millis) => quote!(timed(#millis)),
            None => quote!(spec()),
        };
        specs.push(quote! {
            _cb::__private::StaticTool {
                name: #name,
                provides: #provides,
                alternatives: #alts_ref,
                fallback: #fallback,
                threshold: #threshold,
                probe_every: #probe_every,
                caches: #caches,
            }
            .#spec
        });
    }
    let count = specs.len();
    quote! {
        #statics
        static __CB_TOOLS: [_cb::__private::ToolSpec; #count] = [#(#specs),*];
        static __CB_MAP: _cb::__private::CapabilityMap = _cb::__private::static_map(&__CB_TOOLS);
    }
}

/// How the handle reaches a method: through `self.toolbox` or as an associated function.
fn call(
    checked: &Checked<'_>,
    receiver: Receiver,
    method: &Ident,
    args: &[&Ident],
    is_async: bool,
    span: Span,
) -> TokenStream {
    let self_ty = &checked.toolbox.item.self_ty;
    let target = match receiver {
        Receiver::Ref | Receiver::Mut => quote_spanned!(span=> self.toolbox.#method(#(#args),*)),
        Receiver::None => quote_spanned!(span=> <#self_ty>::#method(#(#args),*)),
    };
    if is_async {
        quote_spanned!(span=> #target.await)
    } else {
        target
    }
}

/// A call of a checked method (an adapter, a precheck), spanned at its name where it is used.
fn call_method(checked: &Checked<'_>, method: &MethodRef, args: &[&Ident]) -> TokenStream {
    call(
        checked,
        method.receiver,
        &method.ident,
        args,
        method.is_async,
        method.ident.span(),
    )
}

/// One method of the guarded handle, mirroring `tool`.
fn handle_method(checked: &Checked<'_>, tool: &CheckedTool<'_>, enum_ident: &Ident) -> TokenStream {
    let sig = &tool.tool.sig;
    let ident = &tool.tool.ident;
    let variant = &tool.variant;
    let asyncness = &sig.asyncness;
    let generics = &sig.generics;
    let where_clause = &sig.generics.where_clause;
    let output = &sig.output;
    let is_async = sig.is_async();
    let receiver = &sig.handle_receiver;
    let params = sig.params.iter().map(|p| {
        let (name, ty) = (&p.name, &p.ty);
        quote!(#name: #ty)
    });
    let args: Vec<&Ident> = tool.tool.arg_names().collect();

    let docs = &sig.docs;
    let guard_doc = format!(
        " Guarded `{}`: asks the expeditor first; see [the handle](Self).",
        tool.tool.name
    );

    let failure = quote!(|__cb_error| (&&&_cb::__private::Wrap(__cb_error)).__cb_failure());
    // Everything that needs `ToolResult` carries the return type's span, so a tool that does
    // not return a `Result` (or an adapter returning another type) is one error at that type.
    let output_span = syn::spanned::Spanned::span(output);
    let into_result = |call: &TokenStream| quote_spanned!(output_span=> <#output as _cb::__private::ToolResult>::into_result(#call));
    // Without `.await`: `called` (below) awaits it, or times it.
    let primary = call(
        checked,
        sig.receiver,
        ident,
        &args,
        false,
        Span::call_site(),
    );
    let adapters: Vec<(&MethodRef, usize)> = tool.adapters().collect();

    // Freshness (R6): which tools label their values, and keep the last good one.
    let fresh = tool.freshness;
    let stale = tool.serve_stale;
    let labelled = fresh || tool.caches || stale;
    let hashed = fresh || stale;
    let value_ty = quote_spanned!(output_span=> <#output as _cb::__private::ToolResult>::Ok);
    let args_digest = if hashed {
        quote!(let __cb_args: u64 = _cb::__private::digest(&(#(&#args,)*));)
    } else {
        TokenStream::new()
    };
    // Every tool's value is dated when its type is `Dated` (R6.3): through autoref, so the
    // date check is a constant `None` (and compiles away) for any other type.
    let dated = quote!(|__cb_value| (&&_cb::__private::DateOf(__cb_value)).__cb_data_time());
    let freshen = if labelled {
        let args_field = if fresh {
            quote!(_cb::__private::Some(__cb_args))
        } else {
            quote!(_cb::__private::None)
        };
        let digest = if fresh {
            quote!(|__cb_value| _cb::__private::Some(_cb::__private::digest(__cb_value)))
        } else {
            quote!(|_| _cb::__private::None)
        };
        quote! {
            let __cb_freshen: _cb::__private::Freshen<#value_ty> = _cb::__private::Freshen {
                tool: _cb::__private::ToolId::from(#enum_ident::#variant),
                args: #args_field,
                digest: #digest,
                dated: #dated,
            };
        }
    } else {
        TokenStream::new()
    };
    let stale_field = stale_field(tool);
    // How one call ends: recorded, labelled, kept.
    let finish = |ticket: TokenStream, route: TokenStream, result: &TokenStream| {
        let finished = if labelled {
            quote!(_cb::__private::finish_fresh(&self.expeditor, #ticket, #route, #result, #failure, &__cb_freshen))
        } else {
            quote!(_cb::__private::finish_dated(&self.expeditor, #ticket, #route, #result, #failure, #dated))
        };
        if stale {
            quote!({
                let __cb_outcome = #finished;
                _cb::__private::keep_last_good(&self.#stale_field, __cb_args, &self.expeditor, &__cb_outcome);
                __cb_outcome
            })
        } else {
            finished
        }
    };
    let refuse = if stale {
        quote!(_cb::__private::serve_stale(__cb_refusal, &self.#stale_field, __cb_args))
    } else {
        quote!({
            _cb::__private::trace_refusal(&__cb_refusal);
            _cb::__private::Err(_cb::__private::CallError::Refused(__cb_refusal))
        })
    };
    let none = quote!(_cb::__private::None);
    let prechecks = prechecks(checked, tool, enum_ident);
    // One call, recorded through `__cb_ticket` with `route`: `call` is the call's expression
    // without `.await`. With a deadline (B13, the recording tool's `timeout`), the call is
    // timed from here, after the decision: an async one races the expeditor's clock and is
    // dropped when the deadline comes first; a sync one cannot be stopped, and its answer is
    // dropped when it comes at or after the deadline. Either is a timeout failure. Without
    // one, the call is finished as it always was: no clock is read.
    let called = |call: &TokenStream, is_async: bool, timeout: Option<u64>, route: TokenStream| {
        let ticket = quote!(__cb_ticket);
        let awaited = if is_async {
            quote!(#call.await)
        } else {
            call.clone()
        };
        let Some(millis) = timeout else {
            return finish(ticket, route, &into_result(&awaited));
        };
        let done = finish(
            ticket.clone(),
            route.clone(),
            &into_result(&quote!(__cb_output)),
        );
        let late = quote!(_cb::__private::timed_out(#ticket, #route, __cb_deadline));
        if is_async {
            quote!({
                let __cb_deadline = _cb::__private::Deadline::start(&self.expeditor, #millis);
                match __cb_deadline.within(&self.expeditor, #call).await {
                    _cb::__private::Some(__cb_output) => #done,
                    _cb::__private::None => #late,
                }
            })
        } else {
            quote!({
                let __cb_deadline = _cb::__private::Deadline::start(&self.expeditor, #millis);
                let __cb_output = #call;
                if __cb_deadline.passed(&self.expeditor) {
                    #late
                } else {
                    #done
                }
            })
        }
    };
    let primary_done = |route: TokenStream| called(&primary, is_async, tool.timeout, route);

    let body = if adapters.is_empty() {
        let done = primary_done(none.clone());
        // The decision matched here, as a hand-written caller of the runtime API does: the
        // ticket goes from `decide` to `finish` without another enum around it.
        quote! {
            match self.expeditor.decide(#enum_ident::#variant) {
                _cb::__private::Decision::Call(__cb_ticket)
                | _cb::__private::Decision::Probe(__cb_ticket) => #done,
                __cb_decision => {
                    let __cb_refusal = _cb::__private::refuse(&self.expeditor, _cb::__private::ToolId::from(#enum_ident::#variant), &__cb_decision);
                    #refuse
                }
            }
        }
    } else {
        let targets = adapters.iter().map(|(_, target)| {
            let v = &checked.tools[*target].variant;
            quote!(_cb::__private::ToolId::from(#enum_ident::#v))
        });
        let last = adapters.len() - 1;
        let arms = adapters.iter().enumerate().map(|(i, (via, target))| {
            let call = call(
                checked,
                via.receiver,
                &via.ident,
                &args,
                false,
                via.ident.span(),
            );
            let pattern = if i == last { quote!(..) } else { quote!(index: #i, ..) };
            // Recorded against the alternative: timed by the alternative's deadline.
            let done = called(
                &call,
                via.is_async,
                checked.tools[*target].timeout,
                quote!(_cb::__private::Some(__cb_route)),
            );
            quote! {
                _cb::__private::Plan::Adapter { ticket: __cb_ticket, route: __cb_route, #pattern } => #done,
            }
        });
        let done = primary_done(none);
        quote! {
            match _cb::__private::plan(&self.expeditor, #enum_ident::#variant, &[#(#targets),*]) {
                _cb::__private::Plan::Primary(__cb_ticket) => #done,
                #(#arms)*
                _cb::__private::Plan::Refuse(__cb_refusal) => #refuse,
            }
        }
    };
    let body = quote! {
        #args_digest
        #prechecks
        #freshen
        #body
    };
    // The call's `execute_tool` span (B12): entered around the body of a sync method; the
    // body of an async one is instrumented with it (a guard must not live across `.await`).
    let name = &tool.tool.name;
    let body = if is_async {
        quote! {
            let __cb_span = _cb::__private::call_span(#name);
            _cb::__private::Instrument::instrument(async move { #body }, __cb_span).await
        }
    } else {
        quote! {
            let __cb_scope = _cb::__private::CallScope::enter(#name);
            #body
        }
    };

    // The outer alias stays the macro's own (lints skip it); only the user's type inside it
    // carries its span, where a non-`Result` is reported.
    let user_output = quote_spanned!(output_span=> #output);
    let returns = quote!(_cb::__private::Outcome<#user_output>);
    quote! {
        #(#docs)*
        #[doc = ""]
        #[doc = #guard_doc]
        // Inlined like the runtime API's decide and record: the caller sees the ticket path
        // and the `Result` never goes through memory. Always: the body is the ticket path and
        // one call of the tool, and rustc keeps a method called from several places out of
        // line otherwise (1.7-2.5x the runtime API).
        #[inline(always)]
        #[allow(clippy::inline_always)]
        pub #asyncness fn #ident #generics (#receiver, #(#params),*)
            -> #returns
            #where_clause
        {
            #body
        }
    }
}

/// The field of the guarded handle keeping a `serve_stale` tool's last good results.
fn stale_field(tool: &CheckedTool<'_>) -> Ident {
    format_ident!("__cb_stale_{}", unraw(&tool.tool.ident))
}

/// Runs the pre-call checks the checked model lists for this tool (R10): its own, and those
/// of the alternatives its adapters go through.
fn prechecks(checked: &Checked<'_>, tool: &CheckedTool<'_>, enum_ident: &Ident) -> TokenStream {
    let mut out = TokenStream::new();
    for precheck in &tool.prechecks {
        let variant = &checked.tools[precheck.tool].variant;
        let run = call_method(checked, &precheck.method, &[]);
        out.extend(quote! {
            if self.expeditor.should_precheck(#enum_ident::#variant) {
                let __cb_availability = _cb::__private::IntoAvailability::into_availability(#run);
                self.expeditor.record_precheck(#enum_ident::#variant, __cb_availability);
            }
        });
    }
    out
}
