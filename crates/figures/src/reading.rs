//! Each page's reading time, from its rendered words: the line every page shows under its
//! title, and the table of the instructors' page, per page and per part of the book, with the
//! lesson's (the core's) words and quiz questions against the issue's bounds.
//!
//! What counts (the issue's rule, said on each page and the instructors' page) is what a
//! reader sees, at 200 words a minute: every word of the rendered page's main text — prose,
//! lists, tables, callouts, code blocks, program output, included files — except the folded
//! hints and solutions (`<details>`), scripts and styles, quizzes (counted apart, as
//! questions), the calculator widget, images and their alt text, HTML comments, and the
//! reading-time line itself (it would count itself). [`expand`] reads the page as mdBook
//! does; [`count`] applies the rule; `bookcheck words` counts the built pages in Chromium by
//! the same rule and compares with `generated/reading_words.json`.

mod count;
mod expand;

use anyhow::{Context, Result};
use charts::style::grouped;
use std::fmt::Write as _;
use std::path::Path;

/// Words a minute of rendered text.
pub const WORDS_PER_MINUTE: usize = 200;

/// The part of the book a workshop teaches in one session.
pub const CORE_PART: &str = "The lesson";

/// The issue's bounds on the core, over the pages it has: rendered words and quiz questions.
pub const CORE_WORDS_MAX: usize = 4_500;
pub const CORE_QUESTIONS_MAX: usize = 10;

/// One page of the book, as `SUMMARY.md` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The part it is in (`SUMMARY.md`'s `# ` headings), or "Front matter" before the first.
    pub part: String,
    pub title: String,
    /// The file, relative to `src/`.
    pub file: String,
    /// Words the reader sees, by the rule above.
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

/// The words a reader sees on page `file` (relative to `src`), its includes read from `src`.
pub fn page_words(markdown: &str, file: &str, src: &Path) -> usize {
    count::words(&shown(markdown, file, src))
}

/// Page `file`'s Markdown as mdBook hands it to the renderer: every include expanded (read
/// from `src`), except the reading-time line.
pub fn shown(markdown: &str, file: &str, src: &Path) -> String {
    let read = |path: &Path| std::fs::read_to_string(src.join(path)).ok();
    let folder = Path::new(file).parent().unwrap_or(Path::new(""));
    expand::expand(markdown, folder, &read, &is_reading_time)
}

/// The reading-time line (and the table, on the instructors' page) would count itself.
fn is_reading_time(path: &Path) -> bool {
    path.ends_with("generated/reading_times.md")
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
            words: page_words(&text, file, src),
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
        // HTML, so that the browser's count (`bookcheck words`) can leave it out too.
        writeln!(
            out,
            "<p class=\"reading-time\"><em>About {} min to read</em>: {} words as the page \
             shows them, code and output included; hints, solutions and quizzes not (at \
             {WORDS_PER_MINUTE} words a minute).</p>",
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
        "The lesson's pages: **{} words** as the reader sees them (at most {} allowed, a test \
         checks) and \
         **{questions} quiz questions** (at most {CORE_QUESTIONS_MAX}): about {} minutes of \
         reading before any exercise.",
        grouped(words as u64),
        grouped(CORE_WORDS_MAX as u64),
        minutes(words)
    )?;
    writeln!(out, "<!-- ANCHOR_END: core -->")?;
    writeln!(
        out,
        "<!-- ANCHOR: rule -->\n{RULE}\n<!-- ANCHOR_END: rule -->"
    )?;
    Ok(out)
}

/// What counts, in the instructors' words.
pub const RULE: &str = "Each page shows its reading time under its title, from the words a \
    reader sees at 200 words a minute: every word of the page's text — prose, lists, tables, \
    callouts, code blocks, program output and the files and generated numbers the page \
    includes. Not counted: the folded hints and solutions, the quizzes (counted apart, as \
    questions), the calculator, images and their alt text. The browser check (`cargo run -p \
    bookcheck -- words book`) counts the built pages of the lesson by the same rule and \
    compares. It is an estimate for planning, not a measurement of anyone's reading.";

/// `generated/reading_words.json`: the lesson's pages (as built: `.html`) with their words,
/// for `bookcheck words`, which counts the same pages in the browser. mdBook copies it into
/// the built book.
pub fn reading_words() -> Result<String> {
    let pages = pages(&crate::book::book_src())?;
    let core: Vec<serde_json::Value> = pages
        .iter()
        .filter(|p| p.part == CORE_PART)
        .map(|p| {
            serde_json::json!({
                "page": format!("{}.html", p.anchor()),
                "title": p.title,
                "words": p.words,
                "questions": p.questions,
            })
        })
        .collect();
    let (words, questions) = core_totals(&pages);
    let record = serde_json::json!({
        "about": "The lesson's pages and the words a reader sees on each, counted by \
                  crates/figures/src/reading.rs (generated by `cargo run -p figures`; do not edit).",
        "words_max": CORE_WORDS_MAX,
        "questions_max": CORE_QUESTIONS_MAX,
        "words": words,
        "questions": questions,
        "pages": core,
    });
    Ok(serde_json::to_string_pretty(&record)? + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_counts_its_includes_and_code_but_not_its_reading_time() {
        let dir = tempfile_dir();
        let src = dir.join("src");
        std::fs::create_dir_all(src.join("generated")).unwrap();
        std::fs::create_dir_all(dir.join("code")).unwrap();
        std::fs::write(src.join("generated/n.md"), "8.74 GiB\n").unwrap();
        std::fs::write(src.join("generated/reading_times.md"), "About 9 min\n").unwrap();
        std::fs::write(dir.join("code/a.txt"), "skipped line\nshown output line\n").unwrap();
        let page = "# Title\n{{#include generated/reading_times.md:x}}\n\
            It is {{#include generated/n.md}}.\n```text\n{{#include ../code/a.txt:2:}}\n```\n";
        // "Title" 1, "It is 8.74 GiB." 4, "shown output line" 3.
        assert_eq!(page_words(page, "page.md", &src), 8);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("figures-reading-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
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
        let at_most = [page(CORE_PART, 3_900, 6), page(CORE_PART, 600, 4)];
        assert!(within_bounds(&at_most).is_ok());
        let wordy = [page(CORE_PART, 3_901, 6), page(CORE_PART, 600, 4)];
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

    /// The issue's bounds: the lesson's part (the core a workshop teaches) has at most 4,500
    /// words a reader sees and 10 quiz questions.
    #[test]
    fn the_core_is_within_its_words_and_questions() {
        let pages = pages(&crate::book::book_src()).unwrap();
        within_bounds(&pages).unwrap();
    }
}
