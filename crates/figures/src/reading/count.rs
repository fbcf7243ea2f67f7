//! The words a reader sees on a page, counted in its expanded Markdown (see [`super::expand`]):
//! every whitespace-separated word (a run with a letter or a digit) of the page's main text —
//! prose, headings, lists, tables, callouts, code blocks and the program output they hold —
//! except what is folded or not text: `<details>` (hints, solutions), `<script>`, `<style>`,
//! HTML comments, quizzes (`{{#quiz …}}`, counted apart), the calculator widget (its `<div
//! class="gpumem-calculator">` is replaced by a form; its fallback sentence is never read),
//! the replay's fallback sentence (`<p class="replay-fallback">`: the page shows the replay's
//! answer in its place, which is counted) and images (their alt text included).
//! `bookcheck words` counts the same in the browser.

/// Blocks of HTML whose content is not counted: opened by a line starting with the first,
/// closed by the second (nested ones counted).
const SKIPPED: [(&str, &str); 5] = [
    ("<details", "</details>"),
    ("<script", "</script>"),
    ("<style", "</style>"),
    ("<div class=\"gpumem-calculator\"", "</div>"),
    ("<p class=\"replay-fallback\"", "</p>"),
];

/// The words of a page's expanded Markdown, by the rule above.
pub fn words(markdown: &str) -> usize {
    let text = without_comments(markdown);
    let mut words = 0;
    let mut fence: Option<Fence> = None;
    // The skipped block being passed, and how deeply its tag is nested.
    let mut skipping: Option<(usize, usize)> = None;
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(f) = &fence {
            if f.closes(t) {
                fence = None;
            } else if skipping.is_none() && !f.hides(t) {
                words += count(t);
            }
            continue;
        }
        if let Some(f) = Fence::opens(t) {
            fence = Some(f);
            continue;
        }
        if let Some((kind, depth)) = skipping {
            let (open, close) = SKIPPED[kind];
            let depth = depth + line.matches(open.split(' ').next().unwrap_or(open)).count();
            let depth = depth.saturating_sub(line.matches(close).count());
            skipping = (depth > 0).then_some((kind, depth));
            continue;
        }
        if let Some(kind) = SKIPPED.iter().position(|(open, _)| t.starts_with(open)) {
            let (open, close) = SKIPPED[kind];
            let opened = line.matches(open.split(' ').next().unwrap_or(open)).count();
            let depth = opened.saturating_sub(line.matches(close).count());
            skipping = (depth > 0).then_some((kind, depth));
            continue;
        }
        if t.starts_with("{{#quiz") || is_table_rule(t) {
            continue;
        }
        words += count(&inline_text(block_text(t)));
    }
    words
}

/// A fenced code block's opening: its character, length and whether it is Rust (whose
/// lines starting `# ` mdBook hides).
struct Fence {
    marker: char,
    len: usize,
    rust: bool,
}

impl Fence {
    fn opens(line: &str) -> Option<Fence> {
        let marker = line.chars().next().filter(|c| *c == '`' || *c == '~')?;
        let len = line.chars().take_while(|c| *c == marker).count();
        let info = line[len..].trim();
        (len >= 3).then(|| Fence {
            marker,
            len,
            rust: info == "rust" || info.starts_with("rust,"),
        })
    }

    fn closes(&self, line: &str) -> bool {
        let len = line.chars().take_while(|c| *c == self.marker).count();
        len >= self.len && line[len * self.marker.len_utf8()..].trim().is_empty()
    }

    fn hides(&self, line: &str) -> bool {
        self.rust && (line == "#" || line.starts_with("# "))
    }
}

/// `<!-- … -->` removed, across lines.
fn without_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        rest = rest[start..]
            .find("-->")
            .map_or("", |end| &rest[start + end + 3..]);
    }
    out.push_str(rest);
    out
}

/// A table's rule row (`| :--- | ---: |`): no text.
fn is_table_rule(line: &str) -> bool {
    line.starts_with('|') && line.chars().all(|c| "|:- ".contains(c))
}

/// A line's text without its block markers: quotes, list bullets and numbers (the browser
/// draws them; they are not text), an admonition's `[!NOTE]` (mdBook shows one title word).
fn block_text(line: &str) -> String {
    let mut t = line.trim_start();
    while let Some(rest) = t.strip_prefix('>') {
        t = rest.trim_start();
    }
    if let Some(kind) = t.strip_prefix("[!").and_then(|r| r.strip_suffix(']')) {
        return kind.to_string();
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && (t[digits..].starts_with(". ") || t[digits..].starts_with(") ")) {
        t = &t[digits + 2..];
    }
    t.to_string()
}

/// Inline Markdown and HTML as text: images dropped (alt text included), links as their
/// text, tags removed and the common entities decoded — except inside code spans.
fn inline_text(line: String) -> String {
    let mut out = String::new();
    for (i, part) in line.split('`').enumerate() {
        if i % 2 == 1 {
            out.push_str(part);
        } else {
            out.push_str(&decode(&strip_tags(&links(&drop_images(part)))));
        }
        out.push(' ');
    }
    out
}

/// `![alt](src)` removed.
fn drop_images(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("![") {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        match after
            .find("](")
            .and_then(|m| after[m..].find(')').map(|c| m + c))
        {
            Some(end) => rest = &after[end + 1..],
            None => {
                out.push_str(after);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// `[text](target)` → `text`.
fn links(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("](") {
        out.push_str(&rest[..start]);
        rest = rest[start..]
            .find(')')
            .map_or("", |end| &rest[start + end + 1..]);
    }
    out.push_str(rest);
    out.replace('[', "")
}

/// HTML tags removed (a space in their place), their text kept; a `<` that opens no tag
/// (`a < b`) and autolinks (`<https://…>`, shown as text) stay.
fn strip_tags(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let tag = after.starts_with(|c: char| c.is_ascii_alphabetic() || c == '/')
            && !after.starts_with("http");
        match after.find('>') {
            Some(end) if tag => {
                out.push(' ');
                rest = &after[end + 1..];
            }
            Some(end) => {
                out.push_str(&after[..end]);
                out.push(' ');
                rest = &after[end + 1..];
            }
            None => {
                out.push('<');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn decode(text: &str) -> String {
    text.replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// Whitespace-separated runs with a letter or a digit: a lone `—`, `=` or `}` is no word.
pub fn count(text: &str) -> usize {
    text.split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_code_and_output_count() {
        let page = "# A title\n\nOne two, [three](x.md) `four`.\n\n1. five\n- six *seven*\n\n\
            ```rust\nlet eight = nine; // ten\n# hidden line\n```\n\n```text\nout of memory { }\n```\n\n\
            | a | b c |\n| :--- | ---: |\n| d | 1 |\n\n> [!NOTE]\n> Noted here.\n\n\
            <p class=\"callout-title\">Key points</p>\nan <https://x.org> autolink, a < b\n";
        // The title 2, the sentence 4, the list 1 + 2, the code 4 (its hidden line not), the
        // output 3, the table 3 + 2, the note's title 1 and text 2, the callout's title 2,
        // the last line 5.
        assert_eq!(words(page), 31);
    }

    #[test]
    fn folded_hidden_and_widget_text_does_not() {
        let page = "seen\n<details class=\"hint\">\n<summary>Hints</summary>\n\n\
            - hidden words\n\n```rust\nlet hidden = 1;\n```\n<details>\nnested\n</details>\nstill hidden\n\
            </details>\n<!-- a comment\nover lines --> seen\n\
            ![alt text, many words](figures/x.svg)\n{{#quiz generated/quizzes/q.toml}}\n\
            <div class=\"gpumem-calculator\" data-width=\"1\">\n<p>fallback <b>words</b></p>\n</div>\n\
            <script>var a = 1;</script>\n<style>\np { color: red; }\n</style>\nseen\n";
        assert_eq!(words(page), 3);
    }
}
