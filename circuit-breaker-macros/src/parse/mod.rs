//! Parse phase: `#[toolbox(args)] impl ..` read into the model the later phases work on. The
//! attributes' arguments are parsed with darling (`attr`, `alternatives`, `meta`), each tool
//! method's shape is analysed once (`tool`), and what would route a tool around its breaker
//! (rmcp's macros, `rmcp`) is taken off. Every mistake is pushed as a spanned error, and
//! parsing goes on, so that one compile reports them all.

mod alternatives;
mod attr;
mod lazy;
mod meta;
mod model;
mod rmcp;
mod tool;

use darling::Error;
use darling::error::Accumulator;
use proc_macro2::{Span, TokenStream};
use syn::{ImplItem, ImplItemFn, Type};

pub use alternatives::Degradation;
pub use model::{Method, Receiver, Tool, Toolbox, nameable, type_text, unraw};

/// Parses `#[toolbox(args)] impl ..` into a model, pushing every mistake into `errors`.
/// Returns `None` when the item is not an impl block at all.
pub fn parse(args: TokenStream, input: TokenStream, errors: &mut Accumulator) -> Option<Toolbox> {
    let Some(item) = lazy::item_impl(input.clone()) else {
        errors.push(not_an_impl(input));
        return None;
    };
    let args = attr::toolbox_args(args, errors);
    let base = self_ident(&item.self_ty);
    let mut toolbox = Toolbox {
        item,
        args,
        base,
        tools: Vec::new(),
        methods: Vec::new(),
    };
    reject_unsupported_impl(&toolbox, errors);
    let hint = rmcp::hint(toolbox.base.as_ref());
    rmcp::take_tool_routers(&mut toolbox.item.attrs, &hint, errors);
    let mut items = std::mem::take(&mut toolbox.item.items);
    for impl_item in &mut items {
        read_item(&mut toolbox, impl_item, &hint, errors);
    }
    let tools: Vec<_> = toolbox.tools.iter().map(|t| t.ident.clone()).collect();
    rmcp::disarm_routers(&mut items, &tools, &hint, errors);
    toolbox.item.items = items;
    Some(toolbox)
}

/// A trait impl, or a self type without a name, is an error: the tool enum and the guarded
/// handle are named after the type, and the handle's methods are inherent.
fn reject_unsupported_impl(toolbox: &Toolbox, errors: &mut Accumulator) {
    let self_ty = || type_text(&toolbox.item.self_ty);
    if let Some((path, _)) = &toolbox.item.trait_ {
        errors.push(
            Error::custom(format!(
                "#[toolbox] goes on an inherent impl block, not a trait impl: move the tools into `impl {} {{ .. }}` (the trait's methods can call them)",
                self_ty()
            ))
            .with_span(path),
        );
    } else if toolbox.base.is_none() {
        errors.push(
            Error::custom(format!(
                "#[toolbox] needs a named type: the tool enum and the guarded handle are named after it (`WorkspaceTool`, `GuardedWorkspace` for `impl Workspace`), and `{}` has no name; put the tools on a struct that holds it",
                self_ty()
            ))
            .with_span(&toolbox.item.self_ty),
        );
    }
}

/// One item of the impl: a method is recorded, and read as a tool when it has our `#[tool]`;
/// our `#[tool]` on anything else is an error.
fn read_item(
    toolbox: &mut Toolbox,
    impl_item: &mut ImplItem,
    hint: &str,
    errors: &mut Accumulator,
) {
    let krate = toolbox.args.krate.clone();
    let krate = krate.as_ref();
    match impl_item {
        ImplItem::Fn(method) => {
            toolbox.methods.push(tool::method_of(method));
            if let Some(tool) = read_tool(method, krate, hint, errors) {
                toolbox.tools.push(tool);
            }
        }
        ImplItem::Const(c) => attr::reject_tool_attrs(&mut c.attrs, krate, errors),
        ImplItem::Type(t) => attr::reject_tool_attrs(&mut t.attrs, krate, errors),
        ImplItem::Macro(m) => attr::reject_tool_attrs(&mut m.attrs, krate, errors),
        _ => {}
    }
}

/// The tool of a method with our `#[tool]`; `None` for a method without one, or with a plain
/// `#[tool(..)]` that was meant as rmcp's.
fn read_tool(
    method: &mut ImplItemFn,
    krate: Option<&syn::Path>,
    hint: &str,
    errors: &mut Accumulator,
) -> Option<Tool> {
    let mut attrs = attr::take_tool_attrs(&mut method.attrs, krate).into_iter();
    let first = attrs.next()?;
    if attrs.len() == 0
        && let Some(error) = rmcp::plain_rmcp_tool(&first, hint)
    {
        errors.push(error);
        return None;
    }
    rmcp::take_stacked_tools(&mut method.attrs, hint, errors);
    let mut duplicated = false;
    for extra in attrs {
        duplicated = true;
        errors.push(
            Error::custom(
                "a second #[tool] on one method: put all of the tool's arguments in one #[tool(..)]",
            )
            .with_span(&attr::attr_name_span(&extra)),
        );
    }
    let mut attribute = attr::tool_attribute(&first, errors);
    if duplicated {
        // The second attribute may hold what the first lacks.
        attribute.failed_keys.push("*".to_owned());
    }
    Some(tool::parse_tool(attribute, method, errors))
}

/// The last identifier of the impl's self type: `Workspace` for `Workspace<T>`.
fn self_ident(ty: &Type) -> Option<syn::Ident> {
    match ty {
        Type::Path(p) if p.qself.is_none() => p.path.segments.last().map(|s| s.ident.clone()),
        Type::Group(g) => self_ident(&g.elem),
        Type::Paren(p) => self_ident(&p.elem),
        _ => None,
    }
}

/// The error for `#[toolbox]` on something other than an impl block, at the item's keyword
/// (`struct`, `fn`, `trait`, ..) rather than at its first attribute.
fn not_an_impl(input: TokenStream) -> Error {
    let first = input
        .clone()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span());
    let (what, span, name) = match syn::parse2::<syn::Item>(input) {
        Ok(syn::Item::Struct(i)) => ("a struct", i.struct_token.span, Some(i.ident)),
        Ok(syn::Item::Enum(i)) => ("an enum", i.enum_token.span, Some(i.ident)),
        Ok(syn::Item::Union(i)) => ("a union", i.union_token.span, Some(i.ident)),
        Ok(syn::Item::Trait(i)) => ("a trait", i.trait_token.span, None),
        Ok(syn::Item::Fn(i)) => ("a function", i.sig.fn_token.span, None),
        Ok(syn::Item::Mod(i)) => ("a module", i.mod_token.span, None),
        _ => ("this item", first, None),
    };
    let example = match name {
        Some(name) => format!("`#[toolbox] impl {name} {{ #[tool(..)] fn .. }}`"),
        None => "`#[toolbox] impl MyTools { #[tool(..)] fn .. }`".to_owned(),
    };
    let hint = if what == "a trait" {
        "; a trait cannot be a toolbox, its implementor's inherent impl can"
    } else {
        ""
    };
    Error::custom(format!(
        "#[toolbox] goes on an inherent impl block, not on {what}: {example}{hint}"
    ))
    .with_span(&span)
}
