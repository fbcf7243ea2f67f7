//! Challenge 4 (`challenge-4.md`): what the grader asks — the parts of `peak_bytes` with the
//! rule each needs, and the `choose_settings` cases the page names — from the grader itself.

use crate::style::grouped;
use anyhow::{Result, anyhow};
use gpumem::size::format_bytes;
use grading::Opt;
use grading::challenge4::{PARTS, equation, example, named_choice_cases, survives};
use std::fmt::Write as _;

/// The parts of `peak_bytes`, the core first, each with the settings it covers (the stub's
/// arms) and the rule it needs: the grader's own hint for the part.
pub fn challenge4_parts() -> Result<String> {
    let covers = [
        "float32, no checkpointing: the whole batch at once, or in micro-batches",
        "float64, no checkpointing",
        "float32 with checkpointing",
        "mixed precision, no checkpointing",
        "checkpointing with mixed precision or float64",
    ];
    let mut out = String::new();
    for (part, covers) in PARTS.iter().zip(covers) {
        let name = part.trim_start_matches("peak_bytes, ");
        let rule = equation::rule(part);
        // The grader's hint, as a sentence.
        let mut chars = rule.chars();
        let first = chars.next().map(|c| c.to_uppercase().collect::<String>());
        writeln!(
            out,
            "- **{name}** ({covers}). {}{}.",
            first.unwrap_or_default(),
            chars.as_str()
        )?;
    }
    Ok(out)
}

/// The fixed `choose_settings` cases, each with one choice that passes every rule (the
/// grader's own, planned by the engine); an error if the grader would drop one.
pub fn challenge4_cases() -> Result<String> {
    let mut out = String::from(
        "| the case | layers × width, batch, optimizer | card | one choice that passes \
         every rule | it requests |\n| :--- | :--- | ---: | :--- | ---: |\n",
    );
    for case in named_choice_cases() {
        if !survives(&case) {
            return Err(anyhow!("the grader drops the case `{}`", case.about));
        }
        let s = case.setup;
        let (choice, peak) = example(&s, case.card_bytes)
            .ok_or_else(|| anyhow!("no choice fits `{}`", case.about))?;
        writeln!(
            out,
            "| {} | {}\u{a0}×\u{a0}{}, {}, {} | {} | {choice} | {} |",
            case.about,
            s.layers,
            grouped(s.width),
            grouped(s.batch),
            match s.optimizer {
                Opt::Sgd => "SGD",
                Opt::Adam => "Adam",
            },
            format_bytes(case.card_bytes),
            format_bytes(peak)
        )?;
    }
    Ok(out)
}

/// Why the grader plans on the card before it calls a strategy needless: Challenge 1's full
/// batch in float32 with one micro-batch fewer than the card needs requests less than 95 % of
/// the card, yet runs out on it. An error if that stops being so (the page says it is).
pub fn challenge4_needless() -> Result<String> {
    use crate::data::LESSON_WIDTH;
    use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
    use gpumem::estimate::requested_peak;
    use gpumem::fit::{fewest_micro_batches, measure_update, with_micro_batches};
    use gpumem::lesson::{CARD_BYTES, planning_on_card};
    use gpumem::mlp::MlpConfig;
    use grading::challenge4::NEEDED_ABOVE;
    let base = MlpConfig::lesson(LESSON_WIDTH);
    let (k, _) = fewest_micro_batches(&planning_on_card(), &base, FULL)?
        .ok_or_else(|| anyhow!("no number of micro-batches fits the full batch"))?;
    let fewer = with_micro_batches(&base, k - 1);
    let requested = requested_peak(&fewer, FULL)?;
    let share = requested as f64 / CARD_BYTES as f64;
    let fits = measure_update(&planning_on_card(), &fewer, FULL, 0)?.fits();
    if k < 2 || share > NEEDED_ABOVE || fits {
        return Err(anyhow!(
            "{} float32 micro-batches of the full batch no longer request under 95 % of the \
             card and run out on it",
            k - 1
        ));
    }
    Ok(format!(
        "Challenge 1's full batch in {} float32 micro-batches requests {} ({:.1} % of the \
         card), under the line, yet runs out on the card; with {k} it fits, and those {k} \
         micro-batches are not needless.",
        k - 1,
        format_bytes(requested),
        100.0 * share
    ))
}
