//! Expand phase: the tool enum, the capability map as a `static`, and the guarded handle whose
//! methods mirror the tools (SPEC B2, R4). Generated code names everything through one alias,
//! `_cb` (the runtime crate, or `crate = path`), and `_cb::__private::core`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::{FnArg, Ident, ImplItemFn, Path, ReceiverKind, Type};

use crate::ast::{Receiver, Tool, Toolbox};
use crate::check::Checked;

/// The full expansion: the user's impl, then everything generated.
pub fn expand(toolbox: &Toolbox, checked: &Checked) -> TokenStream {
    let item = &toolbox.item;
    let krate: Path = toolbox
        .args
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::circuit_breaker));
    let Some(base) = self_ident(&toolbox.item.self_ty) else {
        return quote!(#item);
    };
    let enum_ident = format_ident!("{}Tool", base);
    let handle_ident = format_ident!("Guarded{}", base);
    let self_ty = &toolbox.item.self_ty;
    let (impl_generics, ty_generics, where_clause) = toolbox.item.generics.split_for_impl();
    let generics_decl = &toolbox.item.generics.params;
    let self_doc = base.to_string();

    let variants = &checked.variants;
    let names: Vec<&str> = toolbox.tools.iter().map(|t| t.name.as_str()).collect();
    let count = toolbox.tools.len();
    let variant_docs = toolbox.tools.iter().map(|t| {
        let provides = t.args.provides.as_deref().map_or("", String::as_str);
        format!(" `{}`: {provides}", t.name)
    });
    let variant_names: Vec<String> = variants.iter().map(ToString::to_string).collect();

    let map = capability_map(toolbox, checked);
    let stale_tools: Vec<&Tool> = toolbox
        .tools
        .iter()
        .filter(|t| t.args.serve_stale.is_present())
        .collect();
    let stale_fields = stale_tools.iter().map(|t| {
        let field = stale_field(t);
        let output = &t.output;
        quote!(#field: #krate::__private::StaleCache<<#output as #krate::__private::ToolResult>::Ok>,)
    });
    // `freshness(source = "..")`: what may change under the tool, for the CACHED label.
    let sources = toolbox
        .tools
        .iter()
        .zip(&checked.variants)
        .filter_map(|(t, variant)| {
            let source = t.args.freshness.source.as_deref()?;
            let caches = t.args.caches.is_present();
            Some(quote! {
                expeditor.set_freshness_profile(
                    #enum_ident::#variant,
                    _cb::FreshnessProfile {
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
    let policy = {
        let p = &checked.policy;
        let (t, b, e, s) = (p.threshold, p.budget, p.probe_every, p.steps);
        quote!(_cb::__private::policy(#t, #b, #e, #s))
    };
    let methods = toolbox
        .tools
        .iter()
        .enumerate()
        .map(|(i, tool)| handle_method(toolbox, checked, i, tool, &enum_ident));

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
            expeditor: #krate::Expeditor,
            #(#stale_fields)*
        }

        const _: () = {
            use #krate as _cb;
            #[allow(unused_imports)]
            use _cb::__private::{ViaClassify as _, ViaDisplay as _, ViaError as _};
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
                pub fn capability_map() -> &'static _cb::CapabilityMap {
                    &__CB_MAP
                }
            }

            impl _cb::ToolSet for #enum_ident {
                const ALL: &'static [Self] = &__CB_ALL;

                fn name(self) -> &'static str {
                    #enum_ident::name(self)
                }

                fn capability_map() -> &'static _cb::CapabilityMap {
                    &__CB_MAP
                }

                fn policy() -> _cb::Policy {
                    #policy
                }
            }

            impl _cb::__private::core::convert::From<#enum_ident> for _cb::ToolId {
                fn from(tool: #enum_ident) -> Self {
                    _cb::ToolId::from_index(tool as u32)
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
                type Err = _cb::UnknownTool;

                fn from_str(name: &str) -> _cb::__private::core::result::Result<Self, _cb::UnknownTool> {
                    <Self as _cb::ToolSet>::from_name(name)
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
                    configure: impl _cb::__private::core::ops::FnOnce(_cb::ExpeditorBuilder) -> _cb::ExpeditorBuilder,
                ) -> Self {
                    let builder = <#enum_ident as _cb::ToolSet>::expeditor_builder();
                    let expeditor = _cb::__private::expeditor(configure(builder));
                    #(#sources)*
                    Self {
                        toolbox,
                        expeditor,
                        #(#stale_inits)*
                    }
                }

                /// The expeditor: breakers, budget, reports.
                pub fn expeditor(&self) -> &_cb::Expeditor {
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
                pub fn into_parts(self) -> (#self_ty, _cb::Expeditor) {
                    (self.toolbox, self.expeditor)
                }

                #(#methods)*
            }
        };
    }
}

/// The last identifier of the impl's self type: `Workspace` for `Workspace<T>`.
fn self_ident(ty: &Type) -> Option<Ident> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.clone()),
        Type::Group(g) => self_ident(&g.elem),
        Type::Paren(p) => self_ident(&p.elem),
        _ => None,
    }
}

/// The capability map as statics: one array of alternatives per tool, the tools, the map.
fn capability_map(toolbox: &Toolbox, checked: &Checked) -> TokenStream {
    let mut statics = TokenStream::new();
    let mut specs = Vec::new();
    for (i, tool) in toolbox.tools.iter().enumerate() {
        let alts_ident = format_ident!("__CB_ALTERNATIVES_{}", i);
        let alternatives = &checked.alternatives[i];
        let n = alternatives.len();
        let alts = alternatives.iter().map(|alt| {
            let target = toolbox.tools[alt.target].name.as_str();
            let method = alt.method.as_str();
            let degradation = match &alt.degradation {
                None => quote!(_cb::__private::Degradation::unknown()),
                Some(d) if d.high => {
                    let text = d.text.as_str();
                    quote!(_cb::__private::Degradation::high_static(#text))
                }
                Some(d) => {
                    let text = d.text.as_str();
                    quote!(_cb::__private::Degradation::low_static(#text))
                }
            };
            quote!(_cb::__private::AlternativeSpec::new_static(#target, #method, #degradation))
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
        let name = tool.name.as_str();
        let provides = tool.args.provides.as_deref().map_or("", String::as_str);
        let fallback = tool.args.fallback.as_deref().map_or("", String::as_str);
        let option = |v: Option<u32>| match v {
            Some(v) => quote!(_cb::__private::Some(#v)),
            None => quote!(_cb::__private::None),
        };
        let threshold = option(tool.args.threshold.as_deref().copied());
        let probe_every = option(tool.args.probe_every.as_deref().copied());
        let caches = tool.args.caches.is_present();
        specs.push(quote! {
            _cb::__private::ToolSpec::new_static(#name, #provides, #alts_ref, #fallback, #threshold, #probe_every, #caches)
        });
    }
    let count = specs.len();
    quote! {
        #statics
        static __CB_TOOLS: [_cb::__private::ToolSpec; #count] = [#(#specs),*];
        static __CB_MAP: _cb::__private::CapabilityMap = _cb::__private::CapabilityMap::from_static(&__CB_TOOLS);
    }
}

/// How the handle reaches a method: through `self.toolbox` or as an associated function.
fn call(
    toolbox: &Toolbox,
    receiver: Receiver,
    method: &Ident,
    args: &[Ident],
    is_async: bool,
    span: Span,
) -> TokenStream {
    let self_ty = &toolbox.item.self_ty;
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

/// One method of the guarded handle, mirroring `tool`.
fn handle_method(
    toolbox: &Toolbox,
    checked: &Checked,
    index: usize,
    tool: &Tool,
    enum_ident: &Ident,
) -> TokenStream {
    let method: &ImplItemFn = &tool.method;
    let sig = &method.sig;
    let ident = &sig.ident;
    let variant = &checked.variants[index];
    let asyncness = &sig.asyncness;
    let generics = &sig.generics;
    let where_clause = &sig.generics.where_clause;
    let output = &tool.output;
    let is_async = asyncness.is_some();

    let receiver = match sig.inputs.first() {
        Some(FnArg::Receiver(r)) => match &r.kind {
            ReceiverKind::Reference(and, lifetime, mutability) => {
                quote!(#and #lifetime #mutability self)
            }
            _ => quote!(&self),
        },
        _ => quote!(&self),
    };
    let typed: Vec<&syn::PatType> = sig
        .inputs
        .iter()
        .filter_map(|a| match a {
            FnArg::Typed(p) => Some(p),
            FnArg::Receiver(_) => None,
        })
        .collect();
    let params = typed.iter().zip(&tool.arg_names).map(|(p, name)| {
        let ty = &p.ty;
        quote!(#name: #ty)
    });
    let args = &tool.arg_names;

    let docs = method.attrs.iter().filter(|a| a.path().is_ident("doc"));
    let guard_doc = format!(
        " Guarded `{}`: asks the expeditor first; see [the handle](Self).",
        tool.name
    );

    let failure = quote!(|__cb_error| (&&&_cb::__private::Wrap(__cb_error)).__cb_failure());
    // Everything that needs `ToolResult` carries the return type's span, so a tool that does
    // not return a `Result` (or an adapter returning another type) is one error at that type.
    let output_span = syn::spanned::Spanned::span(output);
    let into_result = |call: &TokenStream| quote_spanned!(output_span=> <#output as _cb::__private::ToolResult>::into_result(#call));
    let primary = call(
        toolbox,
        tool.receiver,
        ident,
        args,
        is_async,
        Span::call_site(),
    );
    let primary_result = into_result(&primary);
    let adapters: Vec<(&Ident, usize)> = checked.alternatives[index]
        .iter()
        .filter_map(|alt| alt.via.as_ref().map(|via| (via, alt.target)))
        .collect();

    // Freshness (R6): which tools label their values, and keep the last good one.
    let fresh = tool.args.freshness.on;
    let caches = tool.args.caches.is_present();
    let stale = tool.args.serve_stale.is_present();
    let labelled = fresh || caches || stale;
    let hashed = fresh || stale;
    let value_ty = quote_spanned!(output_span=> <#output as _cb::__private::ToolResult>::Ok);
    let args_digest = if hashed {
        quote!(let __cb_args: u64 = _cb::__private::digest(&(#(&#args,)*));)
    } else {
        TokenStream::new()
    };
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
            #[allow(unused_imports)]
            use _cb::__private::{NotDated as _, ViaDated as _};
            let __cb_freshen: _cb::__private::Freshen<#value_ty> = _cb::__private::Freshen {
                tool: _cb::ToolId::from(#enum_ident::#variant),
                args: #args_field,
                digest: #digest,
                dated: |__cb_value| (&&_cb::__private::DateOf(__cb_value)).__cb_data_time(),
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
            quote!(_cb::__private::finish(#ticket, #route, #result, #failure))
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
        quote!(_cb::__private::Err(_cb::CallError::Refused(__cb_refusal)))
    };
    let none = quote!(_cb::__private::None);
    let prechecks = prechecks(toolbox, checked, index, &adapters, enum_ident);

    let body = if adapters.is_empty() {
        let done = finish(quote!(__cb_ticket), none.clone(), &primary_result);
        quote! {
            match _cb::__private::plan_direct(&self.expeditor, #enum_ident::#variant) {
                _cb::__private::Ok(__cb_ticket) => #done,
                _cb::__private::Err(__cb_refusal) => #refuse,
            }
        }
    } else {
        let targets = adapters.iter().map(|(_, target)| {
            let v = &checked.variants[*target];
            quote!(_cb::ToolId::from(#enum_ident::#v))
        });
        let last = adapters.len() - 1;
        let arms = adapters.iter().enumerate().map(|(i, (via, _))| {
            let method = toolbox.methods.iter().find(|m| m.ident == **via);
            let receiver = method.map_or(Receiver::None, |m| m.receiver);
            let call = call(toolbox, receiver, via, args, is_async, via.span());
            let call_result = into_result(&call);
            let pattern = if i == last { quote!(..) } else { quote!(index: #i, ..) };
            let done = finish(
                quote!(__cb_ticket),
                quote!(_cb::__private::Some(__cb_route)),
                &call_result,
            );
            quote! {
                _cb::__private::Plan::Adapter { ticket: __cb_ticket, route: __cb_route, #pattern } => #done,
            }
        });
        let done = finish(quote!(__cb_ticket), none, &primary_result);
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

    // The outer alias stays the macro's own (lints skip it); only the user's type inside it
    // carries its span, where a non-`Result` is reported.
    let user_output = quote_spanned!(output_span=> #output);
    let returns = quote!(_cb::__private::Outcome<#user_output>);
    quote! {
        #(#docs)*
        #[doc = ""]
        #[doc = #guard_doc]
        pub #asyncness fn #ident #generics (#receiver, #(#params),*)
            -> #returns
            #where_clause
        {
            #body
        }
    }
}

/// The field of the guarded handle keeping a `serve_stale` tool's last good results.
fn stale_field(tool: &Tool) -> Ident {
    format_ident!("__cb_stale_{}", crate::ast::unraw(tool.ident()))
}

/// Runs the pre-call checks that are due (R10): the tool's own, and those of the
/// alternatives its adapters go through (a sync tool runs only their sync checks).
fn prechecks(
    toolbox: &Toolbox,
    checked: &Checked,
    index: usize,
    adapters: &[(&Ident, usize)],
    enum_ident: &Ident,
) -> TokenStream {
    let tool = &toolbox.tools[index];
    let tool_async = tool.method.sig.asyncness.is_some();
    let mut wanted = vec![index];
    wanted.extend(adapters.iter().map(|(_, target)| *target));
    let mut out = TokenStream::new();
    for (n, target) in wanted.into_iter().enumerate() {
        let owner = &toolbox.tools[target];
        let Some(check) = owner.args.precheck.as_ref().and_then(Path::get_ident) else {
            continue;
        };
        let Some(method) = toolbox.methods.iter().find(|m| m.ident == *check) else {
            continue;
        };
        if method.is_async && !tool_async {
            continue;
        }
        // An adapter's target is checked through `&self`; skip checks needing `&mut self`
        // there, and checks needing a receiver for a tool without one.
        if n > 0 && method.receiver == Receiver::Mut {
            continue;
        }
        if method.receiver != Receiver::None && tool.receiver == Receiver::None {
            continue;
        }
        let variant = &checked.variants[target];
        let run = call(
            toolbox,
            method.receiver,
            check,
            &[],
            method.is_async,
            check.span(),
        );
        out.extend(quote! {
            if self.expeditor.should_precheck(#enum_ident::#variant) {
                let __cb_availability = _cb::__private::IntoAvailability::into_availability(#run);
                self.expeditor.record_precheck(#enum_ident::#variant, __cb_availability);
            }
        });
    }
    out
}
