//! `#[toolbox(json)]` (B8): an argument struct per tool (serde, JSON Schema, the parameters'
//! docs as descriptions) and `ToolDispatch` on the guarded handle, whose `dispatch` decodes
//! the arguments and calls the same guarded method as a typed call.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::{GenericArgument, Ident, PathArguments, Type};

use super::Generated;
use super::runtime::{PRIVATE, private_path};
use super::span::{kept, over};
use crate::check::{Checked, CheckedTool, Owned, Pass};

/// What a `json` toolbox adds inside the generated `const` block, through the runtime's
/// `json_dispatch!`: one clear error when the runtime's `json` feature is off.
pub fn json_dispatch(checked: &Checked<'_>, generated: &Generated) -> TokenStream {
    let (enum_ident, handle_ident) = (&generated.tool_enum, &generated.handle);
    let (impl_generics, ty_generics, _) = checked.toolbox.item.generics.split_for_impl();
    // All tools sync: `call` answers at once, and `dispatch` is `call` in a ready future.
    // Any async: every arm is a future, and `call` awaits `dispatch`.
    let asynchronous = checked.tools.iter().any(|t| t.tool.sig.is_async());
    let wrap = if asynchronous {
        quote!(#PRIVATE::ready)
    } else {
        quote!()
    };
    let structs = checked.tools.iter().map(args_struct);
    let definitions: Vec<TokenStream> = checked.tools.iter().map(definition).collect();
    let arms = checked
        .tools
        .iter()
        .map(|tool| arm(tool, enum_ident, &wrap));
    let count = definitions.len();
    let where_clause = where_send_sync(checked);
    let arms = quote! {
        match name {
            #(#arms)*
            _ => #wrap(#PRIVATE::Reply::unknown_tool(&self.expeditor, name)),
        }
    };
    let (dispatch_body, call) = dispatch_and_call(asynchronous, arms);
    quote! { #PRIVATE::json_dispatch! {
        #(#structs)*

        static __CB_DEFINITIONS: #PRIVATE::Definitions = #PRIVATE::Definitions::new();

        impl #impl_generics #PRIVATE::ToolDispatch for #handle_ident #ty_generics #where_clause {
            fn definitions(&self) -> #PRIVATE::Vec<#PRIVATE::ToolDefinition> {
                fn build() -> [#PRIVATE::ToolDefinition; #count] {
                    [#(#definitions),*]
                }
                __CB_DEFINITIONS.get(build)
            }

            fn definitions_version(&self) -> #PRIVATE::core::option::Option<u64> {
                #PRIVATE::Some(0)
            }

            fn expeditor(&self) -> &#PRIVATE::Expeditor {
                &self.expeditor
            }

            fn dispatch<'__cb>(
                &'__cb self,
                name: &'__cb str,
                arguments: #PRIVATE::Value,
            ) -> #PRIVATE::ReplyFuture<'__cb> {
                #dispatch_body
            }
        }

        impl #impl_generics #handle_ident #ty_generics #where_clause {
            #call
        }
    } }
}

/// What a toolbox without `json` adds to its handle: hidden `call`, `definitions` and
/// `dispatch` bound by `JsonToolbox`, which no type implements. Calling one is then an error
/// at the call that says to add `json` (the trait's `on_unimplemented`), where without them
/// rustc finds no method and offers `Fn::call`. A tool of the same name keeps its own method.
pub fn json_hint(checked: &Checked<'_>, generated: &Generated) -> TokenStream {
    let handle_ident = &generated.handle;
    let (impl_generics, ty_generics, where_clause) = checked.toolbox.item.generics.split_for_impl();
    let taken: Vec<String> = checked
        .tools
        .iter()
        .map(|t| t.tool.ident.to_string())
        .collect();
    let missing = quote!(<Self as #PRIVATE::JsonToolbox<'__cb>>::Missing);
    let body = quote!(#PRIVATE::JsonToolbox::missing(self));
    let methods = [
        (
            "call",
            quote! {
                pub fn call<'__cb, __CbName, __CbArguments>(&'__cb self, _name: __CbName, _arguments: __CbArguments) -> #missing
                where Self: #PRIVATE::JsonToolbox<'__cb> { #body }
            },
        ),
        (
            "definitions",
            quote! {
                pub fn definitions<'__cb>(&'__cb self) -> #missing
                where Self: #PRIVATE::JsonToolbox<'__cb> { #body }
            },
        ),
        (
            "dispatch",
            quote! {
                pub fn dispatch<'__cb, __CbName, __CbArguments>(&'__cb self, _name: __CbName, _arguments: __CbArguments) -> #missing
                where Self: #PRIVATE::JsonToolbox<'__cb> { #body }
            },
        ),
    ];
    let methods = methods
        .into_iter()
        .filter(|(name, _)| !taken.iter().any(|t| t == name))
        .map(|(_, method)| method);
    quote! {
        #[allow(clippy::needless_pass_by_value, clippy::unused_self, clippy::must_use_candidate)]
        impl #impl_generics #handle_ident #ty_generics #where_clause {
            #(
                #[doc(hidden)]
                #methods
            )*
        }
    }
}

/// The struct a tool's arguments are decoded into.
fn args_struct(tool: &CheckedTool<'_>) -> TokenStream {
    let args_ident = args_ident(tool);
    let fields = tool
        .tool
        .sig
        .params
        .iter()
        .zip(&tool.json)
        .map(|(param, json)| {
            let (name, owned, docs) = (&param.name, owned_type(&json.owned), &param.docs);
            quote!(#(#docs)* #name: #owned,)
        });
    let serde_crate = private_path("serde");
    let schemars_crate = private_path("schemars");
    quote! {
        #[derive(#PRIVATE::serde::Deserialize, #PRIVATE::schemars::JsonSchema)]
        #[serde(crate = #serde_crate, deny_unknown_fields)]
        #[schemars(crate = #schemars_crate)]
        struct #args_ident {
            #(#fields)*
        }
    }
}

/// `__CbArgsGrep` for the tool of variant `Grep`.
fn args_ident(tool: &CheckedTool<'_>) -> Ident {
    format_ident!("__CbArgs{}", tool.variant)
}

/// The owned type an argument is decoded into, with the runtime's `String`, `PathBuf` and
/// `Vec` (the user may shadow the prelude's).
fn owned_type(owned: &Owned) -> TokenStream {
    match owned {
        Owned::Same(ty) => quote!(#ty),
        Owned::String => quote!(#PRIVATE::String),
        Owned::PathBuf => quote!(#PRIVATE::PathBuf),
        Owned::Vec(elem) => quote!(#PRIVATE::Vec<#elem>),
        Owned::Option(option, referent) => {
            let mut option = option.clone();
            if let Some(last) = option.path.segments.last_mut()
                && let PathArguments::AngleBracketed(args) = &mut last.arguments
                && let Some(GenericArgument::Type(t)) = args.args.first_mut()
            {
                *t = Type::Verbatim(owned_type(referent));
            }
            quote!(#option)
        }
    }
}

/// The tool's definition for the model: its name, description and arguments' schema.
fn definition(tool: &CheckedTool<'_>) -> TokenStream {
    let args_ident = args_ident(tool);
    let name = tool.tool.name.as_str();
    let description = description(tool);
    quote!(#PRIVATE::definition::<#args_ident>(#name, #description))
}

/// The dispatcher's arm for one tool: the arguments decoded (or the model told they do not
/// parse), then the guarded method called with them as a typed call would.
fn arm(tool: &CheckedTool<'_>, enum_ident: &Ident, wrap: &TokenStream) -> TokenStream {
    let args_ident = args_ident(tool);
    let name = tool.tool.name.as_str();
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
    // Over the return type, as every other use of `ToolResult`: a tool that returns no
    // `Result` is one error there, not one more at the dispatcher's call.
    let call = over(
        &tool.tool.sig.output,
        quote!(Self::#ident(self, #(#args),*)),
    );
    let answer = answer(tool, enum_ident, &call, wrap);
    quote! {
        #name => {
            let #binding: #args_ident = match #PRIVATE::arguments(arguments) {
                #PRIVATE::Ok(__cb_args) => __cb_args,
                #PRIVATE::Err(__cb_error) => {
                    return #wrap(#PRIVATE::Reply::bad_arguments(&self.expeditor, name, &__cb_error));
                }
            };
            #answer
        }
    }
}

/// The reply to `call` of the guarded method: at once for a sync tool, a boxed future for an
/// async one.
fn answer(
    tool: &CheckedTool<'_>,
    enum_ident: &Ident,
    call: &TokenStream,
    wrap: &TokenStream,
) -> TokenStream {
    // Said at the tool's return type: a value that does not serialize (an error that does
    // not display).
    let output = &tool.tool.sig.output;
    let variant = &tool.variant;
    // The value and error types named from the return type, as the handle's method names
    // them: a return type that is no `Result` is then the same error as there, reported once.
    let kept = kept(output);
    let [value, error] = [quote!(Ok), quote!(Err)].map(|part| {
        let ty = over(output, quote!(<#kept as #PRIVATE::ToolResult>::#part));
        proc_macro2::Group::new(proc_macro2::Delimiter::None, ty)
    });
    let types = quote!(#value, #error);
    if tool.tool.sig.is_async() {
        // A future that is not `Send` is reported at the tool's name; what it answers, over
        // the return type (by `json_reply_to`'s bounds, not at an `.await` here).
        let span = tool.tool.ident.span();
        let private = PRIVATE.at(span);
        let reply = over(
            output,
            quote!(#PRIVATE::json_reply_to::<#types, _>(&self.expeditor, #PRIVATE::ToolId::from(#enum_ident::#variant), name, #call)),
        );
        quote_spanned!(span=> #private::boxed(async move { #reply.await }))
    } else {
        let reply = over(
            output,
            quote!(#PRIVATE::json_reply::<#types>(&self.expeditor, #enum_ident::#variant, name, __cb_result)),
        );
        quote! {{
            let __cb_result = #call;
            #wrap(#reply)
        }}
    }
}

/// `ToolDispatch: Send + Sync`: a generic toolbox gets the impl where it is; for a concrete
/// one that is not, rustc says which field is not, at the impl's type.
fn where_send_sync(checked: &Checked<'_>) -> TokenStream {
    let generics = &checked.toolbox.item.generics;
    if generics.params.is_empty() {
        return quote!();
    }
    let self_ty = &checked.toolbox.item.self_ty;
    let predicates = generics.where_clause.as_ref().map(|w| &w.predicates);
    let comma = predicates
        .filter(|p| !p.empty_or_trailing())
        .map(|_| quote!(,));
    quote!(where #predicates #comma #self_ty: #PRIVATE::core::marker::Send + #PRIVATE::core::marker::Sync)
}

/// `dispatch`'s body and the handle's own `call(name, arguments)`: with an async tool,
/// `dispatch` matches and `call` awaits it; with sync tools only, `call` matches and answers
/// at once, and `dispatch` is `call` in a ready future.
fn dispatch_and_call(asynchronous: bool, arms: TokenStream) -> (TokenStream, TokenStream) {
    if asynchronous {
        let call = quote! {
            /// Calls the tool `name` with JSON `arguments` through the guarded path, as the
            /// typed method does: decide, call or route, record (B8). A name that is no tool,
            /// or arguments that do not parse, are the model's mistakes: answered, counted,
            /// never charged.
            pub async fn call(&self, name: &str, arguments: #PRIVATE::Value) -> #PRIVATE::Reply {
                #PRIVATE::ToolDispatch::dispatch(self, name, arguments).await
            }
        };
        (arms, call)
    } else {
        let call = quote! {
            /// Calls the tool `name` with JSON `arguments` through the guarded path, as the
            /// typed method does: decide, call or route, record (B8). A name that is no tool,
            /// or arguments that do not parse, are the model's mistakes: answered, counted,
            /// never charged. Every tool is sync, so the reply comes back at once.
            pub fn call(&self, name: &str, arguments: #PRIVATE::Value) -> #PRIVATE::Reply {
                #arms
            }
        };
        (
            quote!(#PRIVATE::ready(Self::call(self, name, arguments))),
            call,
        )
    }
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
