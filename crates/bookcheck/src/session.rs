//! One headless Chromium tab on the book served over HTTP, as the checks that drive a page's
//! widgets (the calculator, a quiz) use it: open, visit, run a script, photograph a part.

/// The screenshot primitive, also at the path it was first public under.
pub use crate::chromium::capture;
use crate::chromium::{Events, is_theme_name, launch, listen, visit};
use crate::serve::StaticServer;
use anyhow::{Context, Result, anyhow, bail};
use headless_chrome::{Browser, Tab};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Screenshots never grow past this height, so a long part cannot make a huge PNG.
const MAX_PART_HEIGHT: f64 = 6000.0;

/// A tab and what it needs alive: fields drop in order, the tab before its browser, the
/// browser before the server and the profile folder.
pub struct Session {
    pub tab: Arc<Tab>,
    events: Events,
    /// `Some` until the session is dropped, which closes it before removing the profile.
    browser: Option<Browser>,
    server: StaticServer,
    profile: Option<tempfile::TempDir>,
    timeout: Duration,
}

impl Drop for Session {
    /// Chromium's helper processes can write into the profile for a moment after the browser
    /// has gone, so a folder removed at once may come back (about one per CI run did): close
    /// the browser first, then remove the folder until it stays gone.
    fn drop(&mut self) {
        drop(self.browser.take());
        let Some(profile) = self.profile.take() else {
            return;
        };
        let path = profile.keep();
        for _ in 0..PROFILE_REMOVALS {
            let _ = std::fs::remove_dir_all(&path);
            std::thread::sleep(Duration::from_millis(100));
            if !path.exists() {
                return;
            }
        }
        eprintln!(
            "bookcheck: could not remove the browser profile {}",
            path.display()
        );
    }
}

/// Tries at removing the browser's profile, 100 ms apart.
const PROFILE_REMOVALS: usize = 20;

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// [`Session::open`] once the screenshot folder exists (when wanted), with axe-core's
    /// script read (when given): what every check that opens pages does first.
    pub fn prepare(
        root: &Path,
        chromium: &Path,
        theme: Option<&str>,
        timeout: Duration,
        screenshots: Option<&Path>,
        axe: Option<&Path>,
    ) -> Result<(Session, Option<String>)> {
        screenshot_folder(screenshots)?;
        let axe = axe.map(crate::axe::load).transpose()?;
        Ok((Session::open(root, chromium, theme, timeout)?, axe))
    }

    /// Serves the book at `root`, starts `chromium` with a fresh profile and `theme`
    /// selected, and opens a tab whose steps may take `timeout` each.
    pub fn open(
        root: &Path,
        chromium: &Path,
        theme: Option<&str>,
        timeout: Duration,
    ) -> Result<Session> {
        if let Some(theme) = theme
            && !is_theme_name(theme)
        {
            bail!("`{theme}` is not an mdBook theme name (letters, digits, `-` and `_` only)");
        }
        let server = StaticServer::start(root)?;
        let profile = tempfile::Builder::new()
            .prefix("bookcheck-chromium-")
            .tempdir()
            .context("cannot create a temporary browser profile")?;
        let browser = launch(chromium, profile.path())?;
        let tab = browser
            .new_tab()
            .map_err(|e| anyhow!("Chromium opened no tab: {e}"))?;
        tab.set_default_timeout(timeout);
        let events = listen(&tab, theme)?;
        Ok(Session {
            tab,
            events,
            browser: Some(browser),
            server,
            profile: Some(profile),
            timeout,
        })
    }

    /// Loads `page` (relative to the book), waits for it and its images, and returns the
    /// images that did not load.
    pub fn visit(&self, page: &str) -> Result<Vec<String>> {
        visit(
            &self.tab,
            &self.events,
            &self.server.url(page),
            self.timeout,
        )
    }

    /// The JavaScript errors since the last call.
    pub fn take_errors(&self) -> Vec<String> {
        self.events.take_errors()
    }

    /// Runs `script` (which returns a string, or a promise of one) in the page.
    pub fn eval(&self, script: &str) -> Result<String> {
        let result = self
            .tab
            .evaluate(script, true)
            .map_err(|e| anyhow!("the page could not run a script: {e}"))?;
        match result.value {
            Some(Value::String(s)) => Ok(s),
            other => bail!(
                "the page's script returned {other:?} ({})",
                result.description.unwrap_or_default()
            ),
        }
    }

    /// Saves `dir/NAME.png` of the part of the page `rect_script` names (a script returning
    /// `JSON.stringify([x, y, width, height])` in page coordinates), and returns its path.
    pub fn shoot(&self, dir: &Path, name: &str, rect_script: &str) -> Result<PathBuf> {
        let [x, y, width, height]: [f64; 4] = serde_json::from_str(&self.eval(rect_script)?)
            .context("the part to photograph has no rectangle")?;
        let png = capture(&self.tab, x, y, width, height.clamp(1.0, MAX_PART_HEIGHT))?;
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).with_context(|| format!("cannot write {}", path.display()))?;
        Ok(path)
    }
}

/// How to run a check that drives one page's widget (the calculator, a quiz).
#[derive(Debug, Clone)]
pub struct WidgetOptions {
    pub chromium: PathBuf,
    /// The page (relative to the book) with the widget on it.
    pub page: String,
    /// Where to save a screenshot of each state the widget is put in; none without it.
    pub screenshots: Option<PathBuf>,
    pub theme: Option<String>,
    /// How long the page, or one step on it, may take.
    pub timeout: Duration,
    /// axe-core's script: the page is audited in each state when given.
    pub axe: Option<PathBuf>,
}

/// What a widget check saw.
#[derive(Debug, Default)]
pub struct WidgetReport {
    pub problems: Vec<String>,
    /// Each state the widget was put in, with what it showed.
    pub states: Vec<String>,
    pub screenshots: Vec<PathBuf>,
    /// axe findings on mdBook's own elements (listed, not counted).
    pub upstream: Vec<String>,
}

impl WidgetReport {
    /// Prints what the check saw, each line prefixed with its kind.
    pub fn print(&self, check: &str) {
        self.states.iter().for_each(|s| println!("state: {s}"));
        self.problems
            .iter()
            .for_each(|p| println!("{check} problem: {p}"));
        self.upstream
            .iter()
            .for_each(|u| println!("mdBook's own (not counted): {u}"));
        self.screenshots
            .iter()
            .for_each(|s| println!("screenshot: {}", s.display()));
    }
}

/// A session on a widget's page: the tab, the options, and axe's script when wanted.
#[derive(Debug)]
pub struct Widget<'a> {
    pub session: Session,
    pub options: &'a WidgetOptions,
    axe: Option<String>,
}

impl<'a> Widget<'a> {
    /// Prepares the screenshot folder and axe, opens the browser and loads the page.
    pub fn open(root: &Path, options: &'a WidgetOptions) -> Result<Widget<'a>> {
        let (session, axe) = Session::prepare(
            root,
            &options.chromium,
            options.theme.as_deref(),
            options.timeout,
            options.screenshots.as_deref(),
            options.axe.as_deref(),
        )?;
        let widget = Widget {
            session,
            options,
            axe,
        };
        widget.reload()?;
        Ok(widget)
    }

    /// Loads the page (again).
    pub fn reload(&self) -> Result<()> {
        self.session
            .visit(&self.options.page)
            .map(|_| ())
            .with_context(|| format!("{} did not load", self.options.page))
    }

    /// axe's audit of the page with the widget in `state`, when axe is wanted.
    pub fn audit(&self, state: &str, report: &mut WidgetReport) -> Result<()> {
        let Some(script) = &self.axe else {
            return Ok(());
        };
        let (ours, upstream) = crate::axe::audit_state(&self.session.tab, script, state)?;
        report.problems.extend(ours);
        report.upstream.extend(upstream);
        Ok(())
    }

    /// `NAME.png` of the part `rect_script` names (see [`Session::shoot`]), when
    /// screenshots are wanted.
    pub fn shoot(&self, name: &str, rect_script: &str, report: &mut WidgetReport) -> Result<()> {
        if let Some(dir) = &self.options.screenshots {
            report
                .screenshots
                .push(self.session.shoot(dir, name, rect_script)?);
        }
        Ok(())
    }
}

/// Creates the screenshot folder when one is wanted.
pub fn screenshot_folder(dir: Option<&Path>) -> Result<()> {
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the screenshot folder {}", dir.display()))?;
    }
    Ok(())
}

/// `text` cut to its first 400 characters, for a problem's message.
pub fn clip(text: &str) -> String {
    const MAX: usize = 400;
    match text.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}
