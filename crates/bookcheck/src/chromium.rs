//! Headless Chromium over the DevTools protocol, as every check here drives it: launched with
//! a fresh profile, its JavaScript errors collected, a page loaded until its images are done,
//! a part of it photographed. Both the page check (`browser.rs`) and the widget sessions
//! (`session.rs`) build on it, so neither needs the other's internals.
//!
//! `headless_chrome` is built without its `fetch` feature: it never downloads a browser, it
//! uses the Chromium installed here.

use anyhow::{Result, anyhow, bail};
use base64::Engine as _;
use headless_chrome::protocol::cdp::Log::LogEntryLevel;
use headless_chrome::protocol::cdp::Page;
use headless_chrome::protocol::cdp::Runtime::ConsoleAPICalledEventTypeOption as ConsoleType;
use headless_chrome::protocol::cdp::Runtime::RemoteObject;
use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::{Browser, LaunchOptions, Tab};
use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The viewport: a laptop screen, wide enough for mdBook's sidebar beside the text.
pub(crate) const WINDOW: (u32, u32) = (1280, 900);

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

/// Whether `theme` is safe to put in the script that selects it: a name, nothing to inject.
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
    fn theme_names_cannot_inject_script() {
        assert!(is_theme_name("coal"));
        assert!(!is_theme_name("x'); alert(1); ('"));
        assert!(!is_theme_name(""));
    }
}
