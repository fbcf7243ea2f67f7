//! The three rules a choice of settings is graded by (see the grader's module docs): it fits,
//! it keeps the batch, and it switches on nothing needless.

use super::{
    Answers, FITS, NEEDED_ABOVE, NOTHING_NEEDLESS, SAME_BATCH, Settings, example, percent, planned,
    push, run, same_batch,
};
use crate::{Report, Setup, attempt_timed, card};
use gpumem::lesson::UNLIMITED_BYTES;
use gpumem::measure::StepMemory;
use gpumem::mlp::{Checkpointing, MlpConfig, Precision};
use gpumem::size::format_bytes;

const FITS_HINT: &str = "use your peak_bytes and keep the step within 95 % of the card (the \
    allocator rounds every tensor up, and reserves more than the tensors need when a freed \
    block is split — Challenge 3); mixed precision halves only the activations — the \
    master weights, their gradients and the optimizer's state stay float32, and autocast adds \
    float16 copies of the weights — accumulation shrinks only what one micro-batch computes, \
    and checkpointing only helps with several hidden layers";

const SAME_BATCH_HINT: &str = "keep the batch: split it into accumulation_steps micro-batches of \
    ⌈batch / accumulation_steps⌉ rows (when it does not divide evenly the engine makes the \
    first micro-batches one row longer); a smaller batch fits too, but it is a different \
    training run — more, noisier updates";

const NEEDLESS_HINT: &str = "try the cheapest settings first and stop at the first that needs at \
    most 95 % of the card (a strategy is needless when, without it, the step needs at most 95 % \
    and fits when planned on the card): the fewest micro-batches, then no recomputation, then float32 — a \
    strategy that is not needed only costs (time for accumulation and checkpointing, digits \
    for mixed precision, memory for float64), and checkpointing 1 or 2 hidden layers saves \
    nothing";

/// A learner's settings for one setup on one card, planned by the engine.
struct Choice {
    setup: Setup,
    card_bytes: u64,
    settings: Settings,
    config: MlpConfig,
    rows: u64,
    /// The update planned on the card and what it needs on an unlimited one, or why the
    /// engine refused the settings.
    planned: Result<(StepMemory, u64), String>,
}

/// A check's expected text, and what came back with whether it passes.
type Verdict = (String, (String, bool));

/// Grades `choose_settings` on one setup and card by the three rules.
pub(super) fn grade_choice(report: &mut Report, answers: &Answers, setup: Setup, card_bytes: u64) {
    let case = format!("choose_settings({setup}) {}", card(card_bytes));
    let f = answers.choose_settings;
    let settings = match attempt_timed(f as usize, move || f(setup, card_bytes)) {
        Ok(s) => s,
        Err(e) => {
            for group in [FITS, SAME_BATCH, NOTHING_NEEDLESS] {
                push(report, group, &case, "settings".into(), Err(e.clone()), "");
            }
            return;
        }
    };
    let case = format!("{case} → {settings}");
    let choice = Choice::plan(setup, card_bytes, settings);
    for (group, (expected, got), hint) in [
        (FITS, fits(&choice), FITS_HINT),
        (SAME_BATCH, keeps_the_batch(&choice), SAME_BATCH_HINT),
        (NOTHING_NEEDLESS, nothing_needless(&choice), NEEDLESS_HINT),
    ] {
        push(report, group, &case, expected, Ok(got), hint);
    }
}

impl Choice {
    fn plan(setup: Setup, card_bytes: u64, settings: Settings) -> Choice {
        let (config, rows) = run(&setup, &settings);
        let planned = (|| {
            let m = planned(&config, rows, card_bytes)?;
            let needs = planned(&config, rows, UNLIMITED_BYTES)?.peak_allocated;
            Ok::<_, String>((m, needs))
        })();
        Choice {
            setup,
            card_bytes,
            settings,
            config,
            rows,
            planned,
        }
    }

    /// Each strategy switched on, named, with the configuration that switches it off.
    fn without_each(&self) -> Vec<(String, MlpConfig)> {
        let mut without = Vec::new();
        if self.settings.precision != Precision::Float32 {
            let mut c = self.config.clone();
            c.strategy.precision = Precision::Float32;
            let name = match self.settings.precision {
                Precision::Float64 => "float64 (float32 instead)",
                _ => "mixed precision",
            };
            without.push((name.to_string(), c));
        }
        if self.settings.checkpointing != Checkpointing::Off {
            let mut c = self.config.clone();
            c.strategy.checkpointing = Checkpointing::Off;
            without.push(("checkpointing".to_string(), c));
        }
        let steps = self.settings.accumulation_steps;
        if steps > 1 {
            let mut c = self.config.clone();
            c.strategy.accumulation = steps - 1;
            without.push((
                format!("the {steps}th micro-batch ({} instead)", steps - 1),
                c,
            ));
        }
        without
    }
}

/// Rule 1: one update with these settings, planned on the card, does not run out.
fn fits(choice: &Choice) -> Verdict {
    let expected = match example(&choice.setup, choice.card_bytes) {
        Some((s, peak)) => format!(
            "a step that fits the card (one choice that passes every rule: {s}, which needs {})",
            format_bytes(peak)
        ),
        None => "a step that fits the card".to_string(),
    };
    let got = match &choice.planned {
        Err(e) => (format!("the engine refused these settings: {e}"), false),
        Ok((m, needs)) => match &m.oom {
            None => (
                format!("fits: needs {} of the card", format_bytes(*needs)),
                true,
            ),
            Some(o) => (
                format!(
                    "out of memory: needs {} ({} of the card); ran out allocating {} for `{}`",
                    format_bytes(*needs),
                    percent(*needs, choice.card_bytes),
                    format_bytes(o.tried),
                    o.label
                ),
                false,
            ),
        },
    };
    (expected, got)
}

/// Rule 2: the micro-batches are the engine's split of the whole batch.
fn keeps_the_batch(choice: &Choice) -> Verdict {
    let (b, settings) = (choice.setup.batch, &choice.settings);
    let steps = settings.accumulation_steps;
    let expected = if (1..=b).contains(&steps) {
        format!(
            "{steps} micro-batch{} of {} rows: the engine's split of the batch of {b} rows",
            if steps == 1 { "" } else { "es" },
            b.div_ceil(steps)
        )
    } else {
        format!("between 1 and {b} micro-batches (at most one per row), covering the batch")
    };
    let got = format!(
        "{steps} × {} rows = {}",
        settings.micro_batch,
        settings.micro_batch.saturating_mul(steps)
    );
    (expected, (got, same_batch(b, settings)))
}

/// Rule 3: switching any chosen strategy off makes the step need more than 95 % of the card,
/// or run out when planned on it (a cheaper setting under the line can still run out when the
/// cache fragments: then the strategy was needed).
fn nothing_needless(choice: &Choice) -> Verdict {
    let card_bytes = choice.card_bytes;
    let budget = (NEEDED_ABOVE * card_bytes as f64) as u64;
    let expected = format!(
        "every strategy needed: without any one of them the step requests more than {} (95 % \
         of the card, before the allocator's rounding) or runs out on the card",
        format_bytes(budget)
    );
    if choice.planned.is_err() {
        let got = "not checked: the engine refused these settings".to_string();
        return (expected, (got, false));
    }
    let mut needless = Vec::new();
    let mut fragmented = Vec::new();
    for (name, c) in choice.without_each() {
        let Ok(needs) = planned(&c, choice.rows, UNLIMITED_BYTES) else {
            continue;
        };
        let needs = needs.peak_requested;
        if needs > budget {
            continue;
        }
        match planned(&c, choice.rows, card_bytes) {
            Ok(m) if m.fits() => needless.push(format!(
                "{name} is not needed: without it the step requests {} ({} of the card) and \
                 fits the card",
                format_bytes(needs),
                percent(needs, card_bytes)
            )),
            Ok(m) => fragmented.push(format!(
                "{name} is needed: without it the step requests only {} ({} of the card) yet \
                 runs out on it{}",
                format_bytes(needs),
                percent(needs, card_bytes),
                m.oom.as_ref().map_or(String::new(), |o| format!(
                    " (allocating {} for `{}`, with {} cached but unused)",
                    format_bytes(o.tried),
                    o.label,
                    format_bytes(o.cached_unused())
                ))
            )),
            Err(_) => {}
        }
    }
    let got = if !needless.is_empty() {
        (needless.join("; "), false)
    } else if choice.settings == Settings::plain(choice.setup.batch) {
        ("no strategy switched on".to_string(), true)
    } else if !fragmented.is_empty() {
        (
            format!("every strategy is needed; {}", fragmented.join("; ")),
            true,
        )
    } else {
        ("every strategy is needed".to_string(), true)
    };
    (expected, got)
}
