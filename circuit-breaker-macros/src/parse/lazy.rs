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
    let (inner, parsed) = match without_bodies(items.stream()) {
        Some((stream, bodies)) => impl_items
            .parse2(stream)
            .ok()
            .and_then(|(inner, parsed)| with_bodies(parsed, bodies).map(|p| (inner, p))),
        None => None,
    }
    .or_else(|| impl_items.parse2(items.stream()).ok())?;
    item.attrs.extend(inner);
    item.items = parsed;
    item.brace_token = token::Brace {
        span: items.delim_span(),
    };
    Some(item)
}

/// The impl's items with each method's body group emptied, and the bodies taken out, in
/// order; `None` when the items are not laid out as expected.
///
/// `syn` copies every token it is given into its own buffer, groups and all, before parsing
/// a single one, so handing it the bodies cost as much as their size even though they are
/// kept as tokens (a third of reading the impl for 100 tools). A method is its attributes,
/// its qualifiers, `fn`, and everything up to the first brace group outside angle brackets:
/// its body. Any other item ends at a `;` or a brace group. What this cannot read is
/// caught by [`with_bodies`], and the items are then parsed whole, as before.
fn without_bodies(stream: TokenStream) -> Option<(TokenStream, Vec<Group>)> {
    let mut out: Vec<TokenTree> = Vec::new();
    let mut bodies = Vec::new();
    let mut trees = stream.into_iter().peekable();
    while trees.peek().is_some() {
        // The item's attributes and qualifiers.
        let mut is_fn = false;
        while let Some(tree) = trees.peek() {
            match tree {
                TokenTree::Punct(p) if p.as_char() == '#' || p.as_char() == '!' => {}
                TokenTree::Group(g) if g.delimiter() != Delimiter::Brace => {}
                TokenTree::Literal(_) => {}
                TokenTree::Ident(i) => {
                    let word = i.to_string();
                    match word.as_str() {
                        "pub" | "default" | "const" | "async" | "unsafe" | "safe" | "extern" => {}
                        "fn" => is_fn = true,
                        _ => break,
                    }
                    if is_fn {
                        break;
                    }
                }
                _ => break,
            }
            out.extend(trees.next());
        }
        // The rest of the item, to its body or its end.
        let mut angles = 0usize;
        let mut joint_minus = false;
        for tree in trees.by_ref() {
            match &tree {
                TokenTree::Group(g) if g.delimiter() == Delimiter::Brace && angles == 0 => {
                    if is_fn {
                        let mut empty = Group::new(Delimiter::Brace, TokenStream::new());
                        empty.set_span(g.span());
                        out.push(TokenTree::Group(empty));
                        bodies.push(g.clone());
                    } else {
                        out.push(tree);
                    }
                    break;
                }
                TokenTree::Punct(p) => {
                    let c = p.as_char();
                    let arrow = c == '>' && joint_minus;
                    joint_minus = c == '-' && p.spacing() == proc_macro2::Spacing::Joint;
                    if c == '<' {
                        angles += 1;
                    } else if c == '>' && !arrow {
                        angles = angles.checked_sub(1)?;
                    } else if c == ';' && angles == 0 {
                        out.push(tree);
                        break;
                    }
                }
                _ => joint_minus = false,
            }
            out.push(tree);
        }
    }
    Some((out.into_iter().collect(), bodies))
}

/// The parsed items with the bodies [`without_bodies`] took out given back, in order: each
/// method parsed must be one whose body was taken, else `None`.
fn with_bodies(mut items: Vec<ImplItem>, bodies: Vec<Group>) -> Option<Vec<ImplItem>> {
    let mut bodies = bodies.into_iter();
    for item in &mut items {
        let ImplItem::Fn(method) = item else {
            continue;
        };
        let body = bodies.next()?;
        let [Stmt::Item(Item::Verbatim(kept))] = method.block.stmts.as_mut_slice() else {
            return None;
        };
        if !kept.is_empty() {
            return None;
        }
        *kept = body.stream();
        method.block.brace_token = token::Brace {
            span: body.delim_span(),
        };
    }
    bodies.next().is_none().then_some(items)
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

#[cfg(test)]
mod tests {
    use super::{impl_items, with_bodies, without_bodies};
    use syn::parse::Parser;

    /// Items whose layout could be mistaken (brace groups in types, items that are not
    /// methods, a method without a body) read alike with the bodies taken out and whole.
    #[test]
    fn items_read_without_their_bodies_as_whole() {
        let stream = quote::quote! {
            #![allow(dead_code)]
            const A: [u8; 1] = { [1] };
            type F = fn() -> u8;
            m! { fn not_a_method() {} }
            m!(y);
            /// Docs.
            #[inline]
            pub(crate) const unsafe extern "C" fn f<const N: usize>(x: u8) -> Foo<{ N }>
            where
                T: Into<[u8; { 2 }]>,
            {
                x
            }
            fn g(&self) {}
            fn k();
            async fn h() -> impl Fn() -> u8 { { 1 } }
        };
        let (stream_out, bodies) = without_bodies(stream.clone()).expect("laid out as expected");
        assert_eq!(bodies.len(), 3);
        let (inner, items) = impl_items.parse2(stream_out).expect("parses");
        let items = with_bodies(items, bodies).expect("bodies given back");
        let (whole_inner, whole) = impl_items.parse2(stream).expect("parses whole");
        let text = |inner: &[syn::Attribute], items: &[syn::ImplItem]| {
            quote::quote!(#(#inner)* #(#items)*).to_string()
        };
        assert_eq!(text(&inner, &items), text(&whole_inner, &whole));
    }
}
