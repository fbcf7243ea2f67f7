//! The in-page calculator, checked in the page a reader opens: the committed WebAssembly
//! module must answer exactly what the engine answers natively (so a module built from older
//! code fails), and the widget must show those answers in its three states — fits, does not
//! fit, refused — when driven through the DevTools protocol, partly from the keyboard, and
//! pass axe's audit in each.

use crate::session::{Session, Widget, WidgetOptions, WidgetReport, clip};
use anyhow::{Context, Result, anyhow, bail};
use headless_chrome::browser::tab::ModifierKey;
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// The page whose calculator is driven (the first one the book shows).
pub const DEFAULT_PAGE: &str = "memory-equation.html";

/// How to run the check.
pub type Options = WidgetOptions;

/// What the check saw.
#[derive(Debug, Default)]
pub struct Report {
    /// Setups answered by both the module and the native engine.
    pub compared: usize,
    pub widget: WidgetReport,
}

/// Opens `options.page` from the book at `root` and checks its calculator.
pub fn check(root: &Path, options: &Options) -> Result<Report> {
    let widget = Widget::open(root, options)?;
    let mut report = Report::default();
    compare_setups(&widget.session, &mut report)?;
    drive_states(&widget, &mut report.widget)?;
    report.widget.problems.extend(widget.session.take_errors());
    Ok(report)
}

/// Every check setup through the page's module, compared with the native engine's answer.
fn compare_setups(session: &Session, report: &mut Report) -> Result<()> {
    let setups = gpumem_calculator::check_setups();
    let script = format!(
        "(async () => {{ const c = await window.gpumemCalculator.load(); \
         return JSON.stringify({}.map(r => c.calculateText(r))); }})()",
        serde_json::to_string(&setups)?
    );
    let answers: Vec<String> = serde_json::from_str(&session.eval(&script)?)
        .context("the page's module answered something that is not a list")?;
    if answers.len() != setups.len() {
        bail!("{} setups sent, {} answers", setups.len(), answers.len());
    }
    for (setup, in_page) in setups.iter().zip(&answers) {
        let native = gpumem_calculator::calculate(setup);
        if &native != in_page {
            report.widget.problems.push(format!(
                "the committed module answers differently from the engine (rebuild it: \
                 scripts/build-page-modules): {setup}\n  page:   {}\n  native: {}",
                clip(in_page),
                clip(&native)
            ));
        }
    }
    report.compared = setups.len();
    if report.compared < gpumem_calculator::AT_LEAST {
        report.widget.problems.push(format!(
            "only {} setups compared; at least {} are wanted",
            report.compared,
            gpumem_calculator::AT_LEAST
        ));
    }
    Ok(())
}

/// The widget's three states: as the page starts (a batch that fits), with the whole
/// training set (which does not), and with a width typed from the keyboard that the engine
/// refuses. Each shown answer must be the native engine's answer to the request the widget
/// sent; the first must not show the largest batch that fits (Challenge 1's answer) until
/// its disclosure is opened.
fn drive_states(widget: &Widget<'_>, report: &mut WidgetReport) -> Result<()> {
    let (session, wait) = (&widget.session, widget.options.timeout);
    let state = |report: &mut WidgetReport, name: &str| -> Result<()> {
        widget.shoot(name, WIDGET_RECT, report)?;
        widget.audit(name, report)
    };
    let first = settled(session, wait)?;
    expect(report, "as the page starts", &first, |a| a["fits"] == true)?;
    state(report, "calculator_fits")?;
    no_spoiler(session, &first, report)?;

    session.eval(
        "(() => { const s = document.querySelector('.gpumem-calculator select[id$=\"-batch\"]'); \
         s.value = 'all'; s.dispatchEvent(new Event('change', { bubbles: true })); return 'ok'; })()",
    )?;
    let mut whole = settled(session, wait)?;
    if session.eval(GUESS_FIRST)? == "true" {
        whole.text += &folded_failure(session, &whole, report)?;
    }
    expect(report, "with the whole training set", &whole, |a| {
        a["fits"] == false
    })?;
    state(report, "calculator_oom")?;

    // From the keyboard: focus the width, select it all, type a width of 0.
    let tab = &session.tab;
    tab.find_element(".gpumem-calculator input[id$=\"-width\"]")
        .map_err(|e| anyhow!("no width field: {e}"))?
        .focus()
        .map_err(|e| anyhow!("cannot focus the width field: {e}"))?;
    tab.press_key_with_modifiers("a", Some(&[ModifierKey::Ctrl]))
        .and_then(|t| t.type_str("0"))
        .map_err(|e| anyhow!("cannot type into the width field: {e}"))?;
    let refused = settled(session, wait)?;
    expect(report, "with a width of 0 typed", &refused, |a| {
        a["error"].is_string()
    })?;
    state(report, "calculator_refused")
}

/// The largest batch that fits (Challenge 1's answer on the lesson's page) is not in what the
/// widget first shows, in any of the ways the book writes a number; opened, its disclosure
/// shows it (so this check can see it when it is shown).
fn no_spoiler(session: &Session, first: &Shown, report: &mut WidgetReport) -> Result<()> {
    let native: Value = serde_json::from_str(&gpumem_calculator::calculate(&first.request))?;
    let Some(largest) = native["largest_batch"].as_u64() else {
        return Ok(());
    };
    let forms = number_forms(largest);
    if let Some(form) = forms.iter().find(|f| first.text.contains(f.as_str())) {
        report.problems.push(format!(
            "as the page starts: the widget shows the largest batch that fits ({form}), \
             Challenge 1's answer, before the reader asks"
        ));
    }
    let opened = session.eval(
        "(() => { const d = document.querySelector('.gpumem-calculator .calc-limits'); \
         if (!d) return ''; d.open = true; const t = d.innerText; d.open = false; \
         return t; })()",
    )?;
    if !forms.iter().any(|f| opened.contains(f.as_str())) {
        report.problems.push(format!(
            "the widget's folded limits do not show the largest batch ({largest}) when opened"
        ));
    }
    Ok(())
}

/// Whether the first calculator is on a page before Challenge 1 (`data-guess-first`).
const GUESS_FIRST: &str = "(() => { const h = document.querySelector('.gpumem-calculator'); \
     return String(!!h && h.dataset.guessFirst === 'true'); })()";

/// On a page before Challenge 1, a step that does not fit must not show where it ran out —
/// its pass and its tensor, Challenge 1's guess — until the reader opens that disclosure;
/// opened, it shows them. Returns the opened disclosure's text.
fn folded_failure(session: &Session, shown: &Shown, report: &mut WidgetReport) -> Result<String> {
    let native: Value = serde_json::from_str(&gpumem_calculator::calculate(&shown.request))?;
    let pass = native["failed_in"].as_str().unwrap_or_default();
    let tensor = native["timeline"]["failed_label"]
        .as_str()
        .unwrap_or_default();
    let opened = session.eval(
        "(() => { const d = document.querySelector('.gpumem-calculator .calc-failure'); \
         if (!d) return ''; d.open = true; const t = d.innerText; d.open = false; \
         return t; })()",
    )?;
    for (what, word) in [("pass", pass), ("tensor", tensor)] {
        if word.is_empty() {
            report
                .problems
                .push(format!("the engine's answer names no failed {what}"));
            continue;
        }
        // The tensor as a word (`a0`), not inside another (`data0`).
        let named = |text: &str| {
            text.split(|c: char| !c.is_alphanumeric() && c != '_')
                .any(|w| w == word)
                || (word.contains(' ') && text.contains(word))
        };
        if named(&shown.text) {
            report.problems.push(format!(
                "with the whole training set: the widget shows where it ran out ({what} \
                 `{word}`), Challenge 1's guess, before the reader opens the disclosure"
            ));
        }
        if !named(&opened) {
            report.problems.push(format!(
                "the widget's folded failure does not name its {what} (`{word}`) when opened"
            ));
        }
    }
    Ok(opened)
}

/// `n` as the book and the widget may print it: `655360`, `655,360`, `655 360` (a space, a
/// narrow or a thin one).
pub fn number_forms(n: u64) -> Vec<String> {
    let digits = n.to_string();
    let mut forms = vec![digits.clone()];
    if digits.len() > 3 {
        for sep in [",", " ", "\u{202f}", "\u{2009}", "\u{a0}"] {
            let mut grouped = String::new();
            for (i, c) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i).is_multiple_of(3) {
                    grouped.push_str(sep);
                }
                grouped.push(c);
            }
            forms.push(grouped);
        }
    }
    forms
}

/// Where the first calculator is, for its screenshots.
const WIDGET_RECT: &str = "(() => { const r = document.querySelector('.gpumem-calculator')\
    .getBoundingClientRect(); \
    return JSON.stringify([r.left + scrollX, r.top + scrollY, r.width, r.height]); })()";

/// What the widget sent and showed once its answer is on the page.
struct Shown {
    request: String,
    text: String,
}

/// Waits until the first calculator has answered its latest request, and reads it.
fn settled(session: &Session, wait: Duration) -> Result<Shown> {
    let started = Instant::now();
    loop {
        let state = session.eval(
            "(() => { const h = document.querySelector('.gpumem-calculator'); \
             const s = h && h.querySelector('.calc-status'); \
             const o = h && h.querySelector('.calc-output'); \
             return JSON.stringify({ busy: !s || s.textContent !== '' || !o || !o.firstChild, \
               request: (h && h.dataset.request) || '', text: o ? o.innerText : '' }); })()",
        )?;
        let v: Value = serde_json::from_str(&state)?;
        if v["busy"] == false {
            return Ok(Shown {
                request: v["request"].as_str().unwrap_or_default().to_string(),
                text: v["text"].as_str().unwrap_or_default().to_string(),
            });
        }
        if started.elapsed() > wait {
            bail!("the calculator gave no answer within {} s", wait.as_secs());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Checks that `shown` is the native answer to the widget's own request, in the state
/// `wanted`, and records what it showed.
fn expect(
    report: &mut WidgetReport,
    state: &str,
    shown: &Shown,
    wanted: impl Fn(&Value) -> bool,
) -> Result<()> {
    let native: Value = serde_json::from_str(&gpumem_calculator::calculate(&shown.request))?;
    if !wanted(&native) {
        report.problems.push(format!(
            "{state}: the engine's answer is not the state wanted: {}",
            clip(&native.to_string())
        ));
    }
    for must in shown_texts(&native) {
        if !shown.text.contains(&must) {
            report.problems.push(format!(
                "{state}: the page does not show `{must}` (request {})",
                shown.request
            ));
        }
    }
    let first_line = shown
        .text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    report
        .states
        .push(format!("{state}: {}", first_line.trim()));
    Ok(())
}

/// The parts of an answer the page must show word for word.
fn shown_texts(answer: &Value) -> Vec<String> {
    if let Some(error) = answer["error"].as_str() {
        return vec![error.to_string()];
    }
    let mut out: Vec<String> = ["peak_allocated", "peak_reserved", "card"]
        .iter()
        .filter_map(|k| answer[k]["text"].as_str().map(String::from))
        .collect();
    if let Some(message) = answer["oom_message"].as_str() {
        out.push(message.to_string());
    }
    out
}
