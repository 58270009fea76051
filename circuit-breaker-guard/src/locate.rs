//! The line of a key or a list item in a block-style YAML file, for messages that name it:
//! a plain scan of indentation, enough for configs as people write them (flow mappings such
//! as `{ KEY: value }` are found at the line they start on).

/// One step of a path: a mapping's key or a list's item.
#[derive(Debug, Clone, Copy)]
pub enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

struct Line<'t> {
    number: usize,
    indent: usize,
    /// The text after the indentation.
    body: &'t str,
}

/// The 1-based line of `path`, or of the deepest part of it found.
pub fn line_of(text: &str, path: &[Seg<'_>]) -> Option<usize> {
    let lines: Vec<Line<'_>> = text
        .lines()
        .enumerate()
        .filter_map(|(i, raw)| {
            let body = raw.trim_start();
            (!body.is_empty() && !body.starts_with('#') && body != "---").then(|| Line {
                number: i + 1,
                indent: raw.len() - body.len(),
                body,
            })
        })
        .collect();
    // The lines of the current node, and the column of its keys (or of its list's dashes).
    let (mut from, mut to, mut column) = (0, lines.len(), 0);
    let mut found = None;
    for seg in path {
        match *seg {
            Seg::Key(key) => {
                let hit = (from..to).find(|&i| {
                    let line = &lines[i];
                    (line.indent == column && key_at(line.body, key))
                        || (line.indent + 2 == column
                            && line.body.strip_prefix("- ").is_some_and(|b| key_at(b, key)))
                });
                let Some(index) = hit else {
                    return found;
                };
                found = Some(lines[index].number);
                // The value's lines: deeper than the key, or a list of dashes at its column.
                let end = (index + 1..to)
                    .find(|&j| {
                        lines[j].indent < column
                            || (lines[j].indent == column && !lines[j].body.starts_with('-'))
                    })
                    .unwrap_or(to);
                from = index + 1;
                to = end;
                column = lines
                    .get(from)
                    .filter(|_| from < to)
                    .map_or(column, |l| l.indent);
            }
            Seg::Index(n) => {
                let items: Vec<usize> = (from..to)
                    .filter(|&i| lines[i].indent == column && lines[i].body.starts_with('-'))
                    .collect();
                let Some(&index) = items.get(n) else {
                    return found;
                };
                found = Some(lines[index].number);
                from = index;
                to = items.get(n + 1).copied().unwrap_or(to);
                column += 2;
            }
        }
    }
    found
}

/// Whether `body` starts with the mapping key `key`.
fn key_at(body: &str, key: &str) -> bool {
    let unquoted = body
        .strip_prefix(key)
        .or_else(|| body.strip_prefix(&format!("\"{key}\"")))
        .or_else(|| body.strip_prefix(&format!("'{key}'")));
    unquoted.is_some_and(|rest| rest.trim_start().starts_with(':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
upstreams:
  - name: files
    command: npx
    args: [\"-y\"]
  - name: search
    url: http://x
    deadline: 2s
overlay:
  capability_map:
    - tool: read_file
      alternatives:
        - tool: cat
policy:
  threshold: 3
";

    #[test]
    fn b17_keys_and_items_are_found_at_their_lines() {
        let at = |path: &[Seg<'_>]| line_of(TEXT, path);
        assert_eq!(at(&[Seg::Key("upstreams")]), Some(1));
        assert_eq!(at(&[Seg::Key("upstreams"), Seg::Index(1)]), Some(5));
        assert_eq!(
            at(&[Seg::Key("upstreams"), Seg::Index(1), Seg::Key("name")]),
            Some(5)
        );
        assert_eq!(
            at(&[Seg::Key("upstreams"), Seg::Index(1), Seg::Key("deadline")]),
            Some(7)
        );
        assert_eq!(
            at(&[Seg::Key("upstreams"), Seg::Index(0), Seg::Key("args")]),
            Some(4)
        );
        let alt = [
            Seg::Key("overlay"),
            Seg::Key("capability_map"),
            Seg::Index(0),
            Seg::Key("alternatives"),
        ];
        assert_eq!(at(&alt), Some(11));
        assert_eq!(at(&[Seg::Key("policy"), Seg::Key("threshold")]), Some(14));
        // Not there: the deepest part found.
        assert_eq!(at(&[Seg::Key("policy"), Seg::Key("budget")]), Some(13));
    }
}
