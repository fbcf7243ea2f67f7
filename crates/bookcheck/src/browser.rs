//! Every page of the built book, opened in headless Chromium the way a reader opens it: served
//! over HTTP, with the book's own scripts running. A page fails on any JavaScript error
//! (an uncaught exception, `console.error`, or an error the browser logs, such as a resource
//! that failed to load) and on any image that did not load.
//!
//! Chromium itself is driven by `chromium.rs`, through one [`Session`].

use crate::chromium::{WINDOW, capture};
use crate::session::Session;
use anyhow::{Context, Result, anyhow};
use headless_chrome::Tab;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Debian's Chromium; `--chromium` names another.
pub const DEFAULT_CHROMIUM: &str = "/usr/bin/chromium";

/// Full-page screenshots stop here, so a very long page cannot make a huge PNG.
const MAX_SCREENSHOT_HEIGHT: f64 = 8000.0;

/// How to run the check.
#[derive(Debug, Clone)]
pub struct Options {
    /// The Chromium (or Chrome) executable.
    pub chromium: PathBuf,
    /// Where to save screenshots; none are taken without it.
    pub screenshots: Option<PathBuf>,
    /// Pages whose file name contains one of these are photographed (the first page always).
    pub screenshot_matches: Vec<String>,
    /// An mdBook theme to select before each page loads (`light`, `coal`, `navy`, …), as the
    /// theme menu would; `None` leaves the book's default.
    pub theme: Option<String>,
    /// How long one page may take to load.
    pub timeout: Duration,
    /// axe-core's script (`axe.min.js`): when given, every page is also audited for WCAG
    /// A/AA violations (see [`crate::axe`]).
    pub axe: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            chromium: PathBuf::from(DEFAULT_CHROMIUM),
            screenshots: None,
            screenshot_matches: vec!["challenge".into()],
            theme: None,
            timeout: Duration::from_secs(30),
            axe: None,
        }
    }
}

/// Something wrong on one page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub page: String,
    pub what: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.page, self.what)
    }
}

/// What the check saw.
#[derive(Debug, Default)]
pub struct Report {
    /// Every page opened, with how long it took to load and check.
    pub pages: Vec<(String, Duration)>,
    pub problems: Vec<Problem>,
    pub screenshots: Vec<PathBuf>,
    /// mdBook's own accessibility findings, per page: listed, not counted as problems.
    pub upstream: Vec<Problem>,
}

/// Opens every page under `root` in headless Chromium and reports what went wrong.
/// An `Err` means the check itself could not run (no browser, unreadable book, …).
pub fn check(root: &Path, options: &Options) -> Result<Report> {
    let pages = crate::site::pages(root)?;
    let (session, axe) = Session::prepare(
        root,
        &options.chromium,
        options.theme.as_deref(),
        options.timeout,
        options.screenshots.as_deref(),
        options.axe.as_deref(),
    )?;
    let tab = &session.tab;

    let first = first_page(&pages);
    let mut report = Report::default();
    for page in &pages {
        let started = Instant::now();
        session.take_errors();
        // A page that does not load is a problem of that page; the others still get checked.
        let visited = session.visit(page);
        let mut found = session.take_errors();
        match visited {
            Ok(broken_images) => {
                found.extend(
                    broken_images
                        .into_iter()
                        .map(|src| format!("image did not load: {src}")),
                );
                if let Some(script) = &axe {
                    match crate::axe::audit(tab, script) {
                        Ok(mut findings) => {
                            if crate::axe::UPSTREAM_PAGES.contains(&page.as_str()) {
                                findings
                                    .iter_mut()
                                    .flat_map(|f| &mut f.nodes)
                                    .for_each(|n| n.upstream = true);
                            }
                            found.extend(crate::axe::ours(&findings));
                            report.upstream.extend(
                                crate::axe::upstream(&findings)
                                    .into_iter()
                                    .map(|what| Problem {
                                        page: page.clone(),
                                        what,
                                    }),
                            );
                        }
                        Err(e) => found.push(format!("accessibility audit failed: {e:#}")),
                    }
                }
            }
            Err(e) => found.push(format!("the page did not load: {e:#}")),
        }
        report
            .problems
            .extend(found.into_iter().map(|what| Problem {
                page: page.clone(),
                what,
            }));
        if let Some(dir) = &options.screenshots
            && (Some(page.as_str()) == first || wants_screenshot(page, &options.screenshot_matches))
        {
            let path = dir.join(screenshot_name(page));
            let png = screenshot(tab).map_err(|e| anyhow!("{page}: no screenshot: {e}"))?;
            std::fs::write(&path, png)
                .with_context(|| format!("cannot write {}", path.display()))?;
            report.screenshots.push(path);
        }
        report.pages.push((page.clone(), started.elapsed()));
    }
    Ok(report)
}

/// A PNG of the whole page (up to [`MAX_SCREENSHOT_HEIGHT`]), not only the first screenful.
fn screenshot(tab: &Arc<Tab>) -> Result<Vec<u8>> {
    let height = tab
        .evaluate(
            "Math.max(document.documentElement.scrollHeight, window.innerHeight)",
            false,
        )
        .ok()
        .and_then(|r| r.value)
        .and_then(|v| v.as_f64())
        .unwrap_or(f64::from(WINDOW.1))
        .clamp(1.0, MAX_SCREENSHOT_HEIGHT);
    capture(tab, 0.0, 0.0, f64::from(WINDOW.0), height)
}

/// The book's first page: mdBook writes it as `index.html`.
fn first_page(pages: &[String]) -> Option<&str> {
    pages
        .iter()
        .find(|p| *p == "index.html")
        .or_else(|| pages.first())
        .map(String::as_str)
}

fn wants_screenshot(page: &str, matches: &[String]) -> bool {
    let name = page.rsplit('/').next().unwrap_or(page);
    matches.iter().any(|m| name.contains(m.as_str()))
}

/// `part/challenge-1.html` → `part_challenge-1.png`.
fn screenshot_name(page: &str) -> String {
    let stem = page.strip_suffix(".html").unwrap_or(page);
    format!("{}.png", stem.replace('/', "_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn screenshots_are_chosen_by_file_name() {
        let m = vec!["challenge".to_string()];
        assert!(wants_screenshot("episode/challenge-2.html", &m));
        assert!(!wants_screenshot("challenge/intro.html", &m));
        assert_eq!(screenshot_name("a/challenge-2.html"), "a_challenge-2.png");
        let pages = vec!["404.html".to_string(), "index.html".to_string()];
        assert_eq!(first_page(&pages), Some("index.html"));
    }

    #[test]
    fn a_missing_browser_is_a_clear_error() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/links");
        let options = Options {
            chromium: PathBuf::from("/no/such/chromium"),
            ..Options::default()
        };
        let err = check(&root, &options).unwrap_err().to_string();
        assert!(err.contains("Chromium is not installed"), "{err}");
        assert!(err.contains("apt-get install -y chromium"), "{err}");
    }
}
