//! Challenge 1 (`challenge-1.md`): the whole training set as one batch, and the largest batch
//! that fits.

use crate::data::{LESSON_WIDTH, equation, measure};
use crate::style::grouped;
use anyhow::{Result, anyhow};
use gpumem::data::LESSON_TRAINING_EVENTS as FULL;
use gpumem::lesson::{CARD_BYTES, planning_on_card};
use gpumem::mlp::MlpConfig;
use gpumem::size::format_bytes;
use std::fmt::Write as _;

use super::largest_batch;

/// Challenge 1: the whole training set as one batch, by category, and what the card says.
pub fn challenge1_full_batch() -> Result<String> {
    let config = MlpConfig::lesson(LESSON_WIDTH);
    let e = equation(&config, FULL)?;
    let step = measure(&planning_on_card(), &config, FULL)?;
    let oom = step
        .oom
        .ok_or_else(|| anyhow!("the full training set fits on the card: challenge 1 is moot"))?;
    let mut out = format!(
        "The lesson's network (2 features, one hidden layer of {}, 2 classes, SGD) with all \
         {} training rows as one batch, by the engine's estimate:\n\n\
         | memory | bytes |\n| :--- | ---: |\n",
        grouped(LESSON_WIDTH),
        grouped(FULL)
    );
    for (name, bytes) in e.categories() {
        writeln!(out, "| {name} | {} |", format_bytes(bytes))?;
    }
    writeln!(
        out,
        "| **peak allocated** | **{}** |\n",
        format_bytes(e.peak_allocated)
    )?;
    writeln!(
        out,
        "On the ideal {} card, the step on `plan` runs out {}:\n\n```text\n{oom}\n```\n",
        format_bytes(CARD_BYTES),
        super::failure_words(step.failed_in, &oom)?
    )?;
    Ok(out)
}

/// The full batch's features, labels and predictions on the card, e.g. `26.85 MiB`.
pub fn full_batch_input() -> Result<String> {
    Ok(format_bytes(
        equation(&MlpConfig::lesson(LESSON_WIDTH), FULL)?.batch,
    ))
}

/// The rows of the lesson's training set, e.g. `1 173 000`.
pub fn full_batch_rows() -> Result<String> {
    Ok(grouped(FULL))
}

/// The largest batch of the lesson's network that fits on the card, e.g. `710 410`.
pub fn largest_batch_on_card() -> Result<String> {
    Ok(grouped(largest_batch()?.rows))
}

/// The largest batch of the lesson's network whose peak by the core's equation (raw bytes,
/// as the page states it) is within the card, e.g. `710 657`.
pub fn equation_largest_batch() -> Result<String> {
    Ok(grouped(equation_largest_rows()?))
}

/// The rows of [`equation_largest_batch`].
pub fn equation_largest_rows() -> Result<u64> {
    use super::core_equation::peak;
    use grading::{Opt, Setup};
    gpumem::search::largest_where(FULL, |b| {
        Ok::<_, anyhow::Error>(peak(Setup::lesson(LESSON_WIDTH, 1, b, Opt::Sgd))? <= CARD_BYTES)
    })?
    .ok_or_else(|| anyhow!("not even one row fits by the equation"))
}

/// The step at the largest batch that fits: its peak allocated.
pub fn largest_batch_peak_allocated() -> Result<String> {
    Ok(format_bytes(largest_batch()?.step.peak_allocated))
}

/// The step at the largest batch that fits: its peak reserved.
pub fn largest_batch_peak_reserved() -> Result<String> {
    Ok(format_bytes(largest_batch()?.step.peak_reserved))
}

/// Where the full batch runs out on the card, and on which tensor (the engine's measurement).
pub fn full_batch_failure() -> Result<String> {
    let step = measure(&planning_on_card(), &MlpConfig::lesson(LESSON_WIDTH), FULL)?;
    let oom = step
        .oom
        .ok_or_else(|| anyhow!("the full training set fits on the card"))?;
    super::failure_words(step.failed_in, &oom)
}
