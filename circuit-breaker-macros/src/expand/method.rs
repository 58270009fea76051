//! One method of the guarded handle per tool, with the tool's signature: it runs the tool's
//! prechecks, asks the expeditor, calls the tool or an adapter (timed by a deadline when it
//! has one), and records the outcome, labelled and kept as the tool's freshness keys say.

use proc_macro2::{Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned};
use syn::Ident;

use super::adapter::{self, Signature};
use super::handle::stale_field;
use super::outcome_fns::OutcomeFns;
use super::runtime::{PRIVATE, RUNTIME};
use super::span::{ends, kept, over, over_spans};
use crate::check::{Checked, CheckedTool, MethodRef};
use crate::parse::Receiver;

/// One method of the guarded handle, mirroring `tool`.
pub fn handle_method(
    checked: &Checked<'_>,
    tool: &CheckedTool<'_>,
    enum_ident: &Ident,
    outcome_fns: Option<usize>,
) -> TokenStream {
    let method = Method::new(checked, tool, enum_ident, outcome_fns);
    let sig = &tool.tool.sig;
    let ident = &tool.tool.ident;
    let asyncness = &sig.asyncness;
    let generics = &sig.generics;
    let where_clause = &sig.generics.where_clause;
    let receiver = &sig.handle_receiver;
    let params = sig.params.iter().map(|p| {
        let (name, ty) = (&p.name, &p.ty);
        quote!(#name: #ty)
    });
    let docs = &sig.docs;
    let guard_doc = format!(
        " Guarded `{}`: asks the expeditor first; see [the handle](Self).",
        tool.tool.name
    );
    // Over the user's return type, all of it, as every use of `ToolResult` in the expansion:
    // a tool that does not return a `Result` is reported there, once (rustc emits the same
    // diagnostic once, however many places raise it).
    let output = &method.output;
    let returns = method.over(quote!(#RUNTIME::outcome::Outcome<#output>));
    let body = method.body();
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

/// What the body of one handle method is generated from.
struct Method<'c, 'a> {
    checked: &'c Checked<'a>,
    tool: &'c CheckedTool<'a>,
    enum_ident: &'c Ident,
    /// The parameters' names, as the handle method passes them on.
    args: Vec<&'c Ident>,
    /// The shared functions the answer is read with (failure, data time), by index; `None`
    /// for closures of its own.
    outcome_fns: Option<usize>,
    /// The return type's first and last spans ([`ends`]) and the type as one token
    /// ([`kept`]), read once for the several expressions spanned over it.
    output_ends: Option<(Span, Span)>,
    output: TokenTree,
}

impl<'c, 'a> Method<'c, 'a> {
    fn new(
        checked: &'c Checked<'a>,
        tool: &'c CheckedTool<'a>,
        enum_ident: &'c Ident,
        outcome_fns: Option<usize>,
    ) -> Self {
        Method {
            checked,
            tool,
            enum_ident,
            args: tool.tool.arg_names().collect(),
            outcome_fns,
            output_ends: ends(&tool.tool.sig.output),
            output: kept(&tool.tool.sig.output),
        }
    }

    /// `tokens` spanned over the tool's return type ([`over`]).
    fn over(&self, tokens: TokenStream) -> TokenStream {
        over_spans(self.output_ends, tokens)
    }

    /// Whether results are labelled (R6): compared with the last, cached, or kept.
    fn labelled(&self) -> bool {
        self.tool.freshness || self.tool.caches || self.tool.serve_stale
    }

    /// The body: the arguments' digest, prechecks, the labelling, the call as decided, inside
    /// the call's `execute_tool` span (B12): entered around the body of a sync method; the
    /// body of an async one is instrumented with it (a guard must not live across `.await`).
    fn body(&self) -> TokenStream {
        if let Some(body) = self.direct_call().or_else(|| self.routed_call()) {
            return body;
        }
        let hashed = self.tool.freshness || self.tool.serve_stale;
        let args = &self.args;
        let args_digest = if hashed {
            quote!(let __cb_args: u64 = #PRIVATE::digest(&(#(&#args,)*));)
        } else {
            TokenStream::new()
        };
        let prechecks = self.prechecks();
        let freshen = self.freshen();
        let decided = if self.tool.adapters().next().is_none() {
            self.direct()
        } else {
            self.routed()
        };
        let body = quote! {
            #args_digest
            #prechecks
            #freshen
            #decided
        };
        let name = &self.tool.tool.name;
        // The span's name, `execute_tool <tool>`, spelled here once rather than formatted by
        // the bridge on every call.
        let span_name = format!("execute_tool {name}");
        if self.tool.tool.sig.is_async() {
            quote! {
                let __cb_span = #PRIVATE::call_span(#name, #span_name);
                #PRIVATE::Instrument::instrument(async move { #body }, __cb_span).await
            }
        } else {
            quote! {
                let __cb_scope = #PRIVATE::CallScope::enter(#name, #span_name);
                #body
            }
        }
    }

    /// The body of the commonest tool, one call of the runtime's `call_direct`: sync, through
    /// `&self` or no receiver, with no adapter, deadline, label or precheck. `None` for any
    /// other. (`&mut self` is left out: a closure of an edition-2018 crate would borrow all of
    /// `self`, the expeditor too.)
    fn direct_call(&self) -> Option<TokenStream> {
        if !self.plain_sync() || self.tool.adapters().next().is_some() {
            return None;
        }
        let tool = self.tool;
        let (enum_ident, variant) = (self.enum_ident, &tool.variant);
        let name = &tool.tool.name;
        let span_name = format!("execute_tool {name}");
        let run = self.own_call();
        let failure = OutcomeFns::failure(self.outcome_fns);
        let dated = OutcomeFns::dated(self.outcome_fns);
        // Its types name `ToolResult`: over the return type, as all its uses.
        Some(self.over(quote! {
                #PRIVATE::call_direct(
                    &self.expeditor,
                    #enum_ident::#variant,
                    (#name, #span_name),
                    #failure,
                    #dated,
                    || #run,
                )
        }))
    }

    /// The body of a sync tool with adapters, through `&self` or no receiver, with no
    /// deadline (its own or an alternative's), label or precheck, and sync adapters through
    /// `&self` or no receiver: one call of the runtime's `call_routed`, with one closure that
    /// calls the tool or the adapter the plan chose. `None` for any other.
    fn routed_call(&self) -> Option<TokenStream> {
        let tool = self.tool;
        let adapters: Vec<(&MethodRef, usize)> = tool.adapters().collect();
        let simple = self.plain_sync()
            && !adapters.is_empty()
            && adapters.iter().all(|(via, target)| {
                !via.is_async
                    && via.receiver != Receiver::Mut
                    && self.checked.tools[*target].timeout.is_none()
            });
        if !simple {
            return None;
        }
        let (enum_ident, variant) = (self.enum_ident, &tool.variant);
        let targets = adapters.iter().map(|(_, target)| {
            let v = &self.checked.tools[*target].variant;
            quote!(#PRIVATE::ToolId::from(#enum_ident::#v))
        });
        let name = &tool.tool.name;
        let span_name = format!("execute_tool {name}");
        let primary = self.own_call();
        let last = adapters.len() - 1;
        let arms = adapters.iter().enumerate().map(|(i, (via, _))| {
            let pattern = if i == last {
                quote!(_)
            } else {
                quote!(#PRIVATE::Some(#i))
            };
            let answer = self.adapter_answer(via);
            quote!(#pattern => #answer,)
        });
        let failure = OutcomeFns::failure(self.outcome_fns);
        let dated = OutcomeFns::dated(self.outcome_fns);
        // Its types name `ToolResult`: over the return type, as all its uses.
        Some(self.over(quote! {
                #PRIVATE::call_routed(
                    &self.expeditor,
                    #enum_ident::#variant,
                    &[#(#targets),*],
                    (#name, #span_name),
                    #failure,
                    #dated,
                    |__cb_adapter| match __cb_adapter {
                        #PRIVATE::None => #primary,
                        #(#arms)*
                    },
                )
        }))
    }

    /// What both one-call bodies ask of the tool itself: sync, through `&self` or no
    /// receiver, returning a `Result`, with no deadline, label or precheck.
    fn plain_sync(&self) -> bool {
        let (tool, sig) = (self.tool, &self.tool.tool.sig);
        !sig.is_async()
            && sig.receiver != Receiver::Mut
            && tool.timeout.is_none()
            && !self.labelled()
            && tool.prechecks.is_empty()
            && super::outcome_fns::names_a_result(&sig.output)
    }

    /// The tool's own call as a `Result`, for the one-call bodies.
    fn own_call(&self) -> TokenStream {
        let tool = self.tool;
        let call = call(
            self.checked,
            tool.tool.sig.receiver,
            &tool.tool.ident,
            &self.args,
            false,
            Span::call_site(),
        );
        self.as_result(&call)
    }

    /// A sync adapter's answer, as its tool's: through its signature check where its types
    /// can be written (see `adapter`), spanned at `via`.
    fn adapter_answer(&self, via: &MethodRef) -> TokenStream {
        let span = via.ident.span();
        let Some(signature) = adapter::signature(self.tool, via) else {
            let call = call(
                self.checked,
                via.receiver,
                &via.ident,
                &self.args,
                false,
                span,
            );
            return self.as_result(&call);
        };
        let temporaries = signature.temporaries(self.args.len());
        let arguments = signature.arguments(&self.args, &temporaries);
        let passed: Vec<&Ident> = temporaries.iter().collect();
        let call = call(self.checked, via.receiver, &via.ident, &passed, false, span);
        let answer = self.as_result(&signature.output(&quote!({ #arguments #call })));
        let items = &signature.items;
        quote!({ #items #answer })
    }

    /// Runs the pre-call checks the checked model lists for this tool (R10): its own, and
    /// those of the alternatives its adapters go through.
    fn prechecks(&self) -> TokenStream {
        let enum_ident = self.enum_ident;
        let mut out = TokenStream::new();
        for precheck in &self.tool.prechecks {
            let variant = &self.checked.tools[precheck.tool].variant;
            let run = call_method(self.checked, &precheck.method, &[]);
            out.extend(quote! {
                if self.expeditor.should_precheck(#enum_ident::#variant) {
                    let __cb_availability = #PRIVATE::IntoAvailability::into_availability(#run);
                    self.expeditor.record_precheck(#enum_ident::#variant, __cb_availability);
                }
            });
        }
        out
    }

    /// `__cb_freshen`, what labels a value (R6): the tool, the arguments' digest when outputs
    /// are compared, how to digest and date a value. Nothing for a tool that labels none.
    fn freshen(&self) -> TokenStream {
        if !self.labelled() {
            return TokenStream::new();
        }
        let (enum_ident, variant) = (self.enum_ident, &self.tool.variant);
        let (args_field, digest) = if self.tool.freshness {
            (
                quote!(#PRIVATE::Some(__cb_args)),
                quote!(|__cb_value| #PRIVATE::Some(#PRIVATE::digest(__cb_value))),
            )
        } else {
            (quote!(#PRIVATE::None), quote!(|_| #PRIVATE::None))
        };
        let value_ty = self.value_ty();
        let dated = OutcomeFns::dated(self.outcome_fns);
        // Its type names `ToolResult`: over the return type, as all its uses.
        let freshen = over(
            &self.tool.tool.sig.output,
            quote! {
                #PRIVATE::Freshen {
                    tool: #PRIVATE::ToolId::from(#enum_ident::#variant),
                    args: #args_field,
                    digest: #digest,
                    dated: #dated,
                }
            },
        );
        let ty = over(
            &self.tool.tool.sig.output,
            quote!(#PRIVATE::Freshen<#value_ty>),
        );
        quote! {
            let __cb_freshen: #ty = #freshen;
        }
    }

    /// The tool's success type, spanned over its return type.
    fn value_ty(&self) -> TokenStream {
        let kept = &self.output;
        self.over(quote!(<#kept as #PRIVATE::ToolResult>::Ok))
    }

    /// `call` (a tool's or an adapter's answer) as a plain `Result`, spanned over the tool's
    /// return type.
    fn as_result(&self, call: &TokenStream) -> TokenStream {
        let kept = &self.output;
        self.over(quote!(<#kept as #PRIVATE::ToolResult>::into_result(#call)))
    }

    /// How one call ends: recorded, labelled, kept.
    fn finish(
        &self,
        ticket: &TokenStream,
        route: &TokenStream,
        result: &TokenStream,
    ) -> TokenStream {
        let failure = OutcomeFns::failure(self.outcome_fns);
        let finished = if self.labelled() {
            quote!(#PRIVATE::finish_fresh(&self.expeditor, #ticket, #route, #result, #failure, &__cb_freshen))
        } else {
            let dated = OutcomeFns::dated(self.outcome_fns);
            quote!(#PRIVATE::finish_dated(&self.expeditor, #ticket, #route, #result, #failure, #dated))
        };
        if self.tool.serve_stale {
            let stale_field = stale_field(self.tool);
            // The cache's type names `ToolResult`: over the return type, as all its uses.
            let output = &self.tool.tool.sig.output;
            let cache = over(output, quote!(&self.#stale_field));
            let keep = over(
                output,
                quote!(#PRIVATE::keep_last_good(#cache, __cb_args, &self.expeditor, &__cb_outcome)),
            );
            quote!({
                let __cb_outcome = #finished;
                #keep;
                __cb_outcome
            })
        } else {
            finished
        }
    }

    /// The answer to a refused call: the last good result for a `serve_stale` tool, the
    /// refusal otherwise.
    fn refuse(&self) -> TokenStream {
        if self.tool.serve_stale {
            let stale_field = stale_field(self.tool);
            let output = &self.tool.tool.sig.output;
            let cache = over(output, quote!(&self.#stale_field));
            over(
                output,
                quote!(#PRIVATE::serve_stale(__cb_refusal, #cache, __cb_args)),
            )
        } else {
            quote!({
                #PRIVATE::trace_refusal(&__cb_refusal);
                #PRIVATE::Err(#PRIVATE::CallError::Refused(__cb_refusal))
            })
        }
    }

    /// One call, recorded through `__cb_ticket` with `route`: `call` is the call's expression
    /// without `.await`. With a deadline (B13, the recording tool's `timeout`), the call is
    /// timed from here, after the decision: an async one races the expeditor's clock and is
    /// dropped when the deadline comes first; a sync one cannot be stopped, and its answer is
    /// dropped when it comes at or after the deadline. Either is a timeout failure. Without
    /// one, no clock is read.
    fn called(
        &self,
        call: &TokenStream,
        is_async: bool,
        timeout: Option<u64>,
        route: &TokenStream,
        adapter: Option<&Signature>,
    ) -> TokenStream {
        let ticket = quote!(__cb_ticket);
        // An adapter's answer, as its tool's (see `adapter`).
        let answer = |answer: TokenStream| match adapter {
            Some(signature) => self.as_result(&signature.output(&answer)),
            None => self.as_result(&answer),
        };
        let Some(millis) = timeout else {
            let awaited = if is_async {
                quote!(#call.await)
            } else {
                call.clone()
            };
            return self.finish(&ticket, route, &answer(awaited));
        };
        let done = self.finish(&ticket, route, &answer(quote!(__cb_output)));
        let late = quote!(#PRIVATE::timed_out(#ticket, #route, __cb_deadline));
        if is_async {
            quote!({
                let __cb_deadline = #PRIVATE::Deadline::start(&self.expeditor, #millis);
                match __cb_deadline.within(&self.expeditor, #call).await {
                    #PRIVATE::Some(__cb_output) => #done,
                    #PRIVATE::None => #late,
                }
            })
        } else {
            quote!({
                let __cb_deadline = #PRIVATE::Deadline::start(&self.expeditor, #millis);
                let __cb_output = #call;
                if __cb_deadline.passed(&self.expeditor) {
                    #late
                } else {
                    #done
                }
            })
        }
    }

    /// The tool's own call, recorded with `route`.
    fn primary(&self, route: &TokenStream) -> TokenStream {
        let sig = &self.tool.tool.sig;
        // Without `.await`: `called` awaits it, or times it.
        let call = call(
            self.checked,
            sig.receiver,
            &self.tool.tool.ident,
            &self.args,
            false,
            Span::call_site(),
        );
        self.called(&call, sig.is_async(), self.tool.timeout, route, None)
    }

    /// A tool without adapters: the decision matched here, as a hand-written caller of the
    /// runtime API does, so that the ticket goes from `decide` to `finish` without another
    /// enum around it.
    fn direct(&self) -> TokenStream {
        let (enum_ident, variant) = (self.enum_ident, &self.tool.variant);
        let done = self.primary(&quote!(#PRIVATE::None));
        let refuse = self.refuse();
        quote! {
            match self.expeditor.decide(#enum_ident::#variant) {
                #PRIVATE::Decision::Call(__cb_ticket)
                | #PRIVATE::Decision::Probe(__cb_ticket) => #done,
                __cb_decision => {
                    let __cb_refusal = #PRIVATE::refuse(&self.expeditor, #PRIVATE::ToolId::from(#enum_ident::#variant), &__cb_decision);
                    #refuse
                }
            }
        }
    }

    /// One adapter's call, recorded against its alternative with the route, timed by the
    /// alternative's deadline; its types checked against the tool's where they can be written.
    fn adapted(&self, via: &MethodRef, timeout: Option<u64>) -> TokenStream {
        let route = quote!(#PRIVATE::Some(__cb_route));
        let span = via.ident.span();
        let Some(signature) = adapter::signature(self.tool, via) else {
            let call = call(
                self.checked,
                via.receiver,
                &via.ident,
                &self.args,
                false,
                span,
            );
            return self.called(&call, via.is_async, timeout, &route, None);
        };
        let temporaries = signature.temporaries(self.args.len());
        let arguments = signature.arguments(&self.args, &temporaries);
        let passed: Vec<&Ident> = temporaries.iter().collect();
        let call = call(self.checked, via.receiver, &via.ident, &passed, false, span);
        let call = quote!({ #arguments #call });
        let done = self.called(&call, via.is_async, timeout, &route, Some(&signature));
        let items = &signature.items;
        quote!({ #items #done })
    }

    /// A tool with adapters: the runtime plans the call (the tool, an adapter through an
    /// alternative, or a refusal), and each adapter's call is recorded against its
    /// alternative, timed by that alternative's deadline.
    fn routed(&self) -> TokenStream {
        let (enum_ident, variant) = (self.enum_ident, &self.tool.variant);
        let adapters: Vec<(&MethodRef, usize)> = self.tool.adapters().collect();
        let targets = adapters.iter().map(|(_, target)| {
            let v = &self.checked.tools[*target].variant;
            quote!(#PRIVATE::ToolId::from(#enum_ident::#v))
        });
        let last = adapters.len() - 1;
        let arms = adapters.iter().enumerate().map(|(i, (via, target))| {
            let pattern = if i == last { quote!(..) } else { quote!(index: #i, ..) };
            let done = self.adapted(via, self.checked.tools[*target].timeout);
            quote! {
                #PRIVATE::Plan::Adapter { ticket: __cb_ticket, route: __cb_route, #pattern } => #done,
            }
        });
        let done = self.primary(&quote!(#PRIVATE::None));
        let refuse = self.refuse();
        quote! {
            match #PRIVATE::plan(&self.expeditor, #enum_ident::#variant, &[#(#targets),*]) {
                #PRIVATE::Plan::Primary(__cb_ticket) => #done,
                #(#arms)*
                #PRIVATE::Plan::Refuse(__cb_refusal) => #refuse,
            }
        }
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
