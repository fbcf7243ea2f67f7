//! One headless Chromium tab on the book served over HTTP, as the checks that drive a page's
//! widgets (the calculator, a quiz) use it: open, visit, run a script, photograph a part.

use crate::browser::{Events, is_theme_name, launch, listen, visit};
use crate::serve::StaticServer;
use anyhow::{Context, Result, anyhow, bail};
use base64::Engine as _;
use headless_chrome::protocol::cdp::Page;
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
    _browser: Browser,
    server: StaticServer,
    _profile: tempfile::TempDir,
    timeout: Duration,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Session {
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
            _browser: browser,
            server,
            _profile: profile,
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

/// A PNG of the page's rectangle at `x, y` (page coordinates, beyond the viewport too).
pub fn capture(tab: &Arc<Tab>, x: f64, y: f64, width: f64, height: f64) -> Result<Vec<u8>> {
    let shot = tab
        .call_method(Page::CaptureScreenshot {
            format: Some(Page::CaptureScreenshotFormatOption::Png),
            quality: None,
            clip: Some(Page::Viewport {
                x,
                y,
                width,
                height,
                scale: 1.0,
            }),
            from_surface: Some(true),
            capture_beyond_viewport: Some(true),
            optimize_for_speed: None,
        })
        .map_err(|e| anyhow!("no screenshot: {e}"))?;
    base64::engine::general_purpose::STANDARD
        .decode(shot.data)
        .map_err(|e| anyhow!("the browser sent a bad image: {e}"))
}

/// Creates the screenshot folder when one is wanted.
pub fn screenshot_folder(dir: Option<&Path>) -> Result<()> {
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the screenshot folder {}", dir.display()))?;
    }
    Ok(())
}
