//! The words a reader sees on each page of the lesson, counted in the built page as Chromium
//! renders it, against the count the book prints (`crates/figures/src/reading.rs`, which reads
//! the Markdown and writes `generated/reading_words.json`; mdBook copies it into the book).
//!
//! The rule in the page: the visible text of `main` (`innerText`: what is laid out, so hidden
//! lines of code are not), with the folded hints and solutions (`<details>`), scripts, styles,
//! quizzes, the calculator widget and the reading-time line taken out; the replay in the page
//! asked for its shipped recording first, and only its answer counted (memviz's text and the
//! command line: what the book counts in its fallback); images count nothing
//! (their alt text is not text). A word is a whitespace-separated run with a letter or a
//! digit. The two counts differ by what Markdown and the browser disagree on (a list's
//! numbers, say): [`TOLERANCE`] bounds it.

use crate::session::Session;
use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The largest relative difference allowed between the two counts of a page.
pub const TOLERANCE: f64 = 0.02;

/// Where the book's own count is, relative to the built book.
pub const RECORD: &str = "generated/reading_words.json";

/// Hidden while the page's text is read: what the rule leaves out.
const LEFT_OUT: &str = "details, script, style, noscript, .quiz-placeholder, .gpumem-calculator, \
     .reading-time, .gpumem-replay form, .gpumem-replay .calc-status, .gpumem-replay .calc-verdict, \
     .gpumem-replay .calc-hint, .replay-progress";

#[derive(Debug, Deserialize)]
struct Record {
    pages: Vec<Counted>,
}

#[derive(Debug, Deserialize)]
struct Counted {
    page: String,
    words: usize,
}

/// How to run the check.
#[derive(Debug, Clone)]
pub struct Options {
    pub chromium: PathBuf,
    pub timeout: Duration,
    /// Where to save each page's counted text (`PAGE.txt`), to see a difference; none without it.
    pub text: Option<PathBuf>,
}

/// One page's two counts.
#[derive(Debug, Clone, PartialEq)]
pub struct PageWords {
    pub page: String,
    /// The book's count, from the Markdown.
    pub book: usize,
    /// Chromium's, from the rendered page.
    pub browser: usize,
}

impl PageWords {
    /// `(browser − book) / book`.
    pub fn difference(&self) -> f64 {
        (self.browser as f64 - self.book as f64) / (self.book.max(1) as f64)
    }

    pub fn within_tolerance(&self) -> bool {
        self.difference().abs() <= TOLERANCE
    }
}

/// Counts the words of every page the record lists, in the book at `root`.
pub fn check(root: &Path, options: &Options) -> Result<Vec<PageWords>> {
    let record_path = root.join(RECORD);
    let record: Record =
        serde_json::from_str(&std::fs::read_to_string(&record_path).with_context(|| {
            format!("cannot read {} (run mdbook build)", record_path.display())
        })?)
        .with_context(|| format!("{} is not the record figures writes", record_path.display()))?;
    if record.pages.is_empty() {
        bail!("{} lists no page", record_path.display());
    }
    crate::session::screenshot_folder(options.text.as_deref())?;
    let session = Session::open(root, &options.chromium, None, options.timeout)?;
    let mut out = Vec::new();
    for counted in &record.pages {
        session
            .visit(&counted.page)
            .with_context(|| format!("{} did not load", counted.page))?;
        shipped_replay(&session, options.timeout)?;
        let text = visible_text(&session)?;
        if let Some(dir) = &options.text {
            let name = counted.page.replace('/', "_").replace(".html", ".txt");
            std::fs::write(dir.join(&name), &text)
                .with_context(|| format!("cannot write {name}"))?;
        }
        out.push(PageWords {
            page: counted.page.clone(),
            book: counted.words,
            browser: count(&text),
        });
    }
    Ok(out)
}

/// On a page with the replay, asks it for the shipped recording and waits for the answer:
/// what a reader of the core reads there.
fn shipped_replay(session: &Session, wait: Duration) -> Result<()> {
    let started = std::time::Instant::now();
    loop {
        let state = session.eval(
            "(() => { const h = document.querySelector('.gpumem-replay'); \
             if (!h) return 'none'; \
             if (h.querySelector('.replay-text')) return 'shown'; \
             const b = h.querySelector('.replay-sample'); \
             if (b && !h.dataset.asked) { h.dataset.asked = '1'; b.click(); } \
             return 'waiting'; })()",
        )?;
        if state != "waiting" {
            return Ok(());
        }
        if started.elapsed() > wait {
            bail!("the replay showed no answer within {} s", wait.as_secs());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `main`'s laid-out text with what the rule leaves out hidden for the moment.
fn visible_text(session: &Session) -> Result<String> {
    session.eval(&format!(
        "(() => {{ const main = document.querySelector('main'); \
           if (!main) return ''; \
           const hidden = [...main.querySelectorAll('{LEFT_OUT}')].map(e => [e, e.style.display]); \
           hidden.forEach(([e]) => e.style.display = 'none'); \
           const text = main.innerText; \
           hidden.forEach(([e, d]) => e.style.display = d); \
           return text; }})()"
    ))
}

/// Whitespace-separated runs with a letter or a digit (the book's own rule).
pub fn count(text: &str) -> usize {
    text.split_whitespace()
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_need_a_letter_or_a_digit() {
        assert_eq!(count("One two — 3 = { } 4.5 GiB\tx"), 6);
    }

    #[test]
    fn the_tolerance_is_relative_to_the_books_count() {
        let p = |book, browser| PageWords {
            page: "p.html".into(),
            book,
            browser,
        };
        assert!(p(1_000, 1_020).within_tolerance());
        assert!(p(1_000, 980).within_tolerance());
        assert!(!p(1_000, 1_021).within_tolerance());
        assert!(!p(1_000, 979).within_tolerance());
    }

    #[test]
    fn a_book_without_the_record_is_a_clear_error() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/links");
        let options = Options {
            chromium: PathBuf::from("/no/such/chromium"),
            timeout: Duration::from_secs(1),
            text: None,
        };
        let err = format!("{:#}", check(&root, &options).unwrap_err());
        assert!(err.contains(RECORD), "{err}");
    }
}
