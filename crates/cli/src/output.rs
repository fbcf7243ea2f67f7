//! Printing: aligned tables and sections for people; one JSON document with `--json`;
//! progress bars on a terminal only. [`capture`] collects what a demo prints instead, for a
//! transcript.

use indicatif::{ProgressBar, ProgressStyle};
use std::cell::RefCell;
use std::io::IsTerminal;
use std::process::ExitCode;

/// Where a demo's words go. With `json` set, nothing but the final JSON is printed.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    pub json: bool,
}

impl Output {
    pub fn new(json: bool) -> Output {
        Output { json }
    }

    /// This output, its text shown only where `show` (for a part printed on request).
    pub fn text_if(self, show: bool) -> Output {
        Output {
            json: self.json || !show,
        }
    }

    /// A line of text (not in JSON mode).
    pub fn line(&self, text: impl AsRef<str>) {
        if !self.json {
            print_line(text.as_ref());
        }
    }

    /// A blank line and an underlined heading.
    pub fn section(&self, title: &str) {
        self.line(format!("\n{title}\n{}", "-".repeat(title.chars().count())));
    }

    /// An aligned table; numbers (cells starting with a digit) are right-aligned.
    pub fn table(&self, headers: &[&str], rows: &[Vec<String>]) {
        self.line(table(headers, rows));
    }

    /// Prints the JSON document (in JSON mode only).
    pub fn json(&self, value: &serde_json::Value) {
        if self.json {
            let text = serde_json::to_string_pretty(value);
            print_line(&text.unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}")));
        }
    }
}

thread_local! {
    /// What [`Output`] has printed on this thread while [`capture`] runs.
    static CAPTURED: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `body` with everything an [`Output`] prints on this thread collected instead of
/// written to stdout, and progress bars hidden: `body`'s result and the text, as the demo
/// would have printed it. For transcripts of a demo run from its library (the book's).
pub fn capture<R>(body: impl FnOnce() -> R) -> (R, String) {
    /// Puts back the capture this one is inside of (if any), also when `body` panics.
    struct Restore(Option<String>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CAPTURED.set(self.0.take());
        }
    }
    let restore = Restore(CAPTURED.replace(Some(String::new())));
    let result = body();
    let text = CAPTURED.take().unwrap_or_default();
    drop(restore);
    (result, text)
}

fn capturing() -> bool {
    CAPTURED.with_borrow(Option::is_some)
}

/// Prints a line to stdout, or adds it to the [`capture`] under way. When the reader has
/// gone (`| head`), stop quietly, as command line tools do, instead of panicking on the
/// broken pipe.
fn print_line(text: &str) {
    use std::io::Write;
    let captured = CAPTURED.with_borrow_mut(|c| {
        c.as_mut().map(|buf| {
            buf.push_str(text);
            buf.push('\n');
        })
    });
    if captured.is_some() {
        return;
    }
    if let Err(e) = writeln!(std::io::stdout().lock(), "{text}")
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

/// The `device:` line every demo prints: the backing, the adapter on wgpu, why it was
/// chosen, and the card.
pub fn device_line(info: &gpumem::device::DeviceInfo) -> String {
    let adapter = match info.backend {
        gpumem::Backend::Wgpu => format!(" on {}", info.name),
        _ => String::new(),
    };
    format!(
        "device:  {} backing{adapter} ({}), {} card",
        info.backend, info.reason, info.memory
    )
}

/// Formats an aligned table.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let numeric = |s: &str| s.starts_with(|c: char| c.is_ascii_digit());
    let fmt_row = |cells: Vec<&str>| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, &w)| {
                if numeric(c) {
                    format!("{c:>w$}")
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let mut out = vec![fmt_row(headers.to_vec())];
    out.push(
        widths
            .iter()
            .map(|&w| "-".repeat(w))
            .collect::<Vec<_>>()
            .join("  "),
    );
    out.extend(
        rows.iter()
            .map(|r| fmt_row(r.iter().map(String::as_str).collect())),
    );
    out.join("\n")
}

/// A progress bar on stderr, hidden in JSON mode, during a [`capture`] or when stderr is not
/// a terminal.
pub fn progress(len: u64, message: &str, output: Output) -> ProgressBar {
    if output.json || capturing() || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(message.to_string());
    bar
}

/// Runs a demo's body: an error is printed as `error: …` with its causes, and the process
/// exits with status 1 instead of panicking. A command-line error (`clap::Error`, also
/// `--help` and `--version`) is printed and exits as clap does.
pub fn run_main(body: impl FnOnce() -> anyhow::Result<()>) -> ExitCode {
    run_main_with(|| body().map(|()| ExitCode::SUCCESS))
}

/// [`run_main`] for a body that chooses its own exit status when it succeeds (memviz
/// replay's "does not fit").
pub fn run_main_with(body: impl FnOnce() -> anyhow::Result<ExitCode>) -> ExitCode {
    quiet_mesa();
    match body() {
        Ok(code) => code,
        Err(e) => match e.downcast::<clap::Error>() {
            Ok(usage) => usage.exit(),
            Err(e) => {
                eprintln!("error: {}", error_line(&e));
                ExitCode::FAILURE
            }
        },
    }
}

/// An error with its causes, after the flag that fixes it where the engine's error is one a
/// flag fixes (the engine's messages name settings, not this command line's flags).
fn error_line(e: &anyhow::Error) -> String {
    let flag = match e.chain().find_map(|c| c.downcast_ref::<gpumem::Error>()) {
        Some(gpumem::Error::NoAdapter(_)) => Some("--backend wgpu"),
        Some(gpumem::Error::PlanNeedsCapacity) => Some("--device-memory"),
        Some(gpumem::Error::Config(gpumem::alloc::ConfigError::ContextTooLarge(..))) => {
            Some("--context-memory")
        }
        _ => None,
    };
    let text = chain_text(e);
    match flag {
        Some(flag) => format!("{flag}: {text}"),
        None => text,
    }
}

/// The error and its causes joined by `: `, as anyhow's `{:#}` does, without a cause that
/// the message before it already ends with (an engine error that quotes its source).
fn chain_text(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !parts.last().is_some_and(|p| p.ends_with(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}

/// Mesa's drivers print "XDG_RUNTIME_DIR is invalid" when that variable does not name a
/// private directory; give them one so a demo's output stays clean.
#[cfg(not(unix))]
fn quiet_mesa() {}

/// Mesa's drivers print "XDG_RUNTIME_DIR is invalid" when that variable does not name a
/// private directory; give them one so a demo's output stays clean.
#[cfg(unix)]
fn quiet_mesa() {
    use std::os::unix::fs::PermissionsExt;
    let valid = std::env::var_os("XDG_RUNTIME_DIR")
        .and_then(|d| std::fs::metadata(d).ok())
        .is_some_and(|m| m.is_dir() && m.permissions().mode() & 0o777 == 0o700);
    if valid {
        return;
    }
    let dir = std::env::temp_dir().join("gpumem-xdg-runtime");
    if std::fs::create_dir_all(&dir).is_ok()
        && std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).is_ok()
    {
        // SAFETY: called first thing in `main`, before any other thread exists.
        unsafe { std::env::set_var("XDG_RUNTIME_DIR", &dir) };
    }
}

#[cfg(test)]
mod tests {
    use super::{Output, capture};

    #[test]
    fn a_capture_collects_what_would_be_printed() {
        let ((), text) = capture(|| {
            let out = Output::new(false);
            out.line("one");
            out.section("Two");
            Output::new(true).line("not in JSON mode");
        });
        assert_eq!(text, "one\n\nTwo\n---\n");
        let ((), json) = capture(|| Output::new(true).json(&serde_json::json!({"a": 1})));
        assert_eq!(json, "{\n  \"a\": 1\n}\n");
    }

    #[test]
    fn captures_nest_and_end_with_their_body() {
        let (inner, outer) = capture(|| {
            Output::new(false).line("outer");
            let ((), inner) = capture(|| Output::new(false).line("inner"));
            inner
        });
        assert_eq!((inner.as_str(), outer.as_str()), ("inner\n", "outer\n"));
        assert!(!super::capturing());
        let panicked = std::panic::catch_unwind(|| capture(|| panic!("in the body")));
        assert!(panicked.is_err());
        assert!(!super::capturing());
    }

    #[test]
    fn engine_errors_a_flag_fixes_name_it() {
        use anyhow::Context;
        let plan = Err::<(), _>(gpumem::Error::PlanNeedsCapacity).context("opening the device");
        let line = super::error_line(&plan.unwrap_err());
        assert!(
            line.starts_with("--device-memory: opening the device: "),
            "{line}"
        );
        let none = anyhow::Error::from(gpumem::Error::NoAdapter("no wgpu adapter found".into()));
        assert_eq!(
            super::error_line(&none),
            "--backend wgpu: no wgpu adapter found"
        );
        let context = anyhow::Error::from(gpumem::Error::Config(
            gpumem::alloc::ConfigError::ContextTooLarge(2 << 30, 1 << 30),
        ));
        assert!(
            super::error_line(&context).starts_with("--context-memory: invalid allocator setting: the memory outside the allocator (2.00 GiB) is more than"),
            "{}",
            super::error_line(&context)
        );
        // The setting's own words once, not again as the cause.
        assert_eq!(super::error_line(&context).matches("outside").count(), 1);
        let other = anyhow::Error::from(gpumem::Error::Setup("the training set is empty".into()));
        assert_eq!(super::error_line(&other), "the training set is empty");
    }

    #[test]
    fn tables_align() {
        let t = super::table(
            &["layers", "fits?"],
            &[
                vec!["1".into(), "yes".into()],
                vec!["128".into(), "no".into()],
            ],
        );
        assert_eq!(t, "layers  fits?\n------  -----\n     1  yes\n   128  no");
    }
}
