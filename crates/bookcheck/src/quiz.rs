//! One predict-then-check quiz (mdbook-quiz), answered in the page a reader opens, from the
//! keyboard: once with the first question wrong — the review must mark it wrong and, asked
//! for the correct answers, show its explanation — and once, after a reload, all right — the
//! review must accept every answer. axe audits the quiz while a question and the review are
//! on screen (the page pass only sees its Start button).

use crate::session::{Session, Widget, WidgetOptions, WidgetReport};
use anyhow::{Context, Result, anyhow, bail};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};
use text::{clip, css_string, plain};

mod contrast;
mod text;

/// The page whose quiz is answered.
pub const DEFAULT_PAGE: &str = "mini-batching.html";

/// How to run the check.
pub type Options = WidgetOptions;

/// What the check saw.
pub type Report = WidgetReport;

/// One question as the page carries it (`data-quiz-questions`): Markdown strings, which the
/// quiz also puts in each radio button's `value`.
#[derive(Debug, Clone)]
struct Question {
    answer: String,
    distractors: Vec<String>,
    context: String,
}

/// Opens `options.page` from the book at `root` and answers its first quiz twice.
pub fn check(root: &Path, options: &Options) -> Result<Report> {
    let widget = Widget::open(root, options)?;
    let run = Run { widget: &widget };
    let mut report = Report::default();
    let questions = questions(&widget.session)?;
    run.wait_for(".mdbook-quiz button.start", "the quiz's Start button")?;
    run.shoot("quiz_unanswered", &mut report)?;
    run.answer(&questions, true, &mut report)?;
    run.wrong_review(&questions, &mut report)?;
    run.shoot("quiz_wrong", &mut report)?;

    widget.reload()?;
    run.wait_for(".mdbook-quiz button.start", "the quiz's Start button")?;
    run.answer(&questions, false, &mut report)?;
    run.right_review(&questions, &mut report)?;
    run.shoot("quiz_right", &mut report)?;
    run.offline(&mut report)?;
    report.problems.extend(widget.session.take_errors());
    Ok(report)
}

/// The first quiz's questions, read from the page.
fn questions(session: &Session) -> Result<Vec<Question>> {
    let json = session.eval(
        "(() => { const q = document.querySelector('.quiz-placeholder'); \
         return q ? q.dataset.quizQuestions : ''; })()",
    )?;
    if json.is_empty() {
        bail!("the page has no quiz");
    }
    let doc: Value = serde_json::from_str(&json).context("the quiz's questions are not JSON")?;
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let out: Vec<Question> = doc["questions"]
        .as_array()
        .ok_or_else(|| anyhow!("the quiz has no question list"))?
        .iter()
        .map(|q| Question {
            answer: text(&q["answer"]["answer"]),
            distractors: q["prompt"]["distractors"]
                .as_array()
                .map(|d| d.iter().map(text).collect())
                .unwrap_or_default(),
            context: text(&q["context"]),
        })
        .collect();
    if out.is_empty() || out[0].distractors.is_empty() {
        bail!("the quiz has no multiple-choice question to answer wrongly first");
    }
    Ok(out)
}

/// The tab and what the run needs to drive it.
struct Run<'a> {
    widget: &'a Widget<'a>,
}

impl Run<'_> {
    /// Starts the quiz and answers every question from the keyboard: the first with its
    /// first distractor when `first_wrong`, every other with its answer.
    fn answer(&self, questions: &[Question], first_wrong: bool, report: &mut Report) -> Result<()> {
        self.focus(".mdbook-quiz button.start")?;
        self.key("Enter")?;
        for (i, q) in questions.iter().enumerate() {
            let choice = if first_wrong && i == 0 {
                &q.distractors[0]
            } else {
                &q.answer
            };
            let radio = format!(
                ".mdbook-quiz input[type=radio][value={}]",
                css_string(choice)
            );
            self.wait_for(&radio, &format!("question {}'s choice {choice:?}", i + 1))?;
            if i == 0 && first_wrong {
                self.audit("a question on screen", report)?;
                self.shoot("quiz_question", report)?;
            }
            self.focus(&radio)?;
            self.key(" ")?;
            if !self.is(&format!("{radio}:checked"))? {
                bail!(
                    "question {}: Space did not select the focused choice",
                    i + 1
                );
            }
            self.key("Tab")?;
            if !self.is(".mdbook-quiz input[type=submit]:focus")? {
                bail!(
                    "question {}: Tab from the choices does not reach the submit button",
                    i + 1
                );
            }
            if i == 0 && first_wrong {
                let ring = self.eval("getComputedStyle(document.activeElement).outlineStyle")?;
                if ring == "none" {
                    report
                        .problems
                        .push("the submit button shows no focus ring when Tab reaches it".into());
                }
            }
            self.key("Enter")?;
        }
        self.wait_for(".mdbook-quiz .answer-wrapper", "the answer review")
            .map(|_| ())
    }

    /// After a wrong first answer: the review marks it wrong and counts it, and its
    /// explanation shows once the correct answers are asked for.
    fn wrong_review(&self, questions: &[Question], report: &mut Report) -> Result<()> {
        let n = questions.len();
        let score = self.text(".mdbook-quiz section > p strong")?;
        let wanted = format!("{}/{n}", n - 1);
        if score != wanted {
            report.problems.push(format!(
                "one wrong answer: the review scores {score:?}, not {wanted:?}"
            ));
        }
        let first_wrong = self.eval(
            "String(!!document.querySelector('.mdbook-quiz .answer-wrapper')\
             ?.querySelector('.md-flex.incorrect'))",
        )?;
        if first_wrong != "true" {
            report
                .problems
                .push("the wrong answer is not marked incorrect".into());
        }
        let see = "[...document.querySelectorAll('.mdbook-quiz button')]\
                   .find(b => b.textContent.includes('correct answers'))";
        self.eval(&format!(
            "(() => {{ const b = {see}; if (!b) return 'none'; b.focus(); return 'ok'; }})()"
        ))
        .and_then(|r| {
            if r == "ok" {
                Ok(())
            } else {
                bail!("no button to see the correct answers")
            }
        })?;
        self.key("Enter")?;
        self.wait_for(".mdbook-quiz .answer-wrapper .context", "the explanation")?;
        let shown = self.text(".mdbook-quiz .answer-wrapper .context")?;
        if !plain(&shown).contains(&plain(&questions[0].context)) {
            report.problems.push(format!(
                "the wrong answer's explanation is not shown: {:?}",
                clip(&shown)
            ));
        }
        self.audit("the review", report)?;
        self.verdict_contrast(report)?;
        report.states.push(format!(
            "answered wrongly: {score} correct; explanation shown"
        ));
        Ok(())
    }

    /// After right answers only: the review counts them all and marks none wrong.
    fn right_review(&self, questions: &[Question], report: &mut Report) -> Result<()> {
        let n = questions.len();
        let score = self.text(".mdbook-quiz section > p strong")?;
        if score != format!("{n}/{n}") {
            report.problems.push(format!(
                "all right: the review scores {score:?}, not \"{n}/{n}\""
            ));
        }
        if self.is(".mdbook-quiz .md-flex.incorrect")? {
            report
                .problems
                .push("a right answer is marked incorrect".into());
        }
        report
            .states
            .push(format!("answered rightly: {score} correct"));
        Ok(())
    }

    /// Every resource the page loaded came from the book's own server: a quiz must work
    /// with no network.
    fn offline(&self, report: &mut Report) -> Result<()> {
        let outside = self.eval(
            "JSON.stringify(performance.getEntriesByType('resource').map(e => e.name)\
             .filter(u => !u.startsWith(location.origin)))",
        )?;
        let outside: Vec<String> = serde_json::from_str(&outside)?;
        report.problems.extend(
            outside
                .into_iter()
                .map(|u| format!("loaded from outside the book: {u}")),
        );
        Ok(())
    }

    /// axe on the page as it now is; our findings are problems, mdBook's are listed.
    fn audit(&self, state: &str, report: &mut Report) -> Result<()> {
        self.widget.audit(state, report)
    }

    fn wait_for(&self, selector: &str, what: &str) -> Result<()> {
        let started = Instant::now();
        while !self.is(selector)? {
            if started.elapsed() > self.widget.options.timeout {
                bail!(
                    "{what} did not appear within {} s",
                    self.widget.options.timeout.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    fn is(&self, selector: &str) -> Result<bool> {
        let found = self.eval(&format!(
            "String(!!document.querySelector({}))",
            serde_json::to_string(selector)?
        ))?;
        Ok(found == "true")
    }

    fn text(&self, selector: &str) -> Result<String> {
        self.eval(&format!(
            "(() => {{ const e = document.querySelector({}); return e ? e.innerText : ''; }})()",
            serde_json::to_string(selector)?
        ))
    }

    fn focus(&self, selector: &str) -> Result<()> {
        self.widget
            .session
            .tab
            .find_element(selector)
            .and_then(|e| e.focus().map(|_| ()))
            .map_err(|e| anyhow!("cannot focus {selector}: {e}"))
    }

    fn key(&self, key: &str) -> Result<()> {
        self.widget
            .session
            .tab
            .press_key(key)
            .map(|_| ())
            .map_err(|e| anyhow!("cannot press {key:?}: {e}"))
    }

    fn eval(&self, script: &str) -> Result<String> {
        self.widget.session.eval(script)
    }

    /// A PNG of the first quiz with the heading above it, as a reader meets it on the page.
    fn shoot(&self, name: &str, report: &mut Report) -> Result<()> {
        self.widget.shoot(
            name,
            "(() => { const w = document.querySelector('.mdbook-quiz-wrapper'); \
             const p = w.closest('.quiz-placeholder') || w; \
             const h = p.previousElementSibling; \
             const top = (h && /^H[1-6]$/.test(h.tagName) ? h : w).getBoundingClientRect().top; \
             const r = w.getBoundingClientRect(); \
             return JSON.stringify([r.left + scrollX, top + scrollY, r.width, r.bottom - top]); })()",
            report,
        )
    }
}
