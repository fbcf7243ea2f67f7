//! Each page's reading time, from its rendered words: the line every page shows under its
//! title, and the table of the instructors' page, per page and per part of the book, with the
//! lesson's (the core's) words and quiz questions against the issue's bounds.
//!
//! What counts (our choice, said on the instructors' page) is what a reader sees, at 200 words
//! a minute: paragraphs, lists, headings, callouts and tables, with every `{{#include …}}`
//! outside a code block expanded (a generated number, sentence or table counts as its words).
//! Not counted: code blocks (what they include too), the hints and solutions folded inside the
//! challenges (`<details class="hint|solution">`), quizzes (counted apart, as questions),
//! images, HTML comments and the reading-time line itself (it would count itself).

use anyhow::{Context, Result};
use charts::style::grouped;
use std::fmt::Write as _;
use std::path::Path;

/// Words a minute of rendered text.
pub const WORDS_PER_MINUTE: usize = 200;

/// The part of the book a workshop teaches in one session.
pub const CORE_PART: &str = "The lesson";

/// The issue's bounds on the core, over the pages it has: rendered words and quiz questions.
pub const CORE_WORDS_MAX: usize = 3_600;
pub const CORE_QUESTIONS_MAX: usize = 10;

/// One page of the book, as `SUMMARY.md` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The part it is in (`SUMMARY.md`'s `# ` headings), or "Front matter" before the first.
    pub part: String,
    pub title: String,
    /// The file, relative to `src/`.
    pub file: String,
    /// Rendered words, by the rules above.
    pub words: usize,
    /// Questions of the quizzes the page includes (`{{#quiz …}}`).
    pub questions: usize,
}

impl Page {
    pub fn minutes(&self) -> usize {
        minutes(self.words)
    }

    /// The anchor of its line in the generated file: the file's stem.
    pub fn anchor(&self) -> &str {
        self.file.trim_end_matches(".md")
    }
}

/// Whole minutes, rounded up, for `words` of rendered text.
pub fn minutes(words: usize) -> usize {
    words.div_ceil(WORDS_PER_MINUTE)
}

/// `text` with the part between `ANCHOR: name` and `ANCHOR_END: name` (mdBook's anchors),
/// or all of it without a name; anchor lines themselves are dropped.
fn anchored(text: &str, anchor: Option<&str>) -> String {
    let mut out = String::new();
    let mut inside = anchor.is_none();
    for line in text.lines() {
        if let Some(a) = anchor {
            if line.contains(&format!("ANCHOR: {a} "))
                || line.trim_end().ends_with(&format!("ANCHOR: {a}"))
            {
                inside = true;
                continue;
            }
            if line.contains(&format!("ANCHOR_END: {a} "))
                || line.trim_end().ends_with(&format!("ANCHOR_END: {a}"))
            {
                inside = false;
                continue;
            }
        }
        if inside && !line.contains("ANCHOR:") && !line.contains("ANCHOR_END:") {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The page as a reader sees its text: includes outside code blocks expanded (through
/// `read`, given a path relative to the page's folder), to a depth of four.
pub fn expand(markdown: &str, read: &dyn Fn(&str) -> Option<String>, depth: usize) -> String {
    let mut out = String::new();
    let mut in_code = false;
    for line in markdown.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_code = !in_code;
        }
        if in_code || depth == 0 || !line.contains("{{#include ") {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let mut rest = line;
        while let Some(start) = rest.find("{{#include ") {
            out.push_str(&rest[..start]);
            let Some(len) = rest[start..].find("}}") else {
                break;
            };
            let spec = rest[start + "{{#include ".len()..start + len].trim();
            rest = &rest[start + len + 2..];
            let (path, anchor) = match spec.split_once(':') {
                Some((p, a)) => (p, Some(a)),
                None => (spec, None),
            };
            // The reading-time line would count itself.
            if path.ends_with("reading_times.md") {
                continue;
            }
            if let Some(text) = read(path) {
                let body = expand(&anchored(&text, anchor), read, depth - 1);
                // Inline (a number in a sentence) or a block of its own (a table).
                if body.trim_end().contains('\n') {
                    out.push_str(&body);
                } else {
                    out.push_str(body.trim());
                }
            }
        }
        out.push_str(rest);
        out.push('\n');
    }
    out
}

/// The rendered words of an expanded page, by the rules above.
pub fn rendered_words(markdown: &str) -> usize {
    let mut words = 0;
    let (mut in_code, mut in_folded, mut in_comment) = (false, false, false);
    for line in markdown.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if t.starts_with("<details class=\"hint") || t.starts_with("<details class=\"solution") {
            in_folded = true;
        }
        if in_folded {
            in_folded = !t.starts_with("</details>");
            continue;
        }
        if in_comment || t.starts_with("<!--") {
            in_comment = !t.contains("-->");
            continue;
        }
        if t.starts_with("{{#quiz") || t.starts_with("![") {
            continue;
        }
        // A table's separator row; its other rows count cell by cell.
        if t.starts_with('|') && t.chars().all(|c| "|:- ".contains(c)) {
            continue;
        }
        let t = t.trim_start_matches('>').trim_start();
        let t = t.strip_prefix("[!NOTE]").unwrap_or(t);
        words += line_words(&strip_tags(t).replace('|', " "));
    }
    words
}

/// HTML tags removed, their text kept.
fn strip_tags(line: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in line.chars() {
        match c {
            '<' if !in_tag => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// Words of one line: link targets dropped, words with a letter or digit.
fn line_words(line: &str) -> usize {
    let mut text = String::new();
    let mut rest = line;
    while let Some(start) = rest.find("](") {
        text.push_str(&rest[..start]);
        rest = rest[start..]
            .find(')')
            .map_or("", |end| &rest[start + end + 1..]);
    }
    text.push_str(rest);
    text.split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .count()
}

/// Questions of the quizzes a page includes, read from `src`.
fn quiz_questions(markdown: &str, src: &Path) -> Result<usize> {
    let mut n = 0;
    for line in markdown.lines() {
        if let Some(rest) = line.trim().strip_prefix("{{#quiz ") {
            let path = rest.trim_end_matches("}}").trim();
            let toml = std::fs::read_to_string(src.join(path)).with_context(|| path.to_string())?;
            n += toml.lines().filter(|l| l.trim() == "[[questions]]").count();
        }
    }
    Ok(n)
}

/// A page's rendered words, its includes read from `src`.
pub fn page_words(markdown: &str, src: &Path) -> usize {
    let read = |path: &str| std::fs::read_to_string(src.join(path)).ok();
    rendered_words(&expand(markdown, &read, 4))
}

/// Fails when the core has more rendered words or quiz questions than the bounds allow.
pub fn within_bounds(pages: &[Page]) -> Result<()> {
    let (words, questions) = core_totals(pages);
    if words > CORE_WORDS_MAX || questions > CORE_QUESTIONS_MAX {
        anyhow::bail!(
            "the core has {words} rendered words (at most {CORE_WORDS_MAX}) and {questions} quiz \
             questions (at most {CORE_QUESTIONS_MAX})"
        );
    }
    Ok(())
}

/// Every page of `SUMMARY.md` (its `[title](file)` entries) with its words, read from `src`.
pub fn pages(src: &Path) -> Result<Vec<Page>> {
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).context("SUMMARY.md")?;
    let mut part = "Front matter".to_string();
    let mut out = Vec::new();
    for line in summary.lines() {
        if let Some(heading) = line.strip_prefix("# ") {
            if heading != "Summary" {
                part = heading.trim().to_string();
            }
            continue;
        }
        if line.trim() == "---" {
            part = "For instructors".to_string();
            continue;
        }
        let Some(open) = line.find('[') else { continue };
        let Some(mid) = line[open..].find("](").map(|m| open + m) else {
            continue;
        };
        let Some(close) = line[mid..].find(')').map(|c| mid + c) else {
            continue;
        };
        let (title, file) = (&line[open + 1..mid], &line[mid + 2..close]);
        let text = std::fs::read_to_string(src.join(file)).with_context(|| file.to_string())?;
        out.push(Page {
            part: part.clone(),
            title: title.to_string(),
            file: file.to_string(),
            words: page_words(&text, src),
            questions: quiz_questions(&text, src)?,
        });
    }
    Ok(out)
}

/// The core's rendered words and quiz questions: `(words, questions)`.
pub fn core_totals(pages: &[Page]) -> (usize, usize) {
    pages
        .iter()
        .filter(|p| p.part == CORE_PART)
        .fold((0, 0), |(w, q), p| (w + p.words, q + p.questions))
}

/// `generated/reading_times.md`: one anchored line per page, the table, and the core's
/// totals against the bounds (anchor `core`). It reads the generated files on disk: after a
/// change to one, a second `cargo run -p figures` brings the counts up to date (the test of
/// committed files says when).
pub fn reading_times() -> Result<String> {
    let pages = pages(&crate::book::book_src())?;
    let mut out = String::new();
    for p in &pages {
        writeln!(out, "<!-- ANCHOR: {} -->", p.anchor())?;
        writeln!(
            out,
            "*About {} min to read* ({} words as rendered, at {WORDS_PER_MINUTE} a minute; \
             code, hints and solutions not counted).",
            p.minutes(),
            grouped(p.words as u64)
        )?;
        writeln!(out, "<!-- ANCHOR_END: {} -->", p.anchor())?;
    }
    writeln!(out, "<!-- ANCHOR: table -->")?;
    writeln!(out, "| part | page | words | minutes | quiz questions |")?;
    writeln!(out, "| :--- | :--- | ---: | ---: | ---: |")?;
    let mut parts: Vec<(&str, usize, usize)> = Vec::new();
    for p in &pages {
        writeln!(
            out,
            "| {} | [{}]({}) | {} | {} | {} |",
            p.part,
            p.title,
            p.file,
            grouped(p.words as u64),
            p.minutes(),
            p.questions
        )?;
        match parts.last_mut() {
            Some((part, words, questions)) if *part == p.part => {
                *words += p.words;
                *questions += p.questions;
            }
            _ => parts.push((&p.part, p.words, p.questions)),
        }
    }
    for (part, words, questions) in parts {
        writeln!(
            out,
            "| **{part}** | all its pages | **{}** | **{}** | **{questions}** |",
            grouped(words as u64),
            minutes(words)
        )?;
    }
    writeln!(out, "<!-- ANCHOR_END: table -->")?;
    let (words, questions) = core_totals(&pages);
    writeln!(out, "<!-- ANCHOR: core -->")?;
    writeln!(
        out,
        "The lesson's pages: **{} words** as rendered (at most {} allowed, a test checks) and \
         **{questions} quiz questions** (at most {CORE_QUESTIONS_MAX}): about {} minutes of \
         reading before any exercise.",
        grouped(words as u64),
        grouped(CORE_WORDS_MAX as u64),
        minutes(words)
    )?;
    writeln!(out, "<!-- ANCHOR_END: core -->")?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = "# A title\n\n{{#include generated/reading_times.md:page}}\n\n\
        One two three, [four](x.md) {{#include generated/n.md}}.\n\n\
        ```rust\nlet not = counted;\n{{#include generated/n.md}}\n```\n\
        {{#include generated/table.md:t}}\n\
        <div class=\"callout\">\n<p class=\"callout-title\">Key points</p>\n\
        <details class=\"hint\">\n<summary>Hint</summary>\n\nhidden words\n\
        </details>\n<!-- a comment\nover lines -->\n- a list item\n\
        ![alt text](figures/x.svg)\n> [!NOTE]\n> Noted here.\n{{#quiz generated/quizzes/q.toml}}\n";

    fn read(path: &str) -> Option<String> {
        match path {
            "generated/n.md" => Some("8.74 GiB\n".into()),
            "generated/table.md" => Some(
                "<!-- ANCHOR: t -->\n| a | b c |\n| :--- | ---: |\n| d | 1 |\n<!-- ANCHOR_END: t -->\nnot this\n"
                    .into(),
            ),
            "generated/reading_times.md" => Some("*About 9 min to read*\n".into()),
            _ => None,
        }
    }

    #[test]
    fn rendered_text_counts_and_the_rest_does_not() {
        let words = rendered_words(&expand(FIXTURE, &read, 4));
        // "A title" 2; the sentence 4 + the include's 2; the table's cells 3 + 2; the callout's
        // title 2; the list item 3; the note 2.
        assert_eq!(words, 2 + 6 + 5 + 2 + 3 + 2);
    }

    #[test]
    fn the_bounds_fail_when_exceeded() {
        let page = |part: &str, words, questions| Page {
            part: part.into(),
            title: "t".into(),
            file: "f.md".into(),
            words,
            questions,
        };
        let under = [
            page(CORE_PART, 3_000, 6),
            page(CORE_PART, 600, 4),
            page("Going further", 9_000, 9),
        ];
        assert_eq!(core_totals(&under), (3_600, 10));
        assert!(within_bounds(&under).is_ok());
        let wordy = [page(CORE_PART, 3_000, 6), page(CORE_PART, 601, 4)];
        assert!(within_bounds(&wordy).is_err());
        let quizzy = [page(CORE_PART, 3_000, 6), page(CORE_PART, 600, 5)];
        assert!(within_bounds(&quizzy).is_err());
    }

    #[test]
    fn minutes_round_up() {
        assert_eq!(minutes(0), 0);
        assert_eq!(minutes(1), 1);
        assert_eq!(minutes(200), 1);
        assert_eq!(minutes(201), 2);
    }

    #[test]
    fn every_page_of_the_book_is_read_and_has_words() {
        let pages = pages(&crate::book::book_src()).unwrap();
        assert!(pages.len() >= 15, "{pages:?}");
        assert!(pages.iter().all(|p| p.words > 0), "{pages:?}");
        assert!(pages.iter().any(|p| p.part == CORE_PART));
    }

    /// The issue's bounds: the lesson's part (the core a workshop teaches) has at most 3,600
    /// rendered words and 10 quiz questions.
    #[test]
    fn the_core_is_within_its_words_and_questions() {
        let pages = pages(&crate::book::book_src()).unwrap();
        within_bounds(&pages).unwrap();
    }
}
