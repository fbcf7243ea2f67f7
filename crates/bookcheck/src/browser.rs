//! Every page of the built book, opened in headless Chromium the way a reader opens it: served
//! over HTTP, with the book's own scripts running. A page fails on any JavaScript error
//! (an uncaught exception, `console.error`, or an error the browser logs, such as a resource
//! that failed to load) and on any image that did not load.
//!
//! The browser is driven over the DevTools protocol by `headless_chrome`, built without its
//! `fetch` feature: it never downloads a browser, it uses the Chromium installed here.

use crate::session::Session;
use anyhow::{Context, Result, anyhow, bail};
use headless_chrome::protocol::cdp::Log::LogEntryLevel;
use headless_chrome::protocol::cdp::Page;
use headless_chrome::protocol::cdp::Runtime::ConsoleAPICalledEventTypeOption as ConsoleType;
use headless_chrome::protocol::cdp::Runtime::RemoteObject;
use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::{Browser, LaunchOptions, Tab};
use std::ffi::OsStr;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Debian's Chromium; `--chromium` names another.
pub const DEFAULT_CHROMIUM: &str = "/usr/bin/chromium";

/// The viewport: a laptop screen, wide enough for mdBook's sidebar beside the text.
const WINDOW: (u32, u32) = (1280, 900);

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

/// Starts Chromium with the flags it needs as root in a container, and a fresh profile.
pub(crate) fn launch(chromium: &Path, profile: &Path) -> Result<Browser> {
    if !chromium.is_file() {
        bail!(
            "Chromium is not installed at {}: install it (`apt-get install -y chromium`) or name \
             another with --chromium PATH",
            chromium.display()
        );
    }
    let args: Vec<&OsStr> = [
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        "--hide-scrollbars",
    ]
    .iter()
    .map(OsStr::new)
    .collect();
    let launch = LaunchOptions::default_builder()
        .path(Some(chromium.to_path_buf()))
        .headless(true)
        .sandbox(false)
        .enable_gpu(false)
        .window_size(Some(WINDOW))
        .user_data_dir(Some(profile.to_path_buf()))
        .idle_browser_timeout(Duration::from_secs(300))
        .args(args)
        .build()
        .map_err(|e| anyhow!("bad browser options: {e}"))?;
    Browser::new(launch).map_err(|e| anyhow!("cannot start {}: {e}", chromium.display()))
}

/// Collects the tab's JavaScript errors into the returned list, and prepares every page
/// before its own scripts run: no print dialog (mdBook's print page opens one), and the
/// chosen theme in `localStorage`, where mdBook's theme menu keeps it.
pub(crate) fn listen(tab: &Arc<Tab>, theme: Option<&str>) -> Result<Events> {
    let events = Events::default();
    let sink = events.clone();
    tab.add_event_listener(Arc::new(move |event: &Event| {
        if let Event::PageLoadEventFired(_) = event {
            sink.loads.fetch_add(1, Ordering::SeqCst);
        }
        if let Some(message) = error_message(event)
            && let Ok(mut list) = sink.errors.lock()
        {
            list.push(message);
        }
    }))
    .map_err(|e| anyhow!("cannot listen to the tab: {e}"))?;
    tab.enable_runtime()
        .and_then(|t| t.enable_log())
        .map_err(|e| anyhow!("cannot enable the tab's console: {e}"))?;
    let mut source = String::from("window.print = function () {};\n");
    if let Some(theme) = theme {
        source.push_str(&format!(
            "try {{ localStorage.setItem('mdbook-theme', '{theme}'); }} catch (e) {{}}\n"
        ));
    }
    tab.call_method(Page::AddScriptToEvaluateOnNewDocument {
        source,
        world_name: None,
        include_command_line_api: None,
        run_immediately: None,
    })
    .map_err(|e| anyhow!("cannot prepare pages: {e}"))?;
    Ok(events)
}

/// What the tab reported: JavaScript errors since the last [`Events::take_errors`], and how
/// many pages finished loading.
#[derive(Clone, Default)]
pub(crate) struct Events {
    errors: Arc<Mutex<Vec<String>>>,
    loads: Arc<AtomicU64>,
}

impl Events {
    pub(crate) fn take_errors(&self) -> Vec<String> {
        self.errors
            .lock()
            .map(|mut e| std::mem::take(&mut *e))
            .unwrap_or_default()
    }
}

/// The text of an event that is a JavaScript error, or `None`.
fn error_message(event: &Event) -> Option<String> {
    match event {
        Event::RuntimeExceptionThrown(e) => {
            let d = &e.params.exception_details;
            let what = d
                .exception
                .as_ref()
                .and_then(|x| x.description.clone())
                .unwrap_or_else(|| d.text.clone());
            let at = d.url.clone().unwrap_or_default();
            Some(format!(
                "uncaught exception: {what} ({at}:{})",
                d.line_number + 1
            ))
        }
        Event::RuntimeConsoleAPICalled(e)
            if matches!(e.params.Type, ConsoleType::Error | ConsoleType::Assert) =>
        {
            let args: Vec<String> = e.params.args.iter().map(describe).collect();
            Some(format!("console error: {}", args.join(" ")))
        }
        Event::LogEntryAdded(e) if e.params.entry.level == LogEntryLevel::Error => {
            let entry = &e.params.entry;
            // Chromium asks for /favicon.ico on pages that name no icon; no reader sees that.
            if entry
                .url
                .as_deref()
                .is_some_and(|u| u.ends_with("/favicon.ico"))
            {
                return None;
            }
            let at = entry.url.as_deref().unwrap_or("");
            Some(
                format!("browser error: {} {at}", entry.text)
                    .trim_end()
                    .to_string(),
            )
        }
        _ => None,
    }
}

fn describe(value: &RemoteObject) -> String {
    match (&value.value, &value.description) {
        (Some(serde_json::Value::String(s)), _) => s.clone(),
        (Some(v), _) => v.to_string(),
        (None, Some(d)) => d.clone(),
        (None, None) => format!("{:?}", value.Type),
    }
}

/// Waits until the page, its images and its scripts are done, then names the images that
/// did not load. Lazy images are made eager first, so a long page's last figure counts too.
const AWAIT_IMAGES: &str = r#"(async () => {
  if (document.readyState !== 'complete') {
    await new Promise(r => window.addEventListener('load', r, { once: true }));
  }
  const images = Array.from(document.images);
  for (const i of images) { if (i.loading === 'lazy') i.loading = 'eager'; }
  await Promise.all(images.map(i => i.complete ? null : new Promise(r => {
    i.addEventListener('load', r, { once: true });
    i.addEventListener('error', r, { once: true });
  })));
  await new Promise(r => setTimeout(r, 150));
  return JSON.stringify(images
    .filter(i => !(i.complete && i.naturalWidth > 0))
    .map(i => i.getAttribute('src') || i.currentSrc || '(no src)'));
})()"#;

/// Loads `url` and returns the images that did not load.
///
/// Waits for the page's own `load` event rather than `headless_chrome`'s
/// `wait_until_navigated`, which waits for the network to go quiet and can wait forever.
pub(crate) fn visit(
    tab: &Arc<Tab>,
    events: &Events,
    url: &str,
    timeout: Duration,
) -> Result<Vec<String>> {
    let loads = events.loads.load(Ordering::SeqCst);
    tab.navigate_to(url).map_err(|e| anyhow!("{e}"))?;
    let started = Instant::now();
    while events.loads.load(Ordering::SeqCst) == loads {
        if started.elapsed() > timeout {
            let state = tab
                .evaluate("location.href + ' is ' + document.readyState", false)
                .ok()
                .and_then(|r| r.value)
                .map(|v| v.to_string())
                .unwrap_or_default();
            bail!("no load event within {} s: {state}", timeout.as_secs());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let result = tab
        .evaluate(AWAIT_IMAGES, true)
        .map_err(|e| anyhow!("{e}"))?;
    match result.value {
        Some(serde_json::Value::String(json)) => {
            serde_json::from_str(&json).map_err(|e| anyhow!("unexpected image list: {e}"))
        }
        _ => bail!(
            "the image check returned no list ({:?})",
            result.description
        ),
    }
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
    crate::session::capture(tab, 0.0, 0.0, f64::from(WINDOW.0), height)
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

pub(crate) fn is_theme_name(theme: &str) -> bool {
    !theme.is_empty()
        && theme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
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
    fn theme_names_cannot_inject_script() {
        assert!(is_theme_name("coal"));
        assert!(!is_theme_name("x'); alert(1); ('"));
        assert!(!is_theme_name(""));
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
