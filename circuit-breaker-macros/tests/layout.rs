//! The crate's layout, checked on its source: parse, check, expand, one folder (or file) per
//! phase, each using only the phases before it; `lib.rs` only hands each macro to a phase;
//! no function longer than 80 lines and no file longer than 800.
//!
//! The source is read with a small lexer (comments, strings and char literals skipped), not
//! compiled: the rules are about the text a reader meets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The top-level modules, in layers: a module uses only modules of earlier layers. `suggest`
/// (did you mean) serves parse and check; the phases follow in order.
const LAYERS: &[&[&str]] = &[&["suggest"], &["parse"], &["check"], &["expand"]];

/// The phases, the only modules `lib.rs` may hand a macro to.
const PHASES: [&str; 3] = ["parse", "check", "expand"];

/// Top-level modules that drive every phase, as `lib.rs` does, and that no module uses: the
/// unit tests.
const DRIVERS: [&str; 1] = ["tests"];

const MAX_FN_LINES: usize = 80;
const MAX_FILE_LINES: usize = 800;

#[test]
fn top_level_modules_have_no_import_cycle() {
    let uses = top_level_uses(&sources());
    if let Some(cycle) = find_cycle(&uses) {
        panic!(
            "the top-level modules import each other in a cycle: {}",
            cycle.join(" -> ")
        );
    }
}

#[test]
fn each_module_uses_only_earlier_layers() {
    let sources = sources();
    let uses = top_level_uses(&sources);
    let mut problems = Vec::new();
    for (module, used) in &uses {
        if DRIVERS.contains(&module.as_str()) {
            continue;
        }
        let Some(layer) = layer_of(module) else {
            problems.push(format!(
                "top-level module `{module}` is in no layer of LAYERS: place it before the modules that use it"
            ));
            continue;
        };
        for (other, file) in used {
            match layer_of(other) {
                Some(other_layer) if other_layer < layer => {}
                _ => problems.push(format!(
                    "{file} (in `{module}`) uses `crate::{other}`, which is not in an earlier layer than `{module}`"
                )),
            }
        }
    }
    for file in sources.keys() {
        if let Some(problem) = super_above_top(file, &sources[file]) {
            problems.push(problem);
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `lib.rs` only dispatches: besides inner attributes, `mod` and `use` declarations, it holds
/// only proc-macro entry points whose body is one call of a function of a phase, each argument
/// an entry point's parameter (with `.into()` or not), the result with `.into()` or not:
/// `expand::toolbox(args.into(), input.into()).into()`.
#[test]
fn lib_rs_only_dispatches() {
    let text = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs is readable");
    let problems = dispatch_problems(&lex(&text));
    assert!(problems.is_empty(), "lib.rs: {}", problems.join("\n"));
}

#[test]
fn no_fn_is_longer_than_80_lines() {
    let mut problems = Vec::new();
    for (file, text) in sources() {
        for (name, line, lines) in fn_lengths(&lex(&text)) {
            if lines > MAX_FN_LINES {
                problems.push(format!(
                    "{file}:{line}: fn `{name}` has {lines} lines; split it into named steps (at most {MAX_FN_LINES})"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_file_is_longer_than_800_lines() {
    let problems: Vec<String> = sources()
        .into_iter()
        .filter_map(|(file, text)| {
            let lines = text.lines().count();
            (lines > MAX_FILE_LINES).then(|| {
                format!("{file} has {lines} lines; split it by concern (at most {MAX_FILE_LINES})")
            })
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The checks themselves see what they are meant to, and nothing in strings or comments.
#[test]
fn the_rules_catch_what_they_name() {
    // Braces in strings, chars, raw strings and comments do not end a function.
    let text = "fn a() {\n let s = \"}\"; let c = '}'; let r = r#\"}\"#; // }\n /* } */ let l: &'static str = s;\n}\nfn b() {}\n";
    assert_eq!(
        fn_lengths(&lex(text)),
        [("a".to_owned(), 1, 4), ("b".to_owned(), 5, 1)]
    );
    // A `crate::` path in a comment or a string is not a use.
    let text = "// crate::expand\nconst S: &str = \"crate::expand\";\nuse crate::parse::Toolbox;\n";
    assert_eq!(crate_uses(&lex(text)), ["parse"]);
    // A cycle is found; layers are not a cycle.
    let mut uses = BTreeMap::new();
    uses.insert("a".to_owned(), vec![("b".to_owned(), String::new())]);
    uses.insert("b".to_owned(), vec![("a".to_owned(), String::new())]);
    assert!(find_cycle(&uses).is_some());
    uses.remove("b");
    assert!(find_cycle(&uses).is_none());
    // A body that does more than call a phase is reported, as is any other item.
    let ok = "#[proc_macro_attribute]\npub fn t(a: TokenStream, i: TokenStream) -> TokenStream {\n    expand::toolbox(a.into(), i.into()).into()\n}\n";
    assert!(dispatch_problems(&lex(ok)).is_empty());
    let work = "#[proc_macro_attribute]\npub fn t(a: TokenStream, i: TokenStream) -> TokenStream {\n    let x = expand::toolbox(a.into(), i.into());\n    x.into()\n}\n";
    assert_eq!(dispatch_problems(&lex(work)).len(), 1);
    let helper = "fn helper() {}\nstruct S;\n";
    assert_eq!(dispatch_problems(&lex(helper)).len(), 2);
    // `super::super` out of a phase folder reaches the crate root.
    assert!(super_above_top("parse/attr.rs", "use super::super::check::Checked;").is_some());
    assert!(super_above_top("parse/attr.rs", "use super::meta::count;").is_none());
}

// ----- Reading the source -------------------------------------------------------------------

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src/`, by its path from `src/` with `/` separators.
fn sources() -> BTreeMap<String, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).expect("src/ is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let name = path
                    .strip_prefix(root)
                    .expect("under src/")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                let text = std::fs::read_to_string(&path).expect("a source file is readable");
                out.insert(name, text);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&src(), &src(), &mut out);
    out
}

/// The top-level module a file belongs to (`parse` for `parse/attr.rs` and `parse.rs`);
/// `None` for `lib.rs`.
fn top_level(file: &str) -> Option<&str> {
    let first = file.split('/').next()?;
    match first.strip_suffix(".rs") {
        Some("lib") => None,
        Some(module) => Some(module),
        None => Some(first),
    }
}

/// How deep a file's module is below the crate root: 1 for `parse/mod.rs` and `suggest.rs`,
/// 2 for `parse/attr.rs`.
fn module_depth(file: &str) -> usize {
    let parts: Vec<&str> = file.split('/').collect();
    if parts.last() == Some(&"mod.rs") {
        parts.len() - 1
    } else {
        parts.len()
    }
}

/// Per top-level module, the other top-level modules its files name as `crate::<module>`, with
/// the file that does.
fn top_level_uses(sources: &BTreeMap<String, String>) -> BTreeMap<String, Vec<(String, String)>> {
    let mut uses: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (file, text) in sources {
        let Some(module) = top_level(file) else {
            continue;
        };
        let entry = uses.entry(module.to_owned()).or_default();
        for used in crate_uses(&lex(text)) {
            if used != module && !entry.iter().any(|(u, _)| *u == used) {
                entry.push((used, file.clone()));
            }
        }
    }
    uses
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

/// A module reached from its own folder through `super::super`, where `crate::` says which
/// phase is used.
fn super_above_top(file: &str, text: &str) -> Option<String> {
    let depth = module_depth(file);
    let tokens = lex(text);
    (0..tokens.len())
        .filter(|&i| i < 2 || !is_path_sep(&tokens, i - 2))
        .find(|&i| {
            let supers = (0..)
                .take_while(|k| {
                    is_ident(&tokens, i + 3 * k, "super") && is_path_sep(&tokens, i + 3 * k + 1)
                })
                .count();
            supers > 0 && supers >= depth
        })
        .map(|i| {
            format!(
                "{file}:{}: `super::` reaches the crate root; name the module with `crate::`",
                tokens[i].line
            )
        })
}

// ----- The rules, on tokens -----------------------------------------------------------------

/// The top-level modules named as `crate::<name>`, once each, in order.
fn crate_uses(tokens: &[Token]) -> Vec<String> {
    let mut used = Vec::new();
    for i in 0..tokens.len() {
        if is_ident(tokens, i, "crate")
            && is_path_sep(tokens, i + 1)
            && let Some(Kind::Ident(name)) = tokens.get(i + 3).map(|t| &t.kind)
            && !used.contains(name)
        {
            used.push(name.clone());
        }
    }
    used
}

/// Each `fn` with a body: its name, the line of `fn`, and its length in lines, from `fn` to
/// the closing brace.
fn fn_lengths(tokens: &[Token]) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    for i in 0..tokens.len() {
        let (true, Some(Kind::Ident(name))) = (
            is_ident(tokens, i, "fn"),
            tokens.get(i + 1).map(|t| &t.kind),
        ) else {
            continue;
        };
        if let Some(open) = body_start(tokens, i + 2) {
            let close = matching_close(tokens, open);
            out.push((
                name.clone(),
                tokens[i].line,
                tokens[close].line - tokens[i].line + 1,
            ));
        }
    }
    out
}

/// The `{` that opens the body of the fn whose signature starts at `from`; `None` for a fn
/// declared without one (`;`).
fn body_start(tokens: &[Token], from: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate().skip(from) {
        match token.kind {
            Kind::Open('{') if depth == 0 => return Some(i),
            Kind::Open(_) => depth += 1,
            Kind::Close(_) => depth = depth.saturating_sub(1),
            Kind::Punct(';') if depth == 0 => return None,
            _ => {}
        }
    }
    None
}

/// The index of the delimiter that closes the one opened at `open`.
fn matching_close(tokens: &[Token], open: usize) -> usize {
    let mut depth = 0usize;
    for (i, token) in tokens.iter().enumerate().skip(open) {
        match token.kind {
            Kind::Open(_) => depth += 1,
            Kind::Close(_) => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    tokens.len() - 1
}

/// What in `lib.rs` is more than dispatching (see [`lib_rs_only_dispatches`]).
fn dispatch_problems(tokens: &[Token]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut i = 0;
    let mut entry_point = false;
    while i < tokens.len() {
        let line = tokens[i].line;
        match &tokens[i].kind {
            // An attribute: `#[..]` or `#![..]`.
            Kind::Punct('#') => {
                let open = if matches!(tokens.get(i + 1).map(|t| &t.kind), Some(Kind::Punct('!'))) {
                    i + 2
                } else {
                    i + 1
                };
                let close = matching_close(tokens, open);
                if tokens[open + 1..close].first().is_some_and(
                    |t| matches!(&t.kind, Kind::Ident(n) if n.starts_with("proc_macro")),
                ) {
                    entry_point = true;
                }
                i = close + 1;
            }
            Kind::Ident(word) if word == "pub" => i += 1,
            Kind::Ident(word) if word == "mod" || word == "use" => {
                entry_point = false;
                i = next_semicolon(tokens, i) + 1;
            }
            Kind::Ident(word) if word == "fn" => {
                let name = match tokens.get(i + 1).map(|t| &t.kind) {
                    Some(Kind::Ident(name)) => name.clone(),
                    _ => String::new(),
                };
                let params = parameters(tokens, i + 2);
                let Some(open) = body_start(tokens, i + 2) else {
                    problems.push(format!("{line}: fn `{name}` has no body"));
                    i = next_semicolon(tokens, i) + 1;
                    continue;
                };
                let close = matching_close(tokens, open);
                if !entry_point {
                    problems.push(format!(
                        "{line}: fn `{name}` is not a proc-macro entry point: move it into a phase"
                    ));
                } else if !is_dispatch(&tokens[open + 1..close], &params) {
                    problems.push(format!(
                        "{line}: the body of `{name}` does more than call a phase (`expand::toolbox(args.into(), input.into()).into()`): move the work into the phase"
                    ));
                }
                entry_point = false;
                i = close + 1;
            }
            other => {
                entry_point = false;
                problems.push(format!(
                    "{line}: {other:?} starts an item that is not `mod`, `use` or a proc-macro entry point: move it into a phase"
                ));
                i = next_semicolon(tokens, i).max(skip_item(tokens, i)) + 1;
            }
        }
    }
    problems
}

/// The names of a fn's parameters, from the `(` after its name.
fn parameters(tokens: &[Token], from: usize) -> Vec<String> {
    let Some(open) = (from..tokens.len()).find(|&i| tokens[i].kind == Kind::Open('(')) else {
        return Vec::new();
    };
    let close = matching_close(tokens, open);
    let mut names = Vec::new();
    let mut expect_name = true;
    for i in open + 1..close {
        match &tokens[i].kind {
            Kind::Ident(name) if expect_name && is_colon(tokens, i + 1) => {
                names.push(name.clone());
                expect_name = false;
            }
            Kind::Punct(',') => expect_name = true,
            _ => {}
        }
    }
    names
}

/// `phase::path::f(arg, arg.into(), ..)` with `.into()` or not, each `arg` a parameter.
fn is_dispatch(body: &[Token], params: &[String]) -> bool {
    let Some(Kind::Ident(phase)) = body.first().map(|t| &t.kind) else {
        return false;
    };
    if !PHASES.contains(&phase.as_str()) {
        return false;
    }
    let mut i = 1;
    while is_path_sep(body, i) && matches!(body.get(i + 2).map(|t| &t.kind), Some(Kind::Ident(_))) {
        i += 3;
    }
    if i == 1 || body.get(i).map(|t| &t.kind) != Some(&Kind::Open('(')) {
        return false;
    }
    let close = matching_close(body, i);
    let args_ok = body[i + 1..close]
        .split(|t| t.kind == Kind::Punct(','))
        .filter(|arg| !arg.is_empty())
        .all(|arg| match arg {
            [
                Token {
                    kind: Kind::Ident(name),
                    ..
                },
            ] => params.contains(name),
            [
                Token {
                    kind: Kind::Ident(name),
                    ..
                },
                rest @ ..,
            ] => params.contains(name) && is_into(rest),
            _ => false,
        });
    let rest = &body[close + 1..];
    args_ok && (rest.is_empty() || is_into(rest))
}

/// `.into()`.
fn is_into(tokens: &[Token]) -> bool {
    matches!(
        tokens.iter().map(|t| &t.kind).collect::<Vec<_>>().as_slice(),
        [Kind::Punct('.'), Kind::Ident(into), Kind::Open('('), Kind::Close(')')] if into == "into"
    )
}

fn next_semicolon(tokens: &[Token], from: usize) -> usize {
    (from..tokens.len())
        .find(|&i| tokens[i].kind == Kind::Punct(';'))
        .unwrap_or(tokens.len() - 1)
}

/// The end of an item with a `{ .. }` body (a struct, an impl), if it has one before a `;`.
fn skip_item(tokens: &[Token], from: usize) -> usize {
    match body_start(tokens, from) {
        Some(open) => matching_close(tokens, open),
        None => from,
    }
}

fn is_ident(tokens: &[Token], i: usize, word: &str) -> bool {
    matches!(tokens.get(i).map(|t| &t.kind), Some(Kind::Ident(w)) if w == word)
}

fn is_colon(tokens: &[Token], i: usize) -> bool {
    tokens.get(i).map(|t| &t.kind) == Some(&Kind::Punct(':'))
}

fn is_path_sep(tokens: &[Token], i: usize) -> bool {
    is_colon(tokens, i) && is_colon(tokens, i + 1)
}

/// Finds a cycle in the graph of uses, as the modules along it.
fn find_cycle(uses: &BTreeMap<String, Vec<(String, String)>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        uses: &BTreeMap<String, Vec<(String, String)>>,
        path: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut cycle = path[start..].to_vec();
            cycle.push(node.to_owned());
            return Some(cycle);
        }
        if done.iter().any(|n| n == node) {
            return None;
        }
        path.push(node.to_owned());
        for (next, _) in uses.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, uses, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.push(node.to_owned());
        None
    }
    let mut done = Vec::new();
    uses.keys()
        .find_map(|node| visit(node, uses, &mut Vec::new(), &mut done))
}

// ----- A lexer for what the rules read ------------------------------------------------------

#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Ident(String),
    Punct(char),
    Open(char),
    Close(char),
    Literal,
}

#[derive(Debug)]
struct Token {
    kind: Kind,
    line: usize,
}

/// Identifiers, punctuation and delimiters with their lines; comments are dropped, and
/// strings, chars and numbers are one `Literal` each.
fn lex(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let end = match c {
            '\n' => {
                line += 1;
                i + 1
            }
            c if c.is_whitespace() => i + 1,
            '/' if chars.get(i + 1) == Some(&'/') => (i..chars.len())
                .find(|&j| chars[j] == '\n')
                .unwrap_or(chars.len()),
            '/' if chars.get(i + 1) == Some(&'*') => block_comment_end(&chars, i),
            '"' => {
                tokens.push(Token {
                    kind: Kind::Literal,
                    line,
                });
                string_end(&chars, i + 1)
            }
            '\'' => {
                let (end, kind) = quote_end(&chars, i);
                tokens.push(Token { kind, line });
                end
            }
            c if c.is_alphanumeric() || c == '_' => {
                let (end, kind) = word_end(&chars, i);
                tokens.push(Token { kind, line });
                end
            }
            '(' | '[' | '{' => {
                tokens.push(Token {
                    kind: Kind::Open(c),
                    line,
                });
                i + 1
            }
            ')' | ']' | '}' => {
                tokens.push(Token {
                    kind: Kind::Close(c),
                    line,
                });
                i + 1
            }
            c => {
                tokens.push(Token {
                    kind: Kind::Punct(c),
                    line,
                });
                i + 1
            }
        };
        if c != '\n' {
            // Strings and block comments may span lines.
            line += chars[i..end].iter().filter(|&&c| c == '\n').count();
        }
        i = end;
    }
    tokens
}

/// The end of a (nested) block comment starting at `from`.
fn block_comment_end(chars: &[char], from: usize) -> usize {
    let mut depth = 0;
    let mut i = from;
    while i + 1 < chars.len() {
        match (chars[i], chars[i + 1]) {
            ('/', '*') => {
                depth += 1;
                i += 2;
            }
            ('*', '/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    chars.len()
}

/// The end of a string whose text starts at `from`, after its opening quote.
fn string_end(chars: &[char], from: usize) -> usize {
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// A char literal (`'x'`, `'\n'`, `'\u{7d}'`) or a lifetime (`'a`) starting at `from`.
fn quote_end(chars: &[char], from: usize) -> (usize, Kind) {
    if chars.get(from + 1) == Some(&'\\') {
        let close = (from + 3..chars.len())
            .find(|&j| chars[j] == '\'')
            .unwrap_or(chars.len() - 1);
        return (close + 1, Kind::Literal);
    }
    if chars.get(from + 2) == Some(&'\'') {
        return (from + 3, Kind::Literal);
    }
    let end = (from + 1..chars.len())
        .find(|&j| !(chars[j].is_alphanumeric() || chars[j] == '_'))
        .unwrap_or(chars.len());
    (end, Kind::Punct('\''))
}

/// A word starting at `from`: an identifier (`r#type` too), a number, or the prefix of a
/// string or char literal (`r"..", r#".."#, b"..", b'.', c".."`).
fn word_end(chars: &[char], from: usize) -> (usize, Kind) {
    let end = (from..chars.len())
        .find(|&j| !(chars[j].is_alphanumeric() || chars[j] == '_'))
        .unwrap_or(chars.len());
    let word: String = chars[from..end].iter().collect();
    if chars[from].is_ascii_digit() {
        return (end, Kind::Literal);
    }
    let next = chars.get(end).copied();
    let raw = matches!(word.as_str(), "r" | "br" | "cr");
    if raw && matches!(next, Some('"' | '#')) {
        let hashes = (end..chars.len()).take_while(|&j| chars[j] == '#').count();
        if chars.get(end + hashes) == Some(&'"') {
            let closing: String = std::iter::once('"')
                .chain("#".repeat(hashes).chars())
                .collect();
            let rest: String = chars[end + hashes + 1..].iter().collect();
            let close = rest
                .find(&closing)
                .map_or(rest.len(), |k| k + closing.len());
            let close = end + hashes + 1 + rest[..close].chars().count();
            return (close, Kind::Literal);
        }
        if word == "r" && hashes == 1 {
            // A raw identifier: `r#type`.
            let (end, kind) = word_end(chars, end + 1);
            return (end, kind);
        }
    }
    if matches!(word.as_str(), "b" | "c") && next == Some('"') {
        return (string_end(chars, end + 1), Kind::Literal);
    }
    if word == "b" && next == Some('\'') {
        return (quote_end(chars, end).0, Kind::Literal);
    }
    (end, Kind::Ident(word))
}
