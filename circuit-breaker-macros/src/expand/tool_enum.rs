//! The tool enum (`WorkspaceTool` for `impl Workspace`): one variant per tool, in
//! capability-map order, and what the runtime and users need of it (`ToolSet`, names,
//! comparisons, serde).

use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

use super::Generated;
use super::runtime::PRIVATE;
use crate::check::Checked;

/// The enum itself, beside the user's impl.
pub fn definition(checked: &Checked<'_>, generated: &Generated) -> TokenStream {
    let enum_ident = &generated.tool_enum;
    let variants = checked.tools.iter().map(|t| &t.variant);
    let variant_docs = checked
        .tools
        .iter()
        .map(|t| format!(" `{}`: {}", t.tool.name, t.provides));
    let enum_doc = format!(
        " The tools of [`{}`]'s `#[toolbox]`, in capability-map order.",
        checked.base
    );
    quote! {
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
    }
}

/// The enum's statics and impls, inside the generated `const` block.
pub fn impls(checked: &Checked<'_>, generated: &Generated) -> TokenStream {
    let enum_ident = &generated.tool_enum;
    let variants: Vec<&Ident> = checked.tools.iter().map(|t| &t.variant).collect();
    let names = checked.tools.iter().map(|t| t.tool.name.as_str());
    let variant_names = variants.iter().map(ToString::to_string);
    let count = checked.tools.len();
    let std_impls = std_impls(enum_ident);
    let runtime_impls = runtime_impls(checked, enum_ident);
    quote! {
        static __CB_ALL: [#enum_ident; #count] = [#(#enum_ident::#variants),*];
        const __CB_NAMES: [&str; #count] = [#(#names),*];
        const __CB_VARIANTS: [&str; #count] = [#(#variant_names),*];

        #std_impls

        impl #enum_ident {
            /// Every tool, in capability-map order.
            pub const ALL: [Self; #count] = [#(Self::#variants),*];

            /// The tool's name in the capability map.
            pub const fn name(self) -> &'static str {
                __CB_NAMES[self as usize]
            }

            /// The toolbox's capability map, checked at compile time.
            pub fn capability_map() -> &'static #PRIVATE::CapabilityMap {
                __CB_MAP.get()
            }
        }

        #runtime_impls
    }
}

/// Equality, order, hashing and `Debug`, through the variant's index.
fn std_impls(enum_ident: &Ident) -> TokenStream {
    quote! {
        impl #PRIVATE::core::cmp::PartialEq for #enum_ident {
            fn eq(&self, other: &Self) -> bool {
                (*self as u32) == (*other as u32)
            }
        }

        impl #PRIVATE::core::cmp::Eq for #enum_ident {}

        impl #PRIVATE::core::cmp::PartialOrd for #enum_ident {
            fn partial_cmp(&self, other: &Self) -> #PRIVATE::core::option::Option<#PRIVATE::core::cmp::Ordering> {
                #PRIVATE::Some(#PRIVATE::core::cmp::Ord::cmp(self, other))
            }
        }

        impl #PRIVATE::core::cmp::Ord for #enum_ident {
            fn cmp(&self, other: &Self) -> #PRIVATE::core::cmp::Ordering {
                #PRIVATE::core::cmp::Ord::cmp(&(*self as u32), &(*other as u32))
            }
        }

        impl #PRIVATE::core::hash::Hash for #enum_ident {
            fn hash<__H: #PRIVATE::core::hash::Hasher>(&self, state: &mut __H) {
                #PRIVATE::core::hash::Hash::hash(&(*self as u32), state);
            }
        }

        impl #PRIVATE::core::fmt::Debug for #enum_ident {
            fn fmt(&self, f: &mut #PRIVATE::core::fmt::Formatter<'_>) -> #PRIVATE::core::fmt::Result {
                f.write_str(__CB_VARIANTS[*self as usize])
            }
        }
    }
}

/// `ToolSet`, the conversions to a `ToolId` and a name, and the enum as its name in text and
/// serde.
fn runtime_impls(checked: &Checked<'_>, enum_ident: &Ident) -> TokenStream {
    let policy = super::map::policy(checked);
    quote! {
        impl #PRIVATE::ToolSet for #enum_ident {
            const ALL: &'static [Self] = &__CB_ALL;

            fn name(self) -> &'static str {
                #enum_ident::name(self)
            }

            fn capability_map() -> &'static #PRIVATE::CapabilityMap {
                __CB_MAP.get()
            }

            fn policy() -> #PRIVATE::Policy {
                #policy
            }
        }

        impl #PRIVATE::core::convert::From<#enum_ident> for #PRIVATE::ToolId {
            fn from(tool: #enum_ident) -> Self {
                #PRIVATE::ToolId::from_index(tool as u32)
            }
        }

        impl #PRIVATE::core::convert::From<#enum_ident> for #PRIVATE::String {
            fn from(tool: #enum_ident) -> Self {
                #PRIVATE::String::from(#enum_ident::name(tool))
            }
        }

        impl #PRIVATE::core::fmt::Display for #enum_ident {
            fn fmt(&self, f: &mut #PRIVATE::core::fmt::Formatter<'_>) -> #PRIVATE::core::fmt::Result {
                f.pad(#enum_ident::name(*self))
            }
        }

        impl #PRIVATE::core::str::FromStr for #enum_ident {
            type Err = #PRIVATE::UnknownTool;

            fn from_str(name: &str) -> #PRIVATE::core::result::Result<Self, #PRIVATE::UnknownTool> {
                <Self as #PRIVATE::ToolSet>::from_name(name)
            }
        }

        impl #PRIVATE::serde::Serialize for #enum_ident {
            fn serialize<__S: #PRIVATE::serde::Serializer>(
                &self,
                serializer: __S,
            ) -> #PRIVATE::core::result::Result<__S::Ok, __S::Error> {
                #PRIVATE::serialize_tool(#enum_ident::name(*self), serializer)
            }
        }

        impl<'de> #PRIVATE::serde::Deserialize<'de> for #enum_ident {
            fn deserialize<__D: #PRIVATE::serde::Deserializer<'de>>(
                deserializer: __D,
            ) -> #PRIVATE::core::result::Result<Self, __D::Error> {
                #PRIVATE::deserialize_tool(deserializer)
            }
        }
    }
}
