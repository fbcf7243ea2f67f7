//! Each page's reading time, from its words: the line every page shows under its title, and
//! the table of the instructors' page, per page and per part of the book.
//!
//! What counts (our choice, said on the instructors' page): prose at 200 words a minute —
//! paragraphs, lists, headings and callouts. Code blocks, tables, the hints and solutions
//! folded inside the challenges (read while doing the exercises), quizzes and images are not
//! counted; a number the page includes (`{{#include generated/…}}`) counts as one word.

use anyhow::{Context, Result};
use charts::style::grouped;
use std::fmt::Write as _;

/// Words a minute of prose.
pub const WORDS_PER_MINUTE: usize = 200;

/// One page of the book, as `SUMMARY.md` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The part it is in (`SUMMARY.md`'s `# ` headings), or "Front matter" before the first.
    pub part: String,
    pub title: String,
    /// The file, relative to `src/`.
    pub file: String,
    pub words: usize,
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

/// Whole minutes, rounded up, for `words` of prose.
pub fn minutes(words: usize) -> usize {
    words.div_ceil(WORDS_PER_MINUTE)
}

/// The prose words of a page's Markdown, by the rules above.
pub fn prose_words(markdown: &str) -> usize {
    let mut words = 0;
    let (mut in_code, mut in_folded) = (false, false);
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
        if t.starts_with('|') || t.starts_with('<') || t.starts_with("{{#") || t.starts_with("![") {
            continue;
        }
        words += line_words(t);
    }
    words
}

/// Words of one line of prose: link targets dropped, an include one word.
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
    // An include (`{{#include generated/…}}`, a number) is one word.
    while let Some(start) = text.find("{{#") {
        let end = text[start..]
            .find("}}")
            .map_or(text.len(), |e| start + e + 2);
        text.replace_range(start..end, "N");
    }
    text.split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .count()
}

/// Every page of `SUMMARY.md` (its `[title](file)` entries) with its words, read from `src`.
pub fn pages(src: &std::path::Path) -> Result<Vec<Page>> {
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
            words: prose_words(&text),
        });
    }
    Ok(out)
}

/// `generated/reading_times.md`: one anchored line per page, and the table.
pub fn reading_times() -> Result<String> {
    let pages = pages(&crate::files::book_src())?;
    let mut out = String::new();
    for p in &pages {
        writeln!(out, "<!-- ANCHOR: {} -->", p.anchor())?;
        writeln!(
            out,
            "*About {} min to read* ({} words of prose at {WORDS_PER_MINUTE} a minute; code, \
             tables, hints and solutions not counted).",
            p.minutes(),
            grouped(p.words as u64)
        )?;
        writeln!(out, "<!-- ANCHOR_END: {} -->", p.anchor())?;
    }
    writeln!(out, "<!-- ANCHOR: table -->")?;
    writeln!(out, "| part | page | words | minutes |")?;
    writeln!(out, "| :--- | :--- | ---: | ---: |")?;
    let mut parts: Vec<(&str, usize)> = Vec::new();
    for p in &pages {
        writeln!(
            out,
            "| {} | [{}]({}) | {} | {} |",
            p.part,
            p.title,
            p.file,
            grouped(p.words as u64),
            p.minutes()
        )?;
        match parts.last_mut() {
            Some((part, words)) if *part == p.part => *words += p.words,
            _ => parts.push((&p.part, p.words)),
        }
    }
    for (part, words) in parts {
        writeln!(
            out,
            "| **{part}** | all its pages | **{}** | **{}** |",
            grouped(words as u64),
            minutes(words)
        )?;
    }
    writeln!(out, "<!-- ANCHOR_END: table -->")?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prose_counts_and_the_rest_does_not() {
        let page = "# A title\n\nOne two three, [four](x.md) {{#include generated/n.md}}.\n\n\
                    ```rust\nlet not = counted;\n```\n| a | table |\n<div class=\"x\">\n\
                    <details class=\"hint\">\n<summary>Hint</summary>\n\nhidden words\n\
                    </details>\n- a list item\n";
        // "A title" 2 ('#' is no word), the sentence 5 (the include one), the list item 3.
        assert_eq!(prose_words(page), 2 + 5 + 3);
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
        let pages = pages(&crate::files::book_src()).unwrap();
        assert!(pages.len() >= 15, "{pages:?}");
        assert!(pages.iter().all(|p| p.words > 0), "{pages:?}");
        assert!(pages.iter().any(|p| p.part == "The lesson"));
    }

    /// The issue's bound: the lesson's part (the core a workshop teaches) reads in at most
    /// twenty minutes by the rule above.
    #[test]
    fn the_lesson_reads_in_twenty_minutes() {
        let pages = pages(&crate::files::book_src()).unwrap();
        let words: usize = pages
            .iter()
            .filter(|p| p.part == "The lesson")
            .map(|p| p.words)
            .sum();
        assert!(
            minutes(words) <= 20,
            "the lesson reads in {} min ({words} words)",
            minutes(words)
        );
    }
}
