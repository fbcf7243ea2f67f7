//! mdBook's `{{#include …}}`, expanded as mdBook 0.5 expands it (its `links` preprocessor),
//! so that the counter reads the text the page renders: everywhere in the page (code blocks
//! too), recursively (a path relative to the file that names it), with anchors (`file:name`)
//! and line ranges (`file:3`, `file:3:`, `file::10`, `file:3:10`), escaped ones
//! (`\{{#include …}}`) left as text without the backslash.

use std::path::{Component, Path, PathBuf};

/// mdBook's own limit on nested includes.
const MAX_DEPTH: usize = 10;

/// Reads a file, given its path relative to the book's `src/` (it may start with `..`).
pub type Read<'a> = &'a dyn Fn(&Path) -> Option<String>;

/// `markdown` (a file in folder `base`, relative to `src/`) with every include replaced by
/// what it names; an include that `skip` accepts (by path) is dropped, one that cannot be
/// read is left as written (as mdBook leaves it, with an error).
pub fn expand(markdown: &str, base: &Path, read: Read<'_>, skip: &dyn Fn(&Path) -> bool) -> String {
    expand_at(markdown, base, read, skip, 0)
}

fn expand_at(
    text: &str,
    base: &Path,
    read: Read<'_>,
    skip: &dyn Fn(&Path) -> bool,
    depth: usize,
) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{#") {
        let escaped = rest[..start].ends_with('\\');
        let Some(len) = rest[start..].find("}}") else {
            break;
        };
        let link = &rest[start..start + len + 2];
        if escaped {
            out.push_str(&rest[..start - 1]);
            out.push_str(link);
            rest = &rest[start + len + 2..];
            continue;
        }
        out.push_str(&rest[..start]);
        rest = &rest[start + len + 2..];
        let Some(spec) = link[3..link.len() - 2].strip_prefix("include") else {
            // Another helper (`{{#quiz …}}`): left for its preprocessor.
            out.push_str(link);
            continue;
        };
        let Some(target) = spec.split_whitespace().next() else {
            out.push_str(link);
            continue;
        };
        let (file, selection) = target.split_once(':').unwrap_or((target, ""));
        let path = normalize(&base.join(file));
        if skip(&path) {
            continue;
        }
        match read(&path) {
            Some(whole) if depth < MAX_DEPTH => {
                let part = select(&whole, selection);
                let folder = path.parent().unwrap_or(Path::new("")).to_path_buf();
                out.push_str(&expand_at(&part, &folder, read, skip, depth + 1));
            }
            _ => out.push_str(link),
        }
    }
    out.push_str(rest);
    out
}

/// `a/b/../c` → `a/c`; a leading `..` stays.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// The part of `text` an include's selection names: mdBook's `parse_range_or_anchor`.
fn select(text: &str, selection: &str) -> String {
    if selection.is_empty() {
        return text.lines().collect::<Vec<_>>().join("\n");
    }
    let mut parts = selection.splitn(2, ':');
    let first = parts.next().unwrap_or("");
    let start = match first.parse::<usize>() {
        Ok(n) => n.saturating_sub(1),
        Err(_) if first.is_empty() => 0,
        Err(_) => return anchored(text, first),
    };
    let end = match parts.next() {
        // `file:N`: line N alone.
        None if !first.is_empty() => Some(start + 1),
        None => None,
        Some(e) => e.parse::<usize>().ok(),
    };
    let lines = text.lines().skip(start);
    match end {
        Some(end) => lines.take(end.saturating_sub(start)).collect::<Vec<_>>(),
        None => lines.collect::<Vec<_>>(),
    }
    .join("\n")
}

/// The lines between `ANCHOR: name` and the first `ANCHOR_END: name`, without any anchor
/// line (mdBook's `take_anchored_lines`).
fn anchored(text: &str, name: &str) -> String {
    let mut kept = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        if inside {
            match anchor_name(line, "ANCHOR_END:") {
                Some(n) if n == name => break,
                Some(_) => {}
                None if anchor_name(line, "ANCHOR:").is_none() => kept.push(line),
                None => {}
            }
        } else if anchor_name(line, "ANCHOR:") == Some(name) {
            inside = true;
        }
    }
    kept.join("\n")
}

/// The name after `marker` (`ANCHOR:` or `ANCHOR_END:`) on `line`: word characters and `-`.
fn anchor_name<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let after = line[line.find(marker)? + marker.len()..].trim_start();
    let end = after
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(after.len());
    (end > 0).then(|| &after[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> Option<String> {
        let text = match path.to_str()? {
            "generated/n.md" => "8.74 GiB\n",
            "generated/nested.md" => "before {{#include n.md}} after\n",
            "../code/a.rs" => {
                "one\n// ANCHOR: part\ntwo\n// ANCHOR: inner\nthree\n// ANCHOR_END: inner\n\
                 // ANCHOR_END: part\nfour\nfive\n"
            }
            _ => return None,
        };
        Some(text.to_string())
    }

    fn run(text: &str) -> String {
        expand(text, Path::new(""), &read, &|p| p.ends_with("skipped.md"))
    }

    #[test]
    fn includes_expand_inline_and_recursively_relative_to_their_file() {
        assert_eq!(run("a {{#include generated/n.md}}."), "a 8.74 GiB.");
        assert_eq!(
            run("{{#include generated/nested.md}}"),
            "before 8.74 GiB after"
        );
        assert_eq!(run("x {{#include generated/skipped.md}}y"), "x y");
        assert_eq!(run("{{#include missing.md}}"), "{{#include missing.md}}");
        assert_eq!(
            run("\\{{#include generated/n.md}}"),
            "{{#include generated/n.md}}"
        );
        assert_eq!(run("{{#quiz q.toml}}"), "{{#quiz q.toml}}");
    }

    #[test]
    fn anchors_and_line_ranges_select_as_mdbook_does() {
        let inc = |sel: &str| run(&format!("{{{{#include ../code/a.rs{sel}}}}}"));
        assert_eq!(inc(":part"), "two\nthree");
        assert_eq!(inc(":inner"), "three");
        assert_eq!(inc(":8:"), "four\nfive");
        assert_eq!(inc(":8"), "four");
        assert_eq!(inc("::1"), "one");
        assert_eq!(inc(":8:9"), "four\nfive");
        assert_eq!(inc("").lines().count(), 9);
    }
}
