//! The impl block read with its methods' bodies left as tokens.
//!
//! Nothing in the macro reads a statement of a method's body: the bodies are given back to
//! rustc as they came. Parsing them into `syn`'s expressions was a fifth of the macro's own
//! work (60 M of 308 M instructions for 100 tools, an unoptimized `syn` in a debug build, a
//! user's usual profile); a body kept as its token group is printed back unchanged, and a
//! syntax error inside it is rustc's to report, where it is.

use proc_macro2::{Delimiter, Group, TokenStream, TokenTree};
use syn::parse::discouraged::Speculative;
use syn::parse::{ParseStream, Parser};
use syn::{
    Attribute, Block, FnModifiers, ImplItem, ImplItemFn, Item, ItemImpl, Signature, Stmt, Token,
    Visibility, token,
};

/// `input` as an `ItemImpl` whose methods' blocks hold their bodies verbatim; `None` when it is
/// not an impl block.
pub fn item_impl(input: TokenStream) -> Option<ItemImpl> {
    let mut tokens: Vec<TokenTree> = input.into_iter().collect();
    // An impl block ends with its braced items; the header before them is parsed by `syn`
    // with no items, the items here.
    let Some(TokenTree::Group(items)) = tokens.pop() else {
        return None;
    };
    if items.delimiter() != Delimiter::Brace {
        return None;
    }
    let mut empty = Group::new(Delimiter::Brace, TokenStream::new());
    empty.set_span(items.span());
    tokens.push(TokenTree::Group(empty));
    let mut item = syn::parse2::<ItemImpl>(tokens.into_iter().collect()).ok()?;
    let (inner, parsed) = impl_items.parse2(items.stream()).ok()?;
    item.attrs.extend(inner);
    item.items = parsed;
    item.brace_token = token::Brace {
        span: items.delim_span(),
    };
    Some(item)
}

/// The items of an impl block, with its inner attributes.
fn impl_items(input: ParseStream<'_>) -> syn::Result<(Vec<Attribute>, Vec<ImplItem>)> {
    let inner = input.call(Attribute::parse_inner)?;
    let mut items = Vec::new();
    while !input.is_empty() {
        let fork = input.fork();
        if let Some(method) = method(&fork) {
            input.advance_to(&fork);
            items.push(ImplItem::Fn(method));
        } else {
            items.push(input.parse()?);
        }
    }
    Ok((inner, items))
}

/// A method with a body, its body unparsed; `None` for any other item (left to `syn`).
fn method(input: ParseStream<'_>) -> Option<ImplItemFn> {
    let attrs = input.call(Attribute::parse_outer).ok()?;
    let vis: Visibility = input.parse().ok()?;
    let defaultness: Option<Token![default]> = input.parse().ok()?;
    let sig: Signature = input.parse().ok()?;
    let body = input
        .step(|cursor| match cursor.token_tree() {
            Some((TokenTree::Group(group), rest)) if group.delimiter() == Delimiter::Brace => {
                Ok((group, rest))
            }
            _ => Err(cursor.error("a method body")),
        })
        .ok()?;
    let mut modifiers = FnModifiers::default();
    modifiers.defaultness = defaultness;
    Some(ImplItemFn {
        attrs,
        vis,
        modifiers,
        sig,
        block: Block {
            brace_token: token::Brace {
                span: body.delim_span(),
            },
            stmts: vec![Stmt::Item(Item::Verbatim(body.stream()))],
        },
    })
}
