//! Where generated code is reported: tokens of our own moved to the user's token an error
//! about them should point at.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::ToTokens;

/// `tokens`, every one spanned at `span`.
pub fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|token| match token {
            TokenTree::Group(group) => {
                let mut out = Group::new(group.delimiter(), respan(group.stream(), span));
                out.set_span(span);
                TokenTree::Group(out)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}

/// `tokens` spanned as rustc will report what they make: over all of `ty`. rustc spans an
/// expression or a type from its first token to its last, so the first is moved to `ty`'s
/// first token and the others to its last; a type of the user's inside, interpolated as
/// [`kept`], keeps its own spans. (A span covering all of a type cannot be made on stable Rust
/// otherwise: `Span::join` is nightly's, and `syn`'s `span()` gives the first token's.)
pub fn over(ty: &syn::Type, tokens: TokenStream) -> TokenStream {
    over_spans(ends(ty), tokens)
}

/// The spans of `ty`'s first and last tokens, for [`over_spans`]: read once for a type that
/// many expressions are spanned over (each read copies its tokens).
pub fn ends(ty: &syn::Type) -> Option<(Span, Span)> {
    let type_tokens: Vec<TokenTree> = ty.to_token_stream().into_iter().collect();
    Some((type_tokens.first()?.span(), type_tokens.last()?.span()))
}

/// [`over`] with the type's [`ends`] read already.
pub fn over_spans(ends: Option<(Span, Span)>, tokens: TokenStream) -> TokenStream {
    let Some((first, last)) = ends else {
        return tokens;
    };
    tokens
        .into_iter()
        .enumerate()
        .map(|(index, mut token)| {
            let user_type =
                matches!(&token, TokenTree::Group(g) if g.delimiter() == Delimiter::None);
            if !user_type {
                token.set_span(if index == 0 { first } else { last });
            }
            token
        })
        .collect()
}

/// `ty` as one token that [`over`] leaves as it is: its tokens are where the user wrote them,
/// so that an error inside it (a misspelt name) is reported once, where the user's own
/// method reports it.
pub fn kept(ty: &syn::Type) -> TokenTree {
    TokenTree::Group(Group::new(Delimiter::None, ty.to_token_stream()))
}
