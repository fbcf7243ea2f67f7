//! The replay in the page ("Your own model"), checked in the page a reader opens: each
//! fixture is given to the page's file field as a reader would give it, with settings set in
//! the form, and the page's answer — its report, text and exit status, or its refusal —
//! must equal what `memviz replay` prints for the same file and flags (so a committed module
//! built from older code fails). A 100 000-entry snapshot, made at check time by memviz's
//! synthetic generator, is timed in the page. The widget is photographed and audited by axe
//! in each state.

use crate::session::{Session, Widget, WidgetOptions, WidgetReport, clip};
use anyhow::{Context, Result, anyhow, bail};
use gpumem_replay_page::Request;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The page with the replay on it.
pub const DEFAULT_PAGE: &str = "own-model.html";

/// How to run the check.
#[derive(Debug, Clone)]
pub struct Options {
    pub widget: WidgetOptions,
    /// The `memviz` program whose answers the page's must equal.
    pub memviz: PathBuf,
    /// The repository's root, where the fixtures are.
    pub repo: PathBuf,
    /// Only the shipped recording, by the keyboard, and axe (the other themes' run).
    pub quick: bool,
}

/// What the check saw.
#[derive(Debug, Default)]
pub struct Report {
    /// Fixtures whose page answer was compared with memviz's.
    pub compared: usize,
    /// The 100 000-entry snapshot: the replay's time in the page's worker, and from the
    /// file given to the answer shown.
    pub large: Option<(f64, f64)>,
    pub widget: WidgetReport,
}

/// One file the page is given, with the fields set and the state wanted.
struct Case {
    name: &'static str,
    file: &'static str,
    fields: &'static [(&'static str, &'static str)],
    exit: u8,
    /// Whether the page's default searches the largest batch (a recording) or skips it.
    largest: bool,
}

const CASES: [Case; 4] = [
    Case {
        name: "replay_recording",
        file: "crates/gpumem/tests/fixtures/recorded/transformer_encoder.pickle",
        fields: &[("card", "24GiB")],
        exit: 0,
        largest: true,
    },
    Case {
        name: "replay_h200",
        file: "crates/memviz/tests/fixtures/gpu/2026-11-28-h200/transformer_encoder.pickle",
        fields: &[
            ("card", "custom"),
            ("custom", "80GiB"),
            ("exp", "on"),
            ("torch", "2.11"),
            ("device", "0"),
        ],
        exit: 0,
        largest: false,
    },
    Case {
        name: "replay_oom",
        file: "crates/memviz/tests/fixtures/gpu/2026-11-28-h200/challenge1_r1173000.pickle",
        fields: &[("card", "lesson"), ("frames", "3")],
        exit: 3,
        largest: false,
    },
    Case {
        name: "replay_hostile",
        file: "crates/replay-page/tests/hostile.pickle",
        fields: &[],
        exit: 1,
        largest: false,
    },
];

/// Opens the page from the book at `root` and checks its replay.
pub fn check(root: &Path, options: &Options) -> Result<Report> {
    let widget = Widget::open(root, &options.widget)?;
    let mut report = Report::default();
    ready(&widget.session, options.widget.timeout)?;
    shipped_by_keyboard(&widget, &mut report)?;
    if !options.quick {
        for case in &CASES {
            widget.reload()?;
            ready(&widget.session, options.widget.timeout)?;
            let file = options.repo.join(case.file);
            let shown = give(&widget, &file, case.fields)?;
            compare(options, &file, &shown, case.exit, &mut report.widget)?;
            let searched = shown.answer.contains("\"--largest-batch\"");
            if searched != case.largest {
                report.widget.problems.push(format!(
                    "{}: the page {} the largest batch",
                    case.name,
                    if searched {
                        "searched"
                    } else {
                        "did not search"
                    }
                ));
            }
            state(&widget, case.name, &shown, &mut report.widget)?;
            report.compared += 1;
        }
        refused_setting(&widget, options, &mut report)?;
        report.large = Some(large(&widget, options, &mut report.widget)?);
    }
    report.widget.problems.extend(widget.session.take_errors());
    Ok(report)
}

/// Waits until the page has built its form (the module loaded in its worker).
fn ready(session: &Session, wait: Duration) -> Result<()> {
    poll(
        session,
        wait,
        "the replay's form",
        "(() => String(!!document.querySelector('.gpumem-replay.replay-ready')))()",
    )
    .map(|_| ())
}

/// The shipped recording, asked for from the keyboard (focus its button, press Enter).
fn shipped_by_keyboard(widget: &Widget<'_>, report: &mut Report) -> Result<()> {
    let tab = &widget.session.tab;
    tab.find_element(".gpumem-replay .replay-sample")
        .map_err(|e| anyhow!("no button for the shipped recording: {e}"))?
        .focus()
        .map_err(|e| anyhow!("cannot focus the shipped recording's button: {e}"))?;
    tab.press_key("Enter")
        .map_err(|e| anyhow!("cannot press Enter: {e}"))?;
    let shown = settled(&widget.session, widget.options.timeout, "")?;
    let answer: Value = serde_json::from_str(&shown.answer)?;
    if answer["exit"] != 0 {
        report.widget.problems.push(format!(
            "the shipped recording does not fit the page's first card: {}",
            clip(&shown.answer)
        ));
    }
    state(widget, "replay_shipped", &shown, &mut report.widget)
}

/// Records what the page showed in state `name`, photographs and audits it.
fn state(widget: &Widget<'_>, name: &str, shown: &Shown, report: &mut WidgetReport) -> Result<()> {
    report
        .states
        .push(format!("{name}: {}", first_line(&shown.text)));
    widget.shoot(name, WIDGET_RECT, report)?;
    widget.audit(name, report)
}

/// What the page sent and showed once its answer is on the page.
struct Shown {
    request: String,
    answer: String,
    text: String,
    ms: f64,
}

/// Gives `file` to the page's file field (as a reader choosing it would) after setting
/// `fields` (by the end of their ids; `on` checks a box), and waits for the answer.
fn give(widget: &Widget<'_>, file: &Path, fields: &[(&str, &str)]) -> Result<Shown> {
    let session = &widget.session;
    for (field, value) in fields {
        set_field(session, field, value)?;
    }
    let before = session.eval(ANSWER_SO_FAR)?;
    let path = file
        .canonicalize()
        .with_context(|| format!("no fixture {}", file.display()))?;
    let path = path.to_str().context("a fixture's path is not UTF-8")?;
    session
        .tab
        .find_element(".gpumem-replay input[type=file]")
        .map_err(|e| anyhow!("no file field: {e}"))?
        .set_input_files(&[path])
        .map_err(|e| anyhow!("cannot give the page {path}: {e}"))?;
    session.eval(
        "(() => { const f = document.querySelector('.gpumem-replay input[type=file]'); \
         f.dispatchEvent(new Event('change', { bubbles: true })); return 'ok'; })()",
    )?;
    settled(session, widget.options.timeout, &before)
}

/// Sets the form's field whose id ends with `-{field}`.
fn set_field(session: &Session, field: &str, value: &str) -> Result<()> {
    let script = format!(
        "(() => {{ const c = document.querySelector('.gpumem-replay [id$=\"-{field}\"]'); \
         if (!c) return 'missing'; \
         if (c.type === 'checkbox') c.checked = {checked}; else c.value = {value}; \
         c.dispatchEvent(new Event('change', {{ bubbles: true }})); return 'ok'; }})()",
        checked = value == "on",
        value = serde_json::to_string(value)?,
    );
    match session.eval(&script)?.as_str() {
        "ok" => Ok(()),
        _ => bail!("the replay's form has no field `{field}`"),
    }
}

const ANSWER_SO_FAR: &str = "(() => { const h = document.querySelector('.gpumem-replay'); return (h && h.dataset.answer) || ''; })()";

/// Waits until the page shows an answer other than `before`, and reads it.
fn settled(session: &Session, wait: Duration, before: &str) -> Result<Shown> {
    let script = "(() => { const h = document.querySelector('.gpumem-replay'); \
         const o = h.querySelector('.replay-output'); \
         return JSON.stringify({ busy: h.getAttribute('aria-busy') === 'true', \
           answer: h.dataset.answer || '', request: h.dataset.request || '', \
           ms: Number(h.dataset.ms || 'NaN'), text: o ? o.innerText : '' }); })()";
    let started = Instant::now();
    loop {
        let v: Value = serde_json::from_str(&session.eval(script)?)?;
        let answer = v["answer"].as_str().unwrap_or_default();
        if v["busy"] == false && !answer.is_empty() && answer != before {
            return Ok(Shown {
                request: v["request"].as_str().unwrap_or_default().to_string(),
                answer: answer.to_string(),
                text: v["text"].as_str().unwrap_or_default().to_string(),
                ms: v["ms"].as_f64().unwrap_or(f64::NAN),
            });
        }
        if started.elapsed() > wait {
            bail!("the replay gave no answer within {} s", wait.as_secs());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `script` until it returns "true".
fn poll(session: &Session, wait: Duration, what: &str, script: &str) -> Result<()> {
    let started = Instant::now();
    while session.eval(script)? != "true" {
        if started.elapsed() > wait {
            bail!("{what} did not appear within {} s", wait.as_secs());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

/// What `memviz replay` printed and its exit status.
struct Printed {
    stdout: String,
    stderr: String,
    exit: u8,
}

/// `memviz` with `args` (the page's command line, past `memviz`; `--json` when asked), run
/// in `file`'s folder so that it names the file as the page does.
fn memviz(options: &Options, file: &Path, args: &[String], json: bool) -> Result<Printed> {
    let dir = file.parent().context("a fixture has no folder")?;
    // Absolute: a relative program path would be read from the fixture's folder.
    let program = options.memviz.canonicalize().with_context(|| {
        format!(
            "no memviz at {} (build it: cargo build -p memviz)",
            options.memviz.display()
        )
    })?;
    let mut command = Command::new(program);
    command.args(args).current_dir(dir);
    if json {
        command.arg("--json");
    }
    let out = command.output().with_context(|| {
        format!(
            "cannot run {} (build it: cargo build -p memviz)",
            options.memviz.display()
        )
    })?;
    Ok(Printed {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        exit: out.status.code().map_or(255, |c| c as u8),
    })
}

/// The page's answer against memviz's on the same file and request.
fn compare(
    options: &Options,
    file: &Path,
    shown: &Shown,
    exit: u8,
    report: &mut WidgetReport,
) -> Result<()> {
    let request: Request = serde_json::from_str(&shown.request).context("the page's request")?;
    let page: Value = serde_json::from_str(&shown.answer).context("the page's answer")?;
    // The command line the page says it answered (its default searches the largest batch
    // only where the file allows it); before the file is read, the request's own.
    let args: Vec<String> = match page.get("args") {
        Some(a) => serde_json::from_value(a.clone()).context("the page's command line")?,
        None => request.args(),
    };
    let label = file
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().into_owned());
    let differ = |what: &str, page: &str, cli: &str| {
        format!(
            "{label}: the page's {what} differs from memviz's (rebuild the module: \
             scripts/build-page-modules)\n  page:   {}\n  memviz: {}",
            clip(page),
            clip(cli)
        )
    };
    let mut problems = Vec::new();
    let json = memviz(options, file, &args, true)?;
    if page["exit"] != json.exit {
        problems.push(differ(
            "exit status",
            &page["exit"].to_string(),
            &json.exit.to_string(),
        ));
    }
    if json.exit != exit {
        problems.push(format!(
            "{label}: memviz exits {}, the case wants {exit}",
            json.exit
        ));
    }
    match page["error"].as_str() {
        Some(error) => {
            let said = json.stderr.trim().trim_start_matches("error: ");
            if said != error {
                problems.push(differ("refusal", error, said));
            }
            if !shown.text.contains(error) {
                problems.push(format!("{label}: the page does not show its refusal"));
            }
        }
        None => {
            let document: Value = serde_json::from_str(&json.stdout)
                .with_context(|| format!("memviz printed no JSON for {label}: {}", json.stderr))?;
            if page["report"] != document {
                problems.push(differ(
                    "report",
                    &page["report"].to_string(),
                    &document.to_string(),
                ));
            }
            let text = memviz(options, file, &args, false)?.stdout;
            if page["text"] != text.as_str() {
                problems.push(differ(
                    "text",
                    page["text"].as_str().unwrap_or_default(),
                    &text,
                ));
            }
            if !shown.text.contains(first_line(&text)) {
                problems.push(format!("{label}: the page does not show memviz's text"));
            }
        }
    }
    report.problems.extend(problems);
    Ok(())
}

/// A card of 0 bytes typed into the size field: refused with the command line's words.
fn refused_setting(widget: &Widget<'_>, options: &Options, report: &mut Report) -> Result<()> {
    let before = widget.session.eval(ANSWER_SO_FAR)?;
    set_field(&widget.session, "card", "custom")?;
    set_field(&widget.session, "custom", "0")?;
    let shown = settled(&widget.session, widget.options.timeout, &before)?;
    let answer: Value = serde_json::from_str(&shown.answer)?;
    let request: Request = serde_json::from_str(&shown.request)?;
    let file = options.repo.join(CASES[3].file);
    match answer["error"].as_str() {
        Some(e) if e.starts_with("--card 0: ") => {
            let cli = memviz(options, &file, &request.args(), true)?;
            if cli.exit != 2 || !cli.stderr.contains(e.trim_start_matches("--card 0: ")) {
                report.widget.problems.push(format!(
                    "a card of 0: the page says `{e}`, memviz (exit {}) says `{}`",
                    cli.exit,
                    cli.stderr.trim()
                ));
            }
        }
        _ => report.widget.problems.push(format!(
            "a card of 0 is not refused: {}",
            clip(&shown.answer)
        )),
    }
    state(widget, "replay_refused", &shown, &mut report.widget)
}

/// Trace entries of the large snapshot the page is timed on.
pub const LARGE_EVENTS: usize = 100_000;

/// The 100 000-entry snapshot, made now, given to the page on the ideal card: its answer
/// against memviz's, and (the worker's ms, the wall ms from the file given to the answer).
fn large(
    widget: &Widget<'_>,
    options: &Options,
    problems: &mut WidgetReport,
) -> Result<(f64, f64)> {
    let dir = tempfile::Builder::new()
        .prefix("bookcheck-replay-")
        .tempdir()?;
    let file = dir.path().join("synthetic_100k.pickle");
    let shape = memviz::synthetic::Shape {
        events: LARGE_EVENTS,
        leaked: 2_000,
        ..memviz::synthetic::Shape::REAL_RUN
    };
    memviz::synthetic::write(&file, &shape)
        .with_context(|| format!("cannot write {}", file.display()))?;
    widget.reload()?;
    ready(&widget.session, widget.options.timeout)?;
    set_field(&widget.session, "card", "ideal")?;
    let started = Instant::now();
    let shown = give(widget, &file, &[])?;
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    compare(options, &file, &shown, 0, problems)?;
    problems
        .states
        .push(format!("replay_large: {}", first_line(&shown.text)));
    Ok((shown.ms, wall))
}

fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// Where the replay is, for its screenshots.
const WIDGET_RECT: &str = "(() => { const r = document.querySelector('.gpumem-replay')\
    .getBoundingClientRect(); \
    return JSON.stringify([r.left + scrollX, r.top + scrollY, r.width, r.height]); })()";
